"""Fixtures of the CLI tests: the in-process ``cli`` (one definition, in
:mod:`tests.support.cli_runner`, shared by every test folder) and a case folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_runner import CliRun, cli  # noqa: F401 - re-exported for the CLI tests


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
