"""What a throughput line does when it is not flat: holes, low stretches, steps and trends.

A single dip, a step or a slow drift is reported as what it is, never as a period
(:mod:`.oscillation` handles periods):

- **holes** — share of intervals below :data:`HOLE_FRACTION` × median;
- **longest low stretch** — seconds in a row below :data:`LOW_FRACTION` × median (a
  missing interval, i.e. a gap in the real timestamps, ends the stretch: nothing is known
  about it);
- **step** — the single split of the series into two segments (≥ :data:`MIN_SEGMENT`
  intervals each) that explains the most variance (the one-changepoint least-squares
  estimate, Hinkley 1970); its significance is a Monte Carlo test against AR(1)
  surrogates (noise model in :func:`step_change`), like the oscillation test; reported when
  p ≤ :data:`P_LEVEL` and the step is at least :data:`MIN_STEP_PCT` % of the median;
- **trend** — Theil–Sen slope (median of pairwise slopes on the real times), as % of the
  median per minute, with a Mann–Kendall test whose variance is inflated for lag-one
  autocorrelation (Yue & Wang 2004), so correlated noise does not read as a drift; reported
  when p ≤ :data:`P_LEVEL` and the drift is at least :data:`MIN_TREND_PCT` % of the median
  over the whole window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from analysis.statistics._series import (
    ar1_coefficient,
    ar1_surrogates,
    clean_series,
    monte_carlo_p,
    pair_indices,
)
from analysis.statistics.probability import norm_sf

#: An interval below this fraction of the median is a hole.
HOLE_FRACTION = 0.5
#: Intervals below this fraction of the median make a low stretch.
LOW_FRACTION = 0.8
#: Each side of a step has at least this many intervals.
MIN_SEGMENT = 3
#: Significance level of the step and trend tests.
P_LEVEL = 0.01
#: Smallest step worth reporting (% of the median).
MIN_STEP_PCT = 3.0
#: Smallest drift over the whole window worth reporting (% of the median).
MIN_TREND_PCT = 3.0
#: Surrogates for the step test.
SURROGATES = 199
#: Fixed seed: the same series always gets the same p-value.
SEED = 20110107


@dataclass(frozen=True)
class Shape:
    """Shape figures of one series; ``findings`` lists what was found, in words."""

    n: int
    median: float
    holes_share: float
    longest_low_s: float
    step_at_s: float
    step_pct: float
    step_p: float
    trend_pct_per_min: float
    trend_p: float
    findings: tuple[str, ...] = field(default_factory=tuple)


def holes_share(values: Sequence[float] | np.ndarray, median: float | None = None) -> float:
    """Share of (finite) intervals below ``HOLE_FRACTION × median``; NaN if none or median ≤ 0."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    if y.size == 0:
        return math.nan
    med = float(np.median(y)) if median is None else median
    if med <= 0:
        return math.nan
    return float(np.mean(y < HOLE_FRACTION * med))


def longest_low_stretch_s(
    values: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray | None = None,
    *,
    interval_s: float | None = None,
    median: float | None = None,
) -> float:
    """Longest run of consecutive intervals below ``LOW_FRACTION × median``, in seconds.

    Each interval counts its nominal length; a gap in the timestamps (> 1.5 intervals)
    ends a stretch. NaN when there is no interval or the median is ≤ 0.
    """
    y, t, dt = clean_series(values, times_s, interval_s)
    if y.size == 0:
        return math.nan
    med = float(np.median(y)) if median is None else median
    if med <= 0:
        return math.nan
    low = y < LOW_FRACTION * med
    if not low.any():
        return float(0 * dt)
    # A stretch starts at a low interval whose predecessor is not low or lies across a gap;
    # numbering the starts gives every low interval its stretch, counted with bincount.
    contiguous = np.zeros(y.size, dtype=bool)
    contiguous[1:] = (t[1:] - t[:-1]) <= 1.5 * dt
    follows_low = np.zeros(y.size, dtype=bool)
    follows_low[1:] = low[:-1]
    starts = low & ~(contiguous & follows_low)
    best = int(np.bincount(np.cumsum(starts)[low]).max())
    return float(best * dt)


def _split_shares(y: np.ndarray) -> np.ndarray:
    """For rows of ``y`` (rows × n): share of variance explained by a step after each index.

    Column ``j`` is the split ``[0, j + MIN_SEGMENT)`` | rest; vectorized with cumulative sums.
    """
    n = y.shape[1]
    centred = y - y.mean(axis=1, keepdims=True)
    total = np.einsum("rn,rn->r", centred, centred)[:, None]
    cs = np.cumsum(centred, axis=1)
    k = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    left_sum = cs[:, k - 1]
    # Between-segment sum of squares with the overall mean removed: S_k² · n / (k (n − k)).
    between = left_sum**2 * n / (k * (n - k))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, between / total, 0.0)


