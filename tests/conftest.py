"""Shared fixtures: the distribution's MariaDB and one initialized datadir per session.

``mariadb-install-db`` takes a second or two; tests copy the session's datadir instead of
initializing their own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.server import ResolvedServer, SandboxLayout, initialize_datadir, resolve_binary

MARIADBD = Path("/usr/sbin/mariadbd")
MARIADB_INSTALL_DB = Path("/usr/bin/mariadb-install-db")

#: Small and quick: tests exercise behaviour, not performance.
TEST_BASE_CNF = """\
[mysqld]
innodb_buffer_pool_size=64M
innodb_log_file_size=16M
performance_schema=OFF
innodb_buffer_pool_load_at_startup=OFF
innodb_buffer_pool_dump_at_shutdown=OFF
"""

#: Fixed when the datadir is created, so every copy starts without a redo-log resize.
TEST_INIT_OPTIONS = {"innodb_log_file_size": "16M"}


@pytest.fixture(scope="session")
def mariadb_server() -> ResolvedServer:
    """The Debian MariaDB build (skips the test when it is not installed)."""
    if not (MARIADBD.is_file() and MARIADB_INSTALL_DB.is_file()):
        message = "MariaDB server (mariadbd, mariadb-install-db) is not installed"
        if os.environ.get("FLUSHBENCH_REQUIRE_MYSQL") == "1":
            pytest.fail(message + " — run `make setup`")
        pytest.skip(message)
    return resolve_binary(MARIADBD, MARIADB_INSTALL_DB)


@pytest.fixture(scope="session")
def base_cnf_text() -> str:
    """The my.cnf template for test sandboxes."""
    return TEST_BASE_CNF


@pytest.fixture(scope="session")
def initialized_datadir(
    mariadb_server: ResolvedServer, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """One freshly initialized datadir for the session; copy it, never start a server on it."""
    layout = SandboxLayout(tmp_path_factory.mktemp("initdb"))
    initialize_datadir(mariadb_server, layout, options=TEST_INIT_OPTIONS)
    return layout.datadir


@pytest.fixture
def sandbox_layout(initialized_datadir: Path, tmp_path: Path) -> Iterator[SandboxLayout]:
    """A run directory under ``tmp_path`` holding a private copy of the initialized datadir."""
    layout = SandboxLayout(tmp_path / "run").create()
    subprocess.run(["cp", "-a", str(initialized_datadir), str(layout.datadir)], check=True)
    yield layout
    layout.cleanup()
    shutil.rmtree(layout.run_dir, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under ``make test`` (FLUSHBENCH_REQUIRE_MYSQL=1) a skipped test is a failure.

    Setup installs the server, sysbench and the Go driver, so a skip means a broken install —
    CI must not go green by skipping the tests that matter. Only tests that need what no
    registry installs (``optional_tool``: tpcc-mysql) or a host fact (``optional_host``,
    ``host_control``: a kernel feature, zram) may skip, and they say why.
    """
    outcome = yield
    report = outcome.get_result()
    allowed = ("optional_tool", "optional_host", "host_control")
    if (
        report.skipped
        and os.environ.get("FLUSHBENCH_REQUIRE_MYSQL") == "1"
        and not any(item.get_closest_marker(m) for m in allowed)
    ):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped under FLUSHBENCH_REQUIRE_MYSQL=1: {reason}"


REAL_RUN_EXPERIMENT = """\
version: 1
name: real-quick
description: a real tiny run for the analysis tests (1 warehouse, seconds per run)
server: mariadb-debian
base_config: small
dataset: {workload: tpcc, warehouses: 1}
workload: {driver: tpcc, connections: 2, warmup: 2s, duration: 10s, report_interval: 2s}
sampling: {interval: 2s}
pre_run: {drain_dirty_pages: false}
matrix:
  doublewrite: [on, off]
baseline: {doublewrite: on}
"""


@pytest.fixture(scope="session")
def real_results_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results database written by a real run: MariaDB sandbox, Go driver, sampler.

    The report and notebook tests read it, so what they check is what a researcher sees after
    ``flushbench run``, not only synthetic data.
    """
    from flushbench.paths import tpcc_binary
    from runner.execute import run_experiment
    from store.db import ResultsDB

    if not tpcc_binary().is_file():
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")
    root = tmp_path_factory.mktemp("real-run")
    spec = root / "real-quick.yaml"
    spec.write_text(REAL_RUN_EXPERIMENT)
    db_path = root / "results.sqlite"
    db = ResultsDB(db_path)
    outcome = run_experiment(spec, db, work=root / "work")
    db.dispose()
    assert (outcome.done, outcome.failed) == (2, 0)
    return db_path
