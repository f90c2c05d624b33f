"""The one credential redaction of flushbench: every writer passes its text through here.

Console errors, worker and run log files, crash logs, run errors and run events stored in the
results database all call :func:`redact` (or :func:`redact_url` / :func:`redact_argv`) before
writing. The forms covered (docs/architecture.md, "Credentials"):

* a password in a URL's userinfo, ``scheme://user:PASSWORD@host/db``, whatever it holds:
  spaces, quotes, ``?``, ``#``, ``/``, ``;``, non-ASCII letters, percent-escapes and unencoded
  ``@`` (the userinfo runs to the *last* ``@`` that a plausible host follows, so no tail of
  the password is ever shown as the host);
* a password as a parameter, ``?password=…`` / ``&password=…`` (libpq's own form), libpq
  keyword strings (``host=… password=…``) and ``password = …`` lines, and the relatives of
  the key (``passwd``, ``pwd``, ``sslpassword``, ``secret``, ``token`` …);
* client command lines: ``--password=…``, ``--mysql-password=…``, ``-pSECRET`` (mysql) and
  ``-p SECRET`` (tpcc-mysql's ``tpcc_start``/``tpcc_load``);
* environment assignments ``MYSQL_PWD=…`` and ``PGPASSWORD=…``;
* every password flushbench has seen in a URL this process (:func:`remember_url`), in its
  written and percent-decoded forms, wherever it appears: a driver that echoes the host or
  a fragment of the URL back in its own message cannot leak it either.

Two kinds of text. A *URL alone* (:func:`redact_url`, :func:`remember_url`: a ``--db``
argument, ``$FLUSHBENCH_DB``) has known ends, so its password is exactly the text between the
user's ``:`` and the userinfo's ``@``, or a query value up to the next ``&name=``. In
*free-form text* (a message, a log line) nothing says where a password holding a space ends,
so the masking errs on the side of masking too much: an unquoted value runs to the next
``&name=`` / ``name=`` / option, or to the end of the line. Either way the secret becomes
``***`` and the rest (user, host, port, database) stays, so a message still says where the
problem is; text already masked is left as it is (redacting twice changes nothing).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from urllib.parse import unquote, unquote_plus

MASK = "***"

#: Query/option keys whose value is a credential (compared case-insensitively).
SECRET_KEYS = ("password", "passwd", "pwd", "pass", "sslpassword", "secret", "token",
               "api_key", "apikey")
_KEYS = "|".join(sorted(SECRET_KEYS, key=len, reverse=True))

#: ``scheme://``: where a URL starts.
_SCHEME_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://")
#: What may follow the userinfo's ``@`` in a URL alone: a host (a name, an address or
#: ``[IPv6]``; empty for a unix socket), a port, then the path, the query or the end.
_HOST_IN_URL = re.compile(r"(?:\[[^\]/?#@]*\]|[^\[\]/?#@:\s]*)(?::[^/?#@\s]*)?(?=[/?#]|\Z)")
#: The same in free-form text, where a URL may also end at a space, a quote or a bracket.
_HOST_IN_TEXT = re.compile(
    r"(?:\[[^\]\s/?#@]*\]|[^\[\]/?#@:\s'\"<>`,;()]*)(?::\d*)?(?=[/?#\s'\"<>`,;)]|\Z)")
#: Characters a user name in free-form text cannot hold (it would be prose, not a URL).
_NOT_IN_USER = re.compile(r"[\s'\"<>`/]")
#: A secret query parameter of a URL alone: its value runs to the next ``&name=`` or the end.
_PARAM_IN_URL = re.compile(rf"(?i)[?&;](?:{_KEYS})=(.*?)(?=&[^&=\s]+=|\Z)", re.S)

#: Text that is already a mask: ``***`` followed by a separator or the end.
_MASKED = r"\*\*\*(?:[\s:;,&)'\"#@/]|\Z)"
#: A quoted value (libpq escapes a quote inside with a backslash), closed before a separator.
_QUOTED = r"""'(?:[^'\\\n]|\\.)*'(?=[\s,;&)]|\Z)|"(?:[^"\\\n]|\\.)*"(?=[\s,;&)]|\Z)"""
#: An unquoted value in free-form text: nothing says where it ends, so it runs to the next
#: parameter (``&name=``, `` name=``), the next option (`` -x``) or the end of the line.
#: Possessive runs keep it linear (a lazy scan re-read every run of spaces: quadratic).
_UNQUOTED = (r"\S(?:[^\s&;,]++|[&;,](?![\w.\-]+\s*=)"
             r"|[^\S\n]++(?![\w.\-]+\s*=|--?[A-Za-z]|\n|\Z))*+")
