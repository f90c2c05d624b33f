"""How flat is a throughput line? Figures of one run's per-interval series over its window.

The 2011 study judged configurations by *shape*: a flat line, an oscillation, or holes. These
figures make each of those a number:

- **stability score** = ``100 × p5 / median`` — 100 is a flat line; 50 means one interval in
  twenty runs at half the typical rate or worse. Planning works from the low intervals, not the
  average, so the score is built on the 5th percentile.
- **CV** (% of the mean), **holes** (share of intervals below 0.5 × median), **longest low
  stretch** (seconds in a row below 0.8 × median), **dominant period** and its share of the
  variance (periodogram of the linearly detrended series), **trend** (Theil–Sen slope, % of
  the median per minute).

A run gets a warning when its CV is ≥ 10 % (pyperf's noise threshold) or when it oscillates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

#: pyperf warns when the standard deviation is ≥ 10 % of the mean; so do we.
CV_WARN_PCT = 10.0
#: An interval below this fraction of the median is a "hole".
HOLE_FRACTION = 0.5
#: Intervals below this fraction of the median count towards the longest low stretch.
LOW_FRACTION = 0.8
#: A run oscillates when one period holds at least this share of the detrended variance...
OSCILLATION_SHARE = 0.3
#: ...and the series moves at all (CV at least this, in %): a dead-flat line never oscillates.
OSCILLATION_MIN_CV_PCT = 3.0
#: Fewer points than this give no periodogram worth reading.
MIN_POINTS_FOR_PERIOD = 8


@dataclass(frozen=True)
class Stability:
    """Stability figures of one series (see the module docstring for definitions)."""

    n: int
    median: float
    mean: float
    cv_pct: float
    p5: float
    p5_ratio: float
    score: float
    holes_share: float
    longest_low_s: float
    period_s: float
    period_share: float
    trend_pct_per_min: float
    oscillates: bool
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, object]:
        """The figures as a flat dict (warnings joined with '; ')."""
        out = asdict(self)
        out["warnings"] = "; ".join(self.warnings)
        return out


def longest_run(mask: np.ndarray) -> int:
    """Length of the longest stretch of consecutive True values."""
    best = current = 0
    for flag in mask:
        current = current + 1 if flag else 0
        best = max(best, current)
    return best


def dominant_period(values: np.ndarray, interval_s: float) -> tuple[float, float]:
    """Dominant oscillation period (s) and the share of detrended variance it holds.

    The series is linearly detrended (a slow drift is a trend, not an oscillation), then its
    periodogram is searched between 2 intervals (Nyquist) and half the window (at least two
    full cycles must be visible). The share counts the peak bin and its two neighbours, because
    a period that is not a whole fraction of the window leaks into the adjacent bins.

    Returns
    -------
    (period_s, share)
        ``(nan, 0.0)`` for short or constant series.
    """
    x = np.asarray(values, dtype=float)
    n = x.size
    if n < MIN_POINTS_FOR_PERIOD:
        return (math.nan, 0.0)
    # Least-squares line in closed form (np.polyfit is ~10x slower for this one job).
    idx = np.arange(n, dtype=float) - (n - 1) / 2
    slope = float(idx @ (x - x.mean()) / (idx @ idx))
    resid = x - x.mean() - slope * idx
    # One-sided periodogram (numpy only: this runs once per run, hundreds of times per report).
    power = np.abs(np.fft.rfft(resid)) ** 2
    power[1:] *= 2.0
    if n % 2 == 0:
        power[-1] /= 2.0  # the Nyquist bin has no mirror image
    total = power[1:].sum()
    scale = max(1.0, float(np.abs(x).mean())) ** 2 * n * n
    if not np.isfinite(total) or total <= 1e-18 * scale:
        return (math.nan, 0.0)
    # Bin k is k cycles per window; k >= 2 means at least two cycles seen.
    if power.size <= 2:
        return (math.nan, 0.0)
    k = 2 + int(np.argmax(power[2:]))
    share = float(power[max(1, k - 1) : k + 2].sum() / total)
    # Refine the peak between bins with an 8x zero-padded spectrum: a 120 s period in a
    # 300 s window lies between bins 2 (150 s) and 3 (100 s).
    pad = 8
    fine = np.abs(np.fft.rfft(resid, n=pad * n)) ** 2
    lo, hi = max(pad * (k - 1), 2 * pad), min(pad * (k + 1), fine.size - 1)
    kf = lo + int(np.argmax(fine[lo : hi + 1]))
    return (float(pad * n * interval_s / kf), min(share, 1.0))


def theil_sen_slope(values: np.ndarray, times_s: np.ndarray) -> float:
    """Theil–Sen slope (median of all pairwise slopes), units per second.

    Robust to holes and spikes: up to ~29 % of the points can be outliers without moving it.
    Same estimator as ``scipy.stats.theilslopes`` without its (unused, slower) CI.
    """
    y = np.asarray(values, dtype=float)
    t = np.asarray(times_s, dtype=float)
    if y.size < 3:
        return math.nan
    i, j = np.triu_indices(y.size, k=1)
    dt = t[j] - t[i]
    ok = dt != 0
    if not ok.any():
        return math.nan
    return float(np.median((y[j] - y[i])[ok] / dt[ok]))


def stability(
    values: Sequence[float] | np.ndarray,
    interval_s: float = 10.0,
    times_s: Sequence[float] | np.ndarray | None = None,
) -> Stability:
    """Stability figures of one run's per-interval throughput over its measurement window.

    Parameters
    ----------
    values:
        Throughput per interval (New-Orders per interval or NOTPM: every figure is scale-free
        except ``median``/``mean``/``p5``). NaN entries are dropped.
    interval_s:
        Report interval in seconds (for stretch lengths and the period).
    times_s:
        Interval times in seconds (for the trend); default ``0, interval_s, 2*interval_s…``.

    Returns
    -------
    Stability
        With ``warnings`` naming CV ≥ 10 % and oscillation.
    """
    arr = np.asarray(values, dtype=float)
    if times_s is None:
        t = np.arange(arr.size, dtype=float) * interval_s
    else:
        t = np.asarray(times_s, dtype=float)
    keep = np.isfinite(arr)
    arr, t = arr[keep], t[keep]
    if arr.size == 0:
        nan = math.nan
        return Stability(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, 0.0, nan, False,
                         ("no intervals in the window",))
    median = float(np.median(arr))
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    cv_pct = 100.0 * std / mean if mean > 0 else math.nan
    p5 = float(np.percentile(arr, 5))
    warnings: list[str] = []
    if median > 0:
        p5_ratio = p5 / median
        holes = float(np.mean(arr < HOLE_FRACTION * median))
        longest_low = float(longest_run(arr < LOW_FRACTION * median) * interval_s)
        slope = theil_sen_slope(arr, t)
        trend = 100.0 * slope * 60.0 / median if np.isfinite(slope) else math.nan
    else:
        p5_ratio = holes = longest_low = trend = math.nan
        warnings.append("no throughput in the window (median is 0)")
    period_s, share = dominant_period(arr, interval_s)
    oscillates = bool(
        np.isfinite(period_s)
        and share >= OSCILLATION_SHARE
        and np.isfinite(cv_pct)
        and cv_pct >= OSCILLATION_MIN_CV_PCT
    )
    if np.isfinite(cv_pct) and cv_pct >= CV_WARN_PCT:
        warnings.append(f"noisy: CV {cv_pct:.1f}% ≥ {CV_WARN_PCT:g}%")
    if oscillates:
        warnings.append(
            f"oscillates: period {period_s:.0f} s holds {100 * share:.0f}% of the variance"
        )
    return Stability(
        n=int(arr.size),
        median=median,
        mean=mean,
        cv_pct=cv_pct,
        p5=p5,
        p5_ratio=p5_ratio,
        score=100.0 * p5_ratio if np.isfinite(p5_ratio) else math.nan,
        holes_share=holes,
        longest_low_s=longest_low,
        period_s=period_s,
        period_share=share,
        trend_pct_per_min=trend,
        oscillates=oscillates,
        warnings=tuple(warnings),
    )
