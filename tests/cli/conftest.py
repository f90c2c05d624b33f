"""Running the real ``flushbench`` entry point in this process (its one error boundary)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from flushbench.cli import main

CliRun = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> CliRun:
    """``cli(args) -> (exit code, stdout, stderr)`` of ``flushbench ARGS``."""

    def run(args: list[str]) -> tuple[int, str, str]:
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

    return run
