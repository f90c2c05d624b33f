"""The mysqld sandbox against a real MariaDB: start, verify, stop, failures, allocator."""

from __future__ import annotations

import configparser
import os
import signal
import time
from pathlib import Path

import pymysql
import pytest

from core.errors import ConfigError, PreflightError, ServerError
from core.flavors import values_equal
from runner.server import (
    MysqldSandbox,
    SandboxLayout,
    drain_dirty_pages,
    initialize_datadir,
    write_mycnf,
)
from runner.server import sandbox as sandbox_module
from runner.server.layout import MAX_SOCKET_PATH
from runner.server.sandbox import StopResult

JEMALLOC = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")


def _wait_dead(sandbox: MysqldSandbox, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while sandbox.alive() and time.monotonic() < deadline:
        time.sleep(0.05)


def _read_cnf(path: Path) -> configparser.ConfigParser:
    # strict=False merges the template's [mysqld] with the generated one, later values winning,
    # which is how mysqld reads the file too.
    cp = configparser.ConfigParser(allow_no_value=True, strict=False, interpolation=None)
    cp.read(path)
    return cp


# --- no server needed ------------------------------------------------------------------


def test_layout_moves_socket_of_a_long_run_dir(tmp_path: Path) -> None:
    long_dir = tmp_path / ("x" * 60) / ("y" * 60)
    layout = SandboxLayout(long_dir)
    try:
        assert layout.socket_is_temp
        assert len(os.fsencode(layout.socket)) <= MAX_SOCKET_PATH
        assert layout.socket.parent.is_dir()
        assert layout.datadir == long_dir / "data"
    finally:
        layout.cleanup()
    assert not layout.socket.parent.exists()


def test_layout_keeps_socket_in_a_short_run_dir(tmp_path: Path) -> None:
    layout = SandboxLayout(tmp_path / "r")
    assert not layout.socket_is_temp
    assert layout.socket == tmp_path / "r" / "mysqld.sock"


def test_write_mycnf_appends_sandbox_section(tmp_path: Path) -> None:
    layout = SandboxLayout(tmp_path / "run")
    base = "[client]\ndefault-character-set=utf8mb4\n[mysqld]\ninnodb_io_capacity=200\n"
    write_mycnf(layout.cnf, base, {"innodb_io_capacity": "2000", "skip-name-resolve": ""}, layout)
    cnf = _read_cnf(layout.cnf)
    assert cnf["client"]["default-character-set"] == "utf8mb4"
    mysqld = cnf["mysqld"]
    assert mysqld["innodb_io_capacity"] == "2000"  # generated section wins
    assert mysqld["datadir"] == str(layout.datadir)
    assert mysqld["socket"] == str(layout.socket)
    assert mysqld["log-error"] == str(layout.error_log)
    assert "skip-networking" in mysqld and "port" not in mysqld
    assert "skip-name-resolve" in mysqld
    assert (mysqld.get("user") == "root") == (os.geteuid() == 0)


def test_write_mycnf_with_port_enables_tcp(tmp_path: Path) -> None:
    layout = SandboxLayout(tmp_path / "run")
    write_mycnf(layout.cnf, "", {}, layout, port=13306)
    mysqld = _read_cnf(layout.cnf)["mysqld"]
    assert mysqld["port"] == "13306" and mysqld["bind-address"] == "127.0.0.1"
    assert "skip-networking" not in mysqld


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("innodb io", "1"),
        ("Innodb_io_capacity", "1"),
        ("innodb_io_capacity", "100\ninit_file=/tmp/evil.sql"),
        ("innodb_io_capacity", "100 # comment"),
        ("innodb_io_capacity", "100;"),
        ("innodb_flush_method", "'O_DIRECT'"),
        ("innodb_flush_method", "O_DIRECT\\"),
        ("innodb_io_capacity", " 100"),
        ("datadir", "/elsewhere"),
        ("log-error", "/elsewhere.err"),
    ],
)
def test_write_mycnf_rejects_unsafe_options(tmp_path: Path, name: str, value: str) -> None:
    layout = SandboxLayout(tmp_path / "run")
    with pytest.raises(ConfigError) as info:
        write_mycnf(layout.cnf, "", {name: value}, layout)
    assert name in str(info.value)
    assert not layout.cnf.exists()


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [
        ("60", "60.000000", True),
        ("ON", "1", True),
        ("off", "OFF", True),
        ("0", "OFF", True),
        ("128M", "134217728", True),
        ("o_direct", "O_DIRECT", True),
        ("50", "100", False),
        ("ON", "OFF", False),
        ("60.5", "60.000000", False),
        ("128M", "134217729", False),
        ("O_DIRECT", "fsync", False),
    ],
)
def test_values_equal(expected: str, actual: str, equal: bool) -> None:
    assert values_equal(expected, actual) is equal


