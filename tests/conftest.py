"""Shared fixtures: the distribution's MariaDB and one initialized datadir per session, a
throwaway PostgreSQL cluster, and results databases on both backends (SQLite, PostgreSQL).

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

from analysis.reading import figure_cache
from core.paths import tpcc_binary
from runner.server import ResolvedServer, SandboxLayout, initialize_datadir, resolve_binary
from tests.support.cli_runner import cli  # noqa: F401 - `flushbench ARGS` in-process, everywhere
from tests.support.costly import read_costly
from tests.support.cpu_profile import (  # noqa: F401 - FLUSHBENCH_TEST_CPU=FILE
    pytest_runtest_protocol,
)
from tests.support.leftovers import kill_orphaned_test_servers
from tests.support.parallel import (  # noqa: F401 - the xdist hooks: `make test`'s groups
    check_alone_files,
    in_xdist_worker,
    pytest_configure_node,
    pytest_unconfigure,
    pytest_xdist_make_scheduler,
    session_folder,
)
from tests.support.parallel import (
    pytest_collection_modifyitems as assign_parallel_groups,
)
from tests.support.pgcluster import PgCluster, PostgresUnavailable
from tests.support.recorded import RECORDED, recorded_copy
from tests.support.tiny_experiment import TEST_RATE

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


def pytest_sessionstart(session: pytest.Session) -> None:
    """Remove servers a SIGKILLed earlier session left running (tests/support/leftovers.py).

    Under xdist the controller does it once, before it starts the workers.
    """
    if in_xdist_worker(session.config):
        return
    killed = kill_orphaned_test_servers()
    if killed:
        print(f"killed {len(killed)} server(s) left by an earlier, killed test session")


@pytest.fixture(scope="session", autouse=True)
def _private_host_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A host-lock directory of this session's own (``FLUSHBENCH_LOCK_DIR``).

    Every run takes the host lock so two workers never measure at once on one host. The
    tests' runs must not wait for each other's across xdist workers, nor for a researcher's
    worker on this machine; tests of the lock itself set their own directory.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLUSHBENCH_LOCK_DIR", str(tmp_path_factory.mktemp("host-locks")))
        yield


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(request: pytest.FixtureRequest,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """flushbench's cache folder of this process's own (``FLUSHBENCH_CACHE_DIR``): the tests
    go through the analysis cache as a user's analysis does, without reading or filling the
    user's ``~/.cache/flushbench``.

    Its analysis figures and drawn PNGs are the session's, shared by every xdist worker as
    one user's processes share theirs: each entry is keyed by a hash of its inputs and of the
    code computing it and written whole (a SQLite transaction; a file renamed into place), so
    a committed study's figures one worker computed serve the others instead of being computed
    once per worker. The rest of the folder (unpacked servers, opened bundles) stays the
    worker's, for the tests that list it before and after a verb. Tests of the caches
    themselves set a folder of their own.
    """
    own = tmp_path_factory.mktemp("cache")
    shared = session_folder(request.config, tmp_path_factory, "shared-cache")
    (shared / "png").mkdir(exist_ok=True)
    # SQLite follows the link: the file, its WAL and its lock are the shared folder's.
    (own / figure_cache.FILE_NAME).symlink_to(shared / figure_cache.FILE_NAME)
    (own / "png").symlink_to(shared / "png", target_is_directory=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLUSHBENCH_CACHE_DIR", str(own))
        yield


@pytest.fixture(scope="session")
def shared_datasets(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``datasets/`` folder for the whole test session, every xdist worker included.

    A tiny run's dataset (1 warehouse, ≈ 6 s to load and snapshot) is the same for every
    module that runs on the same server; ``runner.datasets`` builds each under its own flock and
    renames it into place whole, so the workers share the folder safely.
    """
    return session_folder(request.config, tmp_path_factory, "shared-datasets")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory, shared_datasets: Path) -> Path:
    """One work dir per test module (its sandboxes and runs), whose ``datasets/`` is the
    session's: the 1-warehouse snapshot is loaded once per session and server."""
    if not tpcc_binary().is_file():
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")
    path = tmp_path_factory.mktemp("work")
    (path / "datasets").symlink_to(shared_datasets, target_is_directory=True)
    return path


