"""The reproduction scorecard's "not gradeable" rows and its ratios over window starts.

Planted cases on a copy of the committed 2011 study (MariaDB 10.11, every row steady, no
flushing method): one row made to record an inert flushing method, or made not steady in every
run, takes each comparison it is in out of the graded tally, and nothing else. Then the flash
study as committed (a copy): the comparisons of `ps-optimized` (R7, R8: its keep_average never
ran) and of `ps-bigredo-60` (R11, R12: a transient) are not gradeable; the ratio over window
starts is the one `compare` states for the same pair; and the flash write-up quotes both.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from analysis.comparisons import scorecard
from analysis.comparisons.compare import compare, counted_runs
from analysis.tables.frames import Frames, load
from core import flavors
from core.experiment.loading import load_experiment

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT_2011 = ROOT / "experiments" / "stability-2011.yaml"
FLASH_README = ROOT / "docs" / "study-2011" / "README.md"


@pytest.mark.parametrize(("variables", "inert"), [
    ({"innodb_adaptive_flushing": "OFF", "innodb_adaptive_flushing_method": "keep_average"},
     "keep_average"),
    ({"innodb_adaptive_flushing": "0", "innodb_adaptive_flushing_method": "estimate"},
     "estimate"),
    ({"innodb_adaptive_flushing": "ON", "innodb_adaptive_flushing_method": "keep_average"},
     None),
    ({"innodb_adaptive_flushing": "OFF", "innodb_adaptive_flushing_method": "native"}, None),
    ({"innodb_adaptive_flushing": "OFF"}, None),  # a server without the method
])
def test_the_one_rule_of_an_inert_flushing_method(variables: dict, inert: str | None) -> None:
    assert flavors.inert_flushing_method(variables) == inert


@pytest.fixture(scope="module")
def rerun(recorded_study: Path) -> Frames:
    return load(recorded_study, "stability-2011")


def _cell_of(fr: Frames, label_part: str) -> int:
    hits = fr.cell_summary[fr.cell_summary["cell_label"].str.contains(label_part, regex=False)]
    assert len(hits) == 1, label_part
    return int(hits["cell_id"].iloc[0])


def _variables(fr: Frames, inert_runs: list[int]) -> pd.DataFrame:
    """Planted recorded variables: these runs OFF with keep_average, every other run ON."""
    ids = [int(r) for r in counted_runs(fr.run_summary)["run_id"]]
    return pd.DataFrame({
        flavors.ADAPTIVE_FLUSHING: ["OFF" if r in inert_runs else "ON" for r in ids],
        flavors.FLUSHING_METHOD: ["keep_average" if r in inert_runs else "native" for r in ids],
    }, index=ids)


def _involving(table: pd.DataFrame, name: str) -> pd.Series:
    return (table["a"] == name) | (table["b"] == name)


def test_a_row_whose_method_never_acted_leaves_the_tally(rerun: Frames) -> None:
    spec = load_experiment(EXPERIMENT_2011)
    before = scorecard.scorecard(spec, rerun.run_summary, rerun.cell_summary)
    assert scorecard.NOT_GRADEABLE not in set(before["verdict"])
    off50 = _cell_of(rerun, "doublewrite=off max_dirty_pages_pct=50 io_capacity=20000")
    runs = counted_runs(rerun.run_summary)
    mine = [int(r) for r in runs.loc[runs["cell_id"] == off50, "run_id"]]
    after = scorecard.scorecard(spec, rerun.run_summary, rerun.cell_summary,
                                variables=_variables(rerun, mine))
    hit = _involving(after, "dw-off-50")
    assert hit.any() and (~hit).any()
    assert set(after.loc[hit, "verdict"]) == {scorecard.NOT_GRADEABLE}
    assert all("dw-off-50: its flushing method (innodb_adaptive_flushing_method=keep_average)"
               " never acted" in r for r in after.loc[hit, "reason"])
    assert set(after.loc[hit, "method_inert"]) == {"dw-off-50"}
    # Our measurement is still shown; the other comparisons keep their grades.
    pd.testing.assert_series_equal(after["ratio"], before["ratio"])
    pd.testing.assert_series_equal(after.loc[~hit, "verdict"], before.loc[~hit, "verdict"])
    graded = scorecard.headline(before[~hit])
    assert scorecard.headline(after) == f"{graded}; {int(hit.sum())} not gradeable"
    # One run with adaptive flushing ON ran the method: the row can test the claim.
    some = scorecard.scorecard(spec, rerun.run_summary, rerun.cell_summary,
                               variables=_variables(rerun, mine[1:]))
    pd.testing.assert_series_equal(some["verdict"], before["verdict"])


def test_a_row_never_at_steady_state_leaves_the_tally(rerun: Frames) -> None:
    spec = load_experiment(EXPERIMENT_2011)
    before = scorecard.scorecard(spec, rerun.run_summary, rerun.cell_summary)
    base = _cell_of(rerun, "doublewrite=on max_dirty_pages_pct=75 io_capacity=200")
    rs = rerun.run_summary.copy()
    rows = counted_runs(rs).index[counted_runs(rs)["cell_id"] == base]
    rs.loc[rows, "not_steady"] = "not-steady: checkpoint age +20.0 MiB/min across the window"
    rs.loc[rows, "not_steady_levels"] = "checkpoint age"
    rs.loc[rows, "checkpoint_age_trend_mib_per_min"] = 20.0
    after = scorecard.scorecard(spec, rs, rerun.cell_summary)
    hit = _involving(after, "base")
    assert hit.any() and (~hit).any()
    assert set(after.loc[hit, "verdict"]) == {scorecard.NOT_GRADEABLE}
    assert all("base: not at steady state" in r for r in after.loc[hit, "reason"])
    pd.testing.assert_series_equal(after.loc[~hit, "verdict"], before.loc[~hit, "verdict"])
    # One steady run keeps the row gradeable.
    rs.loc[rows[:1], ["not_steady", "not_steady_levels"]] = ""
    again = scorecard.scorecard(spec, rs, rerun.cell_summary)
    pd.testing.assert_series_equal(again["verdict"], before["verdict"])


def test_headline_counts_the_ungradeable_apart() -> None:
    table = pd.DataFrame({"verdict": ["reproduced", "not gradeable", "no effect",
                                      "not gradeable"]})
    assert scorecard.headline(table) == "1 reproduced, 1 no effect; 2 not gradeable"
    assert scorecard.headline(table[table["verdict"] == "not gradeable"]) == "2 not gradeable"


@pytest.fixture(scope="module")
def flash(recorded_flash: Path) -> tuple[pd.DataFrame, object]:
    cmp = compare(recorded_flash, "stability-2011-flash")
    return scorecard.for_comparison(cmp.experiment["stored"].spec, cmp, recorded_flash), cmp


def _recorded(db: Path, label: str) -> set[tuple[str, str]]:
    """(adaptive flushing, flushing method) as the row's runs recorded them, read raw."""
    with sqlite3.connect(db) as con:
        return set(con.execute(
            "SELECT MAX(CASE WHEN v.name = 'innodb_adaptive_flushing' THEN v.value END),"
            " MAX(CASE WHEN v.name = 'innodb_adaptive_flushing_method' THEN v.value END)"
            " FROM runs r JOIN cells c ON c.id = r.cell_id"
            " JOIN run_variables v ON v.run_id = r.id"
            " WHERE c.label LIKE ? AND r.status = 'done' GROUP BY r.id", (f"%{label}%",)))


