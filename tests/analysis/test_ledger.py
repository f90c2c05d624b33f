"""The write-path ledger's arithmetic on synthetic counters (analysis/writes/ledger.py), the cost
table against each row's baseline (analysis/writes/write_costs.py), and the ledger of the committed
generations study (on a copy): every row split into redo, doublewrite and data pages, the
parts held against the device's bytes (docs/statistics.md, "The write-path ledger")."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.writes import ledger, write_costs
from tests.support.cli_runner import CliRun
from tests.support.recorded import recorded_copy

PAGE = 16384.0


def _one(**grown: float) -> pd.DataFrame:
    """One span's growths (every counter the ledger reads absent unless given)."""
    return pd.DataFrame([grown], index=pd.Index([7], name="run_id"))


def _ledger(grown: pd.DataFrame, tx: float = 100.0, binlog: bool = False) -> pd.Series:
    idx = grown.index
    return ledger.ledger(grown, pd.Series(tx, idx), pd.Series(PAGE, idx),
                         pd.Series(binlog, idx)).iloc[0]


def test_the_parts_floor_and_causes_add_up_to_the_device() -> None:
    # 100 New-Orders: 1,000 KiB of redo (LSN grew 900 KiB), 500 pages of which 100 by the
    # LRU, 480 doublewrite pages, 300 KiB of binlog, and the device got 20 KiB more.
    redo, lsn = 1000 * 1024.0, 900 * 1024.0
    counted = redo + 500 * PAGE + 480 * PAGE + 300 * 1024.0
    row = _ledger(_one(
        Innodb_os_log_written=redo, Innodb_pages_written=500,
        Innodb_dblwr_pages_written=480, Innodb_buffer_pool_pages_lru_flushed=100,
        Binlog_bytes_written=300 * 1024.0, Innodb_data_fsyncs=50,
        device_bytes=counted + 20 * 1024.0, lsn_growth=lsn, dirty_pages_mean=4000.0,
        max_checkpoint_age_mean=72 * 1024.0 * 1024.0), binlog=True)
    assert row["redo_kib"] == pytest.approx(10.0)
    assert row["pages_kib"] == pytest.approx(500 * 16 / 100)
    assert row["pages_lru_kib"] == pytest.approx(100 * 16 / 100)
    assert row["pages_flush_list_kib"] == pytest.approx(400 * 16 / 100)
    assert row["doublewrite_kib"] == pytest.approx(480 * 16 / 100)
    assert row["binlog_kib"] == pytest.approx(3.0)
    assert row["residual_kib"] == pytest.approx(0.2)
    assert row["residual_pct"] == pytest.approx(100 * 0.2 / row["device_kib"])
    assert row["pages_written"] == pytest.approx(5.0) and row["fsyncs"] == pytest.approx(0.5)
    # The floor: the LSN's growth once, and dirty × redo per New-Order ÷ the age limit pages.
    floor_pages = 4000.0 * (lsn / 100) / (72 * 1024.0 * 1024.0)
    assert row["floor_pages"] == pytest.approx(floor_pages)
    assert row["floor_kib"] == pytest.approx(9.0 + floor_pages * 16)
    assert row["above_redo_kib"] == pytest.approx(1.0)
    causes = sum(row[c] for c in ledger.CAUSES)
    assert row["floor_kib"] + causes == pytest.approx(row["device_kib"])
    assert row["amplification"] == pytest.approx(row["device_kib"] / row["floor_kib"])


def test_doublewrite_off_is_a_zero_part_and_a_server_without_counters_is_unknown() -> None:
    row = _ledger(_one(Innodb_os_log_written=2048.0, Innodb_pages_written=10,
                       Innodb_dblwr_pages_written=0, device_bytes=2048.0 + 10 * PAGE))
    assert row["doublewrite_kib"] == 0.0 and row["residual_kib"] == pytest.approx(0.0)
    # No LRU counter (MySQL 5.5, MariaDB 10.2): the pages are not split, never "0 by LRU".
    assert math.isnan(row["pages_lru_kib"]) and math.isnan(row["pages_flush_list_kib"])
    # No binlog byte counter but log_bin OFF: no binlog part at all.
    assert row["binlog_kib"] == 0.0
    # No LSN or dirty pages: no floor, no amplification (never a made-up one).
    assert math.isnan(row["floor_kib"]) and math.isnan(row["amplification"])


