"""Cost per transaction and what bound each run, on copies of the committed 2011 studies: every
flash run and row names the storage byte limit, the IOPS study the operation limit, the flash
write-up's 8.5–13.6 connections waiting on row locks come back from ``Innodb_row_lock_time``;
the rules' thresholds and order on figures made by hand; ``show``, ``compare`` and ``export``
carry them; the figures are the same cached and computed."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis.reading.mext import LOCK_ROW, mext
from analysis.reading.series import samples
from analysis.tables import efficiency
from analysis.tables.frames import load
from analysis.writes import bound, cost
from analysis.writes.run_digest import from_samples, run_digests
from store.models import RunStatus
from tests.support.recorded import recorded_copy

FLASH, IOPS = "stability-2011-flash", "stability-2011"


@pytest.fixture(scope="module")
def flash(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    db = recorded_copy(FLASH, tmp_path_factory)
    fr = load(db, FLASH)
    return db, fr, efficiency.load(db, fr)


@pytest.fixture(scope="module")
def iops(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    db = recorded_copy(IOPS, tmp_path_factory)
    fr = load(db, IOPS)
    return db, fr, efficiency.load(db, fr)


def _row_names(fr: Any) -> dict[int, str]:
    from analysis.comparisons.scorecard import row_names

    return row_names(fr.experiment["stored"].spec, fr.cell_summary)


# ---------------------------------------------------------------------------- the rules


def _fig(**over: Any) -> dict[str, Any]:
    """A run's figures with every candidate well below its threshold."""
    fig = {"storage_limit": "write_bandwidth", "storage_limit_value": 10 * 2**20,
           "storage_source": "group counters", "storage_at_limit_share": 0.1,
           "storage_mean_share": 0.5, "cpu_busy_share": 0.3, "cpu_source": "host",
           "redo_past_async_share": 0.0, "wait_free_per_s": 0.0, "row_lock_waiting": 1.0,
           "connections": 32.0}
    return {**fig, **over}


@pytest.mark.parametrize(("over", "expected"), [
    ({}, (bound.NONE, [])),
    ({"storage_at_limit_share": 0.5}, ("storage-bytes", [])),
    ({"storage_at_limit_share": 0.49}, (bound.NONE, [])),
    ({"storage_limit": "write_iops", "storage_at_limit_share": 0.9},
     ("storage-operations", [])),
    ({"storage_source": "storage proof", "storage_at_limit_share": math.nan,
      "storage_mean_share": 0.85}, ("storage-bytes", [])),
    ({"storage_source": "storage proof", "storage_at_limit_share": math.nan,
      "storage_mean_share": 0.84}, (bound.NONE, [])),
    ({"cpu_busy_share": 0.9}, ("cpu", [])),
    ({"cpu_busy_share": 0.89}, (bound.NONE, [])),
    ({"redo_past_async_share": 0.5}, ("redo", [])),
    ({"wait_free_per_s": 1.0}, ("free-pages", [])),
    ({"wait_free_per_s": 0.99}, (bound.NONE, [])),
    ({"row_lock_waiting": 8.0}, ("row-locks", [])),
    ({"row_lock_waiting": 7.9}, (bound.NONE, [])),
    ({"row_lock_waiting": 8.0, "connections": math.nan}, (bound.NONE, [])),
    # The order: a hard limit first, InnoDB's own waits after it.
    ({"storage_at_limit_share": 1.0, "cpu_busy_share": 0.95, "redo_past_async_share": 0.9,
      "wait_free_per_s": 5.0, "row_lock_waiting": 16.0},
     ("storage-bytes", ["cpu", "redo", "free-pages", "row-locks"])),
    ({"cpu_busy_share": 1.0, "row_lock_waiting": 10.0}, ("cpu", ["row-locks"])),
    ({"redo_past_async_share": 1.0, "row_lock_waiting": 10.0}, ("redo", ["row-locks"])),
], ids=["nothing", "storage-at-half", "storage-below-half", "operations", "proof-85",
        "proof-84", "cpu-90", "cpu-89", "redo-half", "free-pages-1", "free-pages-below",
        "row-locks-quarter", "row-locks-below", "no-connections", "order-all", "cpu-first",
        "redo-before-locks"])
def test_each_candidate_is_named_at_its_threshold_and_in_its_order(
        over: dict[str, Any], expected: tuple[str, list[str]]) -> None:
    assert bound.judge(_fig(**over)) == expected


