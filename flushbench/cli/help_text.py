"""Every verb's ``--help`` as flowing text: the docstrings' paragraphs rewrapped.

Typer's rich help keeps a docstring's own line breaks inside its panels, so a description
wrapped at 100 columns in the source breaks mid-sentence at 80 ("…check that they" / "work
here…"). :func:`flow_help` joins each paragraph's lines (blank-line paragraph breaks kept;
a paragraph that is a list or indented block keeps its lines) and :func:`flow_app` applies it
to every command and group of an app once the verbs are registered, so rich wraps the text
to the terminal's width.
"""

from __future__ import annotations

import inspect
import re

import typer

#: A line that starts a list item or an indented block: its paragraph keeps its breaks.
_KEEP_LINES = re.compile(r"^(\s+\S|[-*•]\s|\d+[.)]\s|\x08)")


def flow_help(text: str | None) -> str | None:
    """``text`` (a docstring) dedented, each paragraph on one line; paragraphs stay separated
    by a blank line and a paragraph whose lines are list items or indented keeps its lines.
    Anything after a form feed (click's "hide the rest") is kept as it is."""
    if not text:
        return text
    shown, cut, hidden = inspect.cleandoc(text).partition("\f")
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", shown.strip()):
        lines = paragraph.split("\n")
        if any(_KEEP_LINES.match(line) for line in lines):
            paragraphs.append(paragraph)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs) + cut + hidden


def flow_app(app: typer.Typer) -> None:
    """Rewrap the help of every command and group of ``app`` and its sub-apps (in place;
    idempotent)."""
    for command in app.registered_commands:
        command.help = flow_help(command.help or inspect.getdoc(command.callback))
    for group in app.registered_groups:
        sub = group.typer_instance
        if sub is None:
            continue
        if group.help is not None:
            group.help = flow_help(group.help)
        if sub.info.help is not None:
            sub.info.help = flow_help(sub.info.help)
        if sub.registered_callback is not None:
            sub.registered_callback.help = flow_help(
                sub.registered_callback.help or inspect.getdoc(sub.registered_callback.callback))
        flow_app(sub)
    if app.registered_callback is not None:
        app.registered_callback.help = flow_help(
            app.registered_callback.help or inspect.getdoc(app.registered_callback.callback))
