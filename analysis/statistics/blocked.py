"""Blocked designs analysed as one: cells and blocks on log throughput, the noise pooled.

An experiment run in blocks (``order: {mode: blocks}``: every cell once per round; or hosts
as blocks) is a randomized complete block design. Its analysis is the two-way additive model
on log throughput of every counted run::

    log y = μ + cell effect + block effect + ε,   ε ~ N(0, σ²)

fitted by least squares over **every cell of the experiment**, so σ is pooled from all of
them: with twelve cells in four blocks the residual has (12 − 1)(4 − 1) = 33 degrees of
freedom, where one cell against the baseline alone has 3. A comparison of cell *b* with cell
*a* is the contrast of their effects: its estimate is a log ratio, its standard error comes
from the fit, and its test and 95 % interval use Student's t with the residual's degrees of
freedom. Unbalanced data (a baseline run in extra rounds, a cell missing a round) are fitted
as they are; only what the design identifies is estimated.

The model assumes one noise level for every cell, and its t test alone calls about 5 % of
A/A comparisons — more beside a noisy cell. So a verdict also needs a guard that does not rest
on the model, in the same direction as the model's estimate (:func:`blocked_verdict`):

- van Elteren's stratified rank test of the two cells, p < 0.05, where the blocks can give it
  (its smallest attainable p < 0.05: six blocks of one run a side, where it is a sign test);
- or survival of any one block left out: refitted without each block holding both cells, the
  interval still excludes 1 on the same side (three blocks or more).

Either guard suffices: both ask whether the result rests on the normal model or on one odd
block, and taking the rank test alone from six blocks on would make a seventh block lower the
rule's power (a sign test needs every block on one side).

The calibration (type I error on simulated A/A blocked data with a block effect and on the
recorded A/A rows, power and MDE) is ``bench/statistics_calibration.py --only blocked`` and
``docs/statistics.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from analysis.statistics.hypothesis_tests import min_attainable_stratified_p, van_elteren
from analysis.statistics.power import effect_reaching
from analysis.statistics.probability import f_sf, f_sf_array, t_ppf, t_ppf_array, t_sf

#: Two-sided level of the model's test, and the interval's coverage.
ALPHA = 0.05
LEVEL = 0.95
#: Level of the test that a compared pair is noisier than the other cells.
NOISY_PAIR_ALPHA = 0.05


@dataclass(frozen=True)
class BlockedFit:
    """The additive cell + block model fitted to log throughput.

    Attributes
    ----------
    cells, blocks:
        The cell and block labels, in the order of the model's columns.
    effects:
        Each cell's effect (log scale) relative to the first cell.
    cov_unscaled:
        (X'X)⁻ restricted to the cell effects: multiply by σ² for their covariance.
    sigma, df:
        The residual SD (log scale) and its degrees of freedom (0: no noise estimate).
    """

    cells: tuple[Hashable, ...]
    blocks: tuple[Hashable, ...]
    effects: np.ndarray
    cov_unscaled: np.ndarray
    sigma: float
    df: int
    #: Each cell's sum of squared residuals and its runs (for the pair's own noise).
    cell_ss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cell_n: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def pair_noise(self, a: Hashable, b: Hashable) -> tuple[float, float]:
        """(σ, df) a comparison of ``a`` and ``b`` uses: the pooled σ, unless the two cells'
        own residuals are significantly noisier than the other cells' (an F test at
        :data:`NOISY_PAIR_ALPHA`) — then their own σ on their share of the residual degrees
        of freedom (df × their runs / all runs: a wider t), so a noisy cell is not judged by
        its quiet neighbours' noise. A test rather than "whichever is larger": the larger of
        two noise estimates costs power on every comparison of an honest design.
        """
        if not math.isfinite(self.sigma) or not self.cell_n.size:
            return self.sigma, float(self.df)
        i, j = self.cells.index(a), self.cells.index(b)
        share = self.df * (self.cell_n[i] + self.cell_n[j]) / self.cell_n.sum()
        rest_df = self.df - share
        if share <= 0 or rest_df <= 0:
            return self.sigma, float(self.df)
        own_ss = self.cell_ss[i] + self.cell_ss[j]
        rest_ss = self.cell_ss.sum() - own_ss
        if rest_ss <= 0:
            return self.sigma, float(self.df)
        ratio = (own_ss / share) / (rest_ss / rest_df)
        if f_sf(ratio, share, rest_df) < NOISY_PAIR_ALPHA:
            return math.sqrt(own_ss / share), share
        return self.sigma, float(self.df)

    def contrast(self, a: Hashable, b: Hashable) -> tuple[float, float, float]:
        """(log ratio b / a, its standard error, the error's degrees of freedom); NaN when
        the design cannot compare them."""
        if a not in self.cells or b not in self.cells:
            return math.nan, math.nan, math.nan
        i, j = self.cells.index(a), self.cells.index(b)
        c = np.zeros(len(self.cells))
        c[j] += 1.0
        c[i] -= 1.0
        var = float(c @ self.cov_unscaled @ c)
        sigma, df = self.pair_noise(a, b)
        if not math.isfinite(sigma) or var <= 0:
            return float(c @ self.effects), math.nan, df
        return float(c @ self.effects), sigma * math.sqrt(var), df


def fit(log_values: Sequence[float] | np.ndarray, cells: Sequence[Hashable],
        blocks: Sequence[Hashable]) -> BlockedFit:
    """Least-squares fit of the additive model to one log value per run.

    Parameters
    ----------
    log_values:
        Log throughput of each counted run.
    cells, blocks:
        Each run's cell and block (any hashable labels).
    """
    y = np.asarray(log_values, dtype=float)
    cell_levels = tuple(dict.fromkeys(cells))
    block_levels = tuple(dict.fromkeys(blocks))
    n, k = y.size, len(cell_levels)
    x = np.zeros((n, k + max(len(block_levels) - 1, 0)))
    cell_index = {c: i for i, c in enumerate(cell_levels)}
    block_index = {b: i for i, b in enumerate(block_levels)}
    for row, (c, b) in enumerate(zip(cells, blocks, strict=True)):
        x[row, cell_index[c]] = 1.0  # one mean per cell: the cells' columns carry μ
        if block_index[b] > 0:  # block effects relative to the first block
            x[row, k + block_index[b] - 1] = 1.0
    xtx_inv = np.linalg.pinv(x.T @ x)
    beta = xtx_inv @ x.T @ y
    rank = int(np.linalg.matrix_rank(x)) if n else 0
    df = n - rank
    resid = y - x @ beta
    sigma = math.sqrt(float(resid @ resid) / df) if df > 0 else math.nan
    effects = beta[:k] - beta[0] if k else beta[:0]
    index = np.array([cell_index[c] for c in cells], dtype=int)
    cell_ss = np.bincount(index, weights=resid * resid, minlength=k) if n else np.zeros(k)
    cell_n = np.bincount(index, minlength=k).astype(float) if n else np.zeros(k)
    return BlockedFit(cell_levels, block_levels, effects, xtx_inv[:k, :k], sigma, df,
                      cell_ss, cell_n)


@dataclass(frozen=True)
class BlockedVerdict:
    """One comparison from the blocked model: ratio b / a, interval, tests and guard."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    df: int
    sigma: float
    n_blocks: int
    rank_p: float
    rank_min_p: float
    guard: str
    guard_holds: bool
    guard_detail: str

    @property
    def excludes_one(self) -> bool:
        """Whether the interval lies wholly on one side of 1."""
        return math.isfinite(self.ci_low) and (self.ci_low > 1 or self.ci_high < 1)

    @property
    def significant(self) -> bool:
        """The model says a difference (p < α, interval off 1) and the guard agrees."""
        return (math.isfinite(self.p_value) and self.p_value < ALPHA and self.excludes_one
                and self.guard_holds)

    @property
    def guard_possible(self) -> bool:
        """Whether these blocks can give the guard at all: the stratified rank test can reach
        p < α, or three blocks hold both cells (one can be left out)."""
        return (math.isfinite(self.rank_min_p) and self.rank_min_p < ALPHA) or self.n_blocks >= 3


def _interval(estimate: float, se: float, df: float, level: float
              ) -> tuple[float, float, float]:
    if not (math.isfinite(se) and df > 0):
        return math.exp(estimate) if math.isfinite(estimate) else math.nan, math.nan, math.nan
    t = t_ppf(0.5 + level / 2, df)
    return math.exp(estimate), math.exp(estimate - t * se), math.exp(estimate + t * se)


def _pairs_by_block(values: np.ndarray, cells: Sequence[Hashable], blocks: Sequence[Hashable],
                    a: Hashable, b: Hashable) -> list[tuple[np.ndarray, np.ndarray]]:
    cell_arr, block_arr = np.asarray(cells, dtype=object), np.asarray(blocks, dtype=object)
    out = []
    for block in dict.fromkeys(blocks):
        here = block_arr == block
        va, vb = values[here & (cell_arr == a)], values[here & (cell_arr == b)]
        if va.size and vb.size:
            out.append((va, vb))
    return out


def leave_one_block_out(log_values: np.ndarray, cells: Sequence[Hashable],
                        blocks: Sequence[Hashable], a: Hashable, b: Hashable, *,
                        level: float = LEVEL) -> list[tuple[Hashable, float, float]]:
    """For each block holding both cells: (block, interval low, high) of b / a without it."""
    cell_arr, block_arr = np.asarray(cells, dtype=object), np.asarray(blocks, dtype=object)
    out = []
    for block in dict.fromkeys(blocks):
        both = ((block_arr == block) & (cell_arr == a)).any() and (
            (block_arr == block) & (cell_arr == b)).any()
        if not both:
            continue
        keep = block_arr != block
        refit = fit(log_values[keep], list(cell_arr[keep]), list(block_arr[keep]))
        est, se, df = refit.contrast(a, b)
        _, low, high = _interval(est, se, df, level)
        out.append((block, low, high))
    return out


def blocked_verdict(values: Sequence[float] | np.ndarray, cells: Sequence[Hashable],
                    blocks: Sequence[Hashable], a: Hashable, b: Hashable, *,
                    level: float = LEVEL, model: BlockedFit | None = None) -> BlockedVerdict:
    """Compare cell ``b`` with cell ``a`` (ratio b / a) in a blocked experiment.

    Parameters
    ----------
    values:
        Each counted run's throughput (positive; the fit is on its log).
    cells, blocks:
        Each run's cell and block.
    a, b:
        The two cells (``a`` is the reference: the baseline, or a comparison's row b).
    model:
        The fit of the same data, when the caller compares many pairs.
    """
    y = np.asarray(values, dtype=float)
    logs = np.log(y)
    model = model if model is not None else fit(logs, cells, blocks)
    est, se, df = model.contrast(a, b)
    ratio, low, high = _interval(est, se, df, level)
    p = 2 * t_sf(abs(est) / se, df) if math.isfinite(se) and se > 0 else math.nan
    pairs = _pairs_by_block(y, cells, blocks, a, b)
    rank_min = min_attainable_stratified_p([(va.size, vb.size) for va, vb in pairs]) \
        if pairs else math.nan
    rank_p = van_elteren(pairs).p_value if pairs else math.nan
    up = math.isfinite(est) and est > 0
    rank_ok = False
    texts = []
    if math.isfinite(rank_min) and rank_min < ALPHA:
        # The rank sum's expectation is half of b's runs (weights 1/(N+1)): above it, b ranks
        # higher — the rank test must point where the model's estimate does.
        rank_up = van_elteren(pairs).statistic > sum(vb.size for _, vb in pairs) / 2
        rank_ok = math.isfinite(rank_p) and rank_p < ALPHA and rank_up == up
        texts.append(f"van Elteren's stratified rank test p = {rank_p:.3g}"
                     + ("" if rank_up == up else " in the other direction"))
    loo = leave_one_block_out(logs, cells, blocks, a, b, level=level) if len(pairs) >= 3 \
        else []
    failed = [blk for blk, lo, hi in loo
              if not (math.isfinite(lo) and ((lo > 1) if up else (hi < 1)))]
    loo_ok = bool(loo) and not failed
    if loo_ok:
        texts.append(f"the interval stays off 1 without any one of the {len(loo)} blocks")
    elif loo:
        texts.append(f"without {_block_name(failed[0])} the interval reaches 1"
                     + (f" (and without {len(failed) - 1} other block(s))"
                        if len(failed) > 1 else ""))
    else:
        texts.append(f"{len(pairs)} block(s) hold both cells: leaving one out needs 3")
    holds = rank_ok or loo_ok
    guard = ("rank" if rank_ok else "leave-one-block-out") if holds else (
        "rank or leave-one-block-out" if texts[0].startswith("van") else "leave-one-block-out")
    detail = "; ".join(texts)
    sigma, _ = model.pair_noise(a, b) if a in model.cells and b in model.cells else (
        model.sigma, model.df)
    return BlockedVerdict(ratio, low, high, p, int(df) if math.isfinite(df) else 0, sigma,
                          len(pairs), rank_p,
                          rank_min, guard, holds, detail)


def _block_name(block: Hashable) -> str:
    text = str(block)
    return text if text.startswith(("block", "host")) else f"block {text}"


# --- power of the blocked rule (balanced design, simulated) ------------------------------------

#: Simulated experiments per power evaluation, and the fixed seed.
SIMS = 4000
SEED = 20111108


def _rule_calls_faster_balanced(y: np.ndarray, alpha: float, level: float) -> np.ndarray:
    """The blocked rule on balanced data ``y[sim, cell, block]`` (cell 0 the reference, cell 1
    the other; one run per cell and block): True where it says "faster"."""
    sims, k, nb = y.shape

    def model(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        blocks = data.shape[2]
        cell_means = data.mean(axis=2)
        block_means = data.mean(axis=1)
        grand = data.mean(axis=(1, 2))
        resid = (data - cell_means[:, :, None] - block_means[:, None, :]
                 + grand[:, None, None])
        df = (k - 1) * (blocks - 1)
        sigma = np.sqrt((resid ** 2).sum(axis=(1, 2)) / df)
        # The pair's own noise when significantly larger (BlockedFit.pair_noise).
        share = df * 2 / k
        own_ss = (resid[:, :2, :] ** 2).sum(axis=(1, 2))
        rest_ss = (resid ** 2).sum(axis=(1, 2)) - own_ss
        noisy = np.zeros(sims, dtype=bool)
        if k > 2:
            ratio = (own_ss / share) / (rest_ss / (df - share))
            noisy = f_sf_array(ratio, share, df - share) < NOISY_PAIR_ALPHA
        own = np.sqrt(own_ss / share)
        est = cell_means[:, 1] - cell_means[:, 0]
        se = np.where(noisy, own, sigma) * math.sqrt(2 / blocks)
        return est, se, np.where(noisy, share, float(df))

    est, se, df = model(y)
    t = t_ppf_array(0.5 + level / 2, df)
    low = est - t * se
    significant = low > 0  # an interval off 0 is p < α for this t-test, two-sided
    guard = np.zeros(sims, dtype=bool)
    if min_attainable_stratified_p([(1, 1)] * nb) < alpha:
        # The rank guard: van Elteren with one run a side per block is the sign test.
        guard |= _sign_test_significant(y[:, 1, :] - y[:, 0, :], alpha)
    if nb >= 3:  # leaving one block out leaves two to estimate the noise
        loo = np.ones(sims, dtype=bool)
        for drop in range(nb):
            keep = [j for j in range(nb) if j != drop]
            e, s, d = model(y[:, :, keep])
            loo &= (e - t_ppf_array(0.5 + level / 2, d) * s) > 0
        guard |= loo
    return significant & guard


def _sign_test_significant(diff: np.ndarray, alpha: float) -> np.ndarray:
    """Two-sided exact sign test per row of within-block differences, upward only."""
    nb = diff.shape[1]
    ups = (diff > 0).sum(axis=1)
    tail = np.array([sum(math.comb(nb, j) for j in range(k, nb + 1)) / 2 ** nb
                     for k in range(nb + 1)])
    extreme = np.maximum(ups, nb - ups)
    p = np.minimum(1.0, 2 * tail[extreme])
    return (p < alpha) & (ups > nb - ups)


def blocked_rule_power(n_cells: int, n_blocks: int, effect_sd: float, *, alpha: float = ALPHA,
                       level: float = LEVEL, sims: int = SIMS, seed: int = SEED,
                       block_sd: float = 1.0) -> float:
    """Share of simulated balanced experiments in which the blocked rule calls "faster".

    ``n_cells`` cells each run once in each of ``n_blocks`` blocks; the other cell is shifted
    by ``effect_sd`` run-to-run SDs; blocks shift every cell alike by N(0, block_sd²) (the
    rule is invariant to it).
    """
    if n_blocks < 2 or n_cells < 2:
        return 0.0
    rng = np.random.default_rng(seed)
    y = rng.standard_normal((sims, n_cells, n_blocks))
    y += block_sd * rng.standard_normal((sims, 1, n_blocks))
    y[:, 1, :] += effect_sd
    return float(_rule_calls_faster_balanced(y, alpha, level).mean())


@functools.lru_cache(maxsize=256)
def blocked_effect_for_power(n_cells: int, n_blocks: int, *, alpha: float = ALPHA,
                             power: float = 0.80, level: float = LEVEL) -> float:
    """The shift δ/σ at which the blocked rule reaches ``power`` (``inf``: never)."""
    return effect_reaching(
        lambda effect: blocked_rule_power(n_cells, n_blocks, effect, alpha=alpha, level=level),
        power)


def blocked_mde_pct(n_cells: int, n_blocks: int, log_sd: float, *, alpha: float = ALPHA,
                    power: float = 0.80) -> float:
    """Smallest true change (%, upward) the blocked rule finds with ``power`` in a balanced
    design of ``n_cells`` cells × ``n_blocks`` blocks at run-to-run noise ``log_sd``."""
    k = blocked_effect_for_power(max(n_cells, 2), n_blocks, alpha=alpha, power=power)
    if math.isinf(k):
        return math.inf
    if not math.isfinite(log_sd):
        return math.nan
    return 100.0 * math.expm1(k * log_sd)
