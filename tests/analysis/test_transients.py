"""A run whose checkpoint age or dirty share still trends across its window is `not-steady`:
named, with its figures, in `show`, `compare`'s warnings, the report's claims and the rows
not at steady state — calibrated on the committed studies (docs/statistics.md)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import event

from analysis.comparisons.compare import compare
from analysis.comparisons.scorecard import row_names
from analysis.reading.query import session_scope
from analysis.reading.series import samples
from analysis.steadiness import claims, transients
from analysis.steadiness.transients import (
    AGE_LIMIT_PCT,
    MIN_AGE_CHANGE_PCT,
    MIN_RANK_CORRELATION,
    level_trend,
    warning,
)
from analysis.tables import frames
from analysis.writes import run_digest
from store.models import RunStatus
from tests.support.cli_runner import CliRun
from tests.support.recorded_models import recorded_report_model

FLASH = "stability-2011-flash"
IOPS = "stability-2011"
MIB = 1024.0 * 1024.0
LIMIT = 259 * MIB  # ps-bigredo-60's maximum checkpoint age
T = np.arange(30) * 10.0  # a 5-minute window sampled every 10 s


def _figures(age_pct: np.ndarray, dirty_pct: np.ndarray | None = None,
             *, age_limit: float = LIMIT, dirty_limit: float = 60.0) -> dict:
    dirty = np.full(T.size, 62.0) if dirty_pct is None else dirty_pct
    return {"age": level_trend(T, age_pct / 100 * age_limit), "age_limit": age_limit,
            "dirty": level_trend(T, dirty), "dirty_limit": dirty_limit}


def _noise(seed: int, scale: float) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, scale, T.size)


# ---------------------------------------------------------------------------- the rule


def test_a_steady_climb_of_checkpoint_age_is_named_with_its_figures() -> None:
    text = warning(_figures(38 + 44 * T / T[-1] + _noise(1, 0.5)))
    assert text.startswith("not-steady: checkpoint age +")
    assert "MiB/min across the window, 38 % → 82 % of the maximum" in text
    assert "of 259 MiB)" in text
    # One warning of one run: the run's warnings are split at "; " (claims.split_warnings).
    assert "; " not in text and claims.split_warnings(text) == [text]


def test_a_level_that_falls_across_the_window_is_named_too() -> None:
    text = warning(_figures(80 - 45 * T / T[-1] + _noise(2, 1.0)))
    assert text.startswith("not-steady: checkpoint age -") and "80 % → 35 %" in text


def test_a_sawtooth_of_checkpoints_is_steady_even_with_a_slope() -> None:
    # Checkpoints every 120 s: rises and drops, a net slope but no order in time.
    tooth = 10 + 60 * ((T / 120.0) % 1.0) + 0.05 * T
    figures = _figures(tooth)
    change = 100 * figures["age"]["slope_per_s"] * figures["age"]["span_s"] / LIMIT
    assert abs(figures["age"]["rho"]) < MIN_RANK_CORRELATION
    assert warning(figures) == "", change


def test_noise_around_a_flat_level_is_steady() -> None:
    for seed in range(20):
        assert warning(_figures(60 + _noise(seed, 12.0), 62 + _noise(seed + 100, 3.0))) == ""


def test_a_climb_that_ends_at_the_preflush_point_reached_its_limit() -> None:
    """A rise whose last third sits at ≥ 87.5 % of the maximum is a limit, not a transient;
    the same rise stopped below it is flagged."""
    at_limit = np.minimum(60 + 80 * T / T[-1], 95.0) + _noise(3, 0.5)
    figures = _figures(at_limit)
    assert 100 * figures["age"]["last_third"] / LIMIT >= AGE_LIMIT_PCT
    assert warning(figures) == ""
    assert warning(_figures(at_limit - 20)).startswith("not-steady: checkpoint age +")


def test_a_small_change_is_steady() -> None:
    small = 50 + (MIN_AGE_CHANGE_PCT - 3) * T / T[-1]
    assert level_trend(T, small)["rho"] == pytest.approx(1.0)
    assert warning(_figures(small)) == ""


def test_a_climbing_dirty_share_is_named_with_its_limit_and_one_at_its_limit_is_not() -> None:
    rising = 30 + 25 * T / T[-1] + _noise(4, 0.3)
    text = warning(_figures(np.full(T.size, 50.0), rising, dirty_limit=75))
    assert text.startswith("not-steady: dirty pages +")
    assert "30 % → 55 % of the buffer pool (max_dirty_pages_pct 75)" in text
    at_limit = np.minimum(30 + 50 * T / T[-1], 55.0) + _noise(5, 0.3)
    assert warning(_figures(np.full(T.size, 50.0), at_limit, dirty_limit=55)) == ""
    assert "dirty pages +" in warning(_figures(np.full(T.size, 50.0), at_limit, dirty_limit=75))
    both = warning(_figures(38 + 44 * T / T[-1], rising, dirty_limit=75))
    assert both.startswith("not-steady: checkpoint age +") and " and dirty pages +" in both


def test_too_few_samples_or_no_known_maximum_is_not_judged() -> None:
    assert level_trend(T[:5], np.arange(5.0)) is None
    figures = _figures(38 + 44 * T / T[-1], age_limit=math.nan)
    assert warning(figures) == ""
    assert transients.summary_row(None)["not_steady"] is None


def test_a_row_is_not_at_steady_state_only_when_every_counted_run_is_flagged() -> None:
    flagged = "not-steady: checkpoint age +23.7 MiB/min across the window, …"
    rs = pd.DataFrame({
        "run_id": [1, 2, 3, 4, 5, 6], "cell_id": [7, 7, 8, 8, 9, 9],
        "status": [RunStatus.DONE] * 6, "notpm": [1.0] * 6,
        "not_steady": [flagged, flagged, flagged, "", flagged, None],
        "not_steady_levels": ["checkpoint age"] * 6,
        "checkpoint_age_trend_mib_per_min": [23.3, 23.8, 20.0, 1.0, 22.0, math.nan],
        "dirty_trend_points_per_min": [0.0] * 6,
    })
    cells = transients.not_steady_cells(rs)
    assert list(cells) == [7]
    assert cells[7] == ("not at steady state: not-steady in all 2 runs (checkpoint age +23.3 to"
                        " +23.8 MiB/min across the window)")
    # A run left out of the verdicts does not count either way.
    rs["excluded"] = [False, False, False, True, False, False]
    assert sorted(transients.not_steady_cells(rs)) == [7, 8]


# ---------------------------------------------------------------------------- recorded studies


@pytest.fixture(scope="module")
def flash(recorded_flash: Path) -> tuple[Path, pd.DataFrame, dict[str, int]]:
    fr = frames.load(recorded_flash, FLASH)
    names = {name: cell for cell, name in
             row_names(fr.experiment["stored"].spec, fr.cell_summary).items()}
    return recorded_flash, fr.run_summary, names


def _runs(rs: pd.DataFrame, cell_id: int) -> pd.DataFrame:
    return rs[(rs["cell_id"] == cell_id) & (rs["status"] == RunStatus.DONE)]


def test_every_ps_bigredo_60_run_is_not_steady_and_no_flat_row_is(flash: tuple) -> None:
    _, rs, names = flash
    bigredo = _runs(rs, names["ps-bigredo-60"])
    assert len(bigredo) == 4
    for r in bigredo.itertuples():
        assert r.not_steady.startswith("not-steady: checkpoint age +"), r.run_id
        assert 20 < r.checkpoint_age_trend_mib_per_min < 30
        assert r.checkpoint_age_change_pct > 40
        assert r.not_steady in r.warnings
    for flat in ("dw-on-50", "base"):
        runs = _runs(rs, names[flat])
        assert len(runs) >= 4 and (runs["not_steady"] == "").all(), flat
    flagged = rs.loc[rs["not_steady"].fillna("") != "", "cell_id"]
    assert set(flagged) == {names["ps-bigredo-60"]}
    assert transients.not_steady_cells(rs) == {
        names["ps-bigredo-60"]: "not at steady state: not-steady in all 4 runs (checkpoint age"
        " +23.3 to +23.8 MiB/min across the window)"}


def test_show_names_the_rising_checkpoint_age_of_each_ps_bigredo_60_run(
        flash: tuple, cli: CliRun) -> None:
    db, rs, names = flash
    for run_id in _runs(rs, names["ps-bigredo-60"])["run_id"]:
        code, out, err = cli(["show", str(run_id), "--db", str(db)])
        assert code == 0, err
        text = " ".join(out.replace("│", " ").split())
        assert "not-steady: checkpoint age +2" in text, run_id
        assert "MiB/min across the window" in text and "of the maximum" in text
    steady = int(_runs(rs, names["dw-on-50"])["run_id"].iloc[0])
    code, out, _ = cli(["show", str(steady), "--db", str(db)])
    assert code == 0 and "not-steady" not in out and "levels across the window" in out


def test_compare_and_the_report_name_the_runs_not_at_steady_state(
        flash: tuple, request: pytest.FixtureRequest) -> None:
    db, rs, names = flash
    ids = sorted(int(r) for r in _runs(rs, names["ps-bigredo-60"])["run_id"])
    cmp = compare(db, FLASH)
    lines = [w for w in cmp.warnings if w.startswith("not-steady: ")]
    assert len(lines) == 1 and lines[0].startswith("not-steady: 4 of ")
    assert all(f"run {r} (checkpoint age +" in lines[0] for r in ids)
    model = recorded_report_model(request, FLASH, FLASH)
    sentence = [c for c in model.claims if "not at steady state" in c]
    assert sentence == [claims.not_steady_runs(model.comparison.frames.run_summary).sentence()]
    assert sentence[0].startswith("4 of ") and f"run {ids[0]} (checkpoint age +" in sentence[0]
    assert lines[0] in model.comparison.warnings  # the report's warnings list


def test_no_run_of_the_iops_study_is_flagged_not_even_one_that_climbed_to_its_limit(
        recorded_study: Path) -> None:
    rs = frames.load(recorded_study, IOPS).run_summary
    done = rs[rs["status"] == RunStatus.DONE]
    assert done["not_steady"].notna().all() and (done["not_steady"] == "").all()
    # The rule's last clause is what spares them: some run climbed ≥ 20 % of its maximum in
    # rank order, to its limit (the dw-on/50 row's run: +22 %, rank correlation 0.88).
    digests = run_digest.run_digests(recorded_study, [int(r) for r in done["run_id"]])
    climbed = [r for r, f in digests.transients.items()
               if f["age"] and f["age"]["rho"] >= MIN_RANK_CORRELATION
               and 100 * f["age"]["slope_per_s"] * f["age"]["span_s"] / f["age_limit"]
               >= MIN_AGE_CHANGE_PCT]
    assert climbed
    assert all(100 * digests.transients[r]["age"]["last_third"]
               / digests.transients[r]["age_limit"] >= AGE_LIMIT_PCT for r in climbed)


def test_the_figures_are_the_same_cached_and_computed_and_read_once_per_session(
        recorded_study: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    rs = frames.runs(recorded_study, IOPS)
    done = [int(r) for r in rs.loc[rs["status"] == RunStatus.DONE, "run_id"]]
    direct = run_digest.from_samples(
        recorded_study, samples(recorded_study, run_ids=done, counters=None), done).transients
    assert run_digest.run_digests(recorded_study, done).transients == direct  # computed
    assert run_digest.run_digests(recorded_study, done).transients == direct  # from the cache
    with session_scope(recorded_study) as s:
        statements: list[str] = []
        event.listen(s.get_bind(), "before_cursor_execute",
                     lambda *args: statements.append(args[2]))
        first = run_digest.run_digests(s, done).transients
        read = len(statements)
        assert run_digest.run_digests(s, done[:5]).transients == {
            r: first[r] for r in done[:5]}
        assert len(statements) == read > 0  # the second read asked the database nothing
    assert first == direct
