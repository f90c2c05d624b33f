"""Options and consoles every verb group shares."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="FLUSHBENCH_DB",
        help="Results database: a path or SQLAlchemy URL (default results/flushbench.sqlite).",
    ),
]
WorkOption = Annotated[
    Path | None,
    typer.Option(
        "--work", help="Where datasets and run directories go (default $FLUSHBENCH_WORK or ./work)."
    ),
]


def stdout_console() -> Console:
    """A console for results; piped to a log file it keeps lines up to 160 columns wide."""
    # Piped to a log file, rich would wrap tables at 80 columns; a log line can be wider.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)
