"""compare() on an experiment spread over hosts: the host is a block, never a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from analysis.compare import FASTER, compare
from flushbench.errors import AnalysisError
from store.db import ResultsDB
from store.models import Experiment, RunMetadata
from tests.support.synthetic_store import SynthCell, build_store


def _spread_store(path: Path, placement: str) -> None:
    cells = [SynthCell(knobs={"doublewrite": True}, notpm=40000, noise_pct=1.0),
             SynthCell(knobs={"doublewrite": False}, notpm=48000, noise_pct=1.0)]
    build_store(path, cells, name="farm", repetitions=6, duration=300, n_counters=40)
    db = ResultsDB(path)
    with db.session() as s, s.begin():
        exp = s.scalars(select(Experiment)).one()
        exp.spec = {**exp.spec, "placement": placement}
        # Half of every cell's runs ran on a second host.
        for i, meta in enumerate(s.scalars(select(RunMetadata).order_by(RunMetadata.run_id))):
            if i % 2:
                meta.hostname = "bench-host-2"
    db.dispose()


def test_spread_experiment_compares_within_hosts(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    _spread_store(path, "spread")
    cmp = compare(path, "farm")
    other = cmp.cells[~cmp.cells["is_baseline"]].iloc[0]
    assert other["verdict"] == FASTER
    assert "host blocks: 2 hosts" in other["verdict_reason"]
    assert other["test_method"].startswith("van Elteren")
    assert "2 hosts" in cmp.cells.attrs["hosts_note"]


def test_one_host_experiment_still_refuses_mixed_hosts(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    _spread_store(path, "one")
    with pytest.raises(AnalysisError, match="hostname differs"):
        compare(path, "farm")
