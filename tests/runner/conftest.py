"""Fixtures the runner's end-to-end tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.paths import tpcc_binary


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One work dir per test module: its 1-warehouse snapshot is loaded once and reused."""
    if not tpcc_binary().is_file():
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")
    return tmp_path_factory.mktemp("work")
