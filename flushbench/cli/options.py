"""Options and consoles every verb group shares."""

from __future__ import annotations

import contextlib
import os
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
#: Ids are 64-bit signed integers (SQL BIGINT) in every database flushbench uses: a larger
#: number names no row, and handed to a query it overflows the driver instead.
MAX_ID = 2**63 - 1


def check_run_id(run_id: int, *, where: str = "runs",
                 fix: str = "list runs with `flushbench status`") -> int:
    """``run_id`` if a database can hold it, else one AnalysisError saying the range."""
    from core.errors import AnalysisError

    if not 1 <= run_id <= MAX_ID:
        raise AnalysisError(f"no run {run_id}: run ids are between 1 and {MAX_ID}",
                            where=where, fix=fix)
    return run_id


def check_experiment_ref(name_or_id: str) -> str:
    """An experiment name or id as given, refusing an id no database can hold (>= 2**63)."""
    from core.errors import AnalysisError

    text = name_or_id.strip()
    if text.isdigit() and int(text) > MAX_ID:
        raise AnalysisError(f"no experiment {text[:30]}: ids are between 1 and {MAX_ID}",
                            where="experiments", fix="list experiments with `flushbench status`")
    return name_or_id


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
    """A console for results at the terminal's width ($COLUMNS, else the tty's); piped to a
    log file with no $COLUMNS it keeps lines up to 160 columns wide."""
    # Piped to a log file, rich would wrap tables at 80 columns; a log line can be wider.
    # $COLUMNS is the user saying how wide the output may be: it wins, tty or not.
    piped = not sys.stdout.isatty() and not os.environ.get("COLUMNS", "").strip().isdigit()
    return Console(highlight=False, emoji=False, width=160 if piped else None)


#: ``--help``'s words for typer's Python type names (``<int>`` reads INTEGER).
_TYPE_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH",
               "file": "PATH", "directory": "FOLDER", "Path": "PATH"}


def help_type(param: typer.core.TyperArgument | typer.core.TyperOption,
              ctx: object) -> str | None:
    """The type ``--help`` shows after an option or argument, in words: nothing for a flag,
    ``TEXT``, ``INTEGER``, ``PATH``, ``a|b`` for choices, ``NAME…`` for a repeatable one
    (typer itself prints ``<bool>`` and ``<list[str]>``); an explicit metavar wins."""
    if param.metavar is not None:
        return param.metavar
    if getattr(param, "is_flag", False):
        return None
    label = param.display_type(ctx).strip("<>")  # type: ignore[arg-type]
    if label == "bool":
        return None
    many = label.startswith("list[") or param.nargs != 1
    label = label.removeprefix("list[").removesuffix("]")
    if "|" not in label:
        label = _TYPE_WORDS.get(label, label.upper())
    return label + "…" if many else label


def use_help_words() -> None:
    """Make every verb's ``--help`` show :func:`help_type`'s words (called once, by
    :func:`flushbench.cli.build_app`)."""
    from typer import core

    core.TyperArgument.display_type_rich = help_type  # type: ignore[method-assign]
    core.TyperOption.display_type_rich = help_type  # type: ignore[method-assign]
