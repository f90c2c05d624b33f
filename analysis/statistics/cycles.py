"""Flush cycles and the measurement window: a run's period, and what a window makes of it.

A flush cycle (a burst, then a flush storm with intervals of no New-Order) is not a
sinusoid: most of its power sits in the fundamental and the first harmonic. The detector
here is the oscillation test of :mod:`.oscillation` widened to that shape and run over a
run's **whole measured series** (a 3-minute window holds 1.5 cycles of a 2-minute period;
the oscillation test asks for two cycles inside the window and so cannot see it):

1. The series (real timestamps, NaN dropped) is detrended by least squares.
2. At each trial frequency ``f`` — from two full cycles per series to four intervals per
   period — sines and cosines at ``f`` and ``2f`` are fitted by least squares; the statistic
   is the largest share of the detrended variance such a two-harmonic waveform explains.
   A waveform with period P also fits 2P (whose first harmonic is P), so the period moves to
   half as long while that explains at least :data:`OCTAVE_SHARE` of the peak **and** a
   single sinusoid at the longer period explains less than :data:`SUBHARMONIC_SHARE` of what
   the waveform does there (a subharmonic carries no power of its own; a cycle's fundamental
   carries much of it).
3. The false-alarm probability is the share of :data:`SURROGATES` AR(1) surrogates (same
   timestamps, same bias-corrected lag-one autocorrelation) whose own largest share is at
   least as high — red noise, steps and single dips are not cycles.
4. Periodic when that probability is ≤ :data:`LEVEL` and the fitted waveform's half range
   is ≥ :data:`MIN_AMPLITUDE_PCT` % of the median.

Calibration (``tests/analysis/statistics/test_cycles.py``, ``docs/statistics.md``): white
noise is called periodic in ≤ 5 % of series; a noisy cycle's period is found within 10 %.

What a window makes of a period: the number of cycles it holds, the whole-cycle window
(:func:`whole_cycle_window`), and the window mean at every start (:func:`window_means`),
whose range is what the phase can move a verdict by.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.statistics._series import (
    ar1_coefficient,
    ar1_surrogates,
    clean_series,
    monte_carlo_p,
    search_grid,
    trend_projector,
)

#: Fewer intervals than this: no verdict on a cycle.
MIN_INTERVALS = 12
#: A period must repeat at least this often in the series searched.
MIN_CYCLES = 2.0
#: Shortest period searched, in intervals (its harmonic is then at the Nyquist limit).
MIN_PERIOD_INTERVALS = 4.0
#: Frequency grid: points per 1/span.
OVERSAMPLE = 5
#: Harmonics fitted per trial period (fundamental + first harmonic).
HARMONICS = 2
#: A half-as-long period explaining this share of the peak is taken instead (octave check).
OCTAVE_SHARE = 0.9
#: ... unless the longer period's own sinusoid explains at least this share of its waveform.
SUBHARMONIC_SHARE = 0.25
#: Surrogates per test.
SURROGATES = 199
#: False-alarm probability at or below which a period counts.
LEVEL = 0.02
#: Smallest half range of the fitted waveform (% of the median) worth calling a cycle.
MIN_AMPLITUDE_PCT = 1.0
#: A window holding a number of cycles within this of a whole number holds whole cycles.
WHOLE_TOLERANCE = 0.1
#: Fixed seed: the same series always gets the same answer.
SEED = 20261128


@dataclass(frozen=True)
class Cycle:
    """The detector's answer for one series.

    ``period_s``/``share``/``fap`` describe the best period even when it is not significant
    (NaN without a periodogram); ``periodic`` is the verdict, ``reason`` says why.
    """

    periodic: bool
    period_s: float
    share: float
    amplitude_pct: float
    fap: float
    n: int
    reason: str


def frequency_grid(t: np.ndarray, dt: float) -> np.ndarray:
    """Trial frequencies (Hz) for a series sampled at ``t`` with spacing ``dt``."""
    return search_grid(t, dt, min_cycles=MIN_CYCLES,
                       min_period_intervals=MIN_PERIOD_INTERVALS, oversample=OVERSAMPLE)


@functools.lru_cache(maxsize=32)
def _basis(t_bytes: bytes, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(frequencies, trend projector, orthonormal harmonic bases F × n × 2H), memoized.

    Each frequency's columns (cos/sin at f … Hf, detrended) are orthonormalised by SVD;
    directions with no length (a harmonic at the Nyquist limit has no sine) are zeroed, so
    they explain nothing.
    """
    t = np.frombuffer(t_bytes, dtype=float)
    freqs = frequency_grid(t, dt)
    proj = trend_projector(t)
    if not freqs.size:
        return freqs, proj, np.empty((0, t.size, 2 * HARMONICS))
    h = np.arange(1, HARMONICS + 1)
    arg = 2 * np.pi * (freqs[:, None, None] * h[None, None, :]) * t[None, :, None]
    cols = np.concatenate([np.cos(arg), np.sin(arg)], axis=2)  # F × n × 2H
    cols = np.einsum("mn,fnk->fmk", proj, cols)
    u, s, _ = np.linalg.svd(cols, full_matrices=False)
    keep = s > 1e-8 * s.max(axis=1, keepdims=True)
    u = u * keep[:, None, :]
    for arr in (freqs, proj, u):
        arr.flags.writeable = False
    return freqs, proj, u


