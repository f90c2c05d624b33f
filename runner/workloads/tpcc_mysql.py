"""Percona-Lab tpcc-mysql (``tpcc_load``, ``tpcc_start``) behind the workload interface.

Not packaged by Debian: build it from Percona-Lab's tpcc-mysql source
(``scripts/build-tpcc-mysql.sh SRC_DIR``). The binaries are looked for in
``workload.binaries`` (``tpcc_start``, ``tpcc_load``), then in ``$TPCC_MYSQL_BIN`` (the
checkout, where the build leaves them, or its ``tpcc_start``), then on PATH; the same lookup
decides ``workload.driver: auto`` (``registry.probe_tpcc_start``). Whatever is found must answer
as tpcc-mysql's (:func:`identity`) before a dataset is loaded or a server started.
``create_table.sql`` and ``add_fkey_idx.sql`` are read from beside ``tpcc_load`` (the
checkout's top directory, where ``make`` puts the binaries) or from
``workload.binaries.tpcc_mysql_sql_dir``.

Connections: tpcc-mysql takes the password only as ``-p`` (it shows in ``ps`` and tpcc-mysql
echoes it; flushbench redacts it from the evidence files and warns). A unix socket is passed
as ``-S`` to ``tpcc_start``; ``tpcc_load`` has no ``-S``, so it gets ``-h localhost`` and the
``MYSQL_UNIX_PORT`` environment variable, which the client library reads for its default
socket (checked with Debian's libmariadb through sysbench).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import WorkloadError
from runner.connection import ConnectionInfo
from runner.workloads.base import (
    RunningWorkload,
    Workload,
    WorkloadOutcome,
    binary_problem,
    client_env,
    create_database,
    find_binary,
    run_to_completion,
    whole_seconds,
)
from runner.workloads.tpcc import TPCC_BYTES_PER_WAREHOUSE
from runner.workloads.tpcc_mysql_output import TpccMysqlParser

if TYPE_CHECKING:
    from core.experiment.sections import DatasetSpec, WorkloadSpec

log = logging.getLogger(__name__)

TOOL = "tpcc-mysql"
DEFAULT_DATABASE = "tpcc"
#: tpcc_load is single-threaded: 10 warehouses in 14 min 55 s, 89.5 s each (docs/benchmarks.md,
#: "tpcc driver": the tpcc-mysql reference column). Not re-measured (``dataset.loader:
#: tpcc-mysql`` runs it; no tpcc_load is built on the machine that measured the Go loader).
LOAD_S_PER_WAREHOUSE = 90.0
SCHEMA_FILES = ("create_table.sql", "add_fkey_idx.sql")
#: A tpcc-mysql checkout (or its tpcc_start): where the binaries and SQL files are.
TPCC_MYSQL_ENV = "TPCC_MYSQL_BIN"
BUILD_FIX = (
    "build Percona-Lab's tpcc-mysql (scripts/build-tpcc-mysql.sh SRC_DIR) and set"
    f" {TPCC_MYSQL_ENV}=SRC_DIR, put {{name}} on PATH or set workload.binaries.{{name}}"
)
#: The identity probe: both binaries parse their options with getopt and answer an unknown
#: option with their banner and ``Usage: <name> -h server_host ...`` (exit 0) before they
#: connect anywhere (src/main.c and src/load.c; tests/fixtures/tpcc-mysql holds the output).
#: Without arguments tpcc_start would connect to localhost and run, so the probe never does
#: that. The older positional-argument tpcc-mysql prints ``usage:`` in lower case and cannot
#: take the options this adapter passes, so it is refused too.
UNKNOWN_OPTION = "-?"


def identity(name: str) -> tuple[list[str], bytes]:
    """:func:`binary_problem`'s ``identify`` for ``tpcc_start`` or ``tpcc_load``."""
    return [UNKNOWN_OPTION], f"Usage: {name} -h server_host".encode()


def tpcc_mysql_dir() -> Path | None:
    """The directory ``$TPCC_MYSQL_BIN`` names (a checkout, or a binary in it); None if unset."""
    value = os.environ.get(TPCC_MYSQL_ENV)
    if not value:
        return None
    path = Path(value)
    return path.parent if path.is_file() else path


