"""A fixed-rate experiment's p99 verdicts judged over the plausible window starts
(``analysis/response/latency_windows.py``): the window moved as a whole, the ratio's range
over the starts in each compared row's reason, and nothing changed for a closed loop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.compare import compare
from analysis.reading.window_cycles import RunCycles
from analysis.response import latency, latency_windows
from tests.support.synthetic_store import SynthCell, build_store, fixed_rate_store


def _cycles(interval_s: float = 10.0) -> dict[int, RunCycles]:
    """Cycle figures of run 1 as far as moving its window needs them (its report interval)."""
    rc = RunCycles.__new__(RunCycles)
    object.__setattr__(rc, "interval_s", interval_s)
    return {1: rc}


def _intervals() -> pd.DataFrame:
    """Run 1: a warm-up interval and five measured ones, the last three in its window; run 2
    (no cycle figures) the same."""
    phase = ["warmup"] + ["measure"] * 5
    window = [False, False, False, True, True, True]
    return pd.DataFrame({"run_id": [1] * 6 + [2] * 6, "phase": phase * 2,
                         "in_window": window * 2})


def test_a_window_moves_whole_and_only_where_the_measurement_lets_it() -> None:
    frame = _intervals()
    same = latency_windows.moved_window(frame, _cycles(), 0.0)
    assert same is not None and list(same["in_window"]) == list(frame["in_window"])
    earlier = latency_windows.moved_window(frame, _cycles(), -10.0)
    assert earlier is not None
    # Run 1 one interval earlier at the same length; run 2, without cycle figures, unmoved.
    assert list(earlier["in_window"][:6]) == [False, False, True, True, True, False]
    assert list(earlier["in_window"][6:]) == [False, False, False, True, True, True]
    # Two intervals earlier would start in the warm-up; one later, past the run's end.
    assert latency_windows.moved_window(frame, _cycles(), -30.0) is None
    assert latency_windows.moved_window(frame, _cycles(), 10.0) is None


def test_the_starts_are_thinned_with_both_ends_and_the_stored_window_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    every = np.arange(-170.0, 10.0, 10.0)  # the throughput verdicts' 18 starts
    monkeypatch.setattr(latency_windows, "window_offsets", lambda cycles, ids: every)
    got = latency_windows.offsets({}, [])
    assert got[0] == -170 and got[-1] == 0 and 0.0 in got
    assert got.size <= latency_windows.MAX_STARTS and set(got) <= set(every)


@pytest.fixture(scope="module")
def fixed_rate_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two cells of four runs each at a fixed rate, the second's transactions 1.6× slower."""
    return fixed_rate_store(tmp_path_factory.mktemp("windows") / "r.sqlite")


def test_a_fixed_rate_rows_p99_verdict_names_its_range_over_the_starts(
        fixed_rate_db: Path) -> None:
    cmp = compare(fixed_rate_db, "fixed")
    lat = latency.load(fixed_rate_db, cmp.frames)
    stored = lat.cells.copy()
    got = latency_windows.with_starts(fixed_rate_db, cmp.frames, lat, cmp.cycles)
    slow = got.cells.index[1]
    low, high = got.cells.at[slow, "window_ratio_low"], got.cells.at[slow, "window_ratio_high"]
    # The stored window's ratio is one of those judged; 1.6× slower is higher at every start.
    assert low <= stored.at[slow, "ratio"] <= high and low > 1
    assert got.cells.at[slow, "verdict"] == latency.HIGHER
    assert not got.cells.at[slow, "window_dependent"]
    reason = got.cells.at[slow, "verdict_reason"]
    assert reason.startswith(stored.at[slow, "verdict_reason"])
    assert f"ratio {low:.2f}–{high:.2f})" in reason and "over window starts -" in reason
    # The baseline is left as it was.
    base = got.cells.index[0]
    assert got.cells.at[base, "verdict_reason"] == stored.at[base, "verdict_reason"]


def test_a_closed_loop_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    build_store(path, [SynthCell(knobs={"doublewrite": True}, notpm=2400),
                       SynthCell(knobs={"doublewrite": False}, notpm=2400, latency_scale=1.6)],
                name="closed", repetitions=3, warmup=30, duration=300, n_counters=40, seed=7)
    cmp = compare(path, "closed")
    lat = latency.load(path, cmp.frames)
    before = lat.cells.copy()
    latency_windows.with_starts(path, cmp.frames, lat, cmp.cycles)
    pd.testing.assert_frame_equal(lat.cells, before)