def test_xtradb_spells_its_lru_counter_in_capitals_and_binlog_on_without_a_counter() -> None:
    row = _ledger(_one(Innodb_pages_written=10, Innodb_buffer_pool_pages_LRU_flushed=4,
                       Innodb_os_log_written=0.0), tx=2, binlog=True)
    assert row["pages_lru_kib"] == pytest.approx(4 * 16 / 2)
    # log_bin ON on a server that does not count its binlog bytes: unknown, in the residual.
    assert math.isnan(row["binlog_kib"])


def test_without_a_byte_counter_the_binlog_is_its_files_growth_and_a_purge_is_unknown() -> None:
    # MySQL with log_bin ON: the sampler's size of the binary logs grew 120 KiB.
    row = _ledger(_one(Innodb_os_log_written=4096.0, Innodb_pages_written=0,
                       Innodb_dblwr_pages_written=0, **{ledger.BINLOG_FILES: 120 * 1024.0},
                       device_bytes=4096.0 + 120 * 1024.0), tx=4, binlog=True)
    assert row["binlog_kib"] == pytest.approx(30.0) and row["residual_kib"] == pytest.approx(0)
    # A purge inside the span shrank the files: unknown, never a negative part.
    row = _ledger(_one(Innodb_os_log_written=4096.0, **{ledger.BINLOG_FILES: -1024.0}),
                  tx=4, binlog=True)
    assert math.isnan(row["binlog_kib"])
    # MariaDB's own counter wins where both are there.
    row = _ledger(_one(Binlog_bytes_written=8192.0, **{ledger.BINLOG_FILES: 4096.0}), tx=1,
                  binlog=True)
    assert row["binlog_kib"] == pytest.approx(8.0)


def test_no_transaction_in_the_span_gives_no_figure() -> None:
    row = _ledger(_one(Innodb_os_log_written=4096.0, device_bytes=8192.0), tx=0.0)
    assert math.isnan(row["redo_kib"]) and math.isnan(row["device_kib"])


def test_the_largest_source_counts_the_data_pages_whole() -> None:
    table = pd.DataFrame({
        "redo_kib": [10.0, 10.0, np.nan], "doublewrite_kib": [90.0, 0.0, np.nan],
        "pages_kib": [100.0, 80.0, np.nan], "binlog_kib": [0.0, 0.0, np.nan],
        "residual_kib": [1.0, 95.0, np.nan]})
    assert ledger.largest(table).tolist() == ["data pages", "residual", None]


def test_per_interval_tiles_the_window() -> None:
    """Per sampler interval, the growth between consecutive window samples; their sum is the
    whole window's (the intervals tile it)."""
    t = np.arange(0.0, 12.0, 2.0)
    smp = pd.DataFrame({
        "run_id": 3, "seq": range(len(t)), "t": t, "in_window": t >= 2, "missed": False,
        "Innodb_os_log_written": 1000.0 * t, "Innodb_pages_written": 5.0 * t,
        "Innodb_dblwr_pages_written": 5.0 * t, "group_write_bytes": 1000 * t + 2 * 5 * PAGE * t,
        "disk_write_sectors": np.nan, "lsn": 900.0 * t, "pages_dirty": 100.0,
        "max_checkpoint_age_bytes": 1e6})
    intervals = pd.DataFrame({"run_id": 3, "t": np.arange(1.0, 12.0, 1.0),
                              "primary_count": 10})
    facts = pd.DataFrame({"page_size": [PAGE], "binlog_on": [False]},
                         index=pd.Index([3], name="run_id"))
    rows = ledger.per_interval(smp, intervals, facts)
    assert rows["t"].tolist() == [4.0, 6.0, 8.0, 10.0]
    assert (rows["transactions"] == 20).all()
    assert rows["redo_kib"].tolist() == pytest.approx([2000 / 20 / 1024] * 4)
    assert rows["residual_kib"].abs().max() == pytest.approx(0.0)
    whole = (rows["redo_kib"] * rows["transactions"]).sum() * 1024
    assert whole == pytest.approx(1000.0 * (10 - 2))


