"""Rank tests with exact small-sample p-values, ties included.

- :func:`mann_whitney` — two-sided Mann-Whitney U (Wilcoxon rank-sum) with the **exact**
  permutation distribution of the mid-rank sum, so tied values do not push the test onto a
  normal approximation (scipy falls back to it when values tie: p = 0.046 where the exact
  p is 0.071). Computed by dynamic programming over the doubled mid-ranks (integers), which is
  exact for any pattern of ties and fast up to ~100 runs per comparison; above that the
  normal approximation with tie correction is used and the method says so.
- :func:`van_elteren` — the stratified version for blocks (hosts, days): within-block rank
  sums weighted by ``1 / (N_block + 1)`` (van Elteren 1960), with the exact permutation
  distribution (runs permuted within each block only) when it is small enough to enumerate,
  else a seeded Monte Carlo permutation p-value.
- :func:`min_attainable_p` — the smallest two-sided p any rank test can reach at these sizes.

Module name: not ``tests.py``, so pytest never collects it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Above this many runs in one comparison the exact distribution costs more than it is worth.
EXACT_MAX_N = 100
#: Enumerate the stratified distribution exactly up to this many support points.
STRATIFIED_EXACT_MAX = 200_000
#: Monte Carlo permutations for large stratified designs (p resolution 1/20001).
STRATIFIED_RESAMPLES = 20_000
#: Fixed seed: the same data always gives the same Monte Carlo p-value.
SEED = 20110107
# Two statistics closer than this are the same value (float sums of weighted ranks).
_EPS = 1e-9


@dataclass(frozen=True)
class TestResult:
    """A two-sided test: statistic, p-value, the method used and the group sizes."""

    __test__ = False  # not a pytest class, despite the name

    statistic: float
    p_value: float
    method: str
    n_a: int
    n_b: int


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[np.isfinite(arr)]


def min_attainable_p(n_a: int, n_b: int) -> float:
    """Smallest two-sided exact rank-test p-value with these group sizes: ``2 / C(n_a+n_b, n_a)``.

    Reached only by complete separation. 3 vs 3 → 0.100, 3 vs 4 → 0.057, 4 vs 4 → 0.029,
    3 vs 5 → 0.036, 5 vs 5 → 0.0079. NaN when a group is empty.
    """
    if n_a < 1 or n_b < 1:
        return math.nan
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def min_attainable_stratified_p(sizes: Sequence[tuple[int, int]]) -> float:
    """Smallest two-sided exact van Elteren p-value with these per-block group sizes:
    ``2 · Π 1 / C(n_a + n_b, n_a)`` over the blocks that hold both groups.

    Reached only when every block separates the groups completely, in the same direction.
    Blocks of one run a side: 4 blocks → 0.125, 5 → 0.0625, 6 → 0.031 (so fewer than 6 such
    blocks never reach p < 0.05). NaN when no block holds both groups.
    """
    combs = [math.comb(n_a + n_b, n_a) for n_a, n_b in sizes if n_a >= 1 and n_b >= 1]
    if not combs:
        return math.nan
    return min(1.0, 2.0 / math.prod(combs))


def rank_sum_distribution(doubled_ranks: np.ndarray, k: int) -> np.ndarray:
    """Probability of each sum of ``k`` of the given integer weights (all subsets equally likely).

    Index ``s`` of the result is P(sum = s). Subset counts are kept as float64: exact up to
    2**53 and a relative error of 1e-16 beyond, far below any p-value that matters. The result
    is shared between calls with the same weights and ``k`` (read-only): a comparison's rank
    tests, and every simulated one of a study's verdict rule, ask for the same few sizes.
    """
    weights = tuple(int(w) for w in np.asarray(doubled_ranks))
    if math.comb(len(weights), len(weights) // 2) < _EXACT_COUNTS:
        # Every subset count is an integer float64 holds exactly, whatever the order the
        # weights are added in: sorted, equal multisets share one entry of the cache.
        return _cached_rank_sum_distribution(tuple(sorted(weights)), int(k))
    # Larger samples: their weights rarely repeat, and each result is tens of kB.
    return _rank_sum_distribution(weights, int(k))


#: Below this many subsets of the largest size, counts are exact in float64 (2**53).
_EXACT_COUNTS = 2**53


def _rank_sum_distribution(weights: tuple[int, ...], k: int) -> np.ndarray:
    """:func:`rank_sum_distribution` of weights added in this order (read-only)."""
    w = np.asarray(weights, dtype=int)
    total = int(w.sum())
    dp = np.zeros((k + 1, total + 1))
    dp[0, 0] = 1.0
    for i, wi in enumerate(w):
        # Go down in j so each item is used at most once.
        for j in range(min(i + 1, k), 0, -1):
            dp[j, wi:] += dp[j - 1, : total + 1 - wi]
    counts = dp[k]
    out = counts / counts.sum()
    out.flags.writeable = False
    return out


_cached_rank_sum_distribution = functools.lru_cache(maxsize=1024)(_rank_sum_distribution)


def _doubled_midranks(pooled: np.ndarray) -> np.ndarray:
    """Twice each value's mid-rank (1-based; tied values share the mean of their ranks):
    multiples of 0.5 doubled are integers."""
    order = np.argsort(pooled, kind="stable")
    ordered = pooled[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]
    # A tie group at 0-based positions start..end-1 holds ranks start+1..end: twice their mean
    # is start + 1 + end.
    doubled = np.empty(ordered.size, dtype=int)
    doubled[order] = np.repeat(starts + 1 + ends, ends - starts)
    return doubled


def mann_whitney(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> TestResult:
    """Two-sided Mann-Whitney U test, exact (ties included) up to :data:`EXACT_MAX_N` runs.

    Parameters
    ----------
    a, b:
        The two samples (NaN dropped).

    Returns
    -------
    TestResult
        ``statistic`` = U of ``a`` (number of pairs with a > b, ties counting ½); ``p_value``
        = P(|W − E W| ≥ |w − E W|) under random allocation of the pooled values; method
        ``"exact"`` or ``"normal-approximation"``. ``p_value`` NaN when a group is empty,
        1.0 when all values are equal.
    """
    x, y = _clean(a), _clean(b)
    na, nb = int(x.size), int(y.size)
    if na == 0 or nb == 0:
        return TestResult(math.nan, math.nan, "none", na, nb)
    pooled = np.concatenate([x, y])
    r2 = _doubled_midranks(pooled)
    w_obs = int(r2[:na].sum())
    u = w_obs / 2 - na * (na + 1) / 2
    if np.ptp(pooled) == 0:
        return TestResult(float(u), 1.0, "exact", na, nb)
    if na + nb > EXACT_MAX_N:
        from scipy import stats  # large samples only (0.5 s import)

        res = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
        return TestResult(float(u), float(res.pvalue), "normal-approximation", na, nb)
    dist = rank_sum_distribution(r2, na)
    expected = na * (na + nb + 1)  # E[W] on the doubled scale
    dev = np.abs(np.arange(dist.size) - expected)
    p = float(dist[dev >= abs(w_obs - expected) - _EPS].sum())
    return TestResult(float(u), min(1.0, p), "exact", na, nb)


def _stratum_support(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact null distribution of one block's weighted rank sum of ``y``: values, probs, obs."""
    pooled = np.concatenate([x, y])
    r2 = _doubled_midranks(pooled)
    dist = rank_sum_distribution(r2, y.size)
    support = np.flatnonzero(dist > 0)
    weight = 1.0 / (pooled.size + 1) / 2  # van Elteren weight, undoing the doubling
    return support * weight, dist[support], float(r2[x.size:].sum() * weight)


