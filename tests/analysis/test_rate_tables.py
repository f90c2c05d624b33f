"""The fixed-rate study (``experiments/rate-2011.yaml``, issue 55) and its search
(``experiments/rate-2011-search.yaml``): their tables, computed by
``analysis/studies/rate_tables.py`` from the committed databases as far as their queues have
run, agree with the runs they come from, and the write-up quotes them and says how far each
queue is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from analysis.response import fixed_rate, latency, rate_search
from analysis.steadiness.disturbed import counted
from analysis.studies import rate_tables
from analysis.tables import frames
from store.db import ResultsDB
from store.models import Run, RunStatus
from tests.support.recorded import recorded_copy
from tests.support.study_tables import (
    assert_hosts_list_every_counted_run_once,
    assert_readme_quotes,
    assert_says_how_far_the_queue_has_run,
    printed,
    section,
    table_markdown,
)
from tests.support.synthetic_store import rate_search_store

pytestmark = [pytest.mark.study_db]

EXPERIMENT = rate_tables.FIXED
README = Path(__file__).resolve().parents[2] / "docs" / "study-rate" / "README.md"
TITLES = ["Rows", "Runs", "Hosts"]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the committed database."""
    return recorded_copy(EXPERIMENT, tmp_path_factory)


@pytest.fixture(scope="module")
def tables(study: Path) -> str:
    """The script's whole output on the private copy."""
    return printed(rate_tables.main, str(study))


def _number(text: str) -> float:
    return float(text.split()[0].replace(",", "").rstrip("×"))


def test_every_counted_run_is_in_one_row_with_the_figures_it_carried(tables: str,
                                                                    study: Path) -> None:
    """The Runs table is every counted run once, each with the window NOTPM and backlog the
    fixed-rate reading gives it; the Rows table counts them per row, and each row's lowest
    window NOTPM is its runs' lowest."""
    fr = frames.load(study, EXPERIMENT)
    rs = fr.run_summary
    assert_hosts_list_every_counted_run_once(tables, rs)
    ids = [int(r) for r in rs.loc[counted(rs), "run_id"]]
    rates = fixed_rate.per_run(frames.intervals(study, run_ids=ids, detail=True))
    runs = section(tables, "Runs")
    assert sorted(int(r[0]) for r in runs) == sorted(ids)
    for row in runs:
        run_id = int(row[0])
        assert _number(row[4]) == pytest.approx(rates.loc[run_id, "notpm"], abs=0.5), row
        assert row[5] == (f"{int(rates.loc[run_id, 'intervals_below'])} of"
                          f" {int(rates.loc[run_id, 'intervals'])}"), row
    rows = section(tables, "Rows")
    assert sum(int(r[3]) for r in rows) == len(ids)
    by_row: dict[str, list[float]] = {}
    for row in runs:
        by_row.setdefault(row[1], []).append(_number(row[4]))
    for row in rows:
        assert _number(row[4]) == pytest.approx(min(by_row[row[0]]), abs=0.5), row


def test_each_rows_p99_is_the_merge_of_its_runs_and_the_baseline_reads_baseline(
        tables: str, study: Path) -> None:
    """The row's p50 and p99 are the latency reading's cell figures (its runs' windows merged,
    waits counted); the baseline row is named so and has no ratio over window starts."""
    fr = frames.load(study, EXPERIMENT)
    lat = latency.load(study, fr)
    names = rate_tables.scorecard.row_names(fr.experiment["stored"].spec, fr.cell_summary)
    printed_rows = {r[0].strip("`"): r for r in section(tables, "Rows")}
    assert printed_rows  # the study has rows
    for cell_id, cell in lat.cells.iterrows():
        row = printed_rows.get(names.get(int(cell_id), ""))
        if row is None:  # a row with no counted run yet
            continue
        for index, value in ((7, cell["p50_ms"]), (8, cell["value_ms"])):
            if np.isfinite(value):
                assert _number(row[index]) == pytest.approx(value, abs=0.5), row
        if cell["verdict"] == "baseline":
            assert row[11] == "baseline" and row[12] == row[13] == "–", row


def test_a_later_start_leaves_out_the_windows_first_intervals_and_keeps_its_end() -> None:
    import pandas as pd

    frame = pd.DataFrame({"run_id": [1] * 5 + [2] * 5,
                          "in_window": [False, True, True, True, True] * 2})
    got = rate_tables.later_start(frame, 3)["in_window"].tolist()
    assert got == [False, False, False, False, True] * 2
    assert rate_tables.later_start(frame, 0)["in_window"].tolist() == frame["in_window"].tolist()


def test_the_write_up_says_how_far_the_queue_has_run(study: Path) -> None:
    assert_says_how_far_the_queue_has_run(README, study, EXPERIMENT)


@pytest.mark.parametrize("title", TITLES)
def test_the_readme_quotes_each_table_as_the_committed_database_has_it(tables: str,
                                                                        title: str) -> None:
    assert_readme_quotes(README, tables, title, "rate_tables.py DB")


