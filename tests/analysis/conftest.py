"""Shared synthetic stores for the analysis tests (built once per session: seconds, not minutes),
and the notebook tests' kernel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store.db import ResultsDB
from tests.support.notebook_kernel import NotebookKernel, shared_kernel
from tests.support.synthetic_store import SynthCell, SynthMeta, build_store, study_cells


@pytest.fixture(scope="session")
def study_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2×3 doublewrite × max_dirty_pages_pct study, 4 repetitions, with known shapes.

    Cell 0 (baseline) is doublewrite=on/50; doublewrite=off/60 is flat and fastest. One run of
    the last cell failed, one repetition of cell 1 was retried (attempt 2 supersedes 1), and
    every 17th sample is missed.
    """
    path = tmp_path_factory.mktemp("study") / "results.sqlite"
    cells = study_cells()
    cells[1].retried_repetitions = (2,)
    cells[5].failed_repetitions = (3,)
    build_store(path, cells, name="study", repetitions=4, warmup=60, duration=600,
                missed_sample_every=17, seed=1)
    return path


@pytest.fixture(scope="session")
def mixed_meta_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two cells whose runs ran on different hosts and server versions."""
    path = tmp_path_factory.mktemp("mixed") / "results.sqlite"
    cells = [SynthCell(knobs={"doublewrite": True}), SynthCell(knobs={"doublewrite": False})]
    build_store(path, cells, name="mixed", repetitions=3, duration=300, n_counters=60,
                meta_by_cell={1: SynthMeta(hostname="other-host", server_version="10.11.9")})
    return path


@pytest.fixture()
def db_path(tmp_path: Path) -> Path:
    """An empty, migrated results database."""
    path = tmp_path / "results.sqlite"
    ResultsDB(path).dispose()
    return path


@pytest.fixture(scope="module")
def kernel() -> Iterator[NotebookKernel]:
    """One kernel for a test module's notebook runs (tests.support.notebook_kernel)."""
    yield from shared_kernel()
