"""Comparison figures: verdicts with reasons and MDE, design-aware effects, metadata refusal."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons.compare import (
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
from analysis.tables.frames import runs
from core.errors import AnalysisError


def _reps(mean: float, n: int, seed: int, sd_pct: float = 1.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, mean * sd_pct / 100, n)


def test_identical_cells_are_no_clear_difference() -> None:
    base = _reps(40000, 5, 1)
    v = verdict(base, base.copy())
    assert v.verdict == NO_DIFFERENCE
    assert v.ratio == pytest.approx(1.0)
    assert v.ci_low <= 1.0 <= v.ci_high
    assert v.p_value == pytest.approx(1.0)
    assert "could hide" in v.reason and math.isfinite(v.mde_pct)


def test_same_distribution_is_no_clear_difference() -> None:
    v = verdict(_reps(40000, 6, 1), _reps(40000, 6, 2))
    assert v.verdict == NO_DIFFERENCE


def test_ten_percent_shift_with_enough_reps_is_faster() -> None:
    base = _reps(40000, 6, 3)
    fast = _reps(44000, 6, 4)
    v = verdict(base, fast)
    assert v.verdict == FASTER
    assert v.ratio == pytest.approx(fast.mean() / base.mean(), rel=1e-3)
    assert v.ratio == pytest.approx(1.10, abs=0.02)
    assert v.ci_low > 1.0
    assert v.p_value < 0.05
    slow = verdict(fast, base)
    assert slow.verdict == SLOWER and slow.ci_high < 1.0


def test_two_reps_are_not_enough() -> None:
    v = verdict([40000.0, 40100.0], [60000.0, 61000.0])
    assert v.verdict == NOT_ENOUGH
    assert v.ratio == pytest.approx(60500 / 40050, rel=1e-3)
    one = verdict([40000.0], [60000.0, 61000.0, 60500.0])
    assert one.verdict == NOT_ENOUGH and math.isnan(one.ci_low)


def test_three_vs_three_cannot_reach_p_below_005() -> None:
    # The smallest two-sided Mann-Whitney p at 3 vs 3 is 0.10: even complete separation is
    # no evidence at the 5 % level, and the verdict says how many runs it would take.
    v = verdict([100.0, 101.0, 102.0], [110.0, 111.0, 112.0])
    assert v.p_value == pytest.approx(0.1)
    assert v.verdict == NOT_ENOUGH
    assert "run at least 4 per cell" in v.reason
    four = verdict([100.0, 101.0, 102.0, 101.5], [110.0, 111.0, 112.0, 110.5])
    assert four.verdict == FASTER


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
    assert "could hide" in same["verdict_reason"] and same["mde_pct"] > 0
    # The failed repetition leaves 3 done runs against 4: p < 0.05 is out of reach.
    short = cells.loc["doublewrite=off max_dirty_pages_pct=70"]
    assert short["n_done"] == 3 and short["n_failed"] == 1
    assert short["verdict"] == NOT_ENOUGH
    assert any("failed" in w for w in cmp.warnings)
    assert any("no verdict" in w for w in cmp.warnings)
    # Rankings: the flat, fast cell is first on both.
    top = cmp.ranking.iloc[0]
    assert top["cell_label"] == "doublewrite=off max_dirty_pages_pct=60"
    assert top["rank_stability"] == 1
    assert top["score_median"] > 90
    assert (cmp.ranking["score_median"].drop(0) < 85).all()


def test_main_effects_and_interactions(study_db: Path) -> None:
    cmp = compare(study_db, "study")
    me = cmp.main_effects
    assert set(me["knob"]) == {"doublewrite", "max_dirty_pages_pct"}
    assert me["estimable"].all()  # a full factorial identifies every main effect
    dw = me[me["knob"] == "doublewrite"].iloc[0]
    assert dw["reference"] is True and dw["level"] is False  # the baseline's level first
    assert dw["ratio"] > 1.5 and dw["ci_low"] > 1.5  # doublewrite=off is much faster here
    it = cmp.interactions.iloc[0]
    assert {it["knob_a"], it["knob_b"]} == {"doublewrite", "max_dirty_pages_pct"}
    assert it["estimable"]
    assert it["rms_pct"] >= 0


def _table(means: dict[tuple[bool, bool], float]) -> pd.DataFrame:
    rows = []
    for (a, b), mean in means.items():
        for rep, jitter in enumerate((-1.0, 0.0, 1.0)):
            rows.append(dict(run_id=len(rows), cell_id=2 * a + b, status="done", a=a, b=b,
                             notpm=mean + jitter, is_baseline=not a and not b,
                             knobs={"a": a, "b": b}, repetition=rep))
    return pd.DataFrame(rows)


def test_interaction_of_a_known_table() -> None:
    # Cell means 100/100/100/150: B only helps when A is on — a pure interaction.
    pure = _table({(False, False): 100.0, (False, True): 100.0, (True, False): 100.0,
                   (True, True): 150.0})
    it = interactions(pure).iloc[0]
    assert it["estimable"] and it["p_value"] < 0.001 and it["rms_pct"] > 5
    additive = _table({(False, False): 100.0, (False, True): 110.0, (True, False): 120.0,
                       (True, True): 132.0})  # ×1.1 and ×1.2 multiply: no interaction
    it = interactions(additive).iloc[0]
    assert it["rms_pct"] == pytest.approx(0.0, abs=0.5) and it["p_value"] > 0.05
    me = main_effects(additive).set_index("knob")
    assert me.loc["a", "ratio"] == pytest.approx(1.2, rel=0.01)


def test_knobs_that_move_together_are_not_estimable() -> None:
    # A list of cells where a and b always change together (like the 2011 walk): no per-knob
    # effect can be told apart, and the table says so instead of printing a number.
    df = _table({(False, False): 100.0, (True, True): 150.0})
    me = main_effects(df).set_index("knob")
    assert not me["estimable"].any()
    assert me["ratio"].isna().all()
    assert "confounded with b" in me.loc["a", "reason"]
    assert not interactions(df)["estimable"].any()


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


def test_a_baseline_run_five_times_is_the_a_a_noise_floor(tmp_path: Path) -> None:
    from analysis.comparisons.compare import aa_floor_text
    from analysis.report.writer import write_report
    from tests.support.synthetic_store import SynthCell, build_store

    path = tmp_path / "aa.sqlite"
    cells = [SynthCell(knobs={"doublewrite": True}, notpm=40000, noise_pct=3.0),
             SynthCell(knobs={"doublewrite": False}, notpm=60000, noise_pct=3.0)]
    build_store(path, cells, name="aa", repetitions=5, duration=300, n_counters=20, seed=3)
    cmp = compare(path, "aa")
    floor = cmp.cells.attrs["noise_floor"]
    rs = cmp.frames.run_summary
    base = rs[rs["is_baseline"] & (rs["status"] == "done")]
    assert floor["n"] == 5
    notpm = base["notpm"].to_numpy()
    assert floor["cv_pct"] == pytest.approx(100 * notpm.std(ddof=1) / notpm.mean())
    assert floor["score_min"] == pytest.approx(base["score"].min())
    assert floor["score_max"] == pytest.approx(base["score"].max())
    text = aa_floor_text(floor)
    assert text.startswith("the baseline's 5 runs: throughput CV ") and "stability score" in text
    # The verdict's MDE never goes below the A/A floor.
    other = cmp.cells[~cmp.cells["is_baseline"]].iloc[0]
    assert other["mde_pct"] >= floor["cv_pct"] * 0.99
    html = write_report(path, "aa", tmp_path / "report", png=False).read_text()
    assert "<b>A/A noise floor</b> — the baseline&#x27;s 5 runs" in html


def test_fewer_than_five_baseline_runs_measure_no_floor(study_db: Path) -> None:
    from analysis.comparisons.compare import aa_floor_text

    floor = compare(study_db, "study").cells.attrs["noise_floor"]
    assert floor["n"] == 0 and aa_floor_text(floor) == ""
