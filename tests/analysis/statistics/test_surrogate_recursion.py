"""The AR(1) surrogates and memoized grids give exactly the figures the plain code gave.

``ar1_surrogates`` runs its recursion in its own loop or in ``scipy.signal.lfilter`` (once the
process's loop budget is spent) and the oscillation test
memoizes what depends only on the sampling times (issue 22, item 8: speed). Stability scores
must not move, so these compare bit for bit with the straightforward versions.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.statistics import _series, oscillation, shape
from analysis.statistics._series import ar1_surrogates, pair_indices, trend_projector


def _loop_surrogates(t: np.ndarray, dt: float, phi: float, count: int,
                     rng: np.random.Generator) -> np.ndarray:
    """The recursion as a Python loop over samples (the code lfilter replaced)."""
    n = t.size
    out = np.empty((count, n))
    eps = rng.standard_normal((count, n))
    out[:, 0] = eps[:, 0]
    gaps = np.diff(t) / dt
    rho = phi ** gaps if phi >= 0 else phi ** np.maximum(np.rint(gaps), 1)
    scale = np.sqrt(np.clip(1 - rho * rho, 0.0, None))
    for i in range(1, n):
        out[:, i] = rho[i - 1] * out[:, i - 1] + scale[i - 1] * eps[:, i]
    return out


@pytest.fixture(params=["loop", "lfilter"])
def recursion(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way ``ar1_surrogates`` runs its recursion: its own loop while the process's loop
    budget lasts (short series: no scipy.signal import), lfilter after."""
    monkeypatch.setattr(_series, "_loop_steps_left",
                        _series.LOOP_STEPS if request.param == "loop" else 0)
    return request.param


@pytest.mark.parametrize("phi", [-0.5, -0.2, 0.0, 0.3, 0.7, 0.95])
@pytest.mark.parametrize("gaps", ["even", "missing", "uneven"])
def test_surrogates_bit_identical_to_the_loop(phi: float, gaps: str, recursion: str) -> None:
    rs = np.random.default_rng(7)
    t = np.arange(120) * 10.0
    if gaps == "missing":  # missing intervals: stretches of different spacing
        t = np.delete(t, [5, 6, 40, 41, 42, 90])
    elif gaps == "uneven":  # a reporter that drifts by a few ms each interval
        t = t + rs.uniform(-0.02, 0.02, t.size)
    for count in (1, 19, 180):
        want = _loop_surrogates(t, 10.0, phi, count, np.random.default_rng(99))
        got = ar1_surrogates(t, 10.0, phi, count, np.random.default_rng(99))
        assert np.array_equal(got, want)


def test_the_loop_budget_is_spent_then_lfilter_takes_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_series, "_loop_steps_left", 150)
    t = np.arange(120) * 10.0
    first = ar1_surrogates(t, 10.0, 0.5, 3, np.random.default_rng(5))  # the loop: 119 steps
    assert _series._loop_steps_left == 31  # noqa: SLF001 - the budget is what is under test
    second = ar1_surrogates(t, 10.0, 0.5, 3, np.random.default_rng(5))  # 119 > 31: lfilter
    assert _series._loop_steps_left == 31  # noqa: SLF001
    assert np.array_equal(first, second)


def test_short_series(recursion: str) -> None:
    t = np.array([0.0, 10.0])
    want = _loop_surrogates(t, 10.0, 0.5, 4, np.random.default_rng(1))
    assert np.array_equal(ar1_surrogates(t, 10.0, 0.5, 4, np.random.default_rng(1)), want)


def test_memoized_grid_gives_the_same_answer_and_cannot_be_changed() -> None:
    rs = np.random.default_rng(3)
    t = np.arange(90) * 10.0
    y = 1000 + 80 * np.sin(2 * np.pi * t / 150) + rs.normal(0, 20, t.size)
    first = oscillation.detect_oscillation(y, t, interval_s=10.0)
    oscillation._grid.cache_clear()  # noqa: SLF001 - the memo is what is under test
    second = oscillation.detect_oscillation(y, t, interval_s=10.0)
    third = oscillation.detect_oscillation(y, t, interval_s=10.0)  # from the memo
    assert first == second == third
    assert first.oscillates
    freqs, proj, _ = oscillation._grid(t.tobytes(), 10.0)  # noqa: SLF001
    assert np.array_equal(proj, trend_projector(t))
    with pytest.raises(ValueError):
        proj[0, 0] = 1.0
    i, _ = pair_indices(5)
    with pytest.raises(ValueError):
        i[0] = 3


def _loop_longest_low(y: np.ndarray, t: np.ndarray, dt: float, med: float) -> float:
    """The longest low stretch as the loop it replaced counted it."""
    best = current = 0
    for i, flag in enumerate(y < shape.LOW_FRACTION * med):
        contiguous = i > 0 and (t[i] - t[i - 1]) <= 1.5 * dt
        current = (current + 1 if contiguous else 1) if flag else 0
        best = max(best, current)
    return float(best * dt)


def test_longest_low_stretch_counts_as_the_loop_did() -> None:
    rs = np.random.default_rng(11)
    for _ in range(2000):
        n = int(rs.integers(1, 60))
        # Low, high and borderline values; gaps of 1, 1.6 and 2 intervals end or keep stretches.
        y = rs.choice([100.0, 10.0, 79.9, 80.0, 50.0], size=n, p=[.45, .2, .1, .1, .15])
        t = np.cumsum(rs.choice([10.0, 10.0, 10.0, 16.0, 20.0], size=n))
        med = float(np.median(y))
        want = _loop_longest_low(y, t, 10.0, med)
        assert shape.longest_low_stretch_s(y, t, interval_s=10.0) == want
