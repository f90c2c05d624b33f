"""The one credential redaction of flushbench: every writer passes its text through here.

Console errors, worker and run log files, crash logs, run errors and run events stored in the
results database all call :func:`redact` (or :func:`redact_url` / :func:`redact_argv`) before
writing. The forms covered (docs/architecture.md, "Credentials"):

* a password in a URL's userinfo, ``scheme://user:PASSWORD@host/db`` — also when the password
  holds an unencoded ``@`` (the userinfo runs to the *last* ``@`` before the host, so no tail of
  the password is ever shown as the host) or is percent-encoded;
* a password as a query parameter, ``?password=…`` (libpq's own form), and its relatives
  (``passwd``, ``pwd``, ``sslpassword``, ``secret``, ``token``);
* client command lines: ``--password=…``, ``--mysql-password=…``, ``-pSECRET`` (mysql) and
  ``-p SECRET`` (tpcc-mysql's ``tpcc_start``/``tpcc_load``);
* environment assignments ``MYSQL_PWD=…`` and ``PGPASSWORD=…``;
* every password flushbench has seen in a URL this process (:func:`remember_url`), in its
  written and percent-decoded forms, wherever it appears: a driver that echoes the host or
  a fragment of the URL back in its own message cannot leak it either.

Redaction replaces the secret with ``***`` and keeps everything else (user, host, port,
database), so a message still says where the problem is.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from urllib.parse import unquote

MASK = "***"

#: Query/option keys whose value is a credential (compared case-insensitively).
SECRET_KEYS = ("password", "passwd", "pwd", "pass", "sslpassword", "secret", "token",
               "api_key", "apikey")
_KEYS = "|".join(sorted(SECRET_KEYS, key=len, reverse=True))

#: ``scheme://`` followed by anything up to whitespace or a quote: a URL inside a message.
_URL_RE = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://)([^\s'\"<>`]+)")
#: ``password=VALUE`` after ``?``, ``&``, ``;``, a space or the start (libpq keyword strings).
_PARAM_RE = re.compile(
    rf"(?i)((?:^|[?&;\s,(])(?:{_KEYS})\s*=\s*)('[^']*'|\"[^\"]*\"|(?:[^&;\s'\",):]|:(?!\s|$))+)")
# (a value may hold ':' but not end with ': ', the separator of ``where: what``)
#: ``--password=X``, ``--mysql-password=X`` (the spaced form only in :func:`redact_argv`, where
#: it cannot be prose).
_LONG_OPT_RE = re.compile(r"(?i)((?<!\S)--[\w-]*pass(?:word|wd)?)(=)(\S+)")
#: ``-pSECRET`` (mysql's attached form).
_SHORT_ATTACHED_RE = re.compile(r"(?<!\S)-p(?=\S)(?!\*\*\*)(\S+)")
#: ``-p SECRET`` (tpcc_start and tpcc_load take the password as the next argument).
_SHORT_SPACED_RE = re.compile(r"(?<!\S)-p\s+(?!-)(\S+)")
#: ``MYSQL_PWD=X`` / ``PGPASSWORD=X`` (an environment dump or a shell line).
_ENV_RE = re.compile(r"\b(MYSQL_PWD|PGPASSWORD)=(\S+)")

_secrets: set[str] = set()
_lock = threading.Lock()

#: A "secret" shorter than this is not remembered: masking every "a" would ruin messages.
_MIN_SECRET = 3


def remember_secret(secret: str | None) -> None:
    """Mask ``secret`` (and its percent-decoded form) wherever it appears from now on."""
    if not secret:
        return
    with _lock:
        for form in {secret, unquote(secret)}:
            if len(form) >= _MIN_SECRET:
                _secrets.add(form)


def forget_secrets() -> None:
    """Drop every remembered secret (tests that run many cases in one process)."""
    with _lock:
        _secrets.clear()


def url_password(url: str) -> str | None:
    """The password in a URL's userinfo or query, as written (None when there is none)."""
    m = _URL_RE.search(url)
    if not m:
        return None
    rest = m.group(2)
    userinfo, _ = _split_userinfo(rest)
    if userinfo is not None and ":" in userinfo:
        return userinfo.split(":", 1)[1]
    q = _PARAM_RE.search(rest)
    return q.group(2).strip("'\"") if q else None


