"""Running the real ``flushbench`` entry point in this process (its one error boundary).

The root ``tests/conftest.py`` makes the ``cli`` fixture available to every test folder.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import typer
import typer.main

from flushbench.cli import main

CliRun = Callable[[list[str]], tuple[int, str, str]]

#: The click command tree typer built from each app (``typer.main.get_command``).
_COMMAND_TREES: dict[int, tuple[typer.Typer, Any]] = {}


@contextmanager
def _one_command_tree() -> Iterator[None]:
    """Every ``main()`` in this process reuses the click tree typer first built from the app.

    typer rebuilds the tree at each call of the app (every verb's signature and type hints:
    ≈ 40 ms, most of a command that fails at once), which a real process does once; the suite
    runs thousands of commands in-process. The tree is the same each time (the verbs are
    registered, and their help made to flow, once and idempotently); ``main()``, its error
    boundary and click's parsing of each command's arguments still run every time.
    """
    build = typer.main.get_command

    def built_once(app: typer.Typer) -> Any:
        kept = _COMMAND_TREES.get(id(app))
        if kept is None or kept[0] is not app:
            kept = _COMMAND_TREES[id(app)] = (app, build(app))
        return kept[1]

    typer.main.get_command = built_once
    try:
        yield
    finally:
        typer.main.get_command = build


def exit_code_of(args: list[str]) -> int:
    """``flushbench ARGS`` in this process, through the console script's entry point (its
    error boundary included): the exit code. Its output goes where this process's does."""
    argv = sys.argv
    sys.argv = ["flushbench", *args]
    try:
        with _one_command_tree():
            main()
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``flushbench ARGS`` in this process: (exit code, stdout, stderr)."""
    code = exit_code_of(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> CliRun:
    """``cli(args) -> (exit code, stdout, stderr)`` of ``flushbench ARGS``."""
    return lambda args: run_cli(args, capsys)
