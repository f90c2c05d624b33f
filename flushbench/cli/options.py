"""Options and consoles every verb group shares."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
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


@contextlib.contextmanager
def dry_run_progress(what: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr for preflight's dry runs (shown only on a terminal, and only
    when there are more than a few: most experiments need one or two)."""
    from rich.progress import Progress

    console = Console(stderr=True, emoji=False, highlight=False)
    if not console.is_terminal:
        yield lambda done, total: None
        return
    with Progress(console=console, transient=True) as bar:
        task = None

        def update(done: int, total: int) -> None:
            nonlocal task
            if total <= 3:
                return
            if task is None:
                task = bar.add_task(what, total=total)
            bar.update(task, completed=done)

        yield update


def stdout_console() -> Console:
    """A console for results; piped to a log file it keeps lines up to 160 columns wide."""
    # Piped to a log file, rich would wrap tables at 80 columns; a log line can be wider.
    return Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 160)