_VALUE = rf"(?!{_MASKED})(?:{_QUOTED}|{_UNQUOTED})"

#: ``password=VALUE`` after ``?``, ``&``, ``;``, a space, ``(``, ``,`` or a line's start.
_PARAM_RE = re.compile(rf"(?im)(?:^|[?&;\s,(])(?:{_KEYS})\s*=\s*({_VALUE})")
#: ``--password=X``, ``--mysql-password=X`` (the spaced form only in :func:`redact_argv`,
#: where it cannot be prose).
_LONG_OPT_RE = re.compile(rf"(?i)(?<!\S)--[\w-]*pass(?:word|wd)?=({_VALUE})")
#: ``-pSECRET`` (mysql's attached form) and ``-p SECRET`` (tpcc_start and tpcc_load).
_SHORT_OPT_RE = re.compile(rf"(?<!\S)-p(?:[ \t]+(?!-)|(?=\S))({_VALUE})")
#: ``MYSQL_PWD=X`` / ``PGPASSWORD=X`` (an environment dump or a shell line).
_ENV_RE = re.compile(rf"\b(?:MYSQL_PWD|PGPASSWORD)=({_VALUE})")

#: Text holding none of these matches none of the forms above: a URL needs ``://``; a
#: parameter, option or environment name holds one of :data:`SECRET_KEYS` (each holds
#: ``pass``, ``pwd``, ``secret``, ``token`` or ``api``); ``-pSECRET`` holds ``-p``.
#: :func:`redact` lets such text through without its expressions — most text it is given,
#: such as every line of a results database's dump that a bundle checks.
_HINTS = ("://", "pass", "pwd", "secret", "token", "api", "-p")
#: The hints matched case-insensitively as the forms are, by the same engine: it takes
#: ``ſ`` for ``s``, ``ı`` for ``i`` and the Kelvin sign for ``k``, so ``paſſword`` is found.
_HINT_RE = re.compile("(?i)" + "|".join(map(re.escape, _HINTS)))

_secrets: set[str] = set()
_lock = threading.Lock()

#: A "secret" shorter than this is not remembered: masking every "a" would ruin messages.
_MIN_SECRET = 3

Span = tuple[int, int]


def remember_secret(secret: str | None) -> None:
    """Mask ``secret`` (and its percent-decoded forms) wherever it appears from now on."""
    if not secret:
        return
    with _lock:
        for form in {secret, unquote(secret), unquote_plus(secret)}:
            if len(form) >= _MIN_SECRET and form != MASK:
                _secrets.add(form)


def forget_secrets() -> None:
    """Drop every remembered secret (tests that run many cases in one process)."""
    with _lock:
        _secrets.clear()


# --- where the secrets are --------------------------------------------------------------------

def _urls(text: str) -> Iterator[Span]:
    """``(start, end)`` of what follows each ``scheme://`` in ``text``, up to the next URL."""
    found = list(_SCHEME_RE.finditer(text))
    for i, match in enumerate(found):
        yield match.end(), found[i + 1].start() if i + 1 < len(found) else len(text)


def _userinfo_passwords(text: str, start: int, end: int, *, free: bool) -> list[Span]:
    """Every reading of the userinfo password of the URL at ``text[start:end]``, as spans.

    The user name runs to the first ``:`` and holds no ``/`` (an ``@`` in a file path is no
    userinfo); the password runs from there to an ``@`` that a plausible host follows. A
    password may hold ``@`` itself, so several ``@`` may qualify: each is a reading, and the
    last (the longest password) is the one masked. In free-form text (``free``) a reading
    stays on one line and the user name holds no space or quote.
    """
    rest = text[start:end]
    colon = rest.find(":")
    if colon < 0 or (_NOT_IN_USER if free else re.compile("/")).search(rest[:colon]):
        return []
    host = _HOST_IN_TEXT if free else _HOST_IN_URL
    if any(host.match(rest, at.start() + 1) for at in re.finditer("@", rest[:colon])):
        return []  # ``user@host:port``: the colon is the port's, there is no password
    stop = rest.find("\n", colon) if free and "\n" in rest[colon:] else len(rest)
    return [(start + colon + 1, start + at.start()) for at in re.finditer("@", rest[:stop])
            if at.start() > colon and host.match(rest, at.start() + 1)]


def _url_spans(url: str, *, every_reading: bool = False) -> list[Span]:
    """The secret spans of a URL alone (its ends known): userinfo password, query values."""
    spans: list[Span] = []
    for start, end in _urls(url):
        readings = _userinfo_passwords(url, start, end, free=False)
        spans += readings if every_reading else readings[-1:]
        spans += [(start + m.start(1), start + m.end(1))
                  for m in _PARAM_IN_URL.finditer(url[start:end]) if m.group(1)]
    return spans


