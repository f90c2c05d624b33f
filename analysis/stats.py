"""Small statistics helpers shared by frames, stability and compare.

Throughput per run is not normally distributed and repetitions are few, so everything here is
nonparametric: percentile bootstrap confidence intervals with a fixed seed (the same data always
gives the same interval) and the Mann-Whitney U test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Seed of every bootstrap: a report rebuilt from the same data shows the same intervals.
BOOTSTRAP_SEED = 20110107
#: Resamples per bootstrap; 10,000 keeps the 2.5/97.5 percentiles stable to ~0.1 %.
BOOTSTRAP_RESAMPLES = 10_000


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[np.isfinite(arr)]


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean.

    Parameters
    ----------
    values:
        One figure per repetition (NaN ignored).
    level:
        Coverage, 0.95 for a 95 % interval.
    resamples, seed:
        Bootstrap size and RNG seed (fixed so reports are reproducible).

    Returns
    -------
    (low, high)
        ``(nan, nan)`` with fewer than two values: one run has no spread to resample.
    """
    arr = _clean(values)
    if arr.size < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(resamples, arr.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))


def bootstrap_ratio_ci(
    baseline: Sequence[float] | np.ndarray,
    other: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float, float]:
    """Ratio of means ``mean(other) / mean(baseline)`` with a percentile bootstrap CI.

    Both groups are resampled independently (they are independent runs).

    Returns
    -------
    (ratio, low, high)
        The CI is ``(nan, nan)`` when either group has fewer than two values.
    """
    a = _clean(baseline)
    b = _clean(other)
    if a.size == 0 or b.size == 0 or a.mean() == 0:
        return (math.nan, math.nan, math.nan)
    ratio = float(b.mean() / a.mean())
    if a.size < 2 or b.size < 2:
        return (ratio, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    ma = a[rng.integers(0, a.size, size=(resamples, a.size))].mean(axis=1)
    mb = b[rng.integers(0, b.size, size=(resamples, b.size))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = mb / ma
    ratios = ratios[np.isfinite(ratios)]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return (ratio, float(low), float(high))


def mann_whitney_p(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> float:
    """Two-sided Mann-Whitney U p-value (exact for small samples without ties); NaN if empty."""
    from scipy.stats import mannwhitneyu

    x = _clean(a)
    y = _clean(b)
    if x.size == 0 or y.size == 0:
        return math.nan
    if np.ptp(np.concatenate([x, y])) == 0:
        return 1.0  # all values equal: no evidence of any difference (scipy would warn)
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def min_attainable_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided exact Mann-Whitney p-value possible with these group sizes.

    Reached when the groups do not overlap at all: ``2 / C(n_a + n_b, n_a)``. With 3 vs 3 runs
    it is 0.10, so a 0.05 threshold could never be met; :mod:`analysis.compare` uses this to
    accept complete separation as the strongest evidence small samples can give.
    """
    if n_a < 1 or n_b < 1:
        return math.nan
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))