def locate(explicit: str | None, name: str) -> Path | None:
    """``workload.binaries``' path, else ``$TPCC_MYSQL_BIN/name``, else PATH (None: nowhere)."""
    base = tpcc_mysql_dir()
    if not explicit and base is not None and (base / name).is_file():
        return base / name
    return find_binary(explicit, name)


def split_sql(text: str) -> list[str]:
    """Statements of a plain SQL script (``;`` at line end; ``--`` comment lines dropped)."""
    statements, current = [], []
    for line in text.splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        current.append(line)
        if line.rstrip().endswith(";"):
            statements.append("\n".join(current).rstrip().rstrip(";"))
            current = []
    if "".join(current).strip():
        statements.append("\n".join(current))
    return statements


class TpccMysqlWorkload(Workload):
    """tpcc-mysql's C driver: the reference workload of the 2011 stability study."""

    name = "tpcc-mysql"
    dataset_kind = "tpcc"
    reports_warmup = False  # tpcc_start is silent during its ramp-up
    dataset_format = "tpcc-mysql-schema"
    database = DEFAULT_DATABASE
    binary_names = ("tpcc_start", "tpcc_load", "tpcc_mysql_sql_dir")

    def __init__(self, binaries: Mapping[str, str] | None = None) -> None:
        super().__init__(binaries)
        self.start_binary = locate(self.binaries.get("tpcc_start"), "tpcc_start")
        self.load_binary = locate(self.binaries.get("tpcc_load"), "tpcc_load")

    @classmethod
    def dataset_bytes(cls, dataset: DatasetSpec) -> int:
        """The same TPC-C data as the built-in loader's."""
        return (dataset.warehouses or 0) * TPCC_BYTES_PER_WAREHOUSE

    @classmethod
    def load_seconds(cls, dataset: DatasetSpec) -> float:
        """~90 s per warehouse: tpcc_load is single-threaded."""
        return LOAD_S_PER_WAREHOUSE * (dataset.warehouses or 0)

    def failure(self, outcome: WorkloadOutcome) -> str | None:
        """tpcc_start exits 0 even when every connection failed: nothing measured is a failure."""
        base = super().failure(outcome)
        if base is not None:
            return base
        totals = (outcome.summary or {}).get("tpmc")
        if not totals and outcome.stderr_tail.strip():
            last = outcome.stderr_tail.strip().splitlines()[-1]
            return f"measured no transaction and reported errors (last: {last})"
        return None

    def found_binaries(self) -> list[Path]:
        """tpcc_start and tpcc_load, where found."""
        return [p for p in (self.start_binary, self.load_binary) if p is not None]

    def problems(self) -> list[str]:
        """``tpcc_start`` must be found and be tpcc-mysql's (what a run needs)."""
        return binary_problem(self.start_binary, "tpcc_start", BUILD_FIX.format(name="tpcc_start"),
                              identify=identity("tpcc_start"))

    def load_problems(self) -> list[str]:
        """``tpcc_load``, tpcc-mysql's, and the schema scripts beside it (what a load needs)."""
        found = binary_problem(self.load_binary, "tpcc_load", BUILD_FIX.format(name="tpcc_load"),
                               identify=identity("tpcc_load"))
        if found:
            return found
        missing = [name for name in SCHEMA_FILES if self._sql_file(name) is None]
        if missing:
            return [
                f"tpcc-mysql: {', '.join(missing)} not found beside {self.load_binary}"
                " — keep the tpcc-mysql checkout's SQL files next to tpcc_load or set"
                " workload.binaries.tpcc_mysql_sql_dir"
            ]
        return []

    def _sql_file(self, name: str) -> Path | None:
        dirs = []
        if self.binaries.get("tpcc_mysql_sql_dir"):
            dirs.append(Path(self.binaries["tpcc_mysql_sql_dir"]))
        if self.load_binary is not None:
            binary = self.load_binary.resolve()
            dirs += [binary.parent, binary.parent.parent]
        return next((d / name for d in dirs if (d / name).is_file()), None)

    def _warn_password(self, conn: ConnectionInfo) -> None:
        if conn.password:
            log.warning(
                "tpcc-mysql takes the password on its command line (-p): it is visible in"
                " the process list while the driver runs; use a password-less sandbox account"
            )

    def _apply_sql(self, conn: ConnectionInfo, database: str, name: str) -> None:
        import pymysql

        path = self._sql_file(name)
        if path is None:
            raise WorkloadError(
                f"{name} not found", where=str(self.load_binary), fix=self.load_problems()[0]
            )
        link = pymysql.connect(connect_timeout=10, **conn.with_database(database).pymysql_kwargs())
        try:
            with link.cursor() as cur:
                for statement in split_sql(path.read_text()):
                    cur.execute(statement)
            link.commit()
        except pymysql.MySQLError as exc:
            raise WorkloadError(
                f"applying {path} failed: {exc}", where=str(path), fix="check the SQL file"
            ) from None
        finally:
            link.close()

    def _where(self, conn: ConnectionInfo, *, socket_flag: bool) -> tuple[list[str], dict]:
        if conn.socket is None:
            return ["-h", conn.host, "-P", str(conn.port)], {}
        env = {"MYSQL_UNIX_PORT": str(conn.socket)}
        if socket_flag:
            return ["-h", "localhost", "-S", str(conn.socket)], env
        return ["-h", "localhost"], env

    def load(self, conn: ConnectionInfo, dataset: DatasetSpec, log_path: Path) -> None:
        """create_table.sql, ``tpcc_load -w W``, then add_fkey_idx.sql (its README's order)."""
        if problems := self.load_problems():
            raise WorkloadError(problems[0], where="tpcc-mysql")
        if dataset.warehouses is None:
            raise WorkloadError("tpcc-mysql needs a tpcc dataset (warehouses)", where="dataset")
        database = conn.database or DEFAULT_DATABASE
        self._warn_password(conn)
        create_database(conn, database)
        self._apply_sql(conn, database, "create_table.sql")
        where, extra_env = self._where(conn, socket_flag=False)
        argv = [
            str(self.load_binary), *where, "-d", database, "-u", conn.user,
            "-p", conn.password or "", "-w", str(dataset.warehouses),
        ]  # fmt: skip
        run_to_completion(
            argv,
            env=client_env(conn, extra_env),
            log_path=log_path,
            timeout_s=max(600.0, 180.0 * dataset.warehouses),
            what="tpcc_load",
            fix="check the server error log and free disk space",
            secrets=[conn.password] if conn.password else [],
        )
        self._apply_sql(conn, database, "add_fkey_idx.sql")

    def run(
        self,
        conn: ConnectionInfo,
        spec: WorkloadSpec,
        connections: int,
        dataset: DatasetSpec,
        log_path: Path,
    ) -> RunningWorkload:
        """``tpcc_start -h -P|-S -d -u -p -w -c -r -l -i`` (whole seconds only)."""
        if problems := self.problems():
            raise WorkloadError(problems[0], where="tpcc-mysql")
        if dataset.warehouses is None:
            raise WorkloadError("tpcc-mysql needs a tpcc dataset (warehouses)", where="dataset")
        rampup = whole_seconds(spec.warmup, "warmup", TOOL)
        database = conn.database or DEFAULT_DATABASE
        self._warn_password(conn)
        where, extra_env = self._where(conn, socket_flag=True)
        argv = [
            str(self.start_binary), *where, "-d", database, "-u", conn.user,
            "-p", conn.password or "",
            "-w", str(dataset.warehouses),
            "-c", str(connections),
            "-r", str(rampup),
            "-l", str(whole_seconds(spec.duration, "duration", TOOL)),
            "-i", str(whole_seconds(spec.report_interval, "report_interval", TOOL)),
        ]  # fmt: skip
        return RunningWorkload(
            argv,
            env=client_env(conn, extra_env),
            log_path=log_path,
            parser=TpccMysqlParser(rampup_s=rampup),
            name="tpcc-mysql",
            secrets=[conn.password] if conn.password else [],
        )
