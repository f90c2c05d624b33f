"""The one way user text reaches the terminal: literally, redacted, controls shown escaped.

Text a user wrote (paths, keys, values, experiment names, cell labels, errors that quote them)
must print as written: ``[/b]`` in a path is not a closing tag (rich would raise), ``[dim]``
is not a style (it would vanish), ``:x:`` is not an emoji (the message would name a key that
is not in the file), and an escape sequence in a key must not reach the terminal raw (it could
recolour or retitle it). Every writer of user text goes through :func:`shown` (inside markup
the verb writes itself) or :func:`literal` (a whole line or a table cell), and every console
is made by :func:`make_console` (no emoji codes, no highlighting).

Every console takes the terminal's real width (``$COLUMNS``, else the tty's, else rich's 80):
tables shrink to it (:mod:`flushbench.cli.tables`) and free text wraps to it through
:func:`para`, continuation lines indented under the first word, so every verb fits an 80-column
terminal.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from core.redaction import redact

#: C0 controls except tab and newline, DEL, and C1 controls: shown as ``\x1b``, never sent.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: Any) -> str:
    """``text`` as a string with credentials masked and control characters escaped."""
    return _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", redact(str(text)))


def shown(text: Any) -> str:
    """User text to embed in a markup string the verb writes (brackets escaped)."""
    return escape(printable(text))


def literal(text: Any, style: str = "") -> Text:
    """User text as a rich Text: never parsed as markup or emoji codes."""
    return Text(printable(text), style=style)


def make_console(*, stderr: bool = False, width: int | None = None,
                 markup: bool = True) -> Console:
    """A console that prints no emoji for ``:codes:`` and highlights nothing by guesswork.

    ``markup=False`` for a console that only ever prints plain lines (every ``[`` literal).
    """
    return Console(stderr=stderr, highlight=False, emoji=False, width=width, markup=markup)


def para(console: Console, text: str | Text, *, hang: int = 2) -> None:
    """Print a paragraph wrapped to the console's width: ``text`` is markup the verb wrote
    (user parts through :func:`shown`) or a :class:`~rich.text.Text`; its leading spaces
    indent every line, and continuation lines ``hang`` more (``  C4: …`` reads as one item).
    On a console without markup a string prints literally."""
    if isinstance(text, str):
        text = console.render_str(text) if console._markup else literal(text)
    for line in hanging(console, text, console.width, hang=hang):
        console.print(line, soft_wrap=True)


def hanging(console: Console, text: Text, width: int, *, hang: int = 2) -> list[Text]:
    """``text`` wrapped to ``width`` columns as lines: its leading spaces indent every line,
    continuation lines (and lines after a newline) ``hang`` more; a word longer than a line
    folds rather than being cut."""
    plain = text.plain
    lead = len(plain) - len(plain.lstrip(" "))
    body = text[lead:]
    lines = body.wrap(console, max(width - lead - hang, 20), overflow="fold")
    out = []
    for i, line in enumerate(lines):
        line.rstrip()
        out.append(Text(" " * (lead + (hang if i else 0))) + line)
    return out


def say(console: Console, text: Any, style: str = "") -> None:
    """Print one line of user text literally; the error boundary's printing never fails."""
    try:
        console.print(literal(text, style), soft_wrap=True)
    except Exception:  # noqa: BLE001 - e.g. a closed stream: fall back to the raw stream
        stream = sys.stderr if console.stderr else sys.stdout
        try:
            stream.write(printable(text) + "\n")
        except Exception:  # noqa: BLE001 - nothing left to report to
            pass