def step_change(
    values: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray | None = None,
    *,
    interval_s: float | None = None,
    surrogates: int = SURROGATES,
    seed: int = SEED,
) -> tuple[float, float, float]:
    """The most likely single step: ``(time_s of the first interval after it, size %, p)``.

    Size is (median after − median before) as % of the overall median. NaNs with fewer
    than ``2 × MIN_SEGMENT`` intervals or a flat line.
    """
    y, t, dt = clean_series(values, times_s, interval_s)
    n = y.size
    nan = math.nan
    if n < 2 * MIN_SEGMENT or np.ptp(y) == 0:
        return (nan, nan, nan)
    shares = _split_shares(y[None, :])[0]
    j = int(np.argmax(shares))
    k = j + MIN_SEGMENT
    med = float(np.median(y))
    size = 100.0 * (float(np.median(y[k:])) - float(np.median(y[:k]))) / med if med else nan
    # The noise model: the mean of the lag-one autocorrelations of the whole series (step
    # included: too red, the test loses power) and of the within-segment residuals (too
    # white: the best split soaks up slow wander). Simulated: residuals alone gave 10-28 %
    # false steps on AR(1) noise at 18-30 intervals, the whole series alone missed a 10 %
    # step in 3 % noise at 30 intervals; the mean keeps false steps ≤ 3 % at φ = 0.5.
    fitted = np.where(np.arange(n) < k, y[:k].mean(), y[k:].mean())
    phi = 0.5 * (ar1_coefficient(y - y.mean(), t, dt) + ar1_coefficient(y - fitted, t, dt))
    rng = np.random.default_rng(seed)

    def surrogate_splits(count: int) -> np.ndarray:
        return _split_shares(ar1_surrogates(t, dt, phi, count, rng)).max(axis=1)

    # Stopped early once the step cannot be significant at P_LEVEL (same decision).
    return (float(t[k]), size, monte_carlo_p(shares[j], surrogate_splits, surrogates, P_LEVEL))


def theil_sen_slope(
    values: Sequence[float] | np.ndarray, times_s: Sequence[float] | np.ndarray
) -> float:
    """Theil–Sen slope (median of all pairwise slopes), units per second; NaN below 3 points."""
    y = np.asarray(values, dtype=float)
    t = np.asarray(times_s, dtype=float)
    keep = np.isfinite(y) & np.isfinite(t)
    y, t = y[keep], t[keep]
    if y.size < 3:
        return math.nan
    i, j = pair_indices(y.size)
    dt = t[j] - t[i]
    ok = dt != 0
    if not ok.any():
        return math.nan
    return float(np.median((y[j] - y[i])[ok] / dt[ok]))


def trend(
    values: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray | None = None,
    *,
    interval_s: float | None = None,
) -> tuple[float, float]:
    """Theil–Sen trend in % of the median per minute and its autocorrelation-aware p-value.

    The Mann–Kendall S statistic's variance (with the ties correction) is multiplied by
    ``1 + 2 Σ (1 − k/n) φ^k``, φ the bias-corrected lag-one autocorrelation of the
    detrended series. ``(nan, nan)`` below 3 intervals or with a median ≤ 0.
    """
    y, t, dt = clean_series(values, times_s, interval_s)
    n = y.size
    med = float(np.median(y)) if n else math.nan
    if n < 3 or not med > 0:
        return (math.nan, math.nan)
    slope = theil_sen_slope(y, t)
    pct_per_min = 100.0 * slope * 60.0 / med
    i, j = pair_indices(n)
    s = float(np.sign(y[j] - y[i]).sum())
    _, counts = np.unique(y, return_counts=True)
    var = (n * (n - 1) * (2 * n + 5) - float((counts * (counts - 1) * (2 * counts + 5)).sum()))
    var /= 18.0
    resid = y - slope * (t - t.mean())
    resid = resid - resid.mean()
    phi = max(ar1_coefficient(resid, t, dt), 0.0)
    k = np.arange(1, n)
    var *= 1.0 + 2.0 * float(((1 - k / n) * phi**k).sum())
    if var <= 0 or s == 0:
        return (pct_per_min, 1.0)
    z = (abs(s) - 1.0) / math.sqrt(var)  # continuity correction
    return (pct_per_min, 2 * norm_sf(z))


def describe_shape(
    values: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray | None = None,
    *,
    interval_s: float | None = None,
) -> Shape:
    """All shape figures of one series, with a sentence per finding.

    Parameters
    ----------
    values:
        Throughput per interval (NaN = missing).
    times_s:
        Interval times in seconds (default evenly spaced by ``interval_s``).
    interval_s:
        Nominal spacing (default the median spacing of ``times_s``).
    """
    y, t, dt = clean_series(values, times_s, interval_s)
    nan = math.nan
    if y.size == 0:
        return Shape(0, nan, nan, nan, nan, nan, nan, nan, nan, ("no intervals",))
    med = float(np.median(y))
    holes = holes_share(y, med)
    low_s = longest_low_stretch_s(y, t, interval_s=dt, median=med)
    at, size, step_p = step_change(y, t, interval_s=dt)
    slope, trend_p = trend(y, t, interval_s=dt)
    findings = []
    if np.isfinite(holes) and holes > 0:
        count = int(round(holes * y.size))
        findings.append(f"holes: {count} interval(s) below {HOLE_FRACTION:.0%} of the median")
    if np.isfinite(low_s) and low_s > 0:
        findings.append(f"longest stretch below {LOW_FRACTION:.0%} of the median: {low_s:.0f} s")
    span_min = (t[-1] - t[0] + dt) / 60.0
    has_step = bool(np.isfinite(step_p) and step_p <= P_LEVEL and abs(size) >= MIN_STEP_PCT)
    has_trend = bool(np.isfinite(trend_p) and trend_p <= P_LEVEL
                     and abs(slope) * span_min >= MIN_TREND_PCT)
    if has_step and has_trend:
        # A drift also looks like a step and a step like a drift: keep the better fit.
        step_fit = float(_split_shares(y[None, :])[0].max())
        line_fit = float(np.corrcoef(t, y)[0, 1] ** 2)
        has_step, has_trend = step_fit > line_fit, step_fit <= line_fit
    if has_step:
        findings.append(f"step: {size:+.1f}% at {at:.0f} s (p = {step_p:.3f})")
    if has_trend:
        findings.append(f"trend: {slope:+.2f}% of the median per minute (p = {trend_p:.3g})")
    return Shape(int(y.size), med, holes, low_s, at, size, step_p, slope, trend_p,
                 tuple(findings))
