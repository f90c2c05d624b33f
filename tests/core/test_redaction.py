"""The one credential masking (:mod:`core.redaction`), password by password, form by form.

Every hostile spelling of :mod:`tests.support.hostile_passwords` goes through every form the
masking knows — a URL alone (``--db``), the same URL inside a message, in quotes and
brackets, query parameters, libpq keyword strings, command lines, environment assignments —
and neither end of the password may survive. What the reader needs (user, host, port, the
words around) must stay, and masking twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from core.redaction import (
    MASK,
    SECRET_KEYS,
    _masked,
    _may_hold_a_form,
    _text_spans,
    forget_secrets,
    redact,
    redact_argv,
    redact_url,
    remember_url,
    url_credentials,
    url_password,
)
from tests.support.hostile_passwords import PASSWORD_IDS, PASSWORDS, Password

#: URLs with the password in the userinfo: (template, what must stay visible).
USERINFO_URLS = [
    ("postgresql+psycopg://bench:{pw}@127.0.0.1:1/flushbench", "bench:***@127.0.0.1:1/flushbench"),
    ("postgresql://bench:{pw}@db.example/f?sslmode=require", "bench:***@db.example/f?sslmode"),
    ("mysql://root:{pw}@[::1]:3306/x", "root:***@[::1]:3306/x"),
    ("mysql+pymysql://root:{pw}@/x?unix_socket=/tmp/s", "root:***@/x?unix_socket=/tmp/s"),
]
#: URLs with the password as a query parameter.
QUERY_URLS = [
    ("postgresql+psycopg://bench@127.0.0.1:1/f?password={pw}", "bench@127.0.0.1:1/f?password=***"),
    ("postgresql://bench@h/f?sslmode=require&password={pw}", "sslmode=require&password=***"),
    ("postgresql://bench@h/f?password={pw}&sslmode=require", "password=***&sslmode=require"),
]
#: How a message may quote a URL: (template, the words around that must stay).
MESSAGES = [
    ("error: {url}: cannot use the results database — check the host", "error: "),
    ("cannot connect to '{url}' (refused)", "cannot connect to '"),
    ('cannot connect to "{url}" (refused)', 'cannot connect to "'),
    ("(see {url}) and <{url}>", "(see "),
    ("{url}", "://"),
]


def _urls(pw: Password) -> Iterator[tuple[str, str]]:
    for template, kept in USERINFO_URLS + QUERY_URLS:
        yield template.format(pw=pw.text), kept


@pytest.fixture(autouse=True)
def _no_remembered_secrets() -> Iterator[None]:
    """Each case starts with an empty memory: the patterns alone must mask."""
    forget_secrets()
    yield
    forget_secrets()


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_a_url_alone_is_masked_whatever_the_password_holds(pw: Password) -> None:
    for url, kept in _urls(pw):
        for shown in (redact_url(url), redact(url), redact_argv(["--db", url])[1]):
            assert not pw.leaked_in(shown), (url, shown)
            assert kept in shown, (url, shown)


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_a_url_inside_a_message_is_masked(pw: Password) -> None:
    for url, _kept in _urls(pw):
        for message, kept in MESSAGES:
            text = message.format(url=url)
            shown = redact(text)
            assert not pw.leaked_in(shown), (text, shown)
            assert kept in shown, (text, shown)
            assert redact(shown) == shown, "masking twice changed the text"


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_the_percent_encoded_and_the_decoded_password_are_both_masked(pw: Password) -> None:
    encoded = quote(pw.text, safe="")
    url = f"postgresql+psycopg://bench:{encoded}@127.0.0.1:1/f"
    remember_url(url)
    # A driver may echo either form, anywhere in its own words.
    for echo in (f"password {encoded} refused", f"password {pw.text} refused"):
        shown = redact(echo)
        assert not pw.leaked_in(shown) and "refused" in shown, shown
    assert "bench:***@127.0.0.1:1/f" in redact_url(url)


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_a_remembered_url_masks_its_password_in_any_text(pw: Password) -> None:
    """What the CLI does with ``--db``: the password, as SQLAlchemy reads it, is known."""
    url = f"postgresql+psycopg://bench:{pw.text}@127.0.0.1:1/f"
    remember_url(url)
    shown = redact(f"the server said: {pw.text}\nand the end of it: {pw.text[-20:]}!")
    assert not pw.leaked_in(shown.replace(pw.text[-20:], "")), shown
    assert pw.text not in shown and "the server said" in shown


#: Free-form credential forms that are not URLs: (template, what must stay visible).
TEXT_FORMS = [
    ("host=db user=bench password={libpq} dbname=f", "password=*** dbname=f"),
    ("password = {pw}", "password = ***"),
    ("mysql --user=root --password={pw} -h db", "--password=*** -h db"),
    ("sysbench --mysql-password={pw} --threads=4", "--mysql-password=*** --threads=4"),
    ("mysql -uroot -p{pw} -h db", "-p*** -h db"),
    ("tpcc_start -h db -u root -p {pw} -w 10", "-p *** -w 10"),
    ("MYSQL_PWD={pw} mysql -uroot", "MYSQL_PWD=***"),
    ("PGPASSWORD='{shell}' psql", "PGPASSWORD=***"),
]


def _libpq_quoted(text: str) -> str:
    """A libpq keyword value: quoted, with quotes and backslashes escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_keyword_option_and_environment_forms_are_masked(pw: Password) -> None:
    shell = pw.text.replace("'", "'\\''")
    for template, kept in TEXT_FORMS:
        text = template.format(pw=pw.text, libpq=_libpq_quoted(pw.text), shell=shell)
        shown = redact(text)
        assert not pw.leaked_in(shown), (text, shown)
        assert kept in shown, (text, shown)
        assert redact(shown) == shown


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_a_command_line_is_masked_argument_by_argument(pw: Password) -> None:
    argv = ["mysql", "--password", pw.text, "-p", pw.text, f"-p{pw.text}",
            f"--mysql-password={pw.text}", f"password={pw.text}",
            f"--db=postgresql://u:{pw.text}@h/x", "-h", "db"]
    shown = redact_argv(argv)
    assert not pw.leaked_in(" ".join(shown)), shown
    assert shown == ["mysql", "--password", MASK, "-p", MASK, f"-p{MASK}",
                     f"--mysql-password={MASK}", f"password={MASK}",
                     f"--db=postgresql://u:{MASK}@h/x", "-h", "db"]