def test_the_sentence_names_the_bound_and_the_others_with_their_figures() -> None:
    fig = _fig(storage_at_limit_share=29 / 29, storage_mean_share=0.98,
               redo_past_async_share=0.97, row_lock_waiting=15.0)
    text = bound.sentence(*bound.judge(fig), fig)
    assert text.startswith("storage byte limit — at ≥ 90 % of its write bandwidth limit of"
                           " 10.0 MiB/s in 100 % of the window's sampler intervals (mean 98 %)")
    assert "also redo pressure (checkpoint age past 7/8 of its maximum in 97 %" in text
    assert "row-lock waits (15.0 of 32 connections waiting on row locks on average)" in text
    quiet = bound.sentence(bound.NONE, [], _fig())
    assert quiet.startswith("none of them clearly (") and "host CPU 30 % busy" in quiet


# ---------------------------------------------------------------------------- the studies


def test_every_flash_run_and_row_names_the_storage_byte_limit(flash: tuple) -> None:
    _, fr, eff = flash
    done = fr.run_summary[fr.run_summary["status"] == RunStatus.DONE]
    assert len(eff.bound_runs) == len(done) >= 50
    assert set(eff.bound_runs["bound"]) == {"storage-bytes"}
    # From the throttle group's own counters, per sampler interval, for every run.
    assert set(eff.bound_runs["storage_source"]) == {"group counters"}
    assert (eff.bound_runs["storage_at_limit_share"] >= bound.STORAGE_MIN_SHARE).all()
    assert len(eff.bound_cells) == 12 and set(eff.bound_cells["bound"]) == {"storage-bytes"}
    assert all(a == b for a, _, b in (r.split() for r in eff.bound_cells["bound_runs"]))


def test_the_flash_writeups_row_lock_figures_come_back(flash: tuple) -> None:
    """8.5–13.6 connections waiting on row locks on average in the doublewrite-on rows (each
    row's median over its runs), a few in the doublewrite-off rows."""
    _, fr, eff = flash
    rs = fr.run_summary
    per_run = eff.bound_runs["row_lock_waiting"]
    cells = rs.drop_duplicates("cell_id").set_index("cell_id")
    medians = {c: per_run.reindex(g["run_id"]).median() for c, g in rs.groupby("cell_id")}
    on = [m for c, m in medians.items() if bool(cells.loc[c, "doublewrite"])]
    off = [m for c, m in medians.items() if not bool(cells.loc[c, "doublewrite"])]
    assert (round(min(on), 1), round(max(on), 1)) == (8.5, 13.6)
    assert len(off) == 3 and max(off) < 0.25 * 32 < min(on)
    # The baseline's 13.6 is its row's: the sentence of that row says so.
    base = _row_names(fr)
    base_id = next(c for c, n in base.items() if n == "base")
    assert "row-lock waits (13.6 of 32 connections" in eff.bound_cells.loc[base_id, "bound_text"]


def test_the_iops_study_names_the_operation_limit(iops: tuple) -> None:
    """From the storage proofs (the study's samples predate the group's per-sample
    counters): every row, and every run but run 9, which the write-up names as disturbed
    (726 of 1,000 write IOPS): its checkpoint age sat past the async point instead."""
    _, _, eff = iops
    runs = eff.bound_runs
    assert len(runs) == 26 and set(runs["storage_source"]) == {"storage proof"}
    assert set(runs.drop(index=9)["bound"]) == {"storage-operations"}
    assert runs.loc[9, "bound"] == "redo"
    assert runs.loc[9, "storage_mean_share"] == pytest.approx(0.726, abs=0.001)
    assert set(eff.bound_cells["bound"]) == {"storage-operations"}
    # No host CPU in those samples: mysqld's and the driver's share of the 2 CPUs instead.
    assert set(runs["cpu_source"]) == {"mysqld and driver"}
    assert runs["cpu_busy_share"].between(0.3, 0.9).all()


def test_the_unthrottled_sysbench_example_is_cpu_bound(tmp_path_factory: pytest.TempPathFactory
                                                       ) -> None:
    """The allocators example (sysbench read-only, no storage limit, samples without host CPU):
    mysqld and the driver used the machine's 2 CPUs in every row. Run 29's driver had exited
    before the window's last sample: mysqld's CPU alone is a lower bound, named as such, and
    too low to name anything."""
    db = recorded_copy("allocators", tmp_path_factory)
    fr = load(db, "allocators-example")
    eff = efficiency.load(db, fr)
    runs = eff.bound_runs
    assert set(eff.bound_cells["bound"]) == {"cpu"} and len(eff.bound_cells) == 9
    assert set(runs.drop(index=29)["bound"]) == {"cpu"}
    assert runs.loc[29, "bound"] == bound.NONE and runs.loc[29, "cpu_source"] == "mysqld"
    assert "mysqld (the driver's CPU not known) 75 % of the machine's CPUs" in runs.loc[
        29, "bound_text"]
    assert runs["storage_limit"].isna().all()
    # Per transaction of sysbench's metric, not per New-Order.
    assert eff.cost_cells["mysqld_cpu_us"].between(300, 1000).all()


