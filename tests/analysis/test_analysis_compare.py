"""Comparison figures: bootstrap CIs, verdicts, effects, interactions, metadata refusal."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from analysis.compare import (
    FASTER,
    NO_DIFFERENCE,
    NOT_ENOUGH,
    SLOWER,
    check_metadata,
    compare,
    interactions,
    main_effects,
    verdict,
)
from analysis.frames import runs
from analysis.stats import bootstrap_ci, bootstrap_ratio_ci, mann_whitney_p, min_attainable_p
from flushbench.errors import AnalysisError


def _reps(mean: float, n: int, seed: int, sd_pct: float = 1.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, mean * sd_pct / 100, n)


def test_identical_cells_are_no_clear_difference() -> None:
    base = _reps(40000, 5, 1)
    v = verdict(base, base.copy())
    assert v.verdict == NO_DIFFERENCE
    assert v.ratio == pytest.approx(1.0)
    assert v.ci_low <= 1.0 <= v.ci_high
    assert v.p_value == pytest.approx(1.0)


def test_same_distribution_is_no_clear_difference() -> None:
    v = verdict(_reps(40000, 6, 1), _reps(40000, 6, 2))
    assert v.verdict == NO_DIFFERENCE


def test_ten_percent_shift_with_enough_reps_is_faster() -> None:
    base = _reps(40000, 6, 3)
    fast = _reps(44000, 6, 4)
    v = verdict(base, fast)
    assert v.verdict == FASTER
    assert v.ratio == pytest.approx(fast.mean() / base.mean())
    assert v.ratio == pytest.approx(1.10, abs=0.02)
    assert v.ci_low > 1.0
    assert v.p_value < 0.05
    slow = verdict(fast, base)
    assert slow.verdict == SLOWER and slow.ci_high < 1.0


def test_fewer_than_three_reps_is_not_enough() -> None:
    v = verdict([40000.0, 40100.0], [60000.0, 61000.0])
    assert v.verdict == NOT_ENOUGH
    assert v.ratio == pytest.approx(60500 / 40050)
    one = verdict([40000.0], [60000.0, 61000.0, 60500.0])
    assert one.verdict == NOT_ENOUGH and math.isnan(one.ci_low)


def test_three_vs_three_complete_separation_is_enough() -> None:
    # Mann-Whitney cannot go below p = 0.10 with 3 vs 3: complete separation is the most
    # small samples can say, and the CI must exclude 1 as well.
    assert min_attainable_p(3, 3) == pytest.approx(0.1)
    v = verdict([100.0, 101.0, 102.0], [110.0, 111.0, 112.0])
    assert v.p_value == pytest.approx(0.1)
    assert v.verdict == FASTER
    overlap = verdict([100.0, 105.0, 112.0], [104.0, 111.0, 113.0])
    assert overlap.verdict == NO_DIFFERENCE


def test_bootstrap_is_reproducible_and_covers_the_mean() -> None:
    values = _reps(50000, 8, 9, sd_pct=3)
    lo, hi = bootstrap_ci(values)
    assert (lo, hi) == bootstrap_ci(values)  # fixed seed
    assert lo < values.mean() < hi
    assert all(math.isnan(x) for x in bootstrap_ci([1.0]))  # one run: no interval
    flat_lo, flat_hi = bootstrap_ci([7.0, 7.0, 7.0])
    assert flat_lo == flat_hi == 7.0
    ratio, rlo, rhi = bootstrap_ratio_ci([10.0, 10.0, 10.0], [15.5, 15.5, 15.5])
    assert ratio == rlo == rhi == pytest.approx(1.55)


def test_mann_whitney_matches_scipy() -> None:
    from scipy.stats import mannwhitneyu

    a, b = _reps(100, 7, 1, 5), _reps(108, 9, 2, 5)
    assert mann_whitney_p(a, b) == pytest.approx(mannwhitneyu(a, b).pvalue)
    assert mann_whitney_p([1.0, 1.0], [1.0, 1.0]) == 1.0


def test_study_comparison(study_db: Path) -> None:
    cmp = compare(study_db, "study")
    cells = cmp.cells.set_index("cell_label")
    assert cells.loc["doublewrite=on max_dirty_pages_pct=50", "verdict"] == "baseline"
    fast = cells.loc["doublewrite=off max_dirty_pages_pct=60"]
    assert fast["verdict"] == FASTER
    assert fast["ratio"] == pytest.approx(64000 / 38000, rel=0.03)
    assert fast["ratio_ci_low"] > 1
    same = cells.loc["doublewrite=on max_dirty_pages_pct=60"]
    assert same["verdict"] == NO_DIFFERENCE
    # The failed repetition leaves 2 done runs: no verdict, and a warning says so.
    short = cells.loc["doublewrite=off max_dirty_pages_pct=70"]
    assert short["n_done"] == 2 and short["n_failed"] == 1
    assert short["verdict"] == NOT_ENOUGH
    assert any("failed" in w for w in cmp.warnings)
    # Rankings: the flat, fast cell is first on both.
    top = cmp.ranking.iloc[0]
    assert top["cell_label"] == "doublewrite=off max_dirty_pages_pct=60"
    assert top["rank_stability"] == 1
    assert top["score_median"] > 90
    assert (cmp.ranking["score_median"].drop(0) < 85).all()


def test_main_effects_and_interactions(study_db: Path) -> None:
    cmp = compare(study_db, "study")
    me = cmp.main_effects
    dw = me[me["knob"] == "doublewrite"].set_index("level")
    assert bool(dw.loc[True, "is_reference"])  # the baseline's level is the reference
    assert dw.loc[False, "ratio"] == pytest.approx(
        dw.loc[False, "notpm_mean"] / dw.loc[True, "notpm_mean"]
    )
    assert dw.loc[False, "ratio"] > 1.5 and dw.loc[False, "ratio_ci_low"] > 1.5
    assert set(me["knob"]) == {"doublewrite", "max_dirty_pages_pct"}
    it = cmp.interactions.iloc[0]
    assert {it["knob_a"], it["knob_b"]} == {"doublewrite", "max_dirty_pages_pct"}
    assert it["complete"]
    assert it["interaction_pct"] >= 0


def test_interaction_of_a_known_table() -> None:
    # Cell means 100/100/100/150: B only helps when A is on — a pure interaction.
    import pandas as pd

    rows = []
    for a in (False, True):
        for b in (False, True):
            mean = 150.0 if (a and b) else 100.0
            for rep, jitter in enumerate((-1.0, 0.0, 1.0)):
                rows.append(dict(run_id=len(rows), cell_id=2 * a + b, status="done",
                                 notpm=mean + jitter, is_baseline=not a and not b,
                                 knobs={"a": a, "b": b}, repetition=rep))
    df = pd.DataFrame(rows)
    it = interactions(df).iloc[0]
    # Residuals are ±12.5 around a grand mean of 112.5.
    assert it["interaction_pct"] == pytest.approx(100 * 12.5 / 112.5)
    me = main_effects(df).set_index(["knob", "level"])
    assert me.loc[("a", True), "notpm_mean"] == pytest.approx(125.0)
    assert me.loc[("a", True), "ratio"] == pytest.approx(1.25)
    additive = df.assign(notpm=[100.0 + 20 * r["knobs"]["a"] + 10 * r["knobs"]["b"]
                                for _, r in df.iterrows()])
    assert interactions(additive).iloc[0]["interaction_pct"] == pytest.approx(0.0, abs=1e-9)


def test_metadata_refusal(mixed_meta_db: Path) -> None:
    with pytest.raises(AnalysisError) as err:
        compare(mixed_meta_db, "mixed")
    text = err.value.render()
    assert "hostname differs" in text and "other-host" in text
    assert "server_version differs" in text
    assert "--force" in text
    forced = compare(mixed_meta_db, "mixed", force=True)
    assert any(w.startswith("forced comparison: hostname") for w in forced.warnings)
    assert check_metadata(runs(mixed_meta_db, "mixed"), force=True)


def test_unknown_experiment_names_the_known_ones(study_db: Path) -> None:
    with pytest.raises(AnalysisError, match="known experiments: study"):
        compare(study_db, "nope")