def test_a_sampler_interval_without_a_driver_interval_end_joins_the_next() -> None:
    """Ticks every 2 s, the driver's intervals ending every 3 s: some sampler intervals hold no
    driver interval's end. They join the next one, so every row has transactions and the rows'
    redo still adds up to the window's."""
    t = np.arange(0.0, 14.0, 2.0)
    smp = pd.DataFrame({
        "run_id": 4, "seq": range(len(t)), "t": t, "in_window": True, "missed": False,
        "Innodb_os_log_written": 1000.0 * t, "Innodb_pages_written": 5.0 * t,
        "Innodb_dblwr_pages_written": 5.0 * t, "group_write_bytes": 1000 * t + 2 * 5 * PAGE * t,
        "disk_write_sectors": np.nan, "lsn": 900.0 * t, "pages_dirty": 100.0 + t,
        "max_checkpoint_age_bytes": 1e6})
    intervals = pd.DataFrame({"run_id": 4, "t": [3.0, 6.0, 9.0], "primary_count": 30})
    facts = pd.DataFrame({"page_size": [PAGE], "binlog_on": [False]},
                         index=pd.Index([4], name="run_id"))
    rows = ledger.per_interval(smp, intervals, facts)
    # (0, 2] holds no end: joined to (2, 4]; (6, 8] none: joined to (8, 10], which holds 9;
    # (10, 12] none, the last: into the one before.
    assert rows["t"].tolist() == [4.0, 6.0, 12.0]
    assert rows["transactions"].tolist() == [30.0, 30.0, 30.0]
    whole = (rows["redo_kib"] * rows["transactions"]).sum() * 1024
    assert whole == pytest.approx(1000.0 * 12)


def test_the_cost_table_divides_by_each_rows_own_baseline() -> None:
    cost_cells = pd.DataFrame({"mysqld_cpu_us": [100.0, 150.0, 80.0, 40.0],
                               "client_cpu_us": 1.0, "read_ops": [1.0, 2.0, 0.0, 0.0],
                               "read_kib": 1.0}, index=[1, 2, 3, 4])
    ledger_cells = pd.DataFrame({"device_kib": [10.0, 20.0, 5.0, 5.0],
                                 "pages_written": 1.0, "redo_kib": 1.0, "fsyncs": np.nan},
                                index=[1, 2, 3, 4])
    t = write_costs.table(cost_cells, ledger_cells, {1: 1, 2: 1, 3: 3, 4: 3})
    assert t["mysqld_cpu_us_x"].tolist() == pytest.approx([1.0, 1.5, 1.0, 0.5])
    assert t["write_kib_x"].tolist() == pytest.approx([1.0, 2.0, 1.0, 1.0])
    # A baseline of 0 reads, or an unknown figure, gives no ratio rather than infinity.
    assert math.isnan(t.at[4, "read_ops_x"]) and math.isnan(t.at[2, "fsyncs_x"])
    text = write_costs.markdown(t, {1: "base | one", 2: "two\nlines"}, "New-Order")
    lines = text.splitlines()
    assert lines[0].startswith("| configuration | mysqld CPU µs per New-Order | × baseline |")
    assert lines[2].startswith("| base \\| one | 100 | 1.00 |")
    assert lines[3].startswith("| two lines | 150 | 1.50 |")
    assert len({line.count(" | ") for line in lines}) == 1  # every row has every column


