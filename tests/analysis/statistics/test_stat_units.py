"""Hand-made cases: percentiles, rates across a restart, exact rank-test p-values, checkpoint
limits, design estimability."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.statistics.checkpoint import max_checkpoint_age
from analysis.statistics.design import estimability, main_effects
from analysis.statistics.hypothesis_tests import (
    mann_whitney,
    min_attainable_p,
    min_attainable_stratified_p,
    van_elteren,
)
from analysis.statistics.intervals import mean_ci, ratio_ci, welch_log_p
from analysis.statistics.percentiles import nearest_rank, nearest_ranks
from analysis.statistics.rates import counter_rates, restarts
from core.flavors import version_number as parse_version


# ------------------------------------------------------------------------------ percentiles
def test_nearest_rank_returns_an_observed_value() -> None:
    # Five zero intervals out of 90: p5 by nearest rank is rank ceil(4.5) = 5, a zero;
    # numpy's interpolation would also give 0 here, so check p6 (rank 6 = first 100).
    values = [0.0] * 5 + [100.0 + i for i in range(85)]
    assert nearest_rank(values, 5) == 0.0
    assert nearest_rank(values, 6) == 100.0
    assert nearest_rank(values, 5.6) == 100.0  # rank ceil(5.04) = 6
    assert np.percentile(values, 5.6) not in values  # interpolation invents a value


def test_nearest_rank_textbook_cases() -> None:
    # Wikipedia's nearest-rank example: 15, 20, 35, 40, 50.
    data = [40, 15, 50, 35, 20]
    assert list(nearest_ranks(data, [0, 5, 30, 40, 50, 100])) == [15, 15, 20, 20, 35, 50]
    assert nearest_rank([1.0, math.nan, 3.0], 50) == 1.0
    assert math.isnan(nearest_rank([], 50))
    with pytest.raises(ValueError):
        nearest_rank([1.0], 101)


# ------------------------------------------------------------------------------------ rates
def test_rates_break_at_restart_even_when_counter_grew() -> None:
    t = [0.0, 10.0, 20.0, 30.0, 40.0]
    counter = [1000.0, 1100.0, 1200.0, 1500.0, 1600.0]  # restart before t=30, already past
    uptime = [500.0, 510.0, 520.0, 5.0, 15.0]
    r = counter_rates(counter, t, uptime)
    assert math.isnan(r[0]) and math.isnan(r[3])
    assert r[1] == pytest.approx(10.0) and r[2] == pytest.approx(10.0)
    assert r[4] == pytest.approx(10.0)
    # Without Uptime the grown counter would give a (wrong) rate of 30/s.
    assert counter_rates(counter, t)[3] == pytest.approx(30.0)


def test_rates_use_real_timestamps_and_gaps() -> None:
    t = [0.0, 10.0, 25.0, 25.0, 35.0]
    counter = [0.0, 100.0, 250.0, 260.0, 200.0]
    r = counter_rates(counter, t, divisor=2.0)
    assert r[1] == pytest.approx(5.0) and r[2] == pytest.approx(5.0)
    assert math.isnan(r[3])  # time did not move
    assert math.isnan(r[4])  # counter went down
    # Uptime grew less than the wall clock (restart inside a long gap).
    assert list(restarts([0, 10, 100], [50, 60, 80])) == [False, False, True]


# ----------------------------------------------------------------------------- rank tests
def test_mann_whitney_complete_separation_3v3() -> None:
    res = mann_whitney([1, 2, 3], [4, 5, 6])
    assert res.p_value == pytest.approx(0.1)
    assert res.method == "exact" and res.statistic == 0.0
    assert min_attainable_p(3, 3) == pytest.approx(0.1)
    assert min_attainable_p(4, 4) == pytest.approx(2 / 70)


def _brute_force_p(a: list[float], b: list[float]) -> float:
    pooled = np.array(a + b, dtype=float)
    ranks = stats.rankdata(pooled)
    n = len(a)
    expected = n * (len(pooled) + 1) / 2
    obs = abs(ranks[:n].sum() - expected)
    sums = [abs(ranks[list(c)].sum() - expected)
            for c in itertools.combinations(range(len(pooled)), n)]
    return float(np.mean(np.array(sums) >= obs - 1e-9))


@pytest.mark.parametrize("a,b", [
    ([1, 2, 2, 3], [2, 3, 4, 5]),
    ([10, 10, 11, 12, 12], [12, 13, 13, 14]),
    ([5, 5, 5, 6], [6, 6, 7, 7, 7]),
])
def test_mann_whitney_exact_with_ties_matches_enumeration(a: list[float], b: list[float]) -> None:
    res = mann_whitney(a, b)
    assert res.method == "exact"
    assert res.p_value == pytest.approx(_brute_force_p(a, b), abs=1e-12)


def test_mann_whitney_ties_differ_from_normal_approximation() -> None:
    # 1,2,2,3 vs 2,3,4,5: all 70 allocations give p = 14/70 = 0.2 exactly;
    # scipy's tie-corrected normal approximation says 0.137.
    res = mann_whitney([1, 2, 2, 3], [2, 3, 4, 5])
    assert res.p_value == pytest.approx(0.2)
    approx = stats.mannwhitneyu([1, 2, 2, 3], [2, 3, 4, 5]).pvalue
    assert approx < 0.15


def test_van_elteren_single_block_equals_mann_whitney_and_blocks_combine() -> None:
    a, b = [3.0, 1.0, 2.0, 2.5], [4.0, 2.5, 6.0]
    assert van_elteren([(a, b)]).p_value == pytest.approx(mann_whitney(a, b).p_value)
    # Two blocks each completely separated the same way: 2 / (C(6,3) · C(4,2)) = 1/60.
    res = van_elteren([([1, 2, 3], [4, 5, 6]), ([10, 11], [12, 13])])
    assert res.p_value == pytest.approx(1 / 60)
    # A host offset does not matter within blocks; pooled, it would blur the groups.
    res = van_elteren([([1, 2, 3], [4, 5, 6]), ([101, 102, 103], [104, 105, 106])])
    assert res.p_value == pytest.approx(2 / 400)
    assert mann_whitney([1, 2, 3, 101, 102, 103], [4, 5, 6, 104, 105, 106]).p_value > 0.05


# ------------------------------------------------------------------------------ intervals
def test_intervals_small_cases() -> None:
    ci = mean_ci([100.0, 102.0, 98.0])
    assert ci.low < 100.0 < ci.high and ci.method == "cox-lognormal" and ci.n == 3
    assert math.isnan(mean_ci([100.0]).low)
    r = ratio_ci([100, 101, 99], [110, 111, 109])
    assert r.estimate == pytest.approx(1.1, rel=1e-3) and r.excludes_one
    # The Welch p on logs is dual to the interval.
    assert welch_log_p([100, 101, 99], [110, 111, 109]) < 0.05
    same = ratio_ci([100, 101, 99], [100, 101, 99])
    assert same.low < 1 < same.high


# ----------------------------------------------------------------------------- checkpoint
def test_mariadb_checkpoint_age_matches_the_server() -> None:
    """Innodb_checkpoint_max_age read from a real MariaDB 10.11.19 (Debian 12) on
    2026-11-21 with innodb_log_file_size 100 MiB and 256 MiB, 16 KiB pages."""
    assert max_checkpoint_age("mariadb", "10.11.19-MariaDB-0+deb12u1",
                              {"innodb_log_file_size": "104857600"}).bytes == 84216915
    assert max_checkpoint_age("MariaDB", "10.11.19-MariaDB",
                              {"innodb_log_file_size": 268435456}).bytes == 216714978


def test_mysql_checkpoint_age_rules() -> None:
    v = {"innodb_log_file_size": 48 * 2**20, "innodb_log_files_in_group": 2}
    # 5.7 by hand: cap = (50331648 − 2048)·2 = 100659200 → 90593280; free = 64 KiB·10 +
    # 128 KiB = 786432; margin = 89806848 → 80826164 (integer divisions as in C).
    lim = max_checkpoint_age("mysql", "5.7.44", v)
    assert lim.bytes == 80826164 and lim.rule == "mysql-5.7"
    assert max_checkpoint_age("mysql", "8.0.28", v).rule == "mysql-8.0.11"
    new = max_checkpoint_age("mysql", "8.0.36", {"innodb_redo_log_capacity": 100 * 2**20})
    assert new.rule == "mysql-8.0.30" and 0.85 * 100 * 2**20 < new.bytes < 0.9 * 100 * 2**20
    assert parse_version("8.0.36-28") == (8, 0, 36)
    with pytest.raises(ValueError):
        max_checkpoint_age("oracle", "19", v)
    with pytest.raises(KeyError):
        max_checkpoint_age("mysql", "5.7.1", {})


# --------------------------------------------------------------------------------- design
def test_design_full_factorial_and_confounded_list() -> None:
    full = pd.DataFrame(list(itertools.product(["on", "off"], [50, 60, 75])),
                        columns=["dw", "dirty"])
    assert all(e.estimable and e.reason == "estimable" for e in estimability(full, ["dw", "dirty"]))
    # 2011-style include list: knobs move together.
    inc = pd.DataFrame({"io_cap": [200, 2000, 2000], "dirty": [90, 50, 75],
                        "log_mb": [256, 1024, 1024]})
    res = {e.term: e for e in estimability(inc, ["io_cap", "dirty", "log_mb"])}
    assert not res["io_cap"].estimable
    assert "confounded with" in res["io_cap"].reason and "log_mb" in res["io_cap"].reason
    assert not res["io_cap×dirty"].estimable


def test_design_half_fraction_names_aliases_and_effects_fit() -> None:
    frac = pd.DataFrame([(a, b, a * b) for a in (-1, 1) for b in (-1, 1)],
                        columns=["A", "B", "C"])
    res = {e.term: e for e in estimability(frac, ["A", "B", "C"])}
    assert res["A"].estimable and "B×C" in res["A"].reason
    assert not res["A×B"].estimable and res["A×B"].reason.endswith("confounded with C")
    rng = np.random.default_rng(0)
    runs = pd.concat([frac] * 4, ignore_index=True)
    runs["notpm"] = 1000 * np.where(runs["A"] == 1, 1.2, 1.0) * np.exp(
        rng.normal(0, 0.01, len(runs)))
    eff = main_effects(runs, ["A", "B", "C"]).set_index("knob")
    assert eff.loc["A", "ratio"] == pytest.approx(1.2, rel=0.02)
    assert eff.loc["A", "ci_low"] > 1.1 and eff.loc["B", "ci_low"] < 1 < eff.loc["B", "ci_high"]


def test_min_attainable_stratified_p_is_the_exact_tests_floor() -> None:
    """The bound equals van Elteren's exact p when every block separates the groups."""
    for n_blocks, expected in ((4, 0.125), (5, 0.0625), (6, 0.03125)):
        sizes = [(1, 1)] * n_blocks
        assert min_attainable_stratified_p(sizes) == expected
        separated = [([100.0 + i], [110.0 + i]) for i in range(n_blocks)]
        assert van_elteren(separated).p_value == pytest.approx(expected)
    mixed = [(2, 2), (1, 1), (0, 3)]  # a block without one group carries nothing
    assert min_attainable_stratified_p(mixed) == pytest.approx(2 / (6 * 2))
    assert van_elteren([([1.0, 2.0], [3.0, 4.0]), ([5.0], [6.0]), ([], [1.0, 2.0, 3.0])]
                       ).p_value == pytest.approx(2 / 12)
    assert math.isnan(min_attainable_stratified_p([(0, 2)]))