#: ``make test-fast`` sets this: the lane deselects the ``mysql``/``postgres``/``host_control``
#: tests, and a test that still reaches for a server fails here instead of slowing the lane.
FAST_LANE = os.environ.get("FLUSHBENCH_FAST_LANE") == "1"


def refuse_in_fast_lane(what: str) -> None:
    """Fail a fast-lane test that starts ``what``: it lacks the marker that deselects it."""
    if FAST_LANE:
        pytest.fail(f"this test starts {what} but runs in `make test-fast`: mark it"
                    " `mysql` or `postgres` (pyproject.toml lists the markers)")


@pytest.fixture(scope="session")
def mariadb_server() -> ResolvedServer:
    """The Debian MariaDB build (skips the test when it is not installed)."""
    refuse_in_fast_lane("a MariaDB sandbox")
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


def _required(item: pytest.Item) -> str | None:
    """The ``FLUSHBENCH_REQUIRE_*`` variable that makes a skip of this test a failure, if any."""
    if item.get_closest_marker("optional_tool"):
        return None
    if (
        os.environ.get("FLUSHBENCH_REQUIRE_MYSQL") == "1"
        and item.get_closest_marker("mysql") is not None
    ):
        return "FLUSHBENCH_REQUIRE_MYSQL"
    if (
        os.environ.get("FLUSHBENCH_REQUIRE_POSTGRES") == "1"
        and item.get_closest_marker("postgres") is not None
    ):
        return "FLUSHBENCH_REQUIRE_POSTGRES"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under ``make test`` (FLUSHBENCH_REQUIRE_MYSQL=1) a skipped test is a failure.

    Setup installs the servers (MariaDB, PostgreSQL), sysbench and the Go driver, so a skip
    means a broken install — CI must not go green by skipping the tests that matter. Only
    tests that need what no registry installs (``optional_tool``: tpcc-mysql) or a host fact
    (``optional_host``, ``host_control``: a kernel feature, zram) may skip, and they say why.
    ``FLUSHBENCH_REQUIRE_POSTGRES=1`` alone makes skipped ``postgres`` tests fail.
    """
    outcome = yield
    report = outcome.get_result()
    allowed = ("optional_tool", "optional_host", "host_control")
    variable = None
    if report.skipped and not any(item.get_closest_marker(m) for m in allowed):
        variable = ("FLUSHBENCH_REQUIRE_MYSQL"
                    if os.environ.get("FLUSHBENCH_REQUIRE_MYSQL") == "1" else _required(item))
    if variable is not None:
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped under {variable}=1: {reason}"


# --- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """A throwaway PostgreSQL cluster for the session (initdb in a temp dir, unix socket)."""
    refuse_in_fast_lane("a PostgreSQL cluster")
    try:
        cluster = PgCluster().init().start()
    except PostgresUnavailable as exc:
        if os.environ.get("FLUSHBENCH_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{exc} — run `make setup`")
        pytest.skip(str(exc))
    yield cluster
    cluster.destroy()


#: The results backends every store-level test runs on; the PostgreSQL one carries the
#: ``postgres`` marker, so under FLUSHBENCH_REQUIRE_POSTGRES=1 it can fail but never skip.
BACKENDS = [pytest.param("sqlite", id="sqlite"),
            pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql`` (parametrizes the test over both results backends)."""
    return request.param


@pytest.fixture
def empty_results_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of a fresh, empty (not migrated) results database on the test's backend."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'results.sqlite'}"
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.create_database()


@pytest.fixture
def results_url(empty_results_url: str) -> str:
    """URL of a fresh results database migrated to head, on SQLite and on PostgreSQL."""
    from store.db import upgrade

    upgrade(empty_results_url)
    return empty_results_url


