"""Does a throughput line oscillate? A periodogram peak with a stated false-alarm probability.

The old detector called a run oscillating when one periodogram bin held ≥ 30 % of the
variance; white noise passes that test in most short runs. This one asks whether the peak is
higher than the series' own noise could make it:

1. The series (NaN dropped, **real timestamps** kept, so a missing interval is a gap and not
   closed up) is detrended by least squares: a slow drift is a trend (:mod:`.shape`), not a
   period.
2. A Lomb–Scargle periodogram (least-squares sine fit at each frequency, Lomb 1976,
   Scargle 1982; computed on the real timestamps) is searched between **two full cycles per
   window** and **four intervals per period** (away from the Nyquist limit of two, where
   interval averaging attenuates and aliases). The statistic is the largest share of the
   detrended variance that one sinusoid explains.
3. Its **false-alarm probability** is the share of 199 AR(1) surrogates (same timestamps,
   same bias-corrected lag-one autocorrelation) whose own largest peak is at least as high —
   a Monte Carlo test against red noise, so slowly wandering lines, steps and single dips
   (which raise the autocorrelation) are not mistaken for cycles.
4. The run oscillates when the false-alarm probability is ≤ :data:`FAP_LEVEL` (1 %) **and**
   the sinusoid's amplitude is at least :data:`MIN_AMPLITUDE_PCT` % of the median (a
   significant 0.3 % ripple is not worth a warning).

Below :data:`MIN_INTERVALS` intervals the answer is "not enough intervals to tell".
Simulated false-positive rates and detection power are in ``docs/statistics.md``.
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

#: Fewer intervals than this: no verdict on periodicity.
MIN_INTERVALS = 12
#: A period must repeat at least this often inside the window.
MIN_CYCLES = 2.0
#: Shortest period searched, in intervals (Nyquist is 2).
MIN_PERIOD_INTERVALS = 4.0
#: Frequency grid: this many points per 1/window (peaks between Fourier bins are found).
OVERSAMPLE = 5
#: Surrogates per test (p resolution 1/200).
SURROGATES = 199
#: False-alarm probability at or below which a peak counts.
FAP_LEVEL = 0.01
#: Smallest sinusoid amplitude (% of the median) worth calling an oscillation.
MIN_AMPLITUDE_PCT = 1.0
#: Fixed seed: the same series always gets the same false-alarm probability.
SEED = 20110107


@dataclass(frozen=True)
class Oscillation:
    """The detector's answer for one series.

    ``period_s``/``share``/``amplitude_pct``/``fap`` describe the highest peak even when it
    is not significant (NaN when there is no periodogram at all); ``oscillates`` is the
    verdict and ``reason`` says why in one sentence.
    """

    oscillates: bool
    period_s: float
    share: float
    amplitude_pct: float
    fap: float
    ar1: float
    n: int
    reason: str


def _periodogram_basis(
    t: np.ndarray, freqs: np.ndarray, proj: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cos/sin columns with the trend projected out, and their 2×2 Gram entries per frequency."""
    arg = 2 * np.pi * np.outer(freqs, t)
    c = np.cos(arg) @ proj
    s = np.sin(arg) @ proj
    gcc = np.einsum("fn,fn->f", c, c)
    gss = np.einsum("fn,fn->f", s, s)
    gcs = np.einsum("fn,fn->f", c, s)
    return c, s, gcc, gss, gcs