def test_cost_is_each_counter_grown_over_the_window_per_transaction(flash: tuple) -> None:
    """Run 6's figures from its raw sample rows: the first and last window sample's columns
    and status counters, and the New-Orders the driver counted between them."""
    db, fr, eff = flash
    run = 6
    smp = samples(db, run_ids=[run], counters=["Innodb_row_lock_waits"])
    win = smp[smp["in_window"]].sort_values("seq")
    first, last = win.iloc[0], win.iloc[-1]
    iv = fr.intervals[fr.intervals["run_id"] == run]
    tx = iv.loc[(iv["t"] > first["t"]) & (iv["t"] <= last["t"]), "primary_count"].sum()
    row = eff.cost_runs.loc[run]
    assert row["transactions"] == tx > 1000
    cpu = (last["mysqld_cpu_user_s"] + last["mysqld_cpu_sys_s"]
           - first["mysqld_cpu_user_s"] - first["mysqld_cpu_sys_s"])
    assert row["mysqld_cpu_us"] == pytest.approx(cpu * 1e6 / tx)
    client = (last["driver_cpu_user_s"] + last["driver_cpu_sys_s"]
              - first["driver_cpu_user_s"] - first["driver_cpu_sys_s"])
    assert row["client_cpu_us"] == pytest.approx(client * 1e6 / tx)
    assert row["write_ops"] == pytest.approx((last["disk_writes"] - first["disk_writes"]) / tx)
    assert row["read_kib"] == pytest.approx(
        (last["disk_read_sectors"] - first["disk_read_sectors"]) * 512 / 1024 / tx)
    assert row["row_lock_waits"] == pytest.approx(
        (last["Innodb_row_lock_waits"] - first["Innodb_row_lock_waits"]) / tx)
    # A row's figure is the median of its counted runs.
    cell = int(fr.run_summary.set_index("run_id").loc[run, "cell_id"])
    ids = fr.run_summary.loc[fr.run_summary["cell_id"] == cell, "run_id"]
    assert eff.cost_cells.loc[cell, "mysqld_cpu_us"] == pytest.approx(
        eff.cost_runs.loc[ids, "mysqld_cpu_us"].median())


def test_mexts_row_lock_row_averages_to_the_attributions_figure(flash: tuple) -> None:
    db, _, eff = flash
    table = mext(db, 6, window_only=True)
    seconds = pd.Series(table.interval_s[1:], index=table.values.columns[1:])
    waited = table.values.loc[LOCK_ROW].iloc[1:] * seconds
    assert waited.sum() / seconds.sum() == pytest.approx(
        eff.bound_runs.loc[6, "row_lock_waiting"], rel=1e-6)