def test_the_flash_study_grades(flash: tuple[pd.DataFrame, object],
                                recorded_flash: Path) -> None:
    table, _ = flash
    by_id = {f"R{i + 1}": r for i, r in table.iterrows()}
    # ps-optimized's runs recorded keep_average with adaptive flushing OFF: it never ran.
    assert _recorded(recorded_flash, "adaptive_checkpoint=keep_average") == {
        ("OFF", "keep_average")}
    for rid in ("R7", "R8"):
        assert by_id[rid]["a"] == "ps-optimized"
        assert by_id[rid]["verdict"] == scorecard.NOT_GRADEABLE
        assert by_id[rid]["method_inert"] == "ps-optimized"
    for rid in ("R11", "R12"):
        assert by_id[rid]["verdict"] == scorecard.NOT_GRADEABLE
        assert by_id[rid]["not_steady"] == "ps-bigredo-60"
        assert "not at steady state" in by_id[rid]["ungradeable"]
    assert {rid for rid, r in by_id.items() if r["verdict"] == scorecard.NOT_GRADEABLE} == {
        "R7", "R8", "R11", "R12"}
    assert scorecard.headline(table).endswith("; 4 not gradeable")


def test_the_flash_ratio_over_window_starts_is_compares(
        flash: tuple[pd.DataFrame, object]) -> None:
    """R2 (dw-on-50 / base) is compare's dw-on-50 against its baseline: the same range."""
    table, cmp = flash
    r2 = table.iloc[1]
    assert (r2["a"], r2["b"]) == ("dw-on-50", "base")
    cells = cmp.cells
    c2 = cells[cells["cell_label"].str.contains(
        "doublewrite=on max_dirty_pages_pct=50 io_capacity=20000", regex=False)].iloc[0]
    assert r2["window_low"] == pytest.approx(c2["window_ratio_low"], rel=1e-9)
    assert r2["window_high"] == pytest.approx(c2["window_ratio_high"], rel=1e-9)
    # The stored window is one of the starts; R2's ratio moves by more than its interval.
    for _, r in table.iterrows():
        assert r["window_low"] <= r["ratio"] * (1 + 1e-9) and r["window_high"] >= r["ratio"] * (
            1 - 1e-9)
    assert r2["window_low"] < r2["ci_low"]
    # A window-dependent verdict says so, never "faster" or "slower".
    dependent = table[table["window_dependent"].astype(bool)]
    assert (dependent["our_verdict"] == "window-dependent").all()


def test_the_flash_readme_states_the_tally_and_r2s_window_range(
        flash: tuple[pd.DataFrame, object]) -> None:
    table, _ = flash
    readme = FLASH_README.read_text(encoding="utf-8")
    assert f"{scorecard.headline(table)}." in readme
    r2 = table.iloc[1]
    assert f"{r2['window_low']:.2f}–{r2['window_high']:.2f}" in readme
