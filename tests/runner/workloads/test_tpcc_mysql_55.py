"""tpcc-mysql's own schema (its foreign keys), tpcc_load and tpcc_start on the 2011 servers.

The same checks as test_tpcc_mysql_real.py, on MySQL 5.5 and XtraDB 5.5 built by
scripts/build-server.sh: tpcc-mysql's create_table.sql + add_fkey_idx.sql and its own loader,
then tpcc_start through the adapter; and tpcc_start on data loaded by flushbench's Go driver.
Both tools and both servers are optional (``optional_tool``): a skip names what to build.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core import paths
from core.experiment.sections import DatasetSpec
from runner.server import MysqldSandbox, SandboxLayout, initialize_datadir, write_mycnf
from runner.workloads import Workload, get_workload
from tests.support.built_servers import BUILT_KINDS, built_server

from .test_tpcc_mysql_real import _run_and_check, tpcc_mysql  # noqa: F401 (fixture)

pytestmark = [pytest.mark.mysql, pytest.mark.optional_tool, pytest.mark.slow]

CNF = ("[mysqld]\ninnodb_buffer_pool_size=128M\ninnodb_log_file_size=32M\n"
       "innodb_flush_log_at_trx_commit=2\nperformance_schema=OFF\nskip-name-resolve\n")


@pytest.fixture(scope="module", params=BUILT_KINDS)
def server55(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[MysqldSandbox]:
    """A running sandbox of one built 5.5 server (skips, naming the build, when absent)."""
    server = built_server(request.param)
    layout = SandboxLayout(tmp_path_factory.mktemp(f"tpcc55-{request.param}"))
    initialize_datadir(server, layout)
    write_mycnf(layout.cnf, CNF, {}, layout)
    with MysqldSandbox(server, layout) as sandbox:
        sandbox.start()
        yield sandbox
    layout.cleanup()


def test_tpcc_mysql_schema_load_and_run(tpcc_mysql: Workload,  # noqa: F811
                                        server55: MysqldSandbox, tmp_path: Path) -> None:
    dataset = DatasetSpec(workload="tpcc", warehouses=1, loader="tpcc-mysql")
    tpcc_mysql.load(server55.connection_info("tpcc_mysql_55"), dataset, tmp_path / "load.log")
    with server55.connect("tpcc_mysql_55") as link, link.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM stock")
        assert cur.fetchone()[0] == 100_000
        cur.execute("SELECT COUNT(*) FROM information_schema.referential_constraints"
                    " WHERE constraint_schema = 'tpcc_mysql_55'")
        assert cur.fetchone()[0] == 10
    _run_and_check(tpcc_mysql, server55, "tpcc_mysql_55", tmp_path)


def test_tpcc_start_on_data_loaded_by_the_go_driver(tpcc_mysql: Workload,  # noqa: F811
                                                    server55: MysqldSandbox,
                                                    tmp_path: Path) -> None:
    binary = paths.tpcc_binary()
    if not binary.is_file():
        pytest.skip(f"{binary} is not built (bash scripts/setup.sh builds it)")
    ours = get_workload("tpcc", {"tpcc": str(binary)})
    dataset = DatasetSpec(workload="tpcc", warehouses=1, load_workers=2)
    ours.load(server55.connection_info("go_loaded_55"), dataset, tmp_path / "load.log")
    with server55.connect("go_loaded_55") as link, link.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.referential_constraints"
                    " WHERE constraint_schema = 'go_loaded_55'")
        assert cur.fetchone()[0] == 10  # the Go loader's schema keeps tpcc-mysql's FKs on 5.5
    _run_and_check(tpcc_mysql, server55, "go_loaded_55", tmp_path)
