"""The write-path ledger of real runs, one per server family here (MariaDB 10.11, Debian's; MySQL
9.7, fetched by ``server fetch`` for the tests; MySQL 5.5 where scripts/build-server.sh built
it): with doublewrite off the doublewrite part is 0,
the redo part is the server's own redo counter over the window, byte for byte, and MySQL 9.7's
binary log (on by default) is the growth of its files' size (analysis/writes/ledger.py,
docs/statistics.md "The write-path ledger")."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import select

from analysis.reading.series import samples as sample_frame
from analysis.tables import efficiency
from analysis.tables.frames import load
from analysis.writes import ledger
from runner.fleet.worker import run_experiment
from runner.run.sampler import decompress_status
from store.db import ResultsDB
from store.models import Sample
from tests.support.built_servers import built_server
from tests.support.cli_runner import CliRun
from tests.support.debian_servers import fetched_profile
from tests.support.server_runs import built_server_experiment
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

BODY = "matrix: {doublewrite: [on, off]}\nfixed: {flush_log_at_trx_commit: 2}\n"
#: MariaDB 10.11 also counts its flushes by kind (INNODB_METRICS, off by default).
MONITORED = ("matrix: {doublewrite: [on, off]}\nfixed: {flush_log_at_trx_commit: 2,"
             " variables: {innodb_monitor_enable: module_buffer}}\n")


def _experiment(tmp_path: Path, server: str) -> Path:
    if server == "mariadb-debian":
        return tiny_tpcc_experiment(tmp_path, "ledger-real", MONITORED, duration="12s")
    if server == "mysql-9.7":  # InnoDB 8.0+'s INNODB_METRICS count flushes by kind too
        return tiny_tpcc_experiment(tmp_path, "ledger-real", MONITORED, duration="12s",
                                    server=fetched_profile(server))
    built_server(server)  # skips, naming the build command, where it is not built
    return built_server_experiment(tmp_path, server, "ledger-real", BODY, duration="12s")


@pytest.mark.parametrize("server", [
    "mariadb-debian",
    "mysql-9.7",
    # Built by scripts/build-server.sh where the researcher has its source: skipped elsewhere.
    pytest.param("mysql-5.5", marks=pytest.mark.optional_tool)])
def test_doublewrite_off_is_zero_and_redo_is_the_servers_counter(
        server: str, tmp_path: Path, work: Path, cli: CliRun,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = _experiment(tmp_path, server)
    db = ResultsDB(tmp_path / "r.sqlite")
    outcome = run_experiment(path, db, work=work)
    assert (outcome.done, outcome.failed) == (2, 0)
    fr = load(db, "ledger-real")
    eff = efficiency.load(db, fr)
    runs = eff.ledger_runs
    assert len(runs) == 2
    labels = fr.run_summary.set_index("run_id")["cell_label"]
    win = fr.experiment["window"]
    for run_id, row in runs.iterrows():
        assert row["transactions"] > 0
        off = "doublewrite=off" in labels[run_id]
        if off:
            assert row["doublewrite_kib"] == 0.0
        # The server's own Innodb_os_log_written between the first and the last sample
        # inside the window, read straight from the stored samples.
        measured = fr.run_summary.set_index("run_id").loc[run_id, "measure_started_at"]
        with db.session() as s:
            taken = list(s.scalars(select(Sample).where(Sample.run_id == run_id,
                                                        Sample.missed.is_(False))
                                   .order_by(Sample.seq)))
        inside = [x for x in taken if win.start <= (
            x.ts.replace(tzinfo=measured.tzinfo) - measured).total_seconds() <= win.end]
        assert len(inside) >= 3
        first, last = (decompress_status(x.status_z) for x in (inside[0], inside[-1]))
        redo = last["Innodb_os_log_written"] - first["Innodb_os_log_written"]
        assert redo > 0
        assert row["redo_kib"] * row["transactions"] * 1024 == pytest.approx(redo, rel=1e-9)
        pages = last["Innodb_pages_written"] - first["Innodb_pages_written"]
        assert row["pages_written"] * row["transactions"] == pytest.approx(pages, abs=1e-9)
        # INNODB_METRICS: MySQL 5.5 has none (the sampler stopped asking, no tick missed);
        # MariaDB 10.11 and MySQL 9.7 counted their flushes by kind, within the pages written.
        metric_keys = {k for k in last if k.startswith("INNODB_METRICS.")}
        kinds = [row[p] for p in ledger.METRICS]
        if server == "mysql-5.5":
            assert not metric_keys and all(x != x for x in kinds)  # NaN: not counted
            with db.session() as s:
                missed = s.scalars(select(Sample.seq).where(Sample.run_id == run_id,
                                                            Sample.missed.is_(True))).all()
            assert missed == []
        else:
            assert ledger.METRICS["pages_sync_kib"] in metric_keys
            assert all(x >= 0 for x in kinds)
            assert sum(kinds) + row["pages_lru_kib"] <= row["pages_kib"] * 1.0001 + 1e-9
        binlog = row["binlog_kib"]
        if server == "mysql-9.7":
            # log_bin is ON by default since 8.0 and MySQL counts no binlog bytes: the sampler
            # sized the binary logs (SHOW BINARY LOGS) and the part is their growth.
            files = (last[ledger.BINLOG_FILES] - first[ledger.BINLOG_FILES])
            assert files > 0
            assert binlog * row["transactions"] * 1024 == pytest.approx(files, rel=1e-9)
        else:
            # The binary log is off (MariaDB's counter says 0; MySQL 5.5 answered "not using
            # binary logging" once, and was not asked again, no tick missed).
            assert ledger.BINLOG_FILES not in last and binlog == 0.0
        assert row["counted_kib"] == pytest.approx(
            row["redo_kib"] + row["doublewrite_kib"] + row["pages_kib"] + binlog)
        # Context switches per New-Order: mysqld's and the driver's (voluntary + involuntary)
        # growth between the same two stored samples, over the same New-Orders.
        costs = eff.cost_runs.loc[run_id]
        assert costs["transactions"] == row["transactions"]
        for who, column in (("mysqld", "mysqld_ctxsw"), ("driver", "client_ctxsw")):
            edges = [getattr(x, f"{who}_ctxsw_{kind}") for x in (inside[0], inside[-1])
                     for kind in ("voluntary", "involuntary")]
            if who == "driver" and None in edges:
                # A tick that found no driver process (it ends with the window) has no count:
                # the figure is unknown (NaN), never a number from one edge (cost.window_usage).
                assert costs[column] != costs[column], (run_id, edges)
                continue
            grown = sum(getattr(inside[-1], f"{who}_ctxsw_{kind}")
                        - getattr(inside[0], f"{who}_ctxsw_{kind}")
                        for kind in ("voluntary", "involuntary"))
            assert grown > 0, who
            assert costs[column] == pytest.approx(grown / row["transactions"], rel=1e-12)
    # Per sampler interval, the redo parts tile the window: their bytes add up to the run's.
    smp = sample_frame(db, run_ids=list(runs.index), counters=ledger.COUNTERS)
    facts = ledger.run_facts(db, list(runs.index))
    per_interval = ledger.per_interval(smp, fr.intervals, facts)
    for run_id, row in runs.iterrows():
        mine = per_interval[per_interval["run_id"] == run_id]
        assert len(mine) >= 2
        assert (mine["redo_kib"] * mine["transactions"]).sum() == pytest.approx(
            row["redo_kib"] * row["transactions"], rel=1e-9)
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _cost_table_has_the_context_switches(eff, tmp_path / "r.sqlite", cli)


def _cost_table_has_the_context_switches(eff: efficiency.Efficiency, db: Path,
                                         cli: CliRun) -> None:
    """The cost table's context switches per New-Order are the runs' figures: in ``compare
    --format markdown`` (the first row, the baseline, at 1.00×) and ``export --what runs``."""
    code, out, err = cli(["compare", "ledger-real", "--db", str(db), "--format", "markdown"])
    assert code == 0, err
    table = out.split("### Cost per New-Order")[1].strip().splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    at = head.index("mysqld context switches per New-Order")
    assert head[at + 2] == "client context switches per New-Order"
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:4]]

    def shown(value: float, fmt: str) -> str:
        # An unknown figure (a window edge that found no driver process) is printed "–".
        return format(value, fmt) if math.isfinite(value) else "–"

    for row, (_cell, figures) in zip(rows, eff.cost_cells.iterrows(), strict=True):
        assert row[at] == shown(figures["mysqld_ctxsw"], ",.1f")
        assert row[at + 2] == shown(figures["client_ctxsw"], ",.1f")
    base = eff.cost_cells.iloc[0]
    assert rows[0][at + 1] == shown(base["mysqld_ctxsw"] / base["mysqld_ctxsw"], ".2f")
    assert rows[0][at + 3] == shown(base["client_ctxsw"] / base["client_ctxsw"], ".2f")
    csv = db.with_name("runs.csv")
    code, out, err = cli(["export", "ledger-real", "--db", str(db), "--what", "runs",
                          "-o", str(csv)])
    assert code == 0, err
    exported = pd.read_csv(csv).set_index("run_id")
    for run_id, figures in eff.cost_runs.iterrows():
        for column in ("mysqld_ctxsw", "client_ctxsw"):
            assert exported.loc[run_id, f"{column}_per_tx"] == pytest.approx(
                figures[column], rel=1e-9, nan_ok=True)
