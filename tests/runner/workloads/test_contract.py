"""One contract every workload adapter passes, against a real MariaDB.

Parametrized over the three drivers. tpcc-mysql is not packaged: where its binaries are absent
the tests that need them skip with the reason (its parser is unit-tested on recorded output in
test_parsers.py); the "binary missing" preflight test runs for every driver.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from core import paths
from core.errors import WorkloadError
from core.experiment.sections import DatasetSpec, WorkloadSpec
from runner.workloads import IntervalRecord, Workload, get_workload, log_files
from tests.support import system_tools

from .conftest import DbServer

pytestmark = pytest.mark.mysql


@dataclass(frozen=True)
class Case:
    driver: str
    #: The ``workload.binaries`` key of the executable a run needs.
    binary_key: str
    dataset: DatasetSpec
    test: str | None
    #: A query and the value it must return once the tiny dataset is loaded.
    loaded_check: tuple[str, int]


CASES = {
    "tpcc": Case(
        "tpcc",
        "tpcc",
        DatasetSpec(workload="tpcc", warehouses=1, load_workers=2),
        None,
        ("SELECT COUNT(*) FROM district", 10),
    ),
    "tpcc-mysql": Case(
        "tpcc-mysql",
        "tpcc_start",
        DatasetSpec(workload="tpcc", warehouses=1, loader="tpcc-mysql"),
        None,
        ("SELECT COUNT(*) FROM district", 10),
    ),
    "sysbench": Case(
        "sysbench",
        "sysbench",
        DatasetSpec(workload="sysbench", tables=2, table_size=1000),
        "oltp_read_write",
        ("SELECT COUNT(*) FROM sbtest2", 1000),
    ),
}
# tpcc-mysql is not in any package registry, so setup cannot install it: its cases may skip
# even under FLUSHBENCH_REQUIRE_MYSQL=1 (marker ``optional_tool``); its parser is still tested
# on recorded output, and "binary missing" is tested for real.
DRIVERS = [
    pytest.param(name, marks=pytest.mark.optional_tool) if name == "tpcc-mysql" else name
    for name in CASES
]


@pytest.fixture(scope="session")
def tpcc_binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The Go driver: the checkout's build, else built here into a temp dir (CI clones)."""
    built = paths.tpcc_binary()
    if built.is_file():
        return {}
    go = system_tools.which("go")
    if go is None:
        pytest.skip(f"{built} is not built and `go` is not installed to build it")
    out = tmp_path_factory.mktemp("tpcc-bin") / "tpcc"
    result = subprocess.run(
        [go, "build", "-o", str(out), "./cmd/tpcc"],
        cwd=paths.REPO_ROOT / "tpcc",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"the Go driver does not build: {result.stderr.strip()[-500:]}")
    return {"tpcc": str(out)}


@pytest.fixture(scope="session")
def adapters(request: pytest.FixtureRequest) -> dict[str, Workload]:
    """One adapter per driver, with the binaries this machine has."""
    out = {}
    for driver in CASES:
        binaries = request.getfixturevalue("tpcc_binaries") if driver == "tpcc" else {}
        out[driver] = get_workload(driver, binaries)
    return out


def _adapter_or_skip(adapters: dict[str, Workload], driver: str, *, load: bool = False) -> Workload:
    adapter = adapters[driver]
    problems = adapter.load_problems() if load else adapter.problems()
    if problems:
        pytest.skip(f"{driver} is not available here: {problems[0]}")
    return adapter


