"""Running the real ``flushbench`` entry point in this process (its one error boundary).

The root ``tests/conftest.py`` makes the ``cli`` fixture available to every test folder.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from flushbench.cli import main

CliRun = Callable[[list[str]], tuple[int, str, str]]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``flushbench ARGS`` in this process: (exit code, stdout, stderr)."""
    argv = sys.argv
    sys.argv = ["flushbench", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> CliRun:
    """``cli(args) -> (exit code, stdout, stderr)`` of ``flushbench ARGS``."""
    return lambda args: run_cli(args, capsys)