def van_elteren(
    blocks: Sequence[tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
    *,
    seed: int = SEED,
) -> TestResult:
    """Stratified two-sided rank test (van Elteren): does ``b`` differ from ``a`` within blocks?

    Parameters
    ----------
    blocks:
        One ``(a_values, b_values)`` pair per block (host, day…). Blocks where a side is
        empty carry no information and are skipped.
    seed:
        Seed of the Monte Carlo permutations (used only for large designs).

    Returns
    -------
    TestResult
        ``statistic`` = Σ rank-sum(b) / (N_block + 1); method ``"exact"`` (complete
        enumeration of within-block permutations) or ``"monte-carlo"``; ``n_a``/``n_b`` are
        totals. With a single block the p-value equals :func:`mann_whitney`'s.
    """
    parts = [(_clean(a), _clean(b)) for a, b in blocks]
    parts = [(x, y) for x, y in parts if x.size and y.size]
    na = sum(x.size for x, _ in parts)
    nb = sum(y.size for _, y in parts)
    if not parts:
        return TestResult(math.nan, math.nan, "none", na, nb)
    supports = [_stratum_support(x, y) for x, y in parts]
    t_obs = sum(s[2] for s in supports)
    expected = sum(float((v * p).sum()) for v, p, _ in supports)
    if all(v.size == 1 for v, _, _ in supports):
        return TestResult(t_obs, 1.0, "exact", na, nb)  # every block is all ties
    size = math.prod(v.size for v, _, _ in supports)
    if size <= STRATIFIED_EXACT_MAX:
        vals, probs = np.zeros(1), np.ones(1)
        for v, p, _ in supports:
            vals = (vals[:, None] + v[None, :]).ravel()
            probs = (probs[:, None] * p[None, :]).ravel()
        dev = np.abs(vals - expected)
        p_value = float(probs[dev >= abs(t_obs - expected) - _EPS].sum())
        return TestResult(t_obs, min(1.0, p_value), "exact", na, nb)
    rng = np.random.default_rng(seed)
    total = np.zeros(STRATIFIED_RESAMPLES)
    for v, p, _ in supports:
        total += rng.choice(v, size=STRATIFIED_RESAMPLES, p=p)
    hits = int(np.sum(np.abs(total - expected) >= abs(t_obs - expected) - _EPS))
    return TestResult(t_obs, (hits + 1) / (STRATIFIED_RESAMPLES + 1), "monte-carlo", na, nb)
