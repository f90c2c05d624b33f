"""Confidence intervals that cover what they claim with 3, 5 or 10 repetitions.

A percentile bootstrap of 3 values has 10 distinct resamples; its "95 %" interval covers the
true mean about 75 % of the time. The methods here are parametric on the log scale, where
run-to-run throughput noise is close to normal whether the raw noise is normal (CV of a few %)
or skewed (lognormal):

- :func:`mean_ci` — Cox's modified method for the mean of lognormal data (Land 1972;
  Olsson 2005): ``exp(ȳ + s²/2 ± t(n−1) · sqrt(s²/n + s⁴ / (2(n−1))))`` on ``y = log x``.
  Plain Student t on raw values falls to 91–92 % coverage at CV 50 % lognormal noise; Cox's
  method stays ≥ 94 % (``bench/statistics_calibration.py``).
- :func:`ratio_ci` — Welch's t on log values: the interval of ``exp(mean log b − mean log a)``,
  the ratio of geometric means (equal to the ratio of means when both cells have the same
  spread on the log scale, which is what "the same noise, shifted" means).

Every result is an :class:`Interval` naming its method, level and sample sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.statistics.probability import t_ppf, t_sf

#: Default coverage.
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval.

    ``low``/``high`` are NaN when the data cannot give an interval (fewer than two values on
    a side, or no spread at all is not such a case: zero spread gives a zero-width interval).
    """

    estimate: float
    low: float
    high: float
    level: float
    method: str
    n: int
    n_other: int = 0
    df: float = math.nan

    @property
    def excludes_one(self) -> bool:
        """True when the whole interval lies above or below 1 (for ratios)."""
        return bool(np.isfinite(self.low) and (self.low > 1.0 or self.high < 1.0))

    @property
    def half_width_pct(self) -> float:
        """Half the interval's width as % of the estimate (NaN without an interval)."""
        if not (np.isfinite(self.low) and np.isfinite(self.high)) or self.estimate == 0:
            return math.nan
        return float(50.0 * (self.high - self.low) / abs(self.estimate))


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[np.isfinite(arr)]


def mean_ci(values: Sequence[float] | np.ndarray, *, level: float = LEVEL) -> Interval:
    """Confidence interval of the mean of one cell's per-run figures (e.g. NOTPM).

    Parameters
    ----------
    values:
        One figure per repetition; NaN ignored.
    level:
        Coverage (0.95 for 95 %).

    Returns
    -------
    Interval
        ``estimate`` is the sample mean. Method ``"cox-lognormal"`` when every value is
        positive, else ``"student-t"`` on the raw values. NaN bounds with fewer than 2 values.
    """
    x = _clean(values)
    n = int(x.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, level, "none", 0)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, math.nan, math.nan, level, "none", n)
    t = t_ppf(0.5 + level / 2, n - 1)
    if np.all(x > 0):
        y = np.log(x)
        v = float(y.var(ddof=1))
        centre = float(y.mean()) + v / 2
        half = t * math.sqrt(v / n + v * v / (2 * (n - 1)))
        return Interval(mean, math.exp(centre - half), math.exp(centre + half), level,
                        "cox-lognormal", n, df=n - 1)
    se = float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(mean, mean - t * se, mean + t * se, level, "student-t", n, df=n - 1)


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom (``n_a + n_b − 2`` when both variances are 0)."""
    va, vb = var_a / n_a, var_b / n_b
    denom = va * va / (n_a - 1) + vb * vb / (n_b - 1)
    if denom <= 0:
        return float(n_a + n_b - 2)
    return float((va + vb) ** 2 / denom)


def ratio_ci(
    baseline: Sequence[float] | np.ndarray,
    other: Sequence[float] | np.ndarray,
    *,
    level: float = LEVEL,
) -> Interval:
    """Ratio ``other / baseline`` (geometric means) with a Welch t interval on log values.

    Parameters
    ----------
    baseline, other:
        Per-run figures of the two cells (positive; NaN and non-positive values dropped,
        since a run with zero throughput has no place on a ratio scale).
    level:
        Coverage.

    Returns
    -------
    Interval
        ``estimate = exp(mean(log other) − mean(log baseline))``, ``n`` = baseline runs,
        ``n_other`` = other runs, ``df`` = Welch's. NaN bounds when a side has < 2 values.
    """
    a = _clean(baseline)
    b = _clean(other)
    a, b = a[a > 0], b[b > 0]
    if a.size == 0 or b.size == 0:
        return Interval(math.nan, math.nan, math.nan, level, "welch-t-log", int(a.size),
                        int(b.size))
    la, lb = np.log(a), np.log(b)
    d = float(lb.mean() - la.mean())
    if a.size < 2 or b.size < 2:
        return Interval(math.exp(d), math.nan, math.nan, level, "welch-t-log", int(a.size),
                        int(b.size))
    va, vb = float(la.var(ddof=1)), float(lb.var(ddof=1))
    df = welch_df(va, a.size, vb, b.size)
    se = math.sqrt(va / a.size + vb / b.size)
    t = t_ppf(0.5 + level / 2, df)
    return Interval(math.exp(d), math.exp(d - t * se), math.exp(d + t * se), level,
                    "welch-t-log", int(a.size), int(b.size), df)


def welch_log_p(
    baseline: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray
) -> float:
    """Two-sided p-value of Welch's t test on log values (NaN with < 2 values on a side).

    The test dual to :func:`ratio_ci`: ``p < 1 − level`` exactly when that interval
    excludes 1.
    """
    a = _clean(baseline)
    b = _clean(other)
    a, b = a[a > 0], b[b > 0]
    if a.size < 2 or b.size < 2:
        return math.nan
    la, lb = np.log(a), np.log(b)
    va, vb = float(la.var(ddof=1)), float(lb.var(ddof=1))
    se = math.sqrt(va / a.size + vb / b.size)
    d = float(lb.mean() - la.mean())
    if se == 0:
        return 1.0 if d == 0 else 0.0
    df = welch_df(va, a.size, vb, b.size)
    return 2 * t_sf(abs(d) / se, df)
