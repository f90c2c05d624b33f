"""Flush cycles (analysis/statistics/cycles.py): the period found, its false alarms on white
noise, and whole-cycle windows (docs/statistics.md, "Flush cycles and the window")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.statistics.cycles import (
    LEVEL,
    cycles_held,
    detect_cycle,
    is_whole,
    whole_cycle_window,
    window_means,
)

DT = 10.0


def _stalls(t: np.ndarray, period: float, phase: float) -> np.ndarray:
    """A flush cycle as the generations study's MySQL 5.5 shows it: a burst, then a storm
    with two intervals of no New-Order, every ``period`` seconds."""
    x = ((t + phase) % period) / period
    return np.where(x < 0.2, 0.0, np.where(x < 0.45, 1.6, 1.0))


@pytest.mark.parametrize("period", [60.0, 90.0, 120.0, 125.0, 140.0])
@pytest.mark.parametrize("shape", ["sine", "stalls"])
def test_a_known_period_in_noise_is_found_within_10_percent(period: float, shape: str) -> None:
    rng = np.random.default_rng(int(period) + len(shape))
    t = np.arange(1, 91) * DT  # a 15-minute run of 10 s intervals
    found = 0
    for _ in range(20):
        phase = rng.uniform(0, period)
        wave = (1 + 0.3 * np.sin(2 * np.pi * (t + phase) / period) if shape == "sine"
                else _stalls(t, period, phase))
        y = 3000 * wave + 3000 * 0.1 * rng.standard_normal(t.size)
        c = detect_cycle(y, t, interval_s=DT)
        found += c.periodic and abs(c.period_s - period) <= 0.1 * period
    assert found == 20, f"{found} of 20 found at {period} ± 10 %"


def test_a_short_run_of_the_generations_study_shape_is_found() -> None:
    """Six minutes of 10 s intervals hold three 120 s cycles: enough to call one."""
    rng = np.random.default_rng(51)
    t = np.arange(1, 37) * DT
    y = 3600 * _stalls(t, 120.0, 40.0) + 300 * rng.standard_normal(t.size)
    c = detect_cycle(y, t, interval_s=DT)
    assert c.periodic and 108 <= c.period_s <= 132, c


@pytest.mark.parametrize("n", [36, 90])
def test_white_noise_is_called_periodic_in_at_most_5_percent(n: int) -> None:
    rng = np.random.default_rng(1000 + n)
    series = 400
    calls = sum(detect_cycle(1000 * (1 + 0.05 * rng.standard_normal(n)),
                             interval_s=DT).periodic for _ in range(series))
    assert calls / series <= 0.05, f"{calls} of {series} white-noise series called periodic"
    # The level is what it says: a test at 2 % should not be far below it either (it would
    # then be throwing power away) — nor are any calls a fluke of one seed.
    assert LEVEL == 0.02


def test_red_noise_and_a_step_are_not_cycles() -> None:
    rng = np.random.default_rng(7)
    calls = 0
    for _ in range(100):
        e = np.empty(60)
        e[0] = rng.standard_normal()
        for i in range(1, 60):
            e[i] = 0.7 * e[i - 1] + math.sqrt(1 - 0.49) * rng.standard_normal()
        calls += detect_cycle(1000 * (1 + 0.05 * e), interval_s=DT).periodic
    assert calls <= 5
    step = np.r_[np.full(30, 1000.0), np.full(30, 900.0)] + rng.standard_normal(60)
    assert not detect_cycle(step, interval_s=DT).periodic


@pytest.mark.parametrize("period", [60.0, 120.0, 150.0])
def test_whole_cycle_windows_hold_the_true_mean_at_any_phase(period: float) -> None:
    """A 10-minute window cut to whole cycles: its mean is within 2 % of the true mean
    wherever the cycle's phase falls — where a 1.5-cycle window misses by far more."""
    t = np.arange(1, 181) * DT
    counts = np.ones_like(t)
    secs = np.full_like(t, DT)
    worst_whole = worst_cut = 0.0
    for phase in np.arange(0, period, DT):
        rate = 1 + 0.5 * np.sin(2 * np.pi * (t - DT / 2 + phase) / period)
        counts = rate * DT
        start, end = 300.0, 900.0 + period / 2  # a window of a non-whole number of cycles
        ws, we = whole_cycle_window(start, end, period, DT)
        assert is_whole(cycles_held(we - ws, period))
        whole = window_means(t, counts, secs, [ws], we - ws)[0]
        worst_whole = max(worst_whole, abs(whole - 1.0))
        short = window_means(t, counts, secs, [start], 1.5 * period)[0]
        worst_cut = max(worst_cut, abs(short - 1.0))
    assert worst_whole <= 0.02, worst_whole
    assert worst_cut > 0.05, worst_cut  # the test would see a phase effect


def test_whole_cycle_window_rules() -> None:
    assert whole_cycle_window(180, 360, 120, 10) == (180, 300)
    assert whole_cycle_window(180, 360, math.nan, 10) == (180, 360)  # no period: as set
    assert whole_cycle_window(180, 260, 120, 10) == (180, 260)  # not one cycle: as set
    assert whole_cycle_window(0, 600, 125, 10) == (0, 500)  # 4 cycles, on the interval grid
    assert not is_whole(1.5) and is_whole(2.05) and not is_whole(0.5)
    assert math.isnan(cycles_held(180, math.nan))


def test_window_means_follow_the_analysis_window_flags() -> None:
    t = np.arange(1, 11) * DT
    counts = np.arange(1, 11, dtype=float)
    means = window_means(t, counts, np.full(10, DT), [0.0, 50.0, 90.0, 200.0], 50.0)
    # (0, 50] holds intervals ending at 10…50 (midpoints 5…45): counts 1…5.
    assert means[0] == pytest.approx(15 / 50)
    assert means[1] == pytest.approx(40 / 50)
    assert means[2] == pytest.approx(10 / 10)
    assert math.isnan(means[3])
