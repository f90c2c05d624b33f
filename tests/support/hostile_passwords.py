"""Passwords spelled to break a masking: one per character a URL or a command line treats
specially, plus non-ASCII, percent-escaped and long ones.

Each password starts with :data:`LEFT` and ends with :data:`RIGHT`, two strings found nowhere
else, so a masking that cuts the password short (shows the part after a space, a ``?`` or an
``@``) is caught by looking for either end, not only for the whole password.
"""

from __future__ import annotations

import json
from typing import NamedTuple

LEFT = "Kx9vLq"
RIGHT = "Qm4tRz"


class Password(NamedTuple):
    """One hostile password: a test id, the password as written, and what must never show."""

    id: str
    text: str

    def fragments(self) -> list[str]:
        """The password and each of its two ends (a partial leak shows one of them)."""
        return [self.text, LEFT, RIGHT]

    def leaked_in(self, data: str | bytes) -> list[str]:
        """The fragments present in ``data`` (text, or raw bytes of a file or a database).

        Bytes are searched for the UTF-8 form and for JSON's ``\\uXXXX`` escaping of it.
        """
        if isinstance(data, bytes):
            return [f for f in self.fragments()
                    if f.encode() in data or json.dumps(f)[1:-1].encode() in data]
        return [f for f in self.fragments() if f in data]


def _middle(ident: str, middle: str) -> Password:
    return Password(ident, f"{LEFT}{middle}{RIGHT}")


PASSWORDS = [
    _middle("space", "p w"),
    _middle("single-quote", "p'w"),
    _middle("double-quote", 'p"w'),
    _middle("question-mark", "p?w"),
    _middle("hash", "p#w"),
    _middle("at", "p@w"),
    _middle("unicode", "pässwörd🔑"),
    _middle("percent-escape", "p%40w"),
    _middle("semicolon", "p;w"),
    _middle("ampersand", "p&w"),
    _middle("slash", "p/w"),
    _middle("colon", "p:w"),
    _middle("equals", "p=w"),
    _middle("comma", "p,w"),
    _middle("backslash", "p\\w"),
    _middle("long", "p w?#@'\";/" * 30),
    _middle("long-plain", "x" * 400),
]
PASSWORD_IDS = [p.id for p in PASSWORDS]
