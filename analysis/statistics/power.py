"""Power of the verdict rule itself: the honest minimum detectable effect and repetition planning.

The verdict rule (:mod:`analysis.statistics.verdicts`) calls a difference only when the exact
two-sided Mann-Whitney p < α **and** the Welch-on-log interval of the ratio excludes 1 **and**
both agree on the direction. A t-test power formula overstates what that rule detects (it
reached only 62–75 % power at the effect it called detectable at 80 %; docs/statistics.md).
So the effect is found by simulating the rule:

- Run-to-run noise is lognormal: log throughput ~ N(μ, σ²) per cell, the same σ in both
  cells, the other cell shifted by δ. Both tests are invariant to the scale of log values, so
  the power depends only on the sizes and δ/σ; :func:`effect_for_power` finds the δ/σ at which
  the rule reaches the wanted power (bisection with common random numbers, a fixed seed:
  deterministic, cached per size pair).
- :func:`rule_power` is a vectorized copy of the rule; a test checks it against
  :func:`~analysis.statistics.verdicts.verdict` dataset by dataset, and
  ``bench/statistics_calibration.py`` checks the stated MDE's power with ``verdict`` itself.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from analysis.statistics.hypothesis_tests import (
    EXACT_MAX_N,
    min_attainable_p,
    rank_sum_distribution,
)
from analysis.statistics.probability import t_ppf_array

#: Simulated data sets per power evaluation (power's standard error ≈ 0.6 % at 80 %).
SIMS = 4000
#: Fixed seed: the same sizes always give the same MDE.
SEED = 20111107
#: Largest δ/σ searched; beyond it the sizes cannot reach the power (shown as ∞).
MAX_EFFECT_SD = 60.0


@functools.lru_cache(maxsize=512)
def _exact_significant(n_a: int, n_b: int, alpha: float) -> np.ndarray:
    """For each doubled rank sum of the first group (no ties): is the exact two-sided p < α?"""
    n = n_a + n_b
    dist = rank_sum_distribution(2 * np.arange(1, n + 1), n_a)
    expected = n_a * (n + 1)
    dev = np.abs(np.arange(dist.size) - expected)
    # p(w) = P(|W − E| ≥ |w − E|): per distinct deviation, the mass at it and beyond.
    levels, which = np.unique(dev, return_inverse=True)
    mass = np.bincount(which, weights=dist, minlength=levels.size)
    at_or_beyond = np.cumsum(mass[::-1])[::-1]
    p = at_or_beyond[which]
    return p < alpha


def rule_power(n_a: int, n_b: int, effect_sd: float, *, alpha: float = 0.05,
               level: float = 0.95, sims: int = SIMS, seed: int = SEED) -> float:
    """Share of simulated comparisons the verdict rule calls "faster" at a true shift.

    Parameters
    ----------
    n_a, n_b:
        Runs of the baseline and of the other cell.
    effect_sd:
        The true shift of log throughput in units of the run-to-run log SD (δ/σ).
    alpha, level, sims, seed:
        The rule's test level and interval coverage; simulation size and seed.
    """
    if n_a < 2 or n_b < 2 or min_attainable_p(n_a, n_b) >= alpha:
        return 0.0
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((sims, n_a))
    b = rng.standard_normal((sims, n_b)) + effect_sd
    return float(_rule_calls_faster(a, b, alpha=alpha, level=level).mean())


def _rule_calls_faster(log_a: np.ndarray, log_b: np.ndarray, *, alpha: float,
                       level: float) -> np.ndarray:
    """The verdict rule on rows of log values: True where it says "faster" (b above a)."""
    n_a, n_b = log_a.shape[1], log_b.shape[1]
    # Mann-Whitney: U of the baseline = pairs with a > b.
    u = (log_a[:, :, None] > log_b[:, None, :]).sum(axis=(1, 2))
    if n_a + n_b <= EXACT_MAX_N:
        significant = _exact_significant(n_a, n_b, alpha)[2 * u + n_a * (n_a + 1)]
    else:
        from scipy import stats  # large samples only (0.5 s import)

        p = stats.mannwhitneyu(log_a, log_b, axis=1, alternative="two-sided",
                               method="asymptotic").pvalue
        significant = p < alpha
    rank_says_up = u < n_a * n_b / 2
    # Welch's interval of the difference of mean logs.
    va, vb = log_a.var(axis=1, ddof=1), log_b.var(axis=1, ddof=1)
    d = log_b.mean(axis=1) - log_a.mean(axis=1)
    sa, sb = va / n_a, vb / n_b
    df = (sa + sb) ** 2 / (sa * sa / (n_a - 1) + sb * sb / (n_b - 1))
    t = t_ppf_array(0.5 + level / 2, df)
    ci_low = d - t * np.sqrt(sa + sb)
    return significant & rank_says_up & (ci_low > 0)


@functools.lru_cache(maxsize=512)
def effect_for_power(n_a: int, n_b: int, *, alpha: float = 0.05, power: float = 0.80,
                     level: float = 0.95) -> float:
    """The shift δ/σ of log throughput at which the verdict rule reaches ``power``.

    ``inf`` when the sizes cannot show any difference (see :func:`min_attainable_p`) or do
    not reach the power within :data:`MAX_EFFECT_SD`.
    """
    if n_a < 2 or n_b < 2 or min_attainable_p(n_a, n_b) >= alpha:
        return math.inf
    return effect_reaching(lambda effect: rule_power(n_a, n_b, effect, alpha=alpha, level=level),
                           power)


def effect_reaching(power_at: Callable[[float], float], power: float) -> float:
    """The smallest shift δ/σ at which a rule's simulated power ``power_at(δ/σ)`` reaches
    ``power``, by bisection over [0, :data:`MAX_EFFECT_SD`] to 0.1 % (power grows with the
    shift; each rule simulates with common random numbers, so ``power_at`` is monotone in
    it); ``inf`` when even :data:`MAX_EFFECT_SD` falls short.

    Shared by the verdict rule (:func:`effect_for_power`) and the blocked rule
    (:func:`analysis.statistics.blocked.blocked_effect_for_power`).
    """
    if power_at(MAX_EFFECT_SD) < power:
        return math.inf
    low, high = 0.0, MAX_EFFECT_SD
    while high - low > 1e-3 * max(1.0, high):
        mid = (low + high) / 2
        if power_at(mid) >= power:
            high = mid
        else:
            low = mid
    return high


def mde_pct(n_a: int, n_b: int, log_sd: float, *, alpha: float = 0.05,
            power: float = 0.80) -> float:
    """Smallest true ratio change (%, upward) the verdict rule finds with ``power``.

    ``inf`` when the sizes cannot reach it, NaN when the noise is unknown, 0 with no noise.
    """
    k = effect_for_power(n_a, n_b, alpha=alpha, power=power)
    if math.isinf(k):
        return math.inf
    if not np.isfinite(log_sd):
        return math.nan
    return 100.0 * math.expm1(k * log_sd)


def runs_needed(effect_pct: float, log_sd: float, *, baseline_runs: int | None = None,
                alpha: float = 0.05, power: float = 0.80, max_runs: int = 50) -> int | None:
    """Fewest runs of a cell for the rule to find ``effect_pct`` with ``power``.

    Parameters
    ----------
    effect_pct:
        The change to detect, in % (10 for 1.10× or its inverse, whichever is harder: the
        upward change, since a ratio's log shift is smaller upward than downward).
    log_sd:
        Run-to-run noise as the SD of log throughput (from a CV: ``cv_to_log_sd``).
    baseline_runs:
        When given, the baseline's runs are fixed at this number and only the other cell's
        grow; else both cells get the returned number.

    Returns
    -------
    int or None
        The number of runs, or None when even ``max_runs`` is not enough.
    """
    for n in range(2, max_runs + 1):
        n_a = baseline_runs if baseline_runs is not None else n
        if mde_pct(n_a, n, log_sd, alpha=alpha, power=power) <= effect_pct:
            return n
    return None