def _power(
    resid: np.ndarray, basis: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Share of each row's variance explained by the best sinusoid at each frequency.

    ``resid`` is (rows × n), already detrended. Returns (share, cos coef, sin coef), each
    (rows × frequencies).
    """
    c, s, gcc, gss, gcs = basis
    zc = resid @ c.T
    zs = resid @ s.T
    det = gcc * gss - gcs * gcs
    det = np.where(det > 1e-12 * gcc * gss, det, np.inf)  # degenerate frequency: no power
    a = (gss * zc - gcs * zs) / det
    b = (gcc * zs - gcs * zc) / det
    explained = a * zc + b * zs
    total = np.einsum("rn,rn->r", resid, resid)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, explained / total, 0.0)
    return share, a, b


def frequency_grid(t: np.ndarray, dt: float) -> np.ndarray:
    """Frequencies (Hz) searched for a series sampled at ``t`` with spacing ``dt``."""
    return search_grid(t, dt, min_cycles=MIN_CYCLES,
                       min_period_intervals=MIN_PERIOD_INTERVALS, oversample=OVERSAMPLE)


@functools.lru_cache(maxsize=64)
def _grid(
    t_bytes: bytes, dt: float
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """Frequencies, trend projector and periodogram basis of one sampling grid, memoized.

    They depend only on the times: the runs of one experiment mostly share their window's
    grid, so 500 runs build them a handful of times instead of 500 (same arrays, same
    results). The arrays are read-only so no caller can change a shared copy.
    """
    t = np.frombuffer(t_bytes, dtype=float)
    freqs = frequency_grid(t, dt)
    proj = trend_projector(t)
    basis = _periodogram_basis(t, freqs, proj) if freqs.size else ()
    for arr in (freqs, proj, *basis):
        arr.flags.writeable = False
    return freqs, proj, basis


def detect_oscillation(
    values: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray | None = None,
    *,
    interval_s: float | None = None,
    fap_level: float = FAP_LEVEL,
    surrogates: int = SURROGATES,
    seed: int = SEED,
) -> Oscillation:
    """Test one per-interval series for a periodic component.

    Parameters
    ----------
    values:
        Throughput per interval (NaN = missing interval).
    times_s:
        Time of each interval in seconds (default: evenly spaced by ``interval_s``).
    interval_s:
        Nominal spacing; default the median spacing of ``times_s``.
    fap_level:
        False-alarm probability at or below which the peak counts.
    surrogates, seed:
        Monte Carlo size and seed of the AR(1) surrogates.

    Returns
    -------
    Oscillation
        ``reason`` is one of: not enough intervals to tell; the line is flat; the period and
        its share with the false-alarm probability; no period stands out of the noise; a
        significant but negligible ripple.
    """
    y, t, dt = clean_series(values, times_s, interval_s)
    n = int(y.size)
    nan = math.nan
    if n < MIN_INTERVALS:
        return Oscillation(False, nan, nan, nan, nan, nan, n,
                           f"not enough intervals to tell ({n} < {MIN_INTERVALS})")
    freqs, proj, basis = _grid(t.tobytes(), dt)
    if freqs.size == 0:
        return Oscillation(False, nan, nan, nan, nan, nan, n,
                           "not enough intervals to tell (window too short for two cycles)")
    resid = y @ proj
    median = float(np.median(y))
    scale = max(abs(median), float(np.abs(y).mean()), 1e-300)
    if float(np.sqrt(np.mean(resid**2))) <= 1e-9 * scale:
        return Oscillation(False, nan, 0.0, 0.0, 1.0, 0.0, n, "the line is flat")
    share, a, b = _power(resid[None, :], basis)
    k = int(np.argmax(share[0]))
    peak = float(share[0, k])
    period_s = float(1.0 / freqs[k])
    amp = float(np.hypot(a[0, k], b[0, k]))
    amp_pct = 100.0 * amp / abs(median) if median != 0 else nan
    phi = ar1_coefficient(resid, t, dt)
    rng = np.random.default_rng(seed)

    def surrogate_peaks(count: int) -> np.ndarray:
        sur_share, _, _ = _power(ar1_surrogates(t, dt, phi, count, rng) @ proj, basis)
        return sur_share.max(axis=1)

    # Stopped early once the peak cannot be significant: the decision is the full test's.
    fap = monte_carlo_p(peak, surrogate_peaks, surrogates, fap_level)
    where = (f"period {period_s:.0f} s holds {100 * peak:.0f}% of the detrended variance "
             f"(false-alarm p = {fap:.3f}, AR(1) φ = {phi:.2f})")
    if fap > fap_level:
        return Oscillation(False, period_s, peak, amp_pct, fap, phi, n,
                           f"no period stands out of the noise: best {where}")
    if not (np.isfinite(amp_pct) and amp_pct >= MIN_AMPLITUDE_PCT):
        return Oscillation(False, period_s, peak, amp_pct, fap, phi, n,
                           f"a ripple too small to matter (amplitude {amp_pct:.2f}% of the "
                           f"median < {MIN_AMPLITUDE_PCT:g}%): {where}")
    return Oscillation(True, period_s, peak, amp_pct, fap, phi, n,
                       f"oscillates: {where}, amplitude {amp_pct:.1f}% of the median")