def remember_url(url: str | None) -> None:
    """Remember every password a URL carries (userinfo and query forms)."""
    if not url:
        return
    for m in _URL_RE.finditer(url):
        rest = m.group(2)
        userinfo, _ = _split_userinfo(rest)
        if userinfo is not None and ":" in userinfo:
            remember_secret(userinfo.split(":", 1)[1])
        for q in _PARAM_RE.finditer(rest):
            remember_secret(q.group(2).strip("'\""))


def _split_userinfo(rest: str) -> tuple[str | None, str]:
    """``(userinfo, host-and-after)`` of what follows ``scheme://``.

    The userinfo ends at the *last* ``@`` before the query: a host can hold no ``@``, a
    password typed without encoding can, and its tail must never be taken for a host.
    """
    query = rest.find("?")
    head = rest if query < 0 else rest[:query]
    at = head.rfind("@")
    if at < 0:
        return None, rest
    return rest[:at], rest[at + 1:]


def _redact_url_match(m: re.Match[str]) -> str:
    scheme, rest = m.group(1), m.group(2)
    userinfo, after = _split_userinfo(rest)
    if userinfo is not None:
        if ":" in userinfo:
            user = userinfo.split(":", 1)[0]
            rest = f"{user}:{MASK}@{after}"
        elif "/" in userinfo:
            rest = rest  # an ``@`` in a file path (sqlite:////tmp/a@b/x): no userinfo
        else:
            rest = f"{userinfo}@{after}"
    rest = _PARAM_RE.sub(lambda q: q.group(1) + MASK, rest)
    return scheme + rest


def redact_url(url: str) -> str:
    """``url`` with its password (userinfo or query parameter) replaced by ``***``."""
    return redact(str(url))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every credential form of this module's docstring replaced by ``***``.

    ``secrets`` are extra literal strings to mask (a password known to the caller).
    """
    if not text:
        return text
    text = str(text)
    with _lock:
        known = sorted(_secrets | {s for s in secrets if s and len(s) >= _MIN_SECRET},
                       key=len, reverse=True)
    for secret in known:  # longest first: a secret holding another is masked whole
        if secret in text:
            text = text.replace(secret, MASK)
    text = _URL_RE.sub(_redact_url_match, text)
    text = _PARAM_RE.sub(lambda q: q.group(1) + MASK, text)
    text = _LONG_OPT_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _SHORT_SPACED_RE.sub(f"-p {MASK}", text)
    text = _SHORT_ATTACHED_RE.sub(f"-p{MASK}", text)
    return _ENV_RE.sub(lambda m: f"{m.group(1)}={MASK}", text)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with every password argument masked, argument by argument.

    Knows the spaced forms a joined string cannot tell apart from prose: ``-p SECRET``
    (tpcc-mysql) and ``--password SECRET``.
    """
    out: list[str] = []
    mask_next = False
    for arg in argv:
        arg = str(arg)
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        if arg == "-p" or re.fullmatch(r"(?i)--[\w-]*pass(?:word|wd)?", arg):
            mask_next = True
            out.append(arg)
            continue
        out.append(redact(arg))
    return out


#: Server variables whose value is a credential. mysqld shows them in ``SHOW GLOBAL
#: VARIABLES`` in clear (``report_password``, set for a replica's registration) or as the
#: operator wrote them (``wsrep_sst_auth`` on servers that do not mask it), and the runs store
#: every row of that snapshot.
SECRET_SERVER_VARIABLES = ("report_password", "wsrep_sst_auth")


def redact_server_variables(values: dict[str, str]) -> dict[str, str]:
    """A ``SHOW GLOBAL VARIABLES`` snapshot fit to store: secrets masked, the rest as shown.

    A variable of :data:`SECRET_SERVER_VARIABLES` with a value becomes :data:`MASK` (an empty
    one stays empty: "no password set" is a fact worth keeping); every other value goes
    through :func:`redact`, so a URL or ``password=…`` inside ``init_connect`` is masked too.
    """
    return {name: (MASK if value and name.lower() in SECRET_SERVER_VARIABLES
                   else redact(value))
            for name, value in values.items()}
