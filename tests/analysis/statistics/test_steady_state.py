"""MSER-5 truncation: a ramp then a plateau is cut at the ramp's end, white noise is not cut,
a series that drifts to its end never settles; and on a recorded run of the 2011 study."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.statistics.steady_state import BATCH, mser5, steady_start
from analysis.tables import frames


def test_ramp_then_plateau_is_cut_at_the_end_of_the_ramp() -> None:
    rng = np.random.default_rng(1)
    ramp = np.linspace(200, 1000, 40)
    plateau = 1000 + rng.normal(0, 30, 140)
    cut = mser5(np.r_[ramp, plateau])
    assert cut.reached and 30 <= cut.start <= 50 and cut.start % BATCH == 0


@pytest.mark.parametrize("seed", range(5))
def test_white_noise_is_kept_whole(seed: int) -> None:
    cut = mser5(np.random.default_rng(seed).normal(1000, 50, 180))
    assert cut.reached and cut.start <= 0.2 * 180


def test_a_drift_to_the_end_never_settles() -> None:
    rng = np.random.default_rng(2)
    cut = mser5(np.linspace(100, 2000, 180) + rng.normal(0, 10, 180))
    assert not cut.reached


def test_too_short_to_judge() -> None:
    assert mser5([1.0] * 12) == mser5([1.0] * 12) and not mser5([1.0] * 12).reached


def test_the_latest_series_decides_and_the_cap_holds() -> None:
    rng = np.random.default_rng(3)
    fast = np.r_[np.linspace(0, 1, 10), 1 + rng.normal(0, 0.02, 170)]
    slow = np.r_[np.linspace(0, 1, 60), 1 + rng.normal(0, 0.02, 120)]
    start, parts = steady_start({"throughput": fast, "checkpoint age": slow}, max_start=90)
    assert parts["checkpoint age"].start > parts["throughput"].start
    assert start == parts["checkpoint age"].start
    drifting = np.linspace(0, 1, 180)
    capped, _ = steady_start({"throughput": fast, "dirty %": drifting}, max_start=90)
    assert capped == 90


def test_a_recorded_run_of_the_2011_study(recorded_study: Path) -> None:
    """The doublewrite-off / max_dirty 70 cell climbs for its first ~2 minutes (checkpoint age
    from 20 % to 60 % of its maximum); its steady state starts after that climb. Five minutes
    give only 6 batches, so the climb reaches the half-way bound: the start is the cap."""
    samples = frames.samples(recorded_study, "stability-2011", run_ids=[5])
    s = samples[(samples["t"] > 0) & ~samples["missed"]]
    start, parts = steady_start({"checkpoint age": s["checkpoint_age_pct"].to_numpy(),
                                 "dirty %": s["dirty_pct"].to_numpy()}, max_start=len(s) // 2)
    assert parts["checkpoint age"].batches == 6
    assert parts["checkpoint age"].start >= 10  # the climb is cut, not kept
    assert 60 <= float(s["t"].iloc[start]) <= 180  # seconds after warmup
