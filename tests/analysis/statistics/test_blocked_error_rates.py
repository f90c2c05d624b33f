"""Seeded simulations of the blocked verdict rule through ``design_verdict`` itself.

Balanced experiments: every cell once per block, lognormal run-to-run noise, and a block
effect that multiplies every cell of a block alike. ``bench/statistics_calibration.py --only
blocked`` prints the same figures with more trials (``docs/statistics.md``, "Blocked designs").

Binomial margins: a type I error is held to at most what a rule at exactly 5 % gives in 99 %
of seeds (400 trials: 31 calls, 7.75 %); a rule at 10 % fails that bound in about 93 % of
seeds. Power figures use 200–400 trials (SE ≤ 2.5 points).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analysis.statistics.blocked import blocked_mde_pct
from analysis.statistics.verdicts import (
    FASTER,
    NOT_ENOUGH,
    SLOWER,
    cv_to_log_sd,
    design_verdict,
)


def balanced_blocks(n_cells: int, n_blocks: int) -> tuple[list[int], list[int]]:
    """Cell and block of each run: every cell once per block, block by block."""
    return ([c for _ in range(n_blocks) for c in range(n_cells)],
            [b for b in range(n_blocks) for _ in range(n_cells)])


def experiment(rng: np.random.Generator, n_cells: int, n_blocks: int, cv: float,
               block_ratio: float, shift: float = 1.0) -> np.ndarray:
    """One experiment's throughput in the order of :func:`balanced_blocks`; cell 1 × shift."""
    sd = cv_to_log_sd(cv)
    log = sd * rng.standard_normal((n_blocks, n_cells))
    log += block_ratio * sd * rng.standard_normal((n_blocks, 1))
    log[:, 1] += math.log(shift)
    return 1000.0 * np.exp(log).ravel()


def share_faster(rng: np.random.Generator, trials: int, n_cells: int, n_blocks: int, cv: float,
                 shift: float) -> float:
    cells, blocks = balanced_blocks(n_cells, n_blocks)
    return sum(design_verdict(experiment(rng, n_cells, n_blocks, cv, 1.0, shift), cells, blocks,
                              0, 1).verdict == FASTER for _ in range(trials)) / trials


@pytest.mark.parametrize("n_blocks", [4, 6])
@pytest.mark.parametrize("n_cells", [2, 12])
def test_aa_with_a_block_effect_is_called_in_at_most_5_percent(n_cells: int,
                                                                n_blocks: int) -> None:
    """A/A, blocks shifting every cell by 3× the run-to-run SD: "faster" or "slower" in ≤ 5 %
    (plus simulation error), while the model's t test alone calls about 5 % of the same data —
    the nulls are close enough to call, and it is the rule that holds them back."""
    rng = np.random.default_rng(9100 + 10 * n_cells + n_blocks)
    trials = 400
    cells, blocks = balanced_blocks(n_cells, n_blocks)
    called = t_alone = 0
    for _ in range(trials):
        v = design_verdict(experiment(rng, n_cells, n_blocks, 0.05, 3.0), cells, blocks, 0, 1,
                           block_unit="round")
        called += v.verdict in (FASTER, SLOWER)
        t_alone += v.p_value < 0.05
    bound = stats.binom.ppf(0.99, trials, 0.05)
    assert called <= bound, f"{called}/{trials} A/A comparisons called a difference"
    assert 0.02 * trials <= t_alone <= 0.09 * trials, f"t test alone: {t_alone}/{trials}"


def test_twelve_cells_in_four_blocks_find_a_thirty_percent_effect_every_time() -> None:
    """4 rounds × 12 cells at CV 2.5 %: +30 % is "faster" in every experiment."""
    rng = np.random.default_rng(9201)
    assert share_faster(rng, 200, 12, 4, 0.025, 1.30) == 1.0


def test_twelve_cells_in_four_blocks_find_a_ten_percent_effect_mostly() -> None:
    """4 rounds × 12 cells at CV 2.5 %: +10 % (4 run-to-run SDs) is "faster" in most
    experiments — above the rule's 80 % point, its MDE being 9.5 % there (a pair judged by its
    own noise when that is larger costs some power against the pooled noise alone)."""
    rng = np.random.default_rng(9202)
    assert share_faster(rng, 200, 12, 4, 0.025, 1.10) >= 0.75


@pytest.mark.parametrize(("n_cells", "n_blocks"), [(12, 4), (2, 6)])
def test_the_mde_at_the_true_noise_is_the_rules_80_percent_point(n_cells: int,
                                                                 n_blocks: int) -> None:
    """At a true shift equal to ``blocked_mde_pct`` (the true σ), design_verdict says "faster"
    in 80 % of experiments (400 trials: ± 6 points is three standard errors)."""
    rng = np.random.default_rng(9300 + 10 * n_cells + n_blocks)
    cv = 0.05
    mde = blocked_mde_pct(n_cells, n_blocks, cv_to_log_sd(cv))
    power = share_faster(rng, 400, n_cells, n_blocks, cv, 1 + mde / 100)
    assert 0.74 <= power <= 0.86, f"MDE {mde:.1f} %: power {power:.3f}"


def test_a_difference_no_guard_can_check_yet_is_not_enough_not_no_difference() -> None:
    """Two rounds, fifteen cells, a doubling: the model's interval is far from 1, but neither
    guard exists yet (leaving a round out needs 3; the rank test needs 6) — the verdict asks for
    a third round instead of denying the difference; the third round decides it."""
    rng = np.random.default_rng(39)
    cells, blocks = balanced_blocks(15, 3)
    values = experiment(rng, 15, 3, 0.05, 1.0, shift=2.0)
    two = [i for i, b in enumerate(blocks) if b < 2]
    early = design_verdict(values[two], [cells[i] for i in two], [blocks[i] for i in two], 0, 1)
    assert early.ci_low > 1.5
    assert early.verdict == NOT_ENOUGH and "3 blocks" in early.reason, early.reason
    assert design_verdict(values, cells, blocks, 0, 1).verdict == FASTER
