"""The 2011 servers end to end: MySQL 5.5 and XtraDB 5.5 (MariaDB 5.5) built from source.

The same path as the MariaDB 10.11 runs of test_execute.py — dataset load with the Go driver
(tpcc-mysql's schema with its foreign keys), restore, start, sample, record — on each server
``scripts/build-server.sh`` built here; plus the sampler's checkpoint age and dirty pages
checked against ``SHOW ENGINE INNODB STATUS`` on a quiet server, the redo resize that 5.5
cannot do itself, and a kill drill. Without a built server every test skips and names the
build command (``optional_tool``), so ``make test`` costs nothing extra here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from analysis.statistics.checkpoint import max_checkpoint_age
from runner.fleet.worker import run_experiment
from runner.run.sampler import Sampler, decompress_status, parse_engine_lsn
from runner.server import (
    MysqldSandbox,
    ResolvedServer,
    SandboxLayout,
    initialize_datadir,
    write_mycnf,
)
from store.db import ResultsDB
from tests.runner.run.test_execute import KillMysqldOnFirstMeasure
from tests.support.built_servers import BUILT_KINDS, built_server
from tests.support.server_runs import (
    assert_checkpoints_trail_redo,
    built_server_experiment,
    only_run,
    runs_of,
)

pytestmark = [pytest.mark.mysql, pytest.mark.slow, pytest.mark.optional_tool]

KINDS = pytest.mark.parametrize("kind", BUILT_KINDS)
#: The 2011 post's Percona knobs, on the server that has them.
KNOBS_55 = {
    "mysql-5.5": "{doublewrite: on, max_dirty_pages_pct: 50, flush_neighbor_pages: area}",
    "xtradb-5.5": "{doublewrite: on, max_dirty_pages_pct: 50, flush_neighbor_pages: none,"
                  " adaptive_checkpoint: keep_average}",
}
CNF = "[mysqld]\ninnodb_buffer_pool_size=64M\ninnodb_log_file_size=24M\nperformance_schema=OFF\n"


@KINDS
def test_a_cell_runs_samples_and_records(kind: str, tmp_path: Path, work: Path) -> None:
    server = built_server(kind)
    name = f"e2e-{kind}"
    path = built_server_experiment(tmp_path, kind, name, f"include:\n  - {KNOBS_55[kind]}\n")
    db = ResultsDB(tmp_path / "r.sqlite")
    outcome = run_experiment(path, db, work=work)
    assert (outcome.done, outcome.failed) == (1, 0)
    recorded = only_run(db, name)
    run, shown, meta, samples = (recorded.run, recorded.variables, recorded.metadata,
                                 recorded.samples)
    assert meta is not None and meta.server_version.startswith("5.5.")
    assert shown["innodb_doublewrite"] == "ON" and shown["innodb_max_dirty_pages_pct"] == "50"
    # small.cnf's innodb_log_file_size=48M (per file, as written): the install script's 5M
    # files were replaced before the dataset's first start.
    assert shown["innodb_log_file_size"] == str(48 << 20)
    if kind == "xtradb-5.5":
        assert shown["innodb_adaptive_flushing_method"] == "keep_average"
        assert shown["innodb_flush_neighbor_pages"] == "none"
    assert run.driver_summary and run.driver_summary["tpmc"] > 0
    assert len(samples) >= 3
    assert_checkpoints_trail_redo(samples)
    for sample in samples:
        assert sample.pages_data and sample.pages_dirty is not None
        status = decompress_status(sample.status_z)
        if server.flavor == "mariadb":  # XtraDB reports its own age and maximum
            assert status["Innodb_checkpoint_age"] >= 0
            assert status["Innodb_checkpoint_max_age"] > 0


@KINDS
def test_killed_mysqld_fails_the_run_and_the_queue_goes_on(kind: str, tmp_path: Path,
                                                            work: Path) -> None:
    built_server(kind)
    name = f"kill-{kind}"
    path = built_server_experiment(tmp_path, kind, name, "matrix: {doublewrite: [on]}\n",
                                   repetitions=2)
    db = ResultsDB(tmp_path / "r.sqlite")
    reporter = KillMysqldOnFirstMeasure(work, name)
    outcome = run_experiment(path, db, work=work, reporter=reporter)
    assert reporter.killed
    assert (outcome.failed, outcome.done) == (1, 1)
    failed, done = runs_of(db, name)
    assert (failed.status, done.status) == ("failed", "done")
    assert "mysqld" in (failed.error or "")


# --- the sampler's figures against the server's own report, on a quiet server -------------

_MODIFIED_RE = re.compile(r"^Modified db pages\s+(\d+)", re.MULTILINE)
_DATABASE_RE = re.compile(r"^Database pages\s+(\d+)", re.MULTILINE)
_FREE_RE = re.compile(r"^Free buffers\s+(\d+)", re.MULTILINE)


@pytest.fixture
def sandbox55(request: pytest.FixtureRequest, tmp_path: Path):
    server: ResolvedServer = built_server(request.param)
    layout = SandboxLayout(tmp_path / "run")
    initialize_datadir(server, layout)
    write_mycnf(layout.cnf, CNF, {}, layout)
    with MysqldSandbox(server, layout) as sandbox:
        sandbox.start()
        yield sandbox
    layout.cleanup()
    shutil.rmtree(layout.run_dir, ignore_errors=True)


@pytest.mark.parametrize("sandbox55", BUILT_KINDS, indirect=True)
def test_checkpoint_age_and_dirty_pages_match_engine_status(sandbox55: MysqldSandbox) -> None:
    server = sandbox55.server
    conn = sandbox55.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE t")
        cur.execute("CREATE TABLE t.x (id INT PRIMARY KEY AUTO_INCREMENT, v CHAR(200))"
                    " ENGINE=InnoDB")
        cur.execute("INSERT INTO t.x (v) VALUES " + ",".join(["(REPEAT('a', 200))"] * 2000))
        conn.commit()
        # Stop the master thread's background flushing moving the figures between the reads.
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 90")
    records = []
    sampler = Sampler(connect=sandbox55.connect, mysqld_pid=sandbox55.pid, interval=1.0,
                      engine_status=True, on_sample=records.append)
    sampler.t0 = datetime.now(UTC)  # collect() by hand, without the sampling thread
    for attempt in range(20):
        record = sampler.collect(attempt)
        with conn.cursor() as cur:
            cur.execute("SHOW ENGINE INNODB STATUS")
            text = cur.fetchone()[2]
            cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_checkpoint%'")
            status = {k: int(v) for k, v in cur.fetchall()}
        lsn, checkpoint = parse_engine_lsn(text)
        if (lsn, checkpoint) == (record.lsn, record.checkpoint_lsn):
            break  # a background flush or checkpoint between the two reads: read again
    else:
        pytest.fail(f"{server.label}: sampler LSNs never matched SHOW ENGINE INNODB STATUS")
    assert record.lsn > record.checkpoint_lsn, "2000 rows must leave some unflushed redo"
    dirty = int(_MODIFIED_RE.search(text).group(1))
    assert record.pages_dirty == dirty
    assert record.pages_data == int(_DATABASE_RE.search(text).group(1))
    assert record.pages_free == int(_FREE_RE.search(text).group(1))
    variables = sandbox55.global_variables()
    limit = max_checkpoint_age(server.flavor, variables["version"], variables)
    if server.flavor == "mariadb":
        # XtraDB says it itself: the age is the post's formula, the maximum is InnoDB's rule.
        assert status["Innodb_checkpoint_age"] == record.lsn - record.checkpoint_lsn
        assert status["Innodb_checkpoint_max_age"] == limit.bytes
    else:
        assert not status, "MySQL 5.5 has no Innodb_checkpoint% status variables"
    conn.close()


@pytest.mark.parametrize("kind", BUILT_KINDS)
def test_redo_resize_on_a_fresh_datadir(kind: str, tmp_path: Path) -> None:
    """5.5 cannot resize its redo: the sandbox replaces the install script's 5M files."""
    server = built_server(kind)
    layout = SandboxLayout(tmp_path / "run")
    initialize_datadir(server, layout)
    old = sorted(p.stat().st_size for p in layout.datadir.glob("ib_logfile*"))
    write_mycnf(layout.cnf, CNF, {"innodb_log_files_in_group": "3"}, layout)
    with MysqldSandbox(server, layout) as sandbox:
        sandbox.start()
        variables = sandbox.global_variables()
    new = sorted(p.stat().st_size for p in layout.datadir.glob("ib_logfile*"))
    assert old != new and new == [24 << 20] * 3
    assert variables["innodb_log_file_size"] == str(24 << 20)
    layout.cleanup()
    subprocess.run(["rm", "-rf", str(layout.run_dir)], check=False)