def _text_spans(text: str) -> list[Span]:
    """The secret spans of free-form text: every form of this module's docstring."""
    spans: list[Span] = []
    for start, end in _urls(text):
        readings = _userinfo_passwords(text, start, end, free=True)
        if readings and text[slice(*readings[0])] != MASK:  # masked already: leave it
            spans.append(readings[-1])
    for pattern in (_PARAM_RE, _LONG_OPT_RE, _SHORT_OPT_RE, _ENV_RE):
        spans += [m.span(1) for m in pattern.finditer(text) if m.group(1)]
    return spans


def _masked(text: str, spans: Iterable[Span]) -> str:
    """``text`` with each span (overlapping ones merged) replaced by :data:`MASK`."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, pos = [], 0
    for start, end in merged:
        out += [text[pos:start], MASK]
        pos = end
    return "".join(out) + text[pos:]


# --- the public functions ---------------------------------------------------------------------

def url_password(url: str) -> str | None:
    """The password in a URL's userinfo or query, as written (None when there is none)."""
    url = str(url)
    spans = _url_spans(url)
    return url[slice(*spans[0])] if spans else None


def remember_url(url: str | None) -> None:
    """Remember every password a URL alone carries, in every reading of it.

    ``url`` may have a prefix (``--db=postgresql://…``). Also remembered: the password and
    secret query values as SQLAlchemy reads the URL (what a driver is handed, decoded).
    """
    if not url or "://" not in url:
        return
    for span in _url_spans(url, every_reading=True):
        remember_secret(url[slice(*span)])
    scheme = _SCHEME_RE.search(url)
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url[scheme.start():] if scheme else url)
    except Exception:  # noqa: BLE001 - not a SQLAlchemy URL: the readings above stand
        return
    if isinstance(parsed.password, str):
        remember_secret(parsed.password)
    for key, value in parsed.query.items():
        if key.lower() in SECRET_KEYS:
            for one in (value,) if isinstance(value, str) else value:
                remember_secret(one)


def redact_url(url: str) -> str:
    """``url`` (a URL alone) with its password (userinfo or query parameter) as ``***``."""
    url = str(url)
    return redact(_masked(url, _url_spans(url)))


def url_credentials(text: str) -> list[str]:
    """The credentials the URLs in ``text`` carry, one phrase each (empty: none).

    A user name counts too (``https://TOKEN@host`` is a credential): for text that is
    published, such as an experiment file's reference URL or description.
    """
    found: list[str] = []
    for start, end in _urls(text):
        token = re.match(r"[^\s'\"<>`]*", text[start:end])
        authority = re.split(r"[/?#]", token.group() if token else "", maxsplit=1)[0]
        if "@" in authority or _userinfo_passwords(text, start, end, free=True):
            found.append("a user name or password (`user:password@`)")
        found += [f"a `{m.group(1)}=` parameter" for m in
                  re.finditer(rf"(?i)[?&;]({_KEYS})=", token.group() if token else "")]
    return found


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
    if not _may_hold_a_form(text):
        return text
    return _masked(text, _text_spans(text))


def _may_hold_a_form(text: str) -> bool:
    """Whether ``text`` may hold one of the forms :func:`_text_spans` finds (see
    :data:`_HINTS`): False means it holds none."""
    if text.isascii():  # ASCII has no letter that folds to another: lowercase and look
        low = text.lower()
        return any(hint in low for hint in _HINTS)
    return _HINT_RE.search(text) is not None


#: One argument that is a password option with its value attached.
_ARG_WITH_PASSWORD = re.compile(r"(?is)(--[\w-]*pass(?:word|wd)?=|-p)(?=.)")
#: One argument that is a password option whose value is the next argument.
_ARG_BEFORE_PASSWORD = re.compile(r"(?i)-p|--[\w-]*pass(?:word|wd)?")


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with every password argument masked, argument by argument.

    Each argument's ends are known, so a value is masked whole whatever it holds; this knows
    the spaced forms a joined string cannot tell apart from prose: ``-p SECRET``
    (tpcc-mysql) and ``--password SECRET``. An argument holding a URL is read as a URL alone.
    """
    out: list[str] = []
    mask_next = False
    for arg in map(str, argv):
        attached = _ARG_WITH_PASSWORD.match(arg)
        if mask_next:
            out.append(MASK)
        elif attached:
            out.append(attached.group(1) + MASK)
        else:
            out.append(redact(_masked(arg, _url_spans(arg))))
        mask_next = not mask_next and bool(_ARG_BEFORE_PASSWORD.fullmatch(arg))
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
