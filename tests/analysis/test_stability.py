"""Stability figures on hand-made series with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import theilslopes

from analysis.statistics.shape import theil_sen_slope
from analysis.steadiness.stability import CV_WARN_PCT, stability


def test_flat_line_scores_100_with_zero_cv() -> None:
    st = stability(np.full(90, 1234.0), interval_s=10)
    assert st.score == 100.0
    assert st.cv_pct == 0.0
    assert st.holes_share == 0.0
    assert st.longest_low_s == 0.0
    assert st.trend_pct_per_min == 0.0
    assert math.isnan(st.period_s) and st.period_share == 0.0
    assert not st.oscillates
    assert st.warnings == ()


def test_holes_are_counted_and_lower_the_score() -> None:
    values = np.full(100, 1000.0)
    values[[10, 11, 12, 50, 90]] = 300.0  # 5 % holes, the longest 3 intervals long
    st = stability(values, interval_s=10)
    assert st.holes_share == pytest.approx(0.05)
    assert st.longest_low_s == 30.0
    assert st.median == 1000.0
    # Nearest rank: the 5th of 100 sorted values is the last hole — an interval that happened
    # (linear interpolation would invent one between 300 and 1000).
    assert st.p5 == 300.0
    assert st.score == pytest.approx(30.0)
    assert any("holes" in w for w in st.warnings)


def test_score_is_100_times_p5_over_median() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(5000, 400, 200)
    st = stability(values, interval_s=10)
    p5 = np.sort(values)[math.ceil(0.05 * values.size) - 1]  # nearest rank
    assert st.p5 == p5
    assert st.score == pytest.approx(100 * p5 / np.median(values))
    assert st.cv_pct == pytest.approx(100 * values.std(ddof=1) / values.mean())


@pytest.mark.parametrize(("period_s", "n"), [(60.0, 90), (120.0, 90), (200.0, 180), (120.0, 30)])
def test_sine_period_is_found(period_s: float, n: int) -> None:
    t = np.arange(n) * 10.0
    values = 1000 + 150 * np.sin(2 * np.pi * t / period_s)
    st = stability(values, interval_s=10)
    assert st.period_s == pytest.approx(period_s, rel=0.06)
    assert st.period_share > 0.8
    assert st.oscillates
    assert any("oscillates" in w for w in st.warnings)
    assert any("CV" in w for w in st.warnings)  # 150/1000 amplitude → CV ≈ 10.6 %


def test_noise_alone_does_not_oscillate() -> None:
    rng = np.random.default_rng(7)
    st = stability(1000 + rng.normal(0, 20, 90), interval_s=10)
    assert not st.oscillates
    assert st.cv_pct < CV_WARN_PCT
    assert st.warnings == ()


def test_sine_on_a_trend_still_finds_the_period() -> None:
    t = np.arange(120) * 10.0
    values = 1000 + 0.5 * t + 100 * np.sin(2 * np.pi * t / 100)
    st = stability(values, interval_s=10)
    assert st.oscillates
    assert st.period_s == pytest.approx(100, rel=0.05)
    assert st.period_share > 0.8


def test_linear_trend_is_theil_sen_slope_in_percent_of_median_per_minute() -> None:
    t = np.arange(90) * 10.0
    values = 1000 + 2.0 * t / 60  # +2 per minute
    st = stability(values, interval_s=10, times_s=t)
    assert st.trend_pct_per_min == pytest.approx(100 * 2.0 / np.median(values))
    assert not st.oscillates


def test_theil_sen_matches_scipy_and_ignores_outliers() -> None:
    rng = np.random.default_rng(11)
    t = np.arange(60) * 10.0
    y = 500 + 0.3 * t + rng.normal(0, 2, 60)
    y[[5, 30, 31]] = 0.0  # holes do not bend a robust slope
    assert theil_sen_slope(y, t) == pytest.approx(theilslopes(y, t).slope)
    assert theil_sen_slope(y, t) == pytest.approx(0.3, abs=0.02)


def test_high_cv_warns() -> None:
    values = np.tile([1000.0, 700.0, 1300.0, 1000.0, 600.0, 1400.0, 950.0], 10)
    rng = np.random.default_rng(5)
    rng.shuffle(values)
    st = stability(values, interval_s=10)
    assert st.cv_pct >= CV_WARN_PCT
    assert any(w.startswith("noisy") for w in st.warnings)


def test_nan_dropped_and_empty_series() -> None:
    st = stability([1000.0, math.nan, 1000.0, 1000.0], interval_s=10)
    assert st.n == 3 and st.score == 100.0
    empty = stability([], interval_s=10)
    assert empty.n == 0 and math.isnan(empty.score)
    assert empty.warnings


def test_zero_throughput_has_no_score() -> None:
    st = stability(np.zeros(20), interval_s=10)
    assert math.isnan(st.score)
    assert any("median is 0" in w for w in st.warnings)


def test_a_step_is_a_step_not_a_period() -> None:
    values = np.r_[np.full(45, 1000.0), np.full(45, 900.0)]
    values += np.random.default_rng(2).normal(0, 5, 90)
    st = stability(values, interval_s=10)
    assert not st.oscillates
    assert st.step_pct == pytest.approx(-10, abs=1)
    assert any("step" in w for w in st.warnings)