def test_the_userinfo_runs_to_the_last_at_a_host_follows() -> None:
    assert url_password("postgresql://u:p@w@h:1/x") == "p@w"
    assert url_password("postgresql://u:p?w@h/x") == "p?w"
    assert url_password("postgresql://u:p w#x@h/x") == "p w#x"
    assert url_password("postgresql://u@h/x?password=a b&sslmode=require") == "a b"
    assert url_password("sqlite:////tmp/a:b@c/x.sqlite") is None  # a path, not a userinfo


#: Text that holds no credential and must come out unchanged (the bundle check and the
#: console rely on it: a false alarm refuses a clean bundle).
CLEAN = [
    "sqlite:////tmp/a@b/results.sqlite",
    "postgresql+psycopg://bench@127.0.0.1:1/f: cannot use the results database",
    "postgresql+psycopg://bench:***@127.0.0.1:1/f: connection refused (bench@127.0.0.1)",
    "https://github.com/x/y — ask admin@example.com",
    "NOTPM 12,345 (window mean), stability 87 (CV 1.2 %), no warnings",
    "innodb_flush_method=O_DIRECT innodb_io_capacity=200",
    "flushbench status --db results/flushbench.sqlite",
    "error: postgresql://u@h/x?password=***: refused — fix it",
]


@pytest.mark.parametrize("text", CLEAN)
def test_text_without_a_credential_is_left_as_it_is(text: str) -> None:
    assert redact(text) == text


def test_credentials_in_a_published_url_are_named() -> None:
    assert url_credentials("https://u:p w@example.com/post") == [
        "a user name or password (`user:password@`)"]
    assert url_credentials("see https://TOKEN@github.com/x/y") == [
        "a user name or password (`user:password@`)"]
    assert url_credentials("https://example.com/post?a=1&token=x") == ["a `token=` parameter"]
    assert url_credentials("https://example.com/post?password=p%20w") == [
        "a `password=` parameter"]
    assert url_credentials("https://example.com/a@b and sqlite:////tmp/a@b") == []
    assert url_credentials("mail admin@example.com") == []


#: Texts as long as a crash log may be (200,000 characters), shaped against each pattern: a
#: masking that re-reads a run of spaces, ``@`` or quotes for each character is quadratic.
_HOSTILE_TEXTS = """
import sys
from core.redaction import redact, redact_argv, remember_url
n = 200_000
texts = ["password=x" + " " * n + "y", "--password=x" + "\\t" * n, "-p" + " " * n + "x",
         "postgresql://u:p" + "@" * n, "postgresql://u:p" + "@h " * (n // 3),
         "password='" + "\\\\'" * (n // 2), "password=a " * (n // 11),
         "postgresql://" + "a:" * (n // 2), "a&" * (n // 2) + "password=x" + "&a" * (n // 2)]
for text in texts:
    redact(text)
    redact_argv([text])
    remember_url(text)
print("done")
"""


def test_masking_a_long_hostile_text_finishes() -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _HOSTILE_TEXTS], capture_output=True,
                          text=True, timeout=30, check=False)
    assert proc.stdout.strip() == "done", proc.stderr[-2000:]


def _every_form(pw: Password) -> Iterator[str]:
    """The password in every form this file tests, and each key in other cases and in the
    letters the expressions' case-insensitive matching takes for its own (``ſ`` for ``s``,
    ``ı`` for ``i``, the Kelvin sign for ``k``)."""
    for url, _ in _urls(pw):
        yield url
        yield from (template.format(url=url) for template, _ in MESSAGES)
    for key in SECRET_KEYS:
        for spelt in (key, key.upper(), key.title(), key.replace("s", "ſ"),
                      key.replace("k", "\u212a"), key.replace("i", "ı")):
            yield f"host=h {spelt}={pw.text} port=1"
            yield f"--mysql-{spelt}={pw.text}"
    yield from (f"MYSQL_PWD={pw.text}", f"PGPASSWORD={pw.text}", f"-p{pw.text}",
                f"tpcc_start -h h -p {pw.text} -w 1")


@pytest.mark.parametrize("pw", PASSWORDS, ids=PASSWORD_IDS)
def test_text_the_quick_test_lets_through_holds_no_form(pw: Password) -> None:
    """``redact`` skips its expressions on text without a hint of a form (``_HINT_RE``): on
    every form and spelling its result is what the expressions alone give, and each
    form is seen."""
    for text in [*_every_form(pw), *CLEAN]:
        assert redact(text) == _masked(text, _text_spans(text)), text
        if _text_spans(text):
            assert _may_hold_a_form(text), text
