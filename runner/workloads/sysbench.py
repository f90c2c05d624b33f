"""Debian sysbench 1.0.20 (``oltp_read_only``, ``oltp_point_select``, ``oltp_read_write``).

sysbench 1.0.20 has no ``--warmup-time`` (checked with ``sysbench --help``; it came in 1.1):
the run lasts warmup + duration and the parser flags the first intervals as warmup. Its
``--time`` and ``--report-interval`` take whole seconds. sysbench stops its report thread when
``--time`` expires, so the report due at that very second is printed or not depending on which
thread wins (seen on a 64-thread run: the last 10 s report missing, no interval in the window);
flushbench asks for one report interval more than it measures, so every interval of the window
is reported, and the extra one lies after the window's end and is never counted. The password
reaches libmariadb through ``MYSQL_PWD`` (verified: sysbench connects with it and fails
without it).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import WorkloadError
from core.experiment.drivers import TPS
from runner.connection import ConnectionInfo
from runner.workloads.base import (
    RunningWorkload,
    Workload,
    binary_problem,
    client_env,
    create_database,
    run_to_completion,
    whole_seconds,
)
from runner.workloads.sysbench_output import SysbenchParser

if TYPE_CHECKING:
    from core.experiment.sections import DatasetSpec, WorkloadSpec

TOOL = "sysbench 1.0"
DEFAULT_DATABASE = "sbtest"
#: The test used to create tables: every oltp_* test shares oltp_common's schema.
LOAD_TEST = "oltp_read_write"
#: An sbtest row with its secondary index, as `sysbench prepare` loads it.
BYTES_PER_ROW = 250
#: `sysbench prepare` on the reference machine.
ROWS_PER_S = 50_000
INSTALL_FIX = "install it: apt-get install sysbench (or set workload.binaries.sysbench)"


def connection_args(conn: ConnectionInfo, database: str) -> list[str]:
    """``--mysql-socket`` (or host/port), ``--mysql-user``, ``--mysql-db``; never the password."""
    if conn.socket is not None:
        where = [f"--mysql-socket={conn.socket}"]
    else:
        where = [f"--mysql-host={conn.host}", f"--mysql-port={conn.port}"]
    return [*where, f"--mysql-user={conn.user}", f"--mysql-db={database}"]


def _scale(dataset: DatasetSpec) -> list[str]:
    if dataset.tables is None or dataset.table_size is None:
        raise WorkloadError(
            "the sysbench driver needs a sysbench dataset (tables, table_size)",
            where="dataset",
            fix="set dataset.workload: sysbench with tables and table_size",
        )
    return [f"--tables={dataset.tables}", f"--table-size={dataset.table_size}"]


class SysbenchWorkload(Workload):
    """sysbench OLTP tests from the Debian package."""

    name = "sysbench"
    dataset_kind = "sysbench"
    database = DEFAULT_DATABASE
    binary_names = ("sysbench",)
    metric = TPS

    @classmethod
    def dataset_bytes(cls, dataset: DatasetSpec) -> int:
        """~250 bytes per sbtest row."""
        return (dataset.tables or 0) * (dataset.table_size or 0) * BYTES_PER_ROW

    @classmethod
    def load_seconds(cls, dataset: DatasetSpec) -> float:
        """~50k rows/s for `sysbench prepare`."""
        return (dataset.tables or 0) * (dataset.table_size or 0) / ROWS_PER_S

    @classmethod
    def workload_seconds(cls, spec: WorkloadSpec) -> float:
        """warmup + duration + one report interval (the slack :meth:`start` asks for)."""
        return spec.warmup + spec.duration + spec.report_interval

    def __init__(self, binaries: Mapping[str, str] | None = None) -> None:
        super().__init__(binaries)
        explicit = self.binaries.get("sysbench")
        found = explicit or shutil.which("sysbench")
        self.binary = Path(found) if found else None

    def found_binaries(self) -> list[Path]:
        """sysbench, when found."""
        return [self.binary] if self.binary is not None else []

    def problems(self) -> list[str]:
        """sysbench must be installed (or named in ``workload.binaries.sysbench``)."""
        return binary_problem(self.binary, "sysbench", INSTALL_FIX,
                              identify=(["--version"], b"sysbench"))

    def load(self, conn: ConnectionInfo, dataset: DatasetSpec, log_path: Path) -> None:
        """``sysbench oltp_read_write --tables --table-size ... prepare`` into a new database."""
        scale = _scale(dataset)
        database = conn.database or DEFAULT_DATABASE
        create_database(conn, database)
        argv = [str(self.binary), LOAD_TEST, *scale, *connection_args(conn, database)]
        if dataset.load_workers:
            # sysbench 1.0's oltp_common prepares tables in parallel, one table per thread.
            argv.append(f"--threads={min(dataset.load_workers, dataset.tables or 1)}")
        argv.append("prepare")
        rows = (dataset.tables or 1) * (dataset.table_size or 1)
        run_to_completion(
            argv,
            env=client_env(conn),
            log_path=log_path,
            timeout_s=max(600.0, rows / 2000.0),
            what="sysbench prepare",
            fix="drop the database if its tables exist already; check the server error log",
        )

    def run(
        self,
        conn: ConnectionInfo,
        spec: WorkloadSpec,
        connections: int,
        dataset: DatasetSpec,
        log_path: Path,
    ) -> RunningWorkload:
        """``sysbench TEST --threads --time=warmup+duration+interval --report-interval … run``."""
        if spec.test is None:
            raise WorkloadError(
                "the sysbench driver needs `test`",
                where="workload.test",
                fix="set workload.test (e.g. oltp_read_only)",
            )
        warmup = whole_seconds(spec.warmup, "warmup", TOOL)
        interval = whole_seconds(spec.report_interval, "report_interval", TOOL)
        # One interval of slack: the report at warmup + duration must be printed (see above).
        total = warmup + whole_seconds(spec.duration, "duration", TOOL) + interval
        database = conn.database or DEFAULT_DATABASE
        argv = [
            str(self.binary),
            spec.test,
            *_scale(dataset),
            *connection_args(conn, database),
            f"--threads={connections}",
            f"--time={total}",
            f"--report-interval={interval}",
            "--percentile=95",
            "run",
        ]
        return RunningWorkload(
            argv,
            env=client_env(conn),
            log_path=log_path,
            parser=SysbenchParser(warmup_s=spec.warmup),
            name="sysbench",
        )