REAL_RUN_EXPERIMENT = """\
version: 1
name: real-quick
description: a real tiny run for the analysis tests (1 warehouse, seconds per run)
server: mariadb-debian
base_config: small
dataset: {workload: tpcc, warehouses: 1}
workload: {driver: tpcc, connections: 1, warmup: 2s, duration: 10s, report_interval: 2s,
           rate: TEST_RATE}
sampling: {interval: 2s}
pre_run: {drain_dirty_pages: false}
matrix:
  doublewrite: [on, off]
baseline: {doublewrite: on}
""".replace("TEST_RATE", str(TEST_RATE))


@pytest.fixture(scope="session")
def real_results_db(tmp_path_factory: pytest.TempPathFactory, shared_datasets: Path) -> Path:
    """A results database written by a real run: MariaDB sandbox, Go driver, sampler.

    The report and notebook tests read it, so what they check is what a researcher sees after
    ``flushbench run``, not only synthetic data. Its dataset is the session's (``work``'s):
    each worker that needs this database would otherwise load its own 1-warehouse TPC-C.
    Its runs go at the tiny runs' fixed rate (tests/support/tiny_experiment.py): its readers
    check what a report and a notebook show, not how fast the server went.
    """
    refuse_in_fast_lane("a real experiment run")
    from core.paths import tpcc_binary
    from runner.fleet.worker import run_experiment
    from store.db import ResultsDB

    if not tpcc_binary().is_file():
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")
    root = tmp_path_factory.mktemp("real-run")
    spec = root / "real-quick.yaml"
    spec.write_text(REAL_RUN_EXPERIMENT)
    db_path = root / "results.sqlite"
    (root / "work").mkdir()
    (root / "work" / "datasets").symlink_to(shared_datasets, target_is_directory=True)
    db = ResultsDB(db_path)
    outcome = run_experiment(spec, db, work=root / "work")
    db.dispose()
    assert (outcome.done, outcome.failed) == (2, 0)
    return db_path


# The committed studies, each a private copy per session (analysis and CLI tests read them).
#: The fixtures below that copy a committed study's database.
STUDY_DATABASE_FIXTURES = frozenset({"recorded_study", "recorded_flash", "recorded_allocators"})


def reads_a_committed_study(item: pytest.Item) -> bool:
    """Whether a test reads a committed study's whole database: it asks for one of the
    fixtures above (by name, or through a parameter naming one for ``getfixturevalue``), or
    its module copies one itself (``tests.support.recorded``)."""
    if STUDY_DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(isinstance(value, str) and value in STUDY_DATABASE_FIXTURES
                                    for value in callspec.params.values()):
        return True
    module = getattr(item, "module", None)
    return module is not None and any(
        value is RECORDED or (callable(value) and getattr(value, "__module__", None)
                              == recorded_copy.__module__)
        for value in vars(module).values())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the readers of a committed study ``study_db`` and the tests measured costly
    ``costly`` (before ``-m`` selects: the fast lane leaves both out — they were most of its
    CPU — and ``make test`` runs them), check that the ``alone`` pass finds every ``alone``
    test, then give the tests their xdist groups (tests/support/parallel.py)."""
    mark_lane_items(items, read_costly())
    check_alone_files(items)
    assign_parallel_groups(config, items)


def mark_lane_items(items: list[pytest.Item], costly: frozenset[str]) -> None:
    """Add ``study_db`` to the readers of a committed study and ``costly`` to the tests whose
    node id is in ``costly``."""
    for item in items:
        if reads_a_committed_study(item):
            item.add_marker(pytest.mark.study_db)
        if item.nodeid in costly:
            item.add_marker(pytest.mark.costly)


@pytest.fixture(scope="session")
def recorded_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 2011 study as recorded on MariaDB 10.11 (8 cells, 26 runs, TPC-C), a private copy."""
    return recorded_copy("stability-2011", tmp_path_factory)


@pytest.fixture(scope="session")
def recorded_flash(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 2011 post's twelve rows on MySQL 5.5 and XtraDB 5.5 under the flash preset, as far
    as its queue has run (a private copy)."""
    return recorded_copy("stability-2011-flash", tmp_path_factory)


@pytest.fixture(scope="session")
def recorded_allocators(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The allocator × connections sysbench sweep as recorded (3 × 3 cells), a private copy."""
    return recorded_copy("allocators", tmp_path_factory)