# --- real server ---------------------------------------------------------------------


@pytest.mark.mysql
def test_start_verify_stop(mariadb_server, sandbox_layout, base_cnf_text) -> None:
    options = {
        "innodb_max_dirty_pages_pct": "50",
        "innodb_flush_neighbors": "0",
        "innodb_doublewrite": "OFF",
        "innodb_io_capacity": "400",
    }
    write_mycnf(sandbox_layout.cnf, base_cnf_text, options, sandbox_layout)
    with MysqldSandbox(mariadb_server, sandbox_layout) as sandbox:
        sandbox.start(timeout=60)
        assert sandbox.alive() and sandbox.exit_code is None
        assert sandbox.pid is not None and Path(f"/proc/{sandbox.pid}").exists()
        sandbox.verify_applied(options)
        variables = sandbox.global_variables()
        assert variables["datadir"].rstrip("/") == str(sandbox_layout.datadir)
        assert variables["socket"] == str(sandbox_layout.socket)
        assert int(sandbox.global_status()["uptime"]) >= 0
        with sandbox.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT @@innodb_io_capacity")
            assert cur.fetchone()[0] == 400
        result = sandbox.stop(timeout=60)
    assert result.clean and result.exit_code == 0 and not result.killed
    assert not sandbox.alive() and sandbox.exit_code == 0
    assert "Shutdown complete" in sandbox.error_log_tail(5)


def _recovered(log: Path, offset: int) -> bool:
    """Whether InnoDB recovered from its redo log at the start logged after ``offset``
    (MariaDB: "Starting crash recovery from checkpoint LSN=…"; MySQL 5.5: "Starting crash
    recovery")."""
    return "crash recovery" in log.read_text(errors="replace")[offset:].lower()


def _stop_hung(sandbox: MysqldSandbox,
               monkeypatch: pytest.MonkeyPatch) -> tuple[StopResult, list[float | None]]:
    """``stop(discard=True)`` of a server that will not go (SIGSTOP: no answer to SHUTDOWN,
    SIGTERM left pending); returns the result and the timeouts the stop waited with."""
    def no_answer() -> None:
        raise pymysql.OperationalError(2013, "Lost connection (test)")
    monkeypatch.setattr(sandbox, "_admin_conn", no_answer)
    assert sandbox.proc is not None
    os.kill(sandbox.proc.pid, signal.SIGSTOP)
    waits: list[float | None] = []
    real_wait = sandbox.proc.wait

    def recorded_wait(timeout: float | None = None) -> int:
        waits.append(timeout)
        return real_wait(timeout=timeout)
    monkeypatch.setattr(sandbox.proc, "wait", recorded_wait)
    return sandbox.stop(timeout=60, discard=True), waits


