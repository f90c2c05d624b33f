"""An A/A cell's variants recompute the published figures and differ exactly where they should."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.comparisons.aa_variants import aa_variants, drift
from analysis.tables import frames
from core.errors import AnalysisError
from store.db import ResultsDB
from tests.analysis.test_disturbed import store
from tests.support.recorded import recorded_copy
from tests.support.synthetic_store import SynthCell, build_store


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_copy("stability-2011", tmp_path_factory)


def test_the_declared_window_is_the_published_noise_floor(study: Path) -> None:
    declared, no_detection, short, steady = aa_variants(study, "stability-2011",
                                                        windows_s=(60.0,))
    # docs/study-2011: the baseline's five window means, CV 12.5 %.
    assert [round(x) for x in declared.notpm] == [7871, 5758, 7710, 7921, 7808]
    assert round(declared.cv_pct, 1) == 12.5
    assert no_detection.notpm == declared.notpm  # the 2011 study ran without detection
    assert 0 < declared.mde_pct(5, 5) < declared.mde_pct(3, 3)
    # The last minute of each run, by hand from its intervals.
    ivl = frames.intervals(study, run_ids=list(short.run_ids), detail=False)
    for run_id, value in zip(short.run_ids, short.notpm, strict=True):
        last = ivl[(ivl["run_id"] == run_id) & ivl["in_window"]].sort_values("t").tail(6)
        assert value == pytest.approx(last["primary_count"].sum() * 60 / last["interval_s"].sum())
    assert steady.n == declared.n and steady.notpm != declared.notpm


def test_detection_leaves_the_disturbed_run_out(tmp_path: Path) -> None:
    db, disturbed = store(tmp_path, "exclude")
    declared, no_detection, *_ = aa_variants(db, "policy")
    assert disturbed not in declared.run_ids and declared.n == 4
    assert disturbed in no_detection.run_ids and no_detection.n == 5
    rs = frames.run_summary(db, "policy").set_index("run_id")
    assert np.allclose(declared.notpm, rs.loc[list(declared.run_ids), "notpm"])
    d = drift(db, "policy", declared)
    assert -1 <= d["rho"] <= 1 and d["detrended_cv_pct"] >= 0


def test_too_few_runs_or_no_such_cell_say_so(study: Path, tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "two.sqlite")
    build_store(db, [SynthCell(knobs={"doublewrite": True}, notpm=8000)], name="two",
                repetitions=2, warmup=10, duration=120, n_counters=5)
    with pytest.raises(AnalysisError, match="2 counted run"):
        aa_variants(db, "two")
    with pytest.raises(AnalysisError, match="no cell 'nope'"):
        aa_variants(study, "stability-2011", "nope")
