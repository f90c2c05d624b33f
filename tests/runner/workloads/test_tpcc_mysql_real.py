"""The ``tpcc-mysql`` adapter end to end against Percona-Lab's real binaries.

tpcc-mysql is in no package registry: build it with ``scripts/build-tpcc-mysql.sh SRC_DIR``
and put ``tpcc_start``/``tpcc_load`` on PATH, or point ``$TPCC_MYSQL_BIN`` at the checkout
(the directory holding the binaries and its SQL files). Without them these tests skip, also
under FLUSHBENCH_REQUIRE_MYSQL=1 (marker ``optional_tool``).

Besides tpcc-mysql's own load and run, ``tpcc_start`` is run on data loaded by flushbench's Go
driver: the two tools share one schema, so either's data must work under the other.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from core import paths
from core.experiment.sections import DatasetSpec, WorkloadSpec
from runner.workloads import Workload, get_workload
from runner.workloads.tpcc_mysql import locate

from .conftest import DbServer

pytestmark = [pytest.mark.mysql, pytest.mark.optional_tool, pytest.mark.slow]


def _tpcc_mysql_binaries() -> dict[str, str]:
    """Where the adapter finds them (``$TPCC_MYSQL_BIN``, a directory or the tpcc_start in it,
    else PATH); skip if absent."""
    found = {name: str(path) for name in ("tpcc_start", "tpcc_load")
             if (path := locate(None, name)) is not None}
    if set(found) != {"tpcc_start", "tpcc_load"}:
        pytest.skip(
            "tpcc_start/tpcc_load not found: build them with scripts/build-tpcc-mysql.sh SRC_DIR"
            " and put them on PATH or set TPCC_MYSQL_BIN"
        )
    return found


@pytest.fixture(scope="module")
def tpcc_mysql() -> Workload:
    """The adapter with the real binaries (skips when they are not available)."""
    adapter = get_workload("tpcc-mysql", _tpcc_mysql_binaries())
    problems = adapter.problems() + adapter.load_problems()
    if problems:
        pytest.skip(problems[0])
    return adapter


def _spec() -> WorkloadSpec:
    return WorkloadSpec(driver="tpcc-mysql", test=None, connections=2, warmup=2, duration=6,
                        report_interval=2)


def _run_and_check(adapter: Workload, server: DbServer, database: str, tmp_path: Path) -> None:
    dataset = DatasetSpec(workload="tpcc", warehouses=1, loader="tpcc-mysql")
    start = dt.datetime.now(dt.UTC)
    conn = server.connection_info(database)
    with adapter.run(conn, _spec(), 2, dataset, tmp_path / "driver.log") as running:
        records = list(running.intervals(timeout_s=60))
        outcome = running.outcome()
    assert outcome.exit_code == 0, outcome.stderr_tail
    # tpcc_start prints every failed statement to stderr; a clean run prints none.
    assert outcome.stderr_tail.strip() == "", outcome.stderr_tail
    assert outcome.summary is not None
    measured = [r for r in records if r.phase == "measure"]
    assert len(measured) == 3
    assert all(start <= r.ts <= dt.datetime.now(dt.UTC) for r in records)
    assert sum(r.primary_count for r in measured) > 0
    assert all(r.errors == 0 for r in records)


def test_load_and_run_with_tpcc_mysql(
    tpcc_mysql: Workload, workload_server: DbServer, tmp_path: Path
) -> None:
    """create_table.sql, tpcc_load, add_fkey_idx.sql, then tpcc_start through the adapter."""
    dataset = DatasetSpec(workload="tpcc", warehouses=1, loader="tpcc-mysql")
    tpcc_mysql.load(workload_server.connection_info("real_tpcc_mysql"), dataset,
                    tmp_path / "load.log")
    with workload_server.connect("real_tpcc_mysql") as link, link.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM stock")
        assert cur.fetchone()[0] == 100_000
        cur.execute("SELECT COUNT(*) FROM information_schema.referential_constraints"
                    " WHERE constraint_schema = 'real_tpcc_mysql'")
        assert cur.fetchone()[0] == 10
    _run_and_check(tpcc_mysql, workload_server, "real_tpcc_mysql", tmp_path)


def test_tpcc_start_runs_on_data_loaded_by_the_go_driver(
    tpcc_mysql: Workload, workload_server: DbServer, tmp_path: Path
) -> None:
    """``tpcc load`` (flushbench's loader), then tpcc_start on it with no error."""
    binary = paths.tpcc_binary()
    if not binary.is_file():
        pytest.skip(f"{binary} is not built (bash scripts/setup.sh builds it)")
    ours = get_workload("tpcc", {"tpcc": str(binary)})
    dataset = DatasetSpec(workload="tpcc", warehouses=1, load_workers=2)
    ours.load(workload_server.connection_info("real_go_loaded"), dataset, tmp_path / "load.log")
    _run_and_check(tpcc_mysql, workload_server, "real_go_loaded", tmp_path)