def test_the_figures_are_the_same_cached_and_computed(flash: tuple, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    db, fr, _ = flash
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    done = [int(r) for r in fr.run_summary.loc[fr.run_summary["status"] == RunStatus.DONE,
                                               "run_id"]][:8]
    direct = from_samples(db, samples(db, run_ids=done, counters=None), done)
    cold, warm = run_digests(db, done), run_digests(db, done)
    for other in (cold, warm):
        pd.testing.assert_frame_equal(other.usage, direct.usage)
        assert other.pressure == direct.pressure


def test_a_changed_storage_limit_is_a_new_digest(tmp_path_factory: pytest.TempPathFactory,
                                                 tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is in the run's metadata, not its samples: the digest's key holds it."""
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path))
    db = recorded_copy(FLASH, tmp_path_factory)
    before = run_digests(db, [6]).pressure[6]["limits"]["write_bandwidth"]
    con = sqlite3.connect(db)
    con.execute("UPDATE run_metadata SET extra = json_set(extra, '$.storage_write_bandwidth',"
                " 20 * 1048576) WHERE run_id = 6")
    con.commit()
    con.close()
    after = run_digests(db, [6]).pressure[6]["limits"]["write_bandwidth"]
    assert before["intervals_at_limit"] >= 28 and after["intervals_at_limit"] == 0
    assert after["limit"] == 2 * before["limit"]


# ---------------------------------------------------------------------------- the verbs


def test_show_of_a_flash_base_run_names_the_storage_byte_limit(flash: tuple, cli: Any) -> None:
    db, fr, _ = flash
    names = _row_names(fr)
    base = next(c for c, n in names.items() if n == "base")
    run = int(fr.run_summary.loc[fr.run_summary["cell_id"] == base, "run_id"].iloc[0])
    code, out, err = cli(["show", str(run), "--db", str(db)])
    assert code == 0, err
    flat = " ".join(out.replace("│", " ").split())
    assert "what bound it storage byte limit — at ≥ 90 % of its write bandwidth limit" in flat
    assert "cost per New-Order (window)" in flat and "mysqld CPU µs" in flat


def test_compare_has_the_bound_column_and_the_cost_table(iops: tuple, cli: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db, _, _ = iops
    monkeypatch.setenv("COLUMNS", "160")  # one table row per line
    code, out, err = cli(["compare", IOPS, "--db", str(db)])
    assert code == 0, err
    header = next(line for line in out.splitlines() if "verdict" in line and "id" in line)
    assert "bound" in header
    baseline = next(line for line in out.splitlines() if line.startswith("│ C1 "))
    assert "operation limit 4/5" in baseline  # the baseline: run 9 is not
    assert "Cost per New-Order" in out and "row-lock" in out
    assert "C1: storage operation limit — 95 % of its write IOPS limit" in " ".join(out.split())


@pytest.mark.parametrize("what", ["runs", "intervals", "samples"])
def test_export_names_each_runs_row_as_the_experiment_file_does(flash: tuple, cli: Any,
                                                               tmp_path: Path, what: str) -> None:
    db, fr, _ = flash
    out = tmp_path / f"{what}.csv"
    code, _, err = cli(["export", FLASH, "--db", str(db), "--what", what, "-o", str(out)])
    assert code == 0, err
    df = pd.read_csv(out)
    assert list(df.columns).index("row") == list(df.columns).index("run_id") + 1
    # Read back through each run's own knobs, not through the code that named it: the row
    # `dw-off-50` of the experiment file is doublewrite off at 50 %, `ps-bigredo-60` XtraDB.
    knobs = fr.runs.set_index("run_id")["knobs"]
    for name, want in [("dw-off-50", {"doublewrite": False, "max_dirty_pages_pct": 50}),
                       ("dw-on-15", {"doublewrite": True, "max_dirty_pages_pct": 15}),
                       ("ps-bigredo-60", {"server": "xtradb-5.5", "max_dirty_pages_pct": 60})]:
        runs = df.loc[df["row"] == name, "run_id"].unique()
        assert len(runs) >= 1, name
        for run in runs:
            assert {k: knobs[run].get(k) for k in want} == want, (name, run)
    assert df["row"].notna().all() and not df["row"].str.contains("=").any()


def test_the_end_of_run_summary_calls_each_row_by_its_name(flash: tuple) -> None:
    from rich.console import Console

    from analysis.tables import frames
    from flushbench.cli.summary import print_cell_summary
    from store.db import ResultsDB

    db, _, _ = flash
    console = Console(record=True, width=200)
    with ResultsDB(db) as results:
        print_cell_summary(console, results, int(frames.experiment_info(results, FLASH)["id"]))
    lines = console.export_text().splitlines()
    first = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
    assert "base (baseline)" in first and "dw-off-50" in first and "ps-optimized" in first
    assert not any("=" in cell for cell in first)  # no knob strings where a name exists


def test_export_of_runs_has_the_cost_columns(flash: tuple, cli: Any, tmp_path: Path) -> None:
    db, _, eff = flash
    out = tmp_path / "runs.csv"
    code, _, err = cli(["export", FLASH, "--db", str(db), "--what", "runs", "-o", str(out)])
    assert code == 0, err
    df = pd.read_csv(out).set_index("run_id")
    columns = [f"{c}_per_tx" for c in cost.COLUMNS]
    assert set(columns) <= set(df.columns) and {"bound", "bound_text"} <= set(df.columns)
    done = df[df["status"] == "done"]
    # Every figure but the context switches: the flash study was recorded before they were
    # sampled, so they are empty (never 0).
    sampled = [c for c in columns if "ctxsw" not in c]
    assert done[sampled].notna().all().all()
    assert done[["mysqld_ctxsw_per_tx", "client_ctxsw_per_tx"]].isna().all().all()
    pd.testing.assert_series_equal(done["write_kib_per_tx"], eff.cost_runs.loc[
        done.index, "write_kib"], check_names=False)
    assert set(done["bound"]) == {"storage-bytes"}