@pytest.fixture(scope="session")
def loaded(
    adapters: dict[str, Workload],
    workload_server: DbServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """Lazily load each driver's tiny dataset once per session: driver → database name."""
    logs = tmp_path_factory.mktemp("load-logs")

    class Loader(dict):
        def __missing__(self, driver: str) -> str:
            adapter = _adapter_or_skip(adapters, driver, load=True)
            database = f"db_{driver.replace('-', '_')}"
            adapter.load(
                workload_server.connection_info(database),
                CASES[driver].dataset,
                logs / f"{driver}.log",
            )
            self[driver] = database
            return database

    return Loader()


def _spec(case: Case, **kw: float) -> WorkloadSpec:
    values = {"warmup": 2, "duration": 6, "report_interval": 2} | kw
    return WorkloadSpec(driver=case.driver, test=case.test, connections=1, **values)


# --- preflight ---------------------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_problems_empty_when_the_binary_exists(adapters: dict[str, Workload], driver: str) -> None:
    adapter = _adapter_or_skip(adapters, driver)
    assert adapter.problems() == []
    assert adapter.name == driver


@pytest.mark.parametrize("driver", DRIVERS)
def test_problems_name_the_fix_when_the_binary_is_missing(tmp_path: Path, driver: str) -> None:
    missing = tmp_path / "no-such-binary"
    adapter = get_workload(driver, {CASES[driver].binary_key: str(missing)})
    problems = adapter.problems()
    assert len(problems) == 1
    assert str(missing) in problems[0]
    assert any(word in problems[0] for word in ("build", "install")), problems[0]


def test_tpcc_mysql_load_problems_name_tpcc_load(tmp_path: Path) -> None:
    missing = tmp_path / "tpcc_load"
    problems = get_workload("tpcc-mysql", {"tpcc_load": str(missing)}).load_problems()
    assert len(problems) == 1 and str(missing) in problems[0]
    assert "scripts/build-tpcc-mysql.sh" in problems[0]


# --- load and run ------------------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_load_tiny_dataset(loaded: dict[str, str], workload_server: DbServer, driver: str) -> None:
    database = loaded[driver]
    sql, expected = CASES[driver].loaded_check
    with workload_server.connect(database) as link, link.cursor() as cur:
        cur.execute(sql)
        assert cur.fetchone()[0] == expected


def _check_records(records: list[IntervalRecord], start: dt.datetime, end: dt.datetime,
                   reports_warmup: bool = True) -> None:
    assert len(records) >= 3
    seqs = [r.seq for r in records]
    assert seqs == sorted(set(seqs))
    elapsed = [r.elapsed_s for r in records]
    assert all(b > a for a, b in zip(elapsed, elapsed[1:], strict=False))
    for r in records:
        assert r.ts.utcoffset() == dt.timedelta(0)
        assert start <= r.ts <= end
        assert r.interval_s > 0
        assert r.primary_count >= 0
    phases = [r.phase for r in records]
    assert phases[0] == ("warmup" if reports_warmup else "measure") and phases[-1] == "measure"
    assert phases == sorted(phases, key=["warmup", "measure"].index)
    assert sum(r.primary_count for r in records) > 0


@pytest.mark.parametrize("driver", DRIVERS)
def test_run_yields_intervals_then_outcome(
    adapters: dict[str, Workload],
    loaded: dict[str, str],
    workload_server: DbServer,
    tmp_path: Path,
    driver: str,
) -> None:
    adapter = _adapter_or_skip(adapters, driver)
    case = CASES[driver]
    conn = workload_server.connection_info(loaded[driver])
    start = dt.datetime.now(dt.UTC)
    with adapter.run(conn, _spec(case), 2, case.dataset, tmp_path / "driver.log") as running:
        assert running.pid > 0
        records = list(running.intervals(timeout_s=30))
        outcome = running.outcome()
    end = dt.datetime.now(dt.UTC)
    _check_records(records, start, end, adapter.reports_warmup)
    assert outcome.exit_code == 0, outcome.stderr_tail
    assert outcome.summary is not None
    assert not outcome.interrupted
    out_log, err_log = log_files(tmp_path / "driver.log")
    assert out_log.stat().st_size > 0 and err_log.exists()


@pytest.mark.parametrize(("client", "ran"), [(None, "go"), ("libmariadb", "libmariadb")])
def test_the_tpcc_driver_runs_the_client_the_spec_names(
    adapters: dict[str, Workload],
    loaded: dict[str, str],
    workload_server: DbServer,
    tmp_path: Path,
    client: str | None,
    ran: str,
) -> None:
    """``workload.client`` reaches the driver, and the driver's own summary (stored with the
    run) names the client that carried the statements."""
    adapter = _adapter_or_skip(adapters, "tpcc")
    case = CASES["tpcc"]
    spec = WorkloadSpec(driver="tpcc", connections=1, warmup=1, duration=3, report_interval=1,
                        client=client)
    conn = workload_server.connection_info(loaded["tpcc"])
    with adapter.run(conn, spec, 2, case.dataset, tmp_path / "driver.log") as running:
        records = list(running.intervals(timeout_s=30))
        outcome = running.outcome()
    assert outcome.exit_code == 0, outcome.stderr_tail
    assert sum(r.primary_count for r in records if r.phase == "measure") > 0
    assert outcome.summary is not None and outcome.summary.get("client") == ran, outcome.summary


@pytest.mark.parametrize("driver", DRIVERS)
def test_stop_mid_run_ends_cleanly(
    adapters: dict[str, Workload],
    loaded: dict[str, str],
    workload_server: DbServer,
    tmp_path: Path,
    driver: str,
) -> None:
    adapter = _adapter_or_skip(adapters, driver)
    case = CASES[driver]
    conn = workload_server.connection_info(loaded[driver])
    spec = _spec(case, warmup=1, duration=300, report_interval=1)
    with adapter.run(conn, spec, 2, case.dataset, tmp_path / "driver.log") as running:
        records = []
        for record in running.intervals(timeout_s=30):
            records.append(record)
            if len(records) == 2:
                running.stop()
        outcome = running.outcome()
        pid = running.pid
    assert len(records) >= 2
    assert outcome.interrupted
    assert outcome.exit_code is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped, not a zombie


@pytest.mark.parametrize("driver", DRIVERS)
def test_failing_driver_reports_exit_code_and_stderr(
    adapters: dict[str, Workload], workload_server: DbServer, tmp_path: Path, driver: str
) -> None:
    adapter = _adapter_or_skip(adapters, driver)
    case = CASES[driver]
    conn = workload_server.connection_info("no_such_database")
    with adapter.run(conn, _spec(case), 2, case.dataset, tmp_path / "driver.log") as running:
        records = list(running.intervals(timeout_s=30))
        outcome = running.outcome()
    # tpcc_start keeps printing empty intervals after its connections failed: what matters is
    # that nothing was measured and the failure is reported.
    assert sum(r.primary_count for r in records) == 0
    assert adapter.failure(outcome) is not None
    assert "no_such_database" in outcome.stderr_tail
    # No summary, or (tpcc_start) one that measured nothing.
    assert outcome.summary is None or not outcome.summary.get("tpmc")


@pytest.mark.parametrize("driver", ["tpcc", "sysbench"])
def test_watchdog_raises_when_the_driver_is_silent(
    adapters: dict[str, Workload],
    loaded: dict[str, str],
    workload_server: DbServer,
    tmp_path: Path,
    driver: str,
) -> None:
    adapter = _adapter_or_skip(adapters, driver)
    case = CASES[driver]
    conn = workload_server.connection_info(loaded[driver])
    # The first report comes after 20 s; the watchdog is set to 1 s.
    spec = _spec(case, warmup=0, duration=60, report_interval=20)
    with adapter.run(conn, spec, 1, case.dataset, tmp_path / "driver.log") as running:
        with pytest.raises(WorkloadError, match="no interval for 1 s"):
            for _ in running.intervals(timeout_s=1):
                pass
        pid = running.pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
