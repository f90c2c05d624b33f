"""MySQL 9.x (Debian unstable) and MariaDB 11.8 (Debian 13), fetched by ``server fetch``, end
to end: one real cell through the runner on each, with the Go driver (on MySQL 9.x with both
its clients) and with tpcc-mysql's ``tpcc_start`` where it is built.

``bash scripts/setup.sh --test-servers`` fetched them (tests/support/debian_servers.py); both
run on this Debian 12 host through their own loader and libraries (glibc 2.38+ inside the tree).
What each run covers: the datadir (MySQL's ``--initialize-insecure``, MariaDB's install script),
the base config's ``innodb_log_file_size`` read as ``innodb_redo_log_capacity`` on MySQL 9
(which has only that), the root user's ``caching_sha2_password`` over the socket with an empty
password (MySQL 9 has no ``mysql_native_password``), the sandbox's own start options (no X
plugin, no secure-file-priv folder), and the checkpoint age from 8.0.30+'s
``Innodb_redo_log_current_lsn``/``_checkpoint_lsn`` (MySQL) or ``Innodb_checkpoint_age``
(MariaDB) in every sample.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from runner.fleet.worker import run_experiment
from runner.run.sampler import decompress_status
from runner.server.knob_check import check_knobs
from runner.workloads.tpcc_mysql import locate
from store.db import ResultsDB
from tests.support.debian_servers import fetched_profile, fetched_server
from tests.support.server_runs import assert_checkpoints_trail_redo, only_run
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

KNOBS = ("{doublewrite: off, flush_neighbor_pages: none, log_file_size: 64M,"
         " io_capacity: 400, max_dirty_pages_pct_lwm: 10}")
SERVERS = ("mysql-9.7", "mariadb-11.8")


def test_the_fetched_profiles_record_the_suite_and_every_package() -> None:
    for name in SERVERS:
        profile = yaml.safe_load(fetched_profile(name).read_text())
        fetched = profile["fetched"]
        assert fetched["suite"] in ("sid", "trixie") and fetched["mirror"].endswith("/debian")
        names = {p["name"] for p in fetched["packages"]}
        assert {"libc6", "libstdc++6"} <= names and not names & {"perl", "perl-base"}
        assert all(len(p["sha256"]) == 64 and p["version"] for p in fetched["packages"])


def test_server_check_names_the_redo_capacity_on_mysql_9() -> None:
    server = fetched_server("mysql-9.7")
    assert server.flavor == "mysql" and server.version >= (9, 0, 0)
    verdicts = {(v.knob, v.level): v for v in check_knobs(server)}
    assert verdicts[("log_file_size", 64 << 20)].parsed == {
        "innodb_redo_log_capacity": str(64 << 20)}
    assert verdicts[("flush_neighbor_pages", "none")].parsed == {"innodb_flush_neighbors": "0"}
    assert verdicts[("adaptive_checkpoint", "legacy")].status == "absent"


#: (server, driver, the Go driver's client): the Go driver on both; on MySQL 9.x also its C
#: client, libmariadb — the library tpcc_start links — which must log in with
#: caching_sha2_password; tpcc_start itself where it is built.
CASES = [("mysql-9.7", "tpcc", None), ("mysql-9.7", "tpcc", "libmariadb"),
         ("mariadb-11.8", "tpcc", None),
         *(pytest.param(name, "tpcc-mysql", None, marks=pytest.mark.optional_tool)
           for name in SERVERS)]


@pytest.mark.parametrize(("name", "driver", "client"), CASES)
def test_a_cell_runs_end_to_end(name: str, driver: str, client: str | None, tmp_path: Path,
                                work: Path) -> None:
    profile = fetched_profile(name)
    if driver == "tpcc-mysql" and locate(None, "tpcc_start") is None:
        pytest.skip("tpcc_start not found: build it with scripts/build-tpcc-mysql.sh SRC_DIR"
                    " and put it on PATH or set TPCC_MYSQL_BIN")
    experiment = f"debian-{name}-{driver}-{client or 'default'}"
    db = ResultsDB(tmp_path / "r.sqlite")
    path = tiny_tpcc_experiment(tmp_path, experiment, f"include:\n  - {KNOBS}\n",
                                server=profile, duration="10s", driver=driver,
                                workload=f"client: {client}" if client else "")
    outcome = run_experiment(path, db, work=work)
    assert (outcome.done, outcome.failed) == (1, 0)
    recorded = only_run(db, experiment)
    run, shown, meta, samples = (recorded.run, recorded.variables, recorded.metadata,
                                 recorded.samples)
    assert (shown["innodb_doublewrite"], shown["innodb_flush_neighbors"]) == ("OFF", "0")
    assert shown["innodb_io_capacity"] == "400"
    assert float(shown["innodb_max_dirty_pages_pct_lwm"]) == 10
    if name.startswith("mysql"):
        assert meta.server_flavor == "mysql" and meta.server_version.startswith("9.")
        assert shown["innodb_redo_log_capacity"] == str(64 << 20)
        assert "innodb_log_file_size" not in shown  # gone in 9.x
        assert shown["secure_file_priv"] == ""
        assert shown["innodb_dedicated_server"] == "OFF"
    else:
        assert meta.server_flavor == "mariadb" and meta.server_version.startswith("11.8.")
        assert shown["innodb_log_file_size"] == str(64 << 20)
        assert shown["have_ssl"] == "DISABLED"
    assert run.driver_summary and run.driver_summary["tpmc"] > 0
    assert len(samples) >= 4
    assert_checkpoints_trail_redo(samples)
    for sample in samples:
        assert sample.pages_data and sample.pages_dirty is not None
        status = decompress_status(sample.status_z)
        if name.startswith("mysql"):  # 8.0.30+'s own LSN status, no engine status needed
            assert status["Innodb_redo_log_current_lsn"] == sample.lsn
            assert status["Innodb_redo_log_checkpoint_lsn"] == sample.checkpoint_lsn
        else:
            assert status["Innodb_checkpoint_age"] == sample.lsn - sample.checkpoint_lsn
        assert "Innodb_buffer_pool_pages_flushed" in status