@pytest.mark.mysql
def test_a_discarded_datadir_is_not_flushed_at_shutdown(
    mariadb_server, sandbox_layout, base_cnf_text, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stop(discard=True)`` (every run's stop: its datadir is deleted next) leaves the dirty
    pages to the redo log: started again on that datadir, the server itself recovers them and
    every committed row is there; after a normal stop it starts without recovering. A server
    that does not exit within the grace period (here: stopped with SIGSTOP, so it neither
    answers nor exits) is killed, and its datadir still recovers."""
    write_mycnf(sandbox_layout.cnf, base_cnf_text, {}, sandbox_layout)
    log = sandbox_layout.error_log
    with MysqldSandbox(mariadb_server, sandbox_layout) as sandbox:
        sandbox.start(timeout=60)
        with sandbox.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE kept")
            cur.execute("CREATE TABLE kept.t (id INT PRIMARY KEY, v VARCHAR(200)) "
                        "ENGINE=InnoDB")
            cur.executemany("INSERT INTO kept.t VALUES (%s, %s)",
                            [(i, "x" * 200) for i in range(3000)])
            conn.commit()
        assert sandbox.stop(timeout=60, discard=True).clean
    monkeypatch.setattr(sandbox_module, "DISCARD_GRACE_S", 1.0)
    # Started again three times: after the discarding stop it recovers; after the kill too;
    # after a normal stop it does not.
    for expect_recovery, how in ((True, "hung"), (True, "normal"), (False, "normal")):
        offset = len(log.read_text(errors="replace"))
        with MysqldSandbox(mariadb_server, sandbox_layout) as sandbox:
            sandbox.start(timeout=60)
            assert _recovered(log, offset) is expect_recovery
            with sandbox.connect() as conn, conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM kept.t")
                assert cur.fetchone()[0] == 3000
            if how == "normal":
                assert sandbox.stop(timeout=60).clean
                continue
            result, waits = _stop_hung(sandbox, monkeypatch)
            assert result.killed and not result.clean and sandbox.proc.poll() is not None
            # It waited the grace period (1 s here), not the stop's 60 s timeout.
            assert waits and waits[0] is not None and waits[0] <= 1.0
            assert not sandbox_layout.socket.exists()  # the killed server's socket file


@pytest.mark.mysql
def test_changed_knob_applies_across_restarts(
    mariadb_server, sandbox_layout, base_cnf_text
) -> None:
    seen = []
    for pct in ("50", "70"):
        write_mycnf(
            sandbox_layout.cnf, base_cnf_text, {"innodb_max_dirty_pages_pct": pct}, sandbox_layout
        )
        with MysqldSandbox(mariadb_server, sandbox_layout) as sandbox:
            sandbox.start(timeout=60)
            sandbox.verify_applied({"innodb_max_dirty_pages_pct": pct})
            seen.append(sandbox.global_variables()["innodb_max_dirty_pages_pct"])
        assert sandbox.stop_result is not None and sandbox.stop_result.clean
    assert seen == ["50.000000", "70.000000"]


@pytest.fixture(scope="module")
def jemalloc_sandbox(mariadb_server, initialized_datadir, base_cnf_text, tmp_path_factory):
    """One running sandbox with jemalloc preloaded and innodb_io_capacity=50 (below its minimum)."""
    if not JEMALLOC.is_file():
        pytest.skip("libjemalloc2 is not installed")
    import subprocess

    layout = SandboxLayout(tmp_path_factory.mktemp("jemalloc") / "run").create()
    subprocess.run(["cp", "-a", str(initialized_datadir), str(layout.datadir)], check=True)
    write_mycnf(
        layout.cnf,
        base_cnf_text,
        {"innodb_io_capacity": "50", "innodb_max_dirty_pages_pct": "75"},
        layout,
    )
    with MysqldSandbox(mariadb_server, layout, allocator=JEMALLOC) as sandbox:
        sandbox.start(timeout=60)
        yield sandbox
    layout.cleanup()


@pytest.mark.mysql
def test_verify_applied_reports_adjusted_value(jemalloc_sandbox) -> None:
    with pytest.raises(ServerError) as info:
        jemalloc_sandbox.verify_applied(
            {
                "innodb_io_capacity": "50",
                "innodb_max_dirty_pages_pct": "75",
                "innodb_no_such_variable": "1",
            }
        )
    message = str(info.value)
    assert "innodb_io_capacity: expected 50, server has 100" in message
    assert "innodb_no_such_variable" in message
    assert "innodb_max_dirty_pages_pct" not in message  # that one did apply


@pytest.mark.mysql
def test_jemalloc_is_mapped_with_ld_preload(jemalloc_sandbox) -> None:
    mapped = jemalloc_sandbox.mapped_libraries()
    assert any(Path(m).name == "libjemalloc.so.2" for m in mapped)
    jemalloc_sandbox.verify_allocator(JEMALLOC)
    with pytest.raises(ServerError, match="not mapped"):
        jemalloc_sandbox.verify_allocator(TCMALLOC)


@pytest.mark.mysql
def test_drain_dirty_pages_flushes_and_restores(jemalloc_sandbox) -> None:
    with jemalloc_sandbox.connect() as conn, conn.cursor() as cur:
        # Keep the page cleaner idle while dirtying pages, so there is something to drain.
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 90")
        cur.execute("CREATE DATABASE IF NOT EXISTS drain")
        cur.execute("CREATE TABLE drain.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
        cur.execute("INSERT INTO drain.t SELECT seq, REPEAT('x', 200) FROM drain.seq_1_to_20000")
        cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
        dirty_before = int(cur.fetchone()[1])
        assert dirty_before >= 50, "setup did not dirty enough pages to test a drain"
        seconds = drain_dirty_pages(conn, below=10, timeout=60)
        assert seconds >= 0
        cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
        assert int(cur.fetchone()[1]) < dirty_before
        cur.execute("SELECT @@innodb_max_dirty_pages_pct, @@innodb_max_dirty_pages_pct_lwm")
        pct, lwm = cur.fetchone()
        assert (float(pct), float(lwm)) == (90.0, 0.0)
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 75")


@pytest.mark.mysql
def test_unknown_option_makes_start_fail_with_log_tail(
    mariadb_server, sandbox_layout, base_cnf_text
) -> None:
    write_mycnf(sandbox_layout.cnf, base_cnf_text, {"innodb_flush_neighbours": "0"}, sandbox_layout)
    sandbox = MysqldSandbox(mariadb_server, sandbox_layout)
    with pytest.raises(ServerError) as info, sandbox:
        sandbox.start(timeout=60)
    message = str(info.value)
    assert "exited with code" in message
    assert "unknown variable 'innodb_flush_neighbours=0'" in message
    assert not sandbox.alive() and sandbox.exit_code not in (None, 0)


@pytest.mark.mysql
def test_sigkill_of_mysqld_is_detected(mariadb_server, sandbox_layout, base_cnf_text) -> None:
    write_mycnf(sandbox_layout.cnf, base_cnf_text, {}, sandbox_layout)
    with MysqldSandbox(mariadb_server, sandbox_layout) as sandbox:
        sandbox.start(timeout=60)
        os.kill(sandbox.pid, signal.SIGKILL)
        _wait_dead(sandbox)
        assert not sandbox.alive()
        assert sandbox.exit_code == -signal.SIGKILL
        with pytest.raises(ServerError, match="not running"):
            sandbox.global_variables()
        result = sandbox.stop(timeout=10)
    assert not result.clean and result.exit_code == -signal.SIGKILL


@pytest.mark.mysql
def test_exception_in_block_kills_mysqld(mariadb_server, sandbox_layout, base_cnf_text) -> None:
    write_mycnf(sandbox_layout.cnf, base_cnf_text, {}, sandbox_layout)
    sandbox = MysqldSandbox(mariadb_server, sandbox_layout)
    with pytest.raises(RuntimeError, match="workload broke"), sandbox:
        sandbox.start(timeout=60)
        raise RuntimeError("workload broke")
    assert sandbox.exit_code == -signal.SIGKILL
    assert "Shutdown complete" not in sandbox.error_log_tail(5)


@pytest.mark.mysql
@pytest.mark.optional_host
def test_large_pages_without_reserved_pages_is_reported(
    mariadb_server, sandbox_layout, base_cnf_text
) -> None:
    if int(Path("/proc/sys/vm/nr_hugepages").read_text()) > 0:
        pytest.skip("huge pages are reserved on this host; the fallback cannot be provoked")
    write_mycnf(sandbox_layout.cnf, base_cnf_text, {"large_pages": "ON"}, sandbox_layout)
    with MysqldSandbox(mariadb_server, sandbox_layout) as sandbox:
        sandbox.start(timeout=60)
        sandbox.verify_applied({"large_pages": "ON"})  # the variable alone says ON...
        assert sandbox.hugetlb_bytes() == 0
        with pytest.raises(ServerError) as info:  # ...but no huge page is in use
            sandbox.verify_large_pages()
    assert "allocate" in str(info.value) and "nr_hugepages" in str(info.value)


@pytest.mark.mysql
def test_missing_allocator_is_a_preflight_error(
    mariadb_server, sandbox_layout, base_cnf_text
) -> None:
    write_mycnf(sandbox_layout.cnf, base_cnf_text, {}, sandbox_layout)
    sandbox = MysqldSandbox(mariadb_server, sandbox_layout, allocator="/nonexistent/libx.so")
    with pytest.raises(PreflightError, match="allocator library not found"):
        sandbox.start()
    assert sandbox.pid is None


@pytest.mark.mysql
def test_initialize_refuses_a_non_empty_datadir(mariadb_server, sandbox_layout) -> None:
    with pytest.raises(ServerError, match="not empty"):
        initialize_datadir(mariadb_server, sandbox_layout)


@pytest.mark.mysql
def test_initialize_failure_carries_output(mariadb_server, tmp_path: Path) -> None:
    layout = SandboxLayout(tmp_path / "run")
    with pytest.raises(ServerError) as info:
        initialize_datadir(
            mariadb_server, layout, options={"innodb_no_such_option": "1"}, timeout=60
        )
    assert "exit code" in str(info.value)
    assert "innodb_no_such_option" in str(info.value)
