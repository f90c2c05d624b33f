"""End to end: a short real sysbench sweep over two allocators and two thread counts, then
its summary, comparison and report, read as a memory-allocator study reads them.

Real MariaDB sandboxes, real sysbench 1.0.20, real LD_PRELOAD of jemalloc, real /proc. The
window (the second half of 4 s runs) ends on the report sysbench dropped when its run ended
exactly on a report, so a lost interval shows here as a run without its last window interval.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from analysis.reading.memory import load_memory
from analysis.report.writer import write_report
from analysis.tables import frames
from analysis.tables.export import export
from flushbench.cli import build_app
from flushbench.cli.summary import print_cell_summary
from runner.fleet.worker import run_experiment
from store.db import ResultsDB

# alone: four real sysbench runs whose windows hold two 1 s reports each (4 s runs, 1 s warmup:
# they run on the suite's critical path, after the parallel pass); beside three busy xdist
# workers a run once lost both of the two 2 s reports of an 8 s run ("no data in window", seen
# in CI), so they run by themselves.
pytestmark = [pytest.mark.mysql, pytest.mark.slow, pytest.mark.alone]
#: Each run's measured seconds; its window is the second half.
DURATION_S = 4.0

SWEEP = """\
version: 1
name: allocators-e2e
description: two allocators x two thread counts, seconds per run
server: mariadb-debian
base_config: small
dataset: {workload: sysbench, tables: 2, table_size: 2000}
workload: {driver: sysbench, test: oltp_read_only, warmup: 1s, duration: 4s,
           report_interval: 1s}
sampling: {interval: 1s}
repetitions: 1
pre_run: {drain_dirty_pages: false}
matrix:
  allocator: [glibc, jemalloc]
  connections: [2, 8]
baseline: {allocator: glibc, connections: 2}
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results database of the real sweep (4 runs)."""
    root = tmp_path_factory.mktemp("allocators")
    spec = root / "allocators-e2e.yaml"
    spec.write_text(SWEEP)
    db_path = root / "results.sqlite"
    db = ResultsDB(db_path)
    outcome = run_experiment(spec, db, work=root / "work")
    db.dispose()
    assert (outcome.done, outcome.failed) == (4, 0)
    return db_path


def test_every_run_has_data_in_its_window(sweep: Path) -> None:
    ivl = frames.intervals(sweep, "allocators-e2e")
    rs = frames.run_summary(sweep, "allocators-e2e")
    assert len(rs) == 4 and (rs["status"] == "done").all()
    no_data = rs[rs["notpm"].isna()]
    # A run without window data must at least say so; with the report slack none lacks it.
    assert no_data["warnings"].str.startswith("done, no data in window").all()
    assert no_data.empty, f"runs without window data: {no_data[['run_id', 'warnings']]}"
    for run_id, g in ivl.groupby("run_id"):
        # The report at the end of the measurement (t = 4 s) is there, and counted...
        assert (g.loc[g["in_window"], "t"] == DURATION_S).any(), run_id
        # ...and what sysbench measured after it (the slack interval) is not.
        assert not g.loc[g["t"] > DURATION_S, "in_window"].any()


def test_memory_and_host_settings_are_recorded(sweep: Path) -> None:
    rs = frames.run_summary(sweep, "allocators-e2e")
    per_run, per_cell = load_memory(sweep, rs)
    assert len(per_run) == 4 and (per_run["rss_peak_mb"] > 10).all()
    assert (per_run["vsz_peak_mb"] > per_run["rss_peak_mb"]).all()
    assert per_cell["rss_peak_mb"].notna().all()
    smp = frames.samples(sweep, "allocators-e2e", counters=None)
    # End of window: the last good sample inside it; a run whose window ticks were all missed
    # (a sample outran its 1 s slot on a busy host) has none: NaN, never a made-up figure.
    for run_id, g in smp[(smp["t"] >= DURATION_S / 2)
                         & (smp["t"] <= DURATION_S)].groupby("run_id"):
        end = per_run.set_index("run_id").loc[run_id, "rss_end_mb"]
        if (~g["missed"]).any():
            assert end == pytest.approx(g.loc[~g["missed"], "mysqld_rss_bytes"].iloc[-1] / 2**20)
        else:
            assert pd.isna(end)
    good = smp[~smp["missed"]]
    assert good["mysqld_rss_anon_bytes"].notna().all()
    assert good["mysqld_anon_hugepages_bytes"].notna().all()
    for extra in rs["extra"]:
        assert extra["thp_enabled"] in ("always", "madvise", "never")
        assert extra["large_pages"] == "OFF"
    jemalloc = rs[rs["allocator"] == "jemalloc"]
    assert all("libjemalloc" in (x["allocator"] or "") for x in jemalloc["extra"])


def test_report_tables_say_tps_and_qps(sweep: Path, tmp_path: Path) -> None:
    path = write_report(sweep, "allocators-e2e", tmp_path, png=False)
    html = path.read_text(encoding="utf-8")
    ranking = html[html.index("<h2 id='ranking'>Ranking</h2>"):]
    header = re.search(r"<thead><tr>(.*?)</tr></thead>", ranking).group(1)
    assert ">TPS<" in header and ">QPS<" in header
    assert "NOTPM" not in html and "New-Order" not in html.split("id='methodology'")[0]
    for text in ("Memory</h2>", "peak RSS MiB", "end-of-window RSS MiB", "peak VSZ GiB",
                 "TPS vs client threads per allocator", "mysqld RSS over time"):
        assert text in html
    # The QPS column holds numbers larger than TPS (oltp_read_only: 16 queries a transaction).
    row = re.search(r"<tbody><tr class='[^']*'>(.*?)</tr>", ranking).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    tps, qps = (float(c.replace(",", "")) for c in (cells[2], cells[4]))
    assert qps > 10 * tps > 0


def test_cli_tables_say_tps(sweep: Path) -> None:
    console = Console(record=True, width=200)
    with ResultsDB(sweep) as db:
        exp_id = int(frames.experiment_info(db, "allocators-e2e")["id"])
        print_cell_summary(console, db, exp_id)
    text = console.export_text()
    assert "TPS" in text and "min interval TPS" in text and "NOTPM" not in text
    result = CliRunner().invoke(build_app(), ["compare", "allocators-e2e", "--db", str(sweep)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "TPS (95% CI)" in result.output and "NOTPM" not in result.output
    out = pd.read_csv(export(sweep, "allocators-e2e", sweep.parent / "runs.csv", what="runs"))
    # The export speaks the experiment's metric only: TPS, no NOTPM column (issue #26).
    assert "tps" in out.columns and not any("notpm" in c for c in out.columns)
    summary = frames.run_summary(sweep, "allocators-e2e").set_index("run_id")
    per_minute = summary.loc[out["run_id"], "notpm"].to_numpy(dtype=float)
    assert np.allclose(out["tps"] * 60, per_minute) and (out["tps"] > 0).all()


def test_threads_figure_ticks_at_the_tested_counts(sweep: Path) -> None:
    from analysis.figures import plots
    from analysis.reading.metric import metric_view

    info = frames.experiment_info(sweep, "allocators-e2e")
    m = metric_view(info)
    cells = frames.cell_summary(sweep, "allocators-e2e")
    fig = plots.threads_sweep(cells, unit=m.name, scale=m.scale)
    assert list(fig.layout.xaxis.tickvals) == [2, 8]
    lines = [tr for tr in fig.data if tr.mode == "lines+markers"]
    assert sorted(tr.name for tr in lines) == ["glibc", "jemalloc"]
    assert all(pd.notna(list(tr.y)).all() for tr in lines)
