"""Running the real ``flushbench`` entry point in this process (its one error boundary)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

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


@pytest.fixture
def case_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh folder that is also the current directory, work dir and default results path
    (the hostile-input tables: whatever a case writes shows up here)."""
    folder = tmp_path / "case"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("FLUSHBENCH_WORK", str(folder / "work"))
    monkeypatch.delenv("FLUSHBENCH_DB", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return folder