@pytest.fixture(scope="module")
def generations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the committed generations study (the committed file is never written)."""
    return recorded_copy("generations", tmp_path_factory)


def test_every_generations_row_is_split_and_held_against_the_device(
        generations: Path, tmp_path: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    from analysis.tables import efficiency
    from analysis.tables.frames import load

    fr = load(f"sqlite:///{generations}", "generations")
    eff = efficiency.load(f"sqlite:///{generations}", fr)
    cells = eff.ledger_cells
    assert len(cells) == 15
    for part in ("redo_kib", "doublewrite_kib", "pages_kib", "device_kib", "residual_kib"):
        assert cells[part].notna().all(), part
    # dw-off rows have no doublewrite part; every other row has one.
    dw_off = fr.cell_summary.set_index("cell_id").loc[cells.index, "cell_label"].str.contains(
        "doublewrite=off")
    assert (cells.loc[dw_off, "doublewrite_kib"] == 0).all()
    assert (cells.loc[~dw_off, "doublewrite_kib"] > 0).all()
    # Every device byte came through the throttle group's counters (flash-2011 ran on all).
    assert set(eff.ledger_runs["device_source"]) == {"throttle group"}
    # The parts add up within 5 %, or compare names the row whose residual is larger.
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = cli(["compare", "generations", "--db", str(generations)])
    assert code == 0, err
    compared = out
    assert "Write path: KiB per New-Order" in out
    off = [r for _, r in cells.iterrows() if not ledger.accounted(r)]
    if off:
        assert "the parts miss the device's bytes by more than 5 % in" in out
    else:
        assert "the parts add up to the device's bytes within 5 % in every row" in out
    assert "Cost per New-Order" in out and "Above the floor" in out
    # show names the run's largest write source; export carries the ledger columns.
    run_id = int(eff.ledger_runs.index[0])
    code, out, err = cli(["show", str(run_id), "--db", str(generations)])
    assert code == 0, err
    shown = out
    largest = eff.ledger_runs.loc[run_id, "largest"]
    assert "largest write source" in out and f"│ {largest}: " in out
    csv = tmp_path / "runs.csv"
    code, out, err = cli(["export", "generations", "--db", str(generations), "--what", "runs",
                          "-o", str(csv)])
    assert code == 0, err
    runs = pd.read_csv(csv)
    for column in ("ledger_redo_kib_per_tx", "ledger_doublewrite_kib_per_tx",
                   "ledger_pages_kib_per_tx", "ledger_device_kib_per_tx",
                   "ledger_residual_kib_per_tx", "ledger_largest"):
        assert runs[column].notna().sum() == 45, column
    code, out, err = cli(["compare", "generations", "--db", str(generations),
                          "--format", "markdown"])
    assert code == 0, err
    assert "| mariadb-10.11-defaults |" in out and "| configuration | device KiB/" in out
    _no_context_switches(generations, eff, runs, {"markdown": out, "compare": compared,
                                                  "show": shown}, tmp_path, cli)


def _no_context_switches(db: Path, eff: Any, runs: pd.DataFrame, said: dict[str, str],
                         tmp_path: Path, cli: CliRun) -> None:
    """A database recorded before context switches were sampled: every figure and its ×
    baseline twin is "–" (never 0) in compare, show, export and the report (``said``: compare's
    text and markdown and show's table of the study's first run, as printed above)."""
    markdown = said["markdown"]
    assert eff.cost_runs[["mysqld_ctxsw", "client_ctxsw"]].isna().all().all()
    assert eff.cost_runs["mysqld_cpu_us"].notna().all()  # the figures sampled all along are
    table = markdown.split("### Cost per New-Order")[1].strip().splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    at = head.index("mysqld context switches per New-Order")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]
            if line.startswith("|")]
    assert len(rows) == 15 and {r[i] for r in rows for i in range(at, at + 4)} == {"–"}
    assert runs["mysqld_ctxsw_per_tx"].isna().all() and runs["client_ctxsw_per_tx"].isna().all()
    assert "mysqld context switches" in said["compare"]
    assert int(eff.cost_runs.index[0]) == int(eff.ledger_runs.index[0])  # the run shown
    assert "– mysqld context switches, – client context switches" in said["show"]
    code, out, err = cli(["report", "generations", "--db", str(db), "-o",
                          str(tmp_path / "report"), "--no-png"])
    assert code == 0, err
    html = (tmp_path / "report" / "report.html").read_text()
    # The cost section's table and the write path's cost table (against the baseline).
    assert html.count("mysqld context switches") == 2
