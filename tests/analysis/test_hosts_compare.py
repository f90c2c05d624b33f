"""compare() on an experiment spread over hosts: the host is a block, never a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from analysis.comparisons.compare import FASTER, compare
from core.errors import AnalysisError
from store.db import ResultsDB
from store.models import Experiment, Run, RunMetadata
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
    assert other["test_method"] == "t test of the contrast; guard: rank"
    assert "van Elteren's stratified rank test p =" in other["verdict_reason"]
    assert "2 hosts" in cmp.cells.attrs["hosts_note"]


def test_one_host_experiment_still_refuses_mixed_hosts(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    _spread_store(path, "one")
    with pytest.raises(AnalysisError, match="hostname differs"):
        compare(path, "farm")


def test_one_shared_host_says_what_the_blocked_interval_needs(tmp_path: Path) -> None:
    """A spread queue measured so far where only one host ran both cells: the reason says an
    interval needs a second host, and no "nan" reaches the text."""
    path = tmp_path / "r.sqlite"
    _spread_store(path, "spread")
    db = ResultsDB(path)
    with db.session() as s, s.begin():
        cell_of = dict(s.execute(select(Run.id, Run.cell_id)).all())
        first: dict[int, int] = {}
        for meta in s.scalars(select(RunMetadata).order_by(RunMetadata.run_id)):
            cell = cell_of[meta.run_id]
            # One run of each cell on host 1; the rest of each cell on a host of its own.
            meta.hostname = ("bench-host-1" if first.setdefault(cell, meta.run_id)
                             == meta.run_id else f"bench-host-cell-{cell}")
    db.dispose()
    other = compare(path, "farm").cells.query("not is_baseline").iloc[0]
    reason = other["verdict_reason"]
    assert "host blocks: 1 host," in reason and "needs 2 hosts" in reason, reason
    assert "nan" not in reason


def test_host_effect_by_one_way_anova() -> None:
    """A baseline run on three hosts (a study's host ids): the F test matches scipy's one-way
    ANOVA on the log values; a host 20 % faster shows; one run per host cannot be tested."""
    import math

    import numpy as np
    import pandas as pd
    from scipy import stats

    from analysis.comparisons.hosts import host_effect

    values = {"s8": [3400.0, 3460.0], "s9": [3480.0, 3420.0], "s10": [4150.0, 4190.0]}
    rows = [{"run_id": i, "cell_id": 1, "status": "done", "notpm": v, "hostname": "vm",
             "extra": {"host_id": h}}
            for i, (h, v) in enumerate((h, v) for h, vs in values.items() for v in vs)]
    rs = pd.DataFrame(rows)
    effect = host_effect(rs, 1)
    expected = stats.f_oneway(*(np.log(v) for v in values.values()))
    assert effect is not None and effect["df"] == (2, 3)
    assert effect["f"] == pytest.approx(expected.statistic) and effect["p"] < 0.05
    assert effect["p"] == pytest.approx(expected.pvalue)
    assert effect["per_host"]["s8"] == (2, 3430.0)
    once = rs.iloc[[0, 2, 4]]  # one run per host
    assert math.isnan(host_effect(once, 1)["p"])
    assert host_effect(rs.assign(extra=[{"host_id": "one"}] * len(rs)), 1) is None


def test_the_report_says_each_aa_cell_by_host(tmp_path: Path) -> None:
    """A study run over sessions (host ids, one hostname): the ranking section gives every
    A/A cell's runs per session and the host-effect test."""
    from analysis.report.build import build_report_model
    from analysis.report.render import sections_html

    path = tmp_path / "r.sqlite"
    cells = [SynthCell(knobs={"doublewrite": True}, notpm=40000, noise_pct=1.0),
             SynthCell(knobs={"doublewrite": False}, notpm=48000, noise_pct=1.0)]
    build_store(path, cells, name="sessions", repetitions=6, duration=300, n_counters=40)
    db = ResultsDB(path)
    with db.session() as s, s.begin():
        for i, meta in enumerate(s.scalars(select(RunMetadata).order_by(RunMetadata.run_id))):
            meta.extra = {**(meta.extra or {}), "host_id": f"vm-session-{8 + i % 3}"}
    db.dispose()
    text = sections_html(build_report_model(path, "sessions"))
    lines = [line for line in text.split("<p class='sub'>") if line.startswith("<b>By host</b>")]
    assert len(lines) == 2, lines  # both cells ran 6 times
    assert "vm-session-8: " in lines[0] and "(2 runs)" in lines[0]
    assert "one-way F test on log NOTPM: p = " in lines[0] and "(2, 3 df)" in lines[0]