def test_a_database_without_the_study_is_refused_naming_the_users_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One line naming the file given (not the script's private copy), exit 2."""
    other = tmp_path / "other.sqlite"
    ResultsDB(other)  # the schema, and no experiment in it
    assert rate_tables.main([str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rate_tables.py: {other}: holds neither rate-2011 nor "
                          "rate-2011-search"), err
    assert "\n" not in err and rate_tables.STUDY_DB in err


def test_a_search_row_not_reached_yet_is_its_sentence_without_an_empty_table(
        tmp_path: Path) -> None:
    path = rate_search_store(tmp_path / "search.sqlite")
    with sqlite3.connect(path) as con:  # the second row's first step is still queued
        con.execute("UPDATE runs SET status = 'queued' WHERE id = 2")
    text = rate_tables.search_tables(ResultsDB(path, create=False), 1, {})
    first, second = text.split("\n\n### ")
    assert "| rate (NOTPM) |" in first and "1 step so far" in first
    assert second.endswith("no step measured yet") and "|" not in second, second


# --- the search: the highest rate each row holds under its target --------------------------

SEARCH = rate_tables.SEARCH


@pytest.fixture(scope="module")
def search_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the search's committed database."""
    return recorded_copy(SEARCH, tmp_path_factory)


@pytest.fixture(scope="module")
def search_printed(search_db: Path) -> str:
    """The script's whole output on the search's private copy."""
    return printed(rate_tables.main, str(search_db))


def _row_blocks(text: str) -> dict[str, str]:
    """The search section's ``### `row``` blocks as printed: row name -> its sentence and
    steps table."""
    body = text.split("## Search\n\n", 1)[1].split("\n## ", 1)[0]
    blocks = {}
    for block in body.split("### ")[1:]:
        name, _, rest = block.partition("\n\n")
        blocks[name.strip("`")] = rest.strip()
    return blocks


def test_each_search_step_is_a_done_run_at_its_rate_judged_on_its_own_figures(
        search_db: Path, search_printed: str) -> None:
    """Every step printed is a done run of its row at the rate it was queued for; its p99 is
    the run's window p99 (waits counted) and its achieved NOTPM the fixed-rate reading's; it
    is judged held exactly when those meet the file's target (p99 <= 1 s, at least 95 % of
    the rate, no window interval without a New-Order); and the row's answer is its highest
    held rate below its lowest failure."""
    db = ResultsDB(search_db, create=False)
    fr = frames.load(search_db, SEARCH)
    lat = latency.load(search_db, fr)
    with db.session() as s:
        runs = {r.id: r for r in s.scalars(select(Run))}
    names = rate_tables.scorecard.row_names(fr.experiment["stored"].spec, fr.cell_summary)
    blocks = _row_blocks(search_printed)
    assert sorted(blocks) == sorted(names.values())
    steps_seen = 0
    for cell_id, name in names.items():
        block = blocks[name]
        held, failed = [], []
        for row in [line for line in block.splitlines() if line.startswith("|")][2:]:
            rate, run_id, p99, achieved, stall, judged = (c.strip() for c in
                                                          row.strip("|").split("|"))
            run = runs[int(run_id)]
            assert run.cell_id == cell_id and run.status == RunStatus.DONE, row
            assert run.step_rate == _number(rate), row
            window = fr.intervals[(fr.intervals["run_id"] == run.id)
                                  & fr.intervals["in_window"]]
            notpm = fixed_rate.per_run(frames.intervals(
                search_db, run_ids=[run.id], detail=True)).loc[run.id, "notpm"]
            assert _number(achieved) == pytest.approx(notpm, abs=0.5), row
            assert _number(p99) == pytest.approx(lat.runs.loc[run.id, "window_ms"], abs=0.5), row
            stalled = float(window.loc[window["primary_count"] <= 0, "interval_s"].sum())
            assert _number(stall) == stalled, row
            holds = (_number(p99) <= 1000 and notpm >= 0.95 * run.step_rate and stalled == 0)
            assert (judged == "held") == holds, row
            (held if holds else failed).append(run.step_rate)
            steps_seen += 1
        if held and failed:
            best = max(r for r in held if r < min(failed))
            assert f"under p99 1000 ms: {best:,.0f} NOTPM" in block, block
        elif failed and not held:
            assert "none of the rates tried" in block, block
    assert steps_seen == sum(1 for r in runs.values() if r.status == RunStatus.DONE)


def test_the_write_up_quotes_each_rows_search_as_the_committed_database_has_it(
        search_printed: str) -> None:
    """Each row's sentence and steps, and the search's hosts table, stand in the write-up as
    the script prints them on the committed database."""
    readme = README.read_text(encoding="utf-8")
    for name, block in _row_blocks(search_printed).items():
        assert block in readme, (f"docs/study-rate/README.md: row {name}'s search is not what"
                                 " `rate_tables.py DB` prints on the committed database;"
                                 " paste it again")
    assert table_markdown(search_printed, "Search hosts") in readme


def test_the_write_up_says_how_many_rows_the_search_has_answered(search_db: Path) -> None:
    """'The search has answered N of its 5 rows' as the database has it (a row is answered
    once its search is finished)."""
    db = ResultsDB(search_db, create=False)
    fr = frames.load(search_db, SEARCH)
    cells = rate_search.searches(db, int(fr.experiment["id"]))
    answered = sum(1 for c in cells if c.found.finished)
    text = " ".join(README.read_text(encoding="utf-8").split())
    said = (f"The search has answered all {len(cells)} of its rows" if answered == len(cells)
            else f"The search has answered {answered} of its {len(cells)} rows")
    assert said in text, said
