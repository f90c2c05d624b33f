"""Is the difference real? One cell against the baseline, with the reason and the size that
could hide.

Rule (both tests must agree, so the error rate is at most the smaller of theirs):

- ``not enough repetitions`` — fewer than 2 runs on a side, or the group sizes make
  p < 0.05 impossible for an exact rank test (3 vs 3: the smallest p is 0.10; 3 vs 4: 0.057);
- ``faster`` / ``slower`` — the exact two-sided Mann-Whitney p < 0.05 **and** the 95 %
  Welch-on-log interval of the ratio excludes 1;
- ``no clear difference`` — otherwise, with the reason (which test did not agree).

Every verdict carries the **minimum detectable effect**: the smallest true ratio change (%)
that this very rule (both tests, at these sizes and this noise) finds with 80 % power at
α = 0.05, found by simulating the rule (:mod:`analysis.statistics.power`). The noise is the
cells' pooled log-scale SD, or the A/A noise floor when that is larger and known. A "no clear
difference" with an MDE of ±12 % says a 10 % effect could be hiding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from analysis.statistics import blocked
from analysis.statistics.hypothesis_tests import mann_whitney, min_attainable_p
from analysis.statistics.intervals import LEVEL, ratio_ci
from analysis.statistics.power import mde_pct
from analysis.statistics.probability import chi2_median

#: Two-sided significance level of the rank test.
ALPHA = 0.05
#: Power at which the minimum detectable effect is stated.
POWER = 0.80

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no clear difference"
NOT_ENOUGH = "not enough repetitions"


@dataclass(frozen=True)
class Verdict:
    """One cell against the baseline (``ratio = other / baseline``)."""

    verdict: str
    reason: str
    ratio: float
    ci_low: float
    ci_high: float
    ci_method: str
    p_value: float
    test_method: str
    n_baseline: int
    n_other: int
    min_attainable_p: float
    noise_cv_pct: float
    mde_pct: float

    def as_dict(self) -> dict[str, object]:
        """The fields as a flat dict (one row of a comparison table)."""
        return asdict(self)


def _positive(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[np.isfinite(arr) & (arr > 0)]


def cv_to_log_sd(cv: float) -> float:
    """Log-scale SD of lognormal noise with this CV (a fraction: 0.03 for 3 %)."""
    return math.sqrt(math.log1p(cv * cv))


def log_sd_to_cv(sd: float) -> float:
    """CV (fraction) of lognormal noise with this log-scale SD."""
    return math.sqrt(math.expm1(sd * sd))


def pooled_log_sd(
    baseline: Sequence[float] | np.ndarray, other: Sequence[float] | np.ndarray
) -> float:
    """Pooled SD of log values of two cells (NaN without a degree of freedom)."""
    a, b = np.log(_positive(baseline)), np.log(_positive(other))
    df = max(a.size - 1, 0) + max(b.size - 1, 0)
    if df < 1:
        return math.nan
    ss = (float(((a - a.mean()) ** 2).sum()) if a.size else 0.0) + (
        float(((b - b.mean()) ** 2).sum()) if b.size else 0.0)
    return math.sqrt(ss / df)


def median_unbiasing(df: int) -> float:
    """Factor making a pooled SD with ``df`` degrees of freedom median-unbiased for σ.

    s² · df / σ² follows χ²(df), so the median of s is σ · sqrt(median χ²(df) / df): with 8 df
    the sample SD is below σ more often than not by about 4 %.
    """
    if df < 1:
        return math.nan
    return math.sqrt(df / chi2_median(df))


def minimum_detectable_effect(
    n_a: int,
    n_b: int,
    log_sd: float,
    *,
    alpha: float = ALPHA,
    power: float = POWER,
) -> float:
    """Smallest ratio change (%, upward) that this module's verdict rule finds with ``power``.

    Parameters
    ----------
    n_a, n_b:
        Runs per cell.
    log_sd:
        Noise as the SD of log NOTPM between runs (≈ CV for small CVs).
    alpha, power:
        Test level and wanted power.

    Returns
    -------
    float
        ``100 × (exp(k·σ) − 1)`` where k is the shift (in SDs) at which the rule — exact rank
        test and interval together — reaches ``power`` in simulation
        (:func:`analysis.statistics.power.effect_for_power`); ``inf`` when the sizes cannot
        reach ``alpha`` with an exact rank test (see :func:`min_attainable_p`); NaN when the
        noise is unknown.
    """
    if n_a < 2 or n_b < 2 or min_attainable_p(n_a, n_b) >= alpha:
        return math.inf
    if not np.isfinite(log_sd):
        return math.nan
    if log_sd == 0:
        return 0.0
    return mde_pct(n_a, n_b, log_sd, alpha=alpha, power=power)


def _fmt_p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def verdict(
    baseline: Sequence[float] | np.ndarray,
    other: Sequence[float] | np.ndarray,
    *,
    alpha: float = ALPHA,
    level: float = LEVEL,
    noise_floor_cv: float | None = None,
) -> Verdict:
    """Compare one cell's per-run figures (e.g. NOTPM) with the baseline's.

    Parameters
    ----------
    baseline, other:
        One figure per done run (NaN and values ≤ 0 are dropped).
    alpha:
        Level of the Mann-Whitney test.
    level:
        Coverage of the ratio's interval (0.95 pairs with α = 0.05).
    noise_floor_cv:
        Run-to-run CV (fraction) measured by an A/A experiment; the MDE uses the larger of
        it and the cells' own noise.

    Returns
    -------
    Verdict
        See the module docstring for the rule; ``reason`` is a sentence for the report.
    """
    a, b = _positive(baseline), _positive(other)
    na, nb = int(a.size), int(b.size)
    ci = ratio_ci(a, b, level=level)
    test = mann_whitney(a, b)
    pmin = min_attainable_p(na, nb)
    # The pooled SD of a few runs is usually below the true noise; scaled to be median-unbiased
    # the stated MDE is the one the rule reaches 80 % power at (docs/statistics.md).
    sd = pooled_log_sd(a, b) * median_unbiasing(na + nb - 2)
    if noise_floor_cv is not None and np.isfinite(noise_floor_cv):
        floor = cv_to_log_sd(noise_floor_cv)
        sd = floor if not np.isfinite(sd) else max(sd, floor)
    noise_cv = 100.0 * log_sd_to_cv(sd) if np.isfinite(sd) else math.nan
    mde = minimum_detectable_effect(na, nb, sd, alpha=alpha)

    def make(label: str, reason: str) -> Verdict:
        return Verdict(label, reason, ci.estimate, ci.low, ci.high, ci.method, test.p_value,
                       test.method, na, nb, pmin, noise_cv, mde)

    if na < 2 or nb < 2:
        return make(NOT_ENOUGH, f"{na} vs {nb} runs: an interval needs at least 2 per side")
    if pmin >= alpha:
        need = next(k for k in range(2, 50) if min_attainable_p(k, k) < alpha)
        return make(NOT_ENOUGH, (
            f"{na} vs {nb} runs: the smallest possible two-sided p is {_fmt_p(pmin)} ≥ "
            f"{alpha:g}, so no difference can be shown; run at least {need} per cell"))
    pct = f"{100 * level:g}%"
    ci_text = f"{pct} CI of the ratio {ci.low:.3f}–{ci.high:.3f}"
    hide = f"; a change below ±{mde:.1f}% could hide at this n and noise"
    significant = test.p_value < alpha
    if significant and ci.excludes_one:
        # U of the baseline below half the pairs means the other cell ranks higher.
        mw_up = test.statistic < na * nb / 2
        if mw_up == (ci.estimate > 1):
            label = FASTER if ci.estimate > 1 else SLOWER
            return make(label, f"Mann-Whitney p = {_fmt_p(test.p_value)} < {alpha:g} and "
                               f"the {ci_text} excludes 1")
        return make(NO_DIFFERENCE, "the rank test and the ratio disagree on the direction"
                    + hide)
    reasons = []
    if not significant:
        reasons.append(f"Mann-Whitney p = {_fmt_p(test.p_value)} ≥ {alpha:g}")
    if not ci.excludes_one:
        reasons.append(f"the {ci_text} includes 1")
    return make(NO_DIFFERENCE, " and ".join(reasons) + hide)


def design_verdict(
    values: Sequence[float] | np.ndarray,
    cells: Sequence[object],
    blocks: Sequence[object] | None,
    reference: object,
    other: object,
    *,
    noise_floor_cv: float | None = None,
    model: blocked.BlockedFit | None = None,
    block_unit: str = "block",
) -> Verdict:
    """The one verdict rule of flushbench: cell ``other`` against cell ``reference``.

    Every place that states a verdict — ``compare``, the report's bars, the scorecard, the
    cross-database compare, the study tables — calls this function, so one comparison gets one
    verdict wherever it is shown.

    Parameters
    ----------
    values, cells:
        Every counted run's figure (NOTPM, TPS) and cell.
    blocks:
        Each run's block (round of ``order: blocks``, host, source database) or None for an
        unblocked experiment. Blocked: the additive cell + block model over every cell, with
        its guard (:func:`analysis.statistics.blocked.blocked_verdict`); unblocked: the exact
        rank test and the Welch interval of the two cells (:func:`verdict`).
    reference, other:
        The two cells; the ratio is other / reference.
    noise_floor_cv:
        The A/A floor (fraction) for the stated MDE.
    model:
        The blocked fit of the same runs, when the caller judges many pairs.
    block_unit:
        What a block is, in words (``round``, ``host``, ``source``).
    """
    y = np.asarray(values, dtype=float)
    cell_arr = np.asarray(cells, dtype=object)
    ok = np.isfinite(y) & (y > 0)
    if blocks is None:
        return verdict(y[ok & (cell_arr == reference)], y[ok & (cell_arr == other)],
                       noise_floor_cv=noise_floor_cv)
    block_arr = np.asarray(blocks, dtype=object)
    return _blocked_design_verdict(y[ok], cell_arr[ok], block_arr[ok], reference, other,
                                   noise_floor_cv=noise_floor_cv, model=model,
                                   block_unit=block_unit)


def _blocked_design_verdict(y: np.ndarray, cell_arr: np.ndarray, block_arr: np.ndarray,
                            reference: object, other: object, *,
                            noise_floor_cv: float | None, model: blocked.BlockedFit | None,
                            block_unit: str) -> Verdict:
    """:func:`design_verdict` of a blocked experiment, on its counted runs' figures."""
    na = int((cell_arr == reference).sum())
    nb = int((cell_arr == other).sum())
    if model is None:
        model = blocked.fit(np.log(y), list(cell_arr), list(block_arr))
    b = blocked.blocked_verdict(y, list(cell_arr), list(block_arr), reference, other,
                                model=model)
    # Median-unbiased, as for independent runs: the pooled SD of few degrees of freedom is
    # below the true noise more often than not, and the stated MDE is at the true noise.
    sd = b.sigma * median_unbiasing(b.df) if b.df >= 1 else b.sigma
    if noise_floor_cv is not None and np.isfinite(noise_floor_cv) and np.isfinite(sd):
        sd = max(sd, cv_to_log_sd(noise_floor_cv))
    noise_cv = 100.0 * log_sd_to_cv(sd) if np.isfinite(sd) else math.nan
    mde = blocked.blocked_mde_pct(len(model.cells), b.n_blocks, sd) if b.n_blocks >= 2 \
        else math.inf
    units = f"{b.n_blocks} {block_unit}{'' if b.n_blocks == 1 else 's'}"
    kind = "blocks" if block_unit == "block" else f"{block_unit} blocks"
    method = f"cell + {block_unit} model on log values, σ pooled over {len(model.cells)} cells"

    def make(label: str, reason: str) -> Verdict:
        return Verdict(label, reason, b.ratio, b.ci_low, b.ci_high, f"t ({b.df} df), {method}",
                       b.p_value, f"t test of the contrast; guard: {b.guard}", na, nb,
                       b.rank_min_p, noise_cv, mde)

    if b.n_blocks < 2 or b.df < 1:
        return make(NOT_ENOUGH, f"{kind}: {units}, no blocked comparison yet: it"
                                f" needs 2 {block_unit}s holding both cells and a noise"
                                f" estimate (the model has {b.df} residual degrees of freedom)")
    ci_text = f"95% CI of the ratio {b.ci_low:.3f}–{b.ci_high:.3f}"
    model_text = f"{kind}: {units}, model p = {_fmt_p(b.p_value)}, {ci_text}"
    hide = f"; a change below ±{mde:.1f}% could hide at this design and noise"
    if b.significant:
        return make(FASTER if b.ratio > 1 else SLOWER, f"{model_text}; {b.guard_detail}")
    reasons = []
    if not (b.p_value < ALPHA and b.excludes_one):
        reasons.append(f"{model_text} includes 1")
    elif not b.guard_possible:
        # The model sees a difference the guard cannot yet confirm or refute: "no clear
        # difference" would deny a 2x ratio whose interval is far from 1.
        return make(NOT_ENOUGH, f"{model_text}, but the guard needs 3 {block_unit}s holding"
                                f" both cells (it has {b.n_blocks}): run another {block_unit}")
    elif not b.guard_holds:
        reasons.append(f"{model_text}, but {b.guard_detail}")
    return make(NO_DIFFERENCE, " and ".join(reasons) + hide)