def _shares(resid: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Share of each row's variance the two-harmonic fit explains, rows × frequencies."""
    f, n, k = u.shape
    z = (resid @ u.transpose(1, 0, 2).reshape(n, f * k)).reshape(-1, f, k)
    explained = (z * z).sum(axis=2)
    total = np.einsum("rn,rn->r", resid, resid)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, explained / total, 0.0)


def _fundamental(resid: np.ndarray, t: np.ndarray, proj: np.ndarray, f: float) -> float:
    """Share of the variance one sinusoid at ``f`` explains (no harmonic)."""
    x = np.column_stack([np.cos(2 * np.pi * f * t), np.sin(2 * np.pi * f * t)])
    q, _ = np.linalg.qr(proj @ x)
    z = resid @ q
    return float(z @ z) / max(float(resid @ resid), 1e-300)


def detect_cycle(
    values: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray | None = None,
    *,
    interval_s: float | None = None,
    level: float = LEVEL,
    surrogates: int = SURROGATES,
    seed: int = SEED,
) -> Cycle:
    """Test one series (throughput per interval, checkpoint age per sample) for a cycle.

    See the module docstring for the method; ``times_s`` are real times in seconds, NaN
    values are gaps.
    """
    y, t, dt = clean_series(values, times_s, interval_s)
    n = int(y.size)
    nan = math.nan
    if n < MIN_INTERVALS:
        return Cycle(False, nan, nan, nan, nan, n,
                     f"not enough intervals to tell ({n} < {MIN_INTERVALS})")
    freqs, proj, u = _basis(t.tobytes(), dt)
    if not freqs.size:
        return Cycle(False, nan, nan, nan, nan, n, "too short for two cycles")
    resid = y @ proj
    median = float(np.median(y))
    scale = max(abs(median), float(np.abs(y).mean()), 1e-300)
    if float(np.sqrt(np.mean(resid ** 2))) <= 1e-9 * scale:
        return Cycle(False, nan, 0.0, 0.0, 1.0, n, "the line is flat")
    share = _shares(resid[None, :], u)[0]
    k = int(np.argmax(share))
    peak = float(share[k])
    while True:  # octave check: is the half-as-long period the cycle?
        half = int(np.argmin(np.abs(freqs - 2 * freqs[k])))
        if abs(freqs[half] - 2 * freqs[k]) > 1.5 / (OVERSAMPLE * (t[-1] - t[0] + dt)) \
                or share[half] < OCTAVE_SHARE * peak \
                or _fundamental(resid, t, proj, freqs[k]) >= SUBHARMONIC_SHARE * share[k]:
            break
        k = half
    period_s = float(1.0 / freqs[k])
    fitted = u[k] @ (u[k].T @ resid)
    amp_pct = (100.0 * (fitted.max() - fitted.min()) / 2 / abs(median)
               if median != 0 else nan)
    phi = ar1_coefficient(resid, t, dt)
    rng = np.random.default_rng(seed)

    def surrogate_peaks(count: int) -> np.ndarray:
        return _shares(ar1_surrogates(t, dt, phi, count, rng) @ proj, u).max(axis=1)

    fap = monte_carlo_p(float(share.max()), surrogate_peaks, surrogates, level)
    where = (f"period {period_s:.0f} s explains {100 * share[k]:.0f}% of the detrended"
             f" variance (false-alarm p = {fap:.3f})")
    if fap > level:
        return Cycle(False, period_s, float(share[k]), amp_pct, fap, n,
                     f"no cycle stands out of the noise: best {where}")
    if not (np.isfinite(amp_pct) and amp_pct >= MIN_AMPLITUDE_PCT):
        return Cycle(False, period_s, float(share[k]), amp_pct, fap, n,
                     f"a ripple too small to matter ({amp_pct:.2f}% of the median): {where}")
    return Cycle(True, period_s, float(share[k]), amp_pct, fap, n, f"cycles: {where}")


