"""Every verb's ``--help`` reads as flowing text at 80 columns and wider (issue 54).

Each command and group of the real app prints its help in a terminal of ``COLUMNS`` columns;
no description line may end where the docstring's source had a line break mid-sentence: a
line ending in a lowercase word, the next line of the same cell starting with a lowercase
word that would have fitted on it. (Rich wraps greedily, so a word that fits is never pushed
to the next line by rich itself.)
"""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from flushbench.cli import build_app
from flushbench.cli.help_text import flow_help

WIDTHS = (80, 120)
#: The panel's border and the characters rich draws around a cell.
_BORDER = "│┃"


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path under ``command`` (a click command; the root's empty path
    included)."""
    out = [prefix]
    if hasattr(command, "commands"):  # a group
        for name, sub in command.commands.items():
            out += _paths(sub, (*prefix, name))
    return out


PATHS = _paths(typer.main.get_command(build_app()))


def broken_lines(text: str) -> list[str]:
    """Pairs of lines where a sentence was broken though the next word fitted."""
    found = []
    lines = text.splitlines()
    for first, second in zip(lines, lines[1:], strict=False):
        inner_width = len(first) - 1  # rich pads the help's text one column on the right
        body = first.rstrip()
        if body.endswith(tuple(_BORDER)):
            body = body[:-1].rstrip()
            inner_width = len(first.rstrip()) - 2  # a space before the closing border
        word_start = len(second) - len(second.lstrip(" " + _BORDER))
        rest = second[word_start:].split(" ", 1)[0]
        # The second line continues the same cell: it starts where text already ran above.
        continues = word_start < len(body) and body[word_start - 1:word_start] in (" ", "")
        if (continues and body and body[-1].islower() and rest[:1].islower()
                and len(body) + 1 + len(rest) <= inner_width):
            found.append(f"{first}\n{second}")
    return found


def test_broken_lines_finds_a_source_break() -> None:
    """The check itself: a docstring's kept line break is found, flowing text is not."""
    kept = ("│ add    Find mysqld, check that they                                 │\n"
            "│        work here (architecture).                                    │")
    assert broken_lines(kept)
    flowing = ("│ add    Find mysqld, check that they work here (architecture), and a │\n"
               "│        datadir with system tables.                                  │")
    assert broken_lines(flowing) == []


def test_flow_help_keeps_paragraphs_and_lists() -> None:
    text = "One sentence\nbroken in the source.\n\nA second\nparagraph.\n\n- a list\n- kept"
    assert flow_help(text) == ("One sentence broken in the source.\n\nA second paragraph."
                               "\n\n- a list\n- kept")


@pytest.mark.parametrize("width", WIDTHS)
def test_every_help_flows(width: int) -> None:
    runner = CliRunner()
    app = build_app()
    problems = []
    for path in PATHS:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(width),
                                                             "NO_COLOR": "1"})
        assert result.exit_code == 0, (path, result.output)
        assert max(len(line) for line in result.output.splitlines()) <= width, path
        problems += [f"flushbench {' '.join(path)} --help:\n{p}"
                     for p in broken_lines(result.output)]
    assert len(PATHS) > 20
    assert not problems, "\n\n".join(problems)
