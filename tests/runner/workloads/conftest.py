"""A real MariaDB for the workload contract tests and the sampler tests.

Started here with ``mariadbd`` directly (not through runner.server) so these tests exercise the
adapters against a server whatever state the sandbox module is in. One datadir is initialized
per session and copied for each server; the workload tests share one server per session.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from runner import proc
from runner.connection import ConnectionInfo

MARIADBD = Path("/usr/sbin/mariadbd")
INSTALL_DB = Path("/usr/bin/mariadb-install-db")

#: Small and quick: these tests exercise behaviour, not performance.
SERVER_OPTIONS = [
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--innodb-flush-log-at-trx-commit=2",
    "--performance-schema=OFF",
    "--innodb-buffer-pool-load-at-startup=OFF",
    "--innodb-buffer-pool-dump-at-shutdown=OFF",
    "--max-connections=200",
]


class DbServer:
    """One mariadbd on a unix socket in ``base``; always reaped by :func:`running_server`."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.datadir = base / "data"
        self.socket = base / "mysqld.sock"
        self.error_log = base / "mysqld.err"
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def connection_info(self, database: str | None = None) -> ConnectionInfo:
        return ConnectionInfo(socket=self.socket, user="root", database=database)

    def connect(self, database: str | None = None) -> pymysql.Connection:
        # pymysql 1.1 leaks its unix socket when connect() fails (ResourceWarning, an error
        # under -W error): probe with a socket we close ourselves first.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(5)
            try:
                probe.connect(str(self.socket))
            except OSError as exc:
                msg = f"cannot connect to {self.socket}: {exc}"
                raise pymysql.err.OperationalError(2002, msg) from None
        return pymysql.connect(
            **self.connection_info(database).pymysql_kwargs(), autocommit=True, connect_timeout=5
        )

    def argv(self) -> list[str]:
        return [
            str(MARIADBD),
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            "--skip-networking",
            f"--pid-file={self.base / 'mysqld.pid'}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.base}",
            *SERVER_OPTIONS,
        ]

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"mariadbd exited: {self.error_log.read_text()[-2000:]}")
            with contextlib.suppress(pymysql.MySQLError):
                self.connect().close()
                return
            time.sleep(0.1)
        raise RuntimeError(f"mariadbd not ready after {timeout_s} s")


def mariadb_available() -> bool:
    return MARIADBD.is_file() and INSTALL_DB.is_file()


@contextlib.contextmanager
def running_server(template: Path, base: Path) -> Iterator[DbServer]:
    """Copy the initialized datadir ``template`` into ``base`` and run mariadbd on it."""
    base.mkdir(parents=True, exist_ok=True)
    server = DbServer(base)
    shutil.copytree(template, server.datadir, symlinks=True)
    with proc.child(server.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as p:
        server.process = p
        server.wait_ready()
        yield server


def initialize_template(base: Path) -> Path:
    """``mariadb-install-db`` into ``base/data``; copy the result, never start a server on it."""
    datadir = base / "data"
    # Its own temporary folder: the bootstrap's temporary tables in the shared /tmp vanished
    # under it once while other tests ran ("Could not remove temporary table", a fresh clone).
    tmpdir = base / "tmp"
    tmpdir.mkdir(exist_ok=True)
    result = proc.run_checked(
        [
            INSTALL_DB,
            "--no-defaults",
            f"--datadir={datadir}",
            f"--tmpdir={tmpdir}",
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--innodb-log-file-size=16M",
        ],
        timeout=120,
    )
    if result.returncode != 0:
        pytest.fail(f"mariadb-install-db failed: {result.stderr[-2000:]}")
    return datadir


@pytest.fixture(scope="session")
def mariadb_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One initialized datadir per session for the workload tests."""
    if not mariadb_available():
        pytest.skip("MariaDB (mariadbd, mariadb-install-db) is not installed")
    return initialize_template(tmp_path_factory.mktemp("mdb-template"))


@pytest.fixture(scope="session")
def workload_server(
    mariadb_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DbServer]:
    """The session's server for the workload contract tests (each driver its own database)."""
    with running_server(mariadb_template, tmp_path_factory.mktemp("mdb-workloads")) as server:
        yield server