def cycles_held(length_s: float, period_s: float) -> float:
    """How many cycles of ``period_s`` a window of ``length_s`` holds (NaN: no period)."""
    if not (math.isfinite(period_s) and period_s > 0):
        return math.nan
    return length_s / period_s


def is_whole(cycles: float) -> bool:
    """Whether a window holds a whole number (≥ 1) of cycles, within :data:`WHOLE_TOLERANCE`."""
    return math.isfinite(cycles) and cycles >= 1 - WHOLE_TOLERANCE and \
        abs(cycles - round(cycles)) <= WHOLE_TOLERANCE


def whole_cycle_window(start_s: float, end_s: float, period_s: float,
                       interval_s: float) -> tuple[float, float]:
    """The window ``(start, end]`` cut to the most whole cycles it holds.

    The start stays (the steady point or the declared start); the end moves back to
    ``start + k × period`` for the largest whole ``k`` that fits, rounded to the report
    interval (the intervals are the unit a window holds) — and stays where it is when not even
    one cycle fits or the run has no period.
    """
    if not (math.isfinite(period_s) and period_s > 0):
        return start_s, end_s
    k = math.floor((end_s - start_s) / period_s + WHOLE_TOLERANCE / 10)
    if k < 1:
        return start_s, end_s
    step = interval_s if interval_s > 0 else 1.0
    length = max(step, round(k * period_s / step) * step)
    return start_s, min(end_s, start_s + length)


def window_means(
    times_s: np.ndarray, counts: np.ndarray, interval_s: np.ndarray,
    starts_s: Sequence[float] | np.ndarray, length_s: float,
) -> np.ndarray:
    """The window mean rate (Σ counts / Σ seconds) of a window of ``length_s`` at each start.

    ``times_s`` are the intervals' end times; an interval belongs to a window ``(s, s + L]``
    when its midpoint does, as the analysis' window flags decide (``analysis/reading/series.py``).
    NaN where a window holds no interval.
    """
    t = np.asarray(times_s, dtype=float)
    c = np.asarray(counts, dtype=float)
    d = np.asarray(interval_s, dtype=float)
    mid = t - d / 2
    s = np.asarray(starts_s, dtype=float)[:, None]
    inside = (mid[None, :] > s) & (mid[None, :] <= s + length_s)
    seconds = (inside * d[None, :]).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(seconds > 0, (inside * c[None, :]).sum(axis=1) / seconds, np.nan)
