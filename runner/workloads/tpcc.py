"""The built-in Go TPC-C driver (``tpcc/bin/tpcc``) behind the workload interface.

``tpcc run --json`` prints one JSON object per line, each with ``"format": 1``: first
``{"type":"histogram_layout",...}`` (the bucket layout of its latency histograms), then
``{"type":"interval",...}`` per report interval (with its own RFC 3339 UTC timestamp, phase and
each type's histogram buckets) and a final ``{"type":"summary",...}`` (with the measurement
phase's merged percentiles). :mod:`runner.workloads.tpcc_format` holds that contract and its
parser (:class:`TpccJsonParser`); a line
that breaks it fails the run, and a binary printing another format (or none: one older than the
format version) is named as stale before a run (``tpcc version``, :meth:`TpccWorkload.problems`)
and in one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from core import paths
from core.errors import WorkloadError, bounded, quote
from runner import proc
from runner.connection import ConnectionInfo
from runner.workloads.base import (
    IDENTIFY_TIMEOUT_S,
    RunningWorkload,
    Workload,
    binary_problem,
    client_env,
    create_database,
    run_to_completion,
    whole_seconds,
)
from runner.workloads.tpcc_format import FORMAT_VERSION, STALE_FIX, TpccJsonParser

if TYPE_CHECKING:
    from core.experiment.sections import DatasetSpec, WorkloadSpec

DEFAULT_DATABASE = "tpcc"
#: InnoDB data per TPC-C warehouse (~100 MB) with 30 % for indexes/fragmentation after load.
TPCC_BYTES_PER_WAREHOUSE = int(100 * 1024**2 * 1.3)
#: The built-in loader's wall time per warehouse (``tpcc load``, 2 workers, 2 cores), for
#: ``plan``: linear in warehouses (1 and 10 measured: no fixed part worth modelling). 4.5 s is
#: a 10-warehouse load into Debian's MariaDB 10.11 with ``base_config: small`` on the near-quiet
#: 2-core VM (50.7 s, load average 2–3, 2026-11-28; docs/benchmarks.md, "tpcc load"), rounded up
#: a little. The load waits on the disk more than on the CPU: beside other work it took 100–177 s.
LOAD_S_PER_WAREHOUSE = 4.5
#: What the built-in driver prints when run without arguments (tpcc/cmd/tpcc).
TPCC_USAGE_MARK = b"usage: tpcc <command>"
#: The driver's bounds on connections (tpcc/internal/run/options.go: MaxConns, ReservedFiles).
MAX_CONNECTIONS = 10_000
RESERVED_FILES = 64
BUILD_FIX = (
    "run `make setup` (or cd tpcc && go build -o bin/tpcc ./cmd/tpcc; FLUSHBENCH_TPCC_BIN"
    " or workload.binaries.tpcc point elsewhere)"
)


@dataclasses.dataclass(frozen=True)
class DriverVersion:
    """What ``tpcc version`` says: its JSON format and the clients the build has."""

    format: int
    clients: tuple[str, ...]
    #: Per client the build lacks, the driver's sentence saying why and how to get it.
    unavailable: dict[str, str]


#: ``tpcc version`` answers at once; its answer per (path, size, mtime).
_VERSIONS: dict[tuple[str, int, int], DriverVersion | str] = {}


def driver_version(binary: Path) -> DriverVersion | str:
    """``binary version`` read (once per binary file), or the sentence saying it is stale.

    A binary without the ``version`` command, one answering something else, or one of another
    format than :data:`FORMAT_VERSION` is stale: rebuilt from this checkout it is not.
    """
    stat = binary.stat()
    key = (str(binary.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _VERSIONS:
        _VERSIONS[key] = _ask_version(binary)
    return _VERSIONS[key]


def _ask_version(binary: Path) -> DriverVersion | str:
    stale = (f"{binary} is a stale tpcc driver: `{binary} version` {{}}, this flushbench"
             f" reads JSON format {FORMAT_VERSION} — {STALE_FIX}")
    try:
        answer = proc.run_checked([binary, "version"], timeout=IDENTIFY_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return stale.format(f"did not answer ({bounded(str(exc), 120)})")
    try:
        obj = json.loads(answer.stdout) if answer.returncode == 0 else None
    except (ValueError, RecursionError):
        obj = None
    if not isinstance(obj, dict) or obj.get("type") != "version":
        said = bounded((answer.stderr or answer.stdout).strip().splitlines()[0]
                       if (answer.stderr or answer.stdout).strip() else "nothing", 120)
        return stale.format(f"exits {answer.returncode} saying {quote(said, 140)}")
    version, clients, unavailable = obj.get("format"), obj.get("clients"), obj
    if type(version) is not int or version != FORMAT_VERSION:
        return stale.format(f"says format {quote(version, 40)}")
    if not (isinstance(clients, list) and all(isinstance(c, str) for c in clients)):
        return stale.format(f"lists clients {quote(clients, 80)}")
    return DriverVersion(version, tuple(clients),
                         {k: bounded(v, 300) for k, v in unavailable.items()
                          if k not in ("type", "format", "clients") and isinstance(v, str)})


def connection_args(conn: ConnectionInfo, database: str) -> list[str]:
    """``-S socket`` (or ``-h host -P port``), ``-d db``, ``-u user``; never the password."""
    if conn.socket is not None:
        where = ["-S", str(conn.socket)]
    else:
        where = ["-h", conn.host, "-P", str(conn.port)]
    return [*where, "-d", database, "-u", conn.user]


class TpccWorkload(Workload):
    """The built-in Go TPC-C driver (tpcc-mysql-compatible schema, JSON lines output)."""

    name = "tpcc"
    dataset_kind = "tpcc"
    #: tpcc-mysql's schema with its secondary indexes and foreign keys (docs/tpcc.md).
    dataset_format = "tpcc-mysql-schema"
    database = DEFAULT_DATABASE
    binary_names = ("tpcc",)

    def __init__(self, binaries: Mapping[str, str] | None = None) -> None:
        super().__init__(binaries)
        explicit = self.binaries.get("tpcc")
        self.binary = Path(explicit) if explicit else paths.tpcc_binary()

    @classmethod
    def dataset_bytes(cls, dataset: DatasetSpec) -> int:
        """~130 MB per warehouse once loaded."""
        return (dataset.warehouses or 0) * TPCC_BYTES_PER_WAREHOUSE

    @classmethod
    def load_seconds(cls, dataset: DatasetSpec) -> float:
        """:data:`LOAD_S_PER_WAREHOUSE` per warehouse with the parallel Go loader (2 cores)."""
        return LOAD_S_PER_WAREHOUSE * (dataset.warehouses or 0)

    def found_binaries(self) -> list[Path]:
        """The Go binary."""
        return [self.binary]

    def problems(self) -> list[str]:
        """The Go binary must exist (it is built from ``tpcc/``), be flushbench's driver and
        print the JSON format this flushbench reads.

        Run without arguments it prints its usage (``usage: tpcc <command>``): any other
        program named by ``workload.binaries.tpcc`` (``/bin/sh``…) is refused before a run.
        ``tpcc version`` names its format (:func:`driver_version`): a stale binary is refused
        here, not after a server started.
        """
        if not (self.binary.is_file() and os.access(self.binary, os.X_OK)):
            return [f"the built-in TPC-C driver {self.binary} is not built — {BUILD_FIX}"]
        if problems := binary_problem(self.binary, "the built-in TPC-C driver", BUILD_FIX,
                                      identify=([], TPCC_USAGE_MARK)):
            return problems
        version = driver_version(self.binary)
        return [version] if isinstance(version, str) else []

    @classmethod
    def connection_limit(cls) -> tuple[int | None, str]:
        """The driver's own bound (``tpcc/internal/run.ConnsLimit``): 10,000 connections, or
        what the open-file limit leaves (the Go runtime raises the soft limit to the hard one)."""
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard != resource.RLIM_INFINITY and hard - RESERVED_FILES < MAX_CONNECTIONS:
            most = max(hard - RESERVED_FILES, 1)
            return most, (f"the open-file limit (ulimit -Hn {hard}) leaves the built-in tpcc"
                          f" driver room for {most:,} connections")
        return MAX_CONNECTIONS, (f"the built-in tpcc driver opens at most {MAX_CONNECTIONS:,}"
                                 " connections (docs/tpcc.md, \"Limits\")")

    def setting_problems(self, spec: WorkloadSpec) -> list[str]:
        """``client: libmariadb`` needs a binary built with the C client: refused with the
        driver's own sentence when ``tpcc version`` does not list it."""
        if spec.client is None or spec.client == "go":
            return []
        version = driver_version(self.binary)
        if isinstance(version, str):
            return [version]
        if spec.client in version.clients:
            return []
        why = version.unavailable.get(spec.client) or (
            f"this tpcc has no {spec.client} client (it has {', '.join(version.clients)})")
        return [f"{spec.client} cannot run with {self.binary}: {why}"]

    def load(self, conn: ConnectionInfo, dataset: DatasetSpec, log_path: Path) -> None:
        """``tpcc load -w W --workers N`` into ``conn.database`` (created if missing)."""
        if dataset.warehouses is None:
            raise WorkloadError("the tpcc driver needs a tpcc dataset (warehouses)")
        database = conn.database or DEFAULT_DATABASE
        create_database(conn, database)
        argv = [str(self.binary), "load", *connection_args(conn, database)]
        argv += ["-w", str(dataset.warehouses)]
        if dataset.load_workers:
            argv += ["--workers", str(dataset.load_workers)]
        run_to_completion(
            argv,
            env=client_env(conn),
            log_path=log_path,
            timeout_s=max(600.0, 300.0 * dataset.warehouses),
            what="tpcc load",
            fix="check the server error log and free disk space",
        )

    def run(
        self,
        conn: ConnectionInfo,
        spec: WorkloadSpec,
        connections: int,
        dataset: DatasetSpec,
        log_path: Path,
    ) -> RunningWorkload:
        """``tpcc run --json -r warmup -l duration -i interval -c connections`` (and the spec's
        ``--mode``, ``--client``, ``--rate`` and ``--arrivals``)."""
        if dataset.warehouses is None:
            raise WorkloadError("the tpcc driver needs a tpcc dataset (warehouses)")
        database = conn.database or DEFAULT_DATABASE
        argv = [
            str(self.binary),
            "run",
            *connection_args(conn, database),
            "-w", str(dataset.warehouses),
            "-c", str(connections),
            "-r", str(whole_seconds(spec.warmup, "warmup", "tpcc")),
            "-l", str(whole_seconds(spec.duration, "duration", "tpcc")),
            "-i", str(whole_seconds(spec.report_interval, "report_interval", "tpcc")),
            "--json",
        ]  # fmt: skip
        if spec.mode is not None:
            argv += ["--mode", spec.mode]
        if spec.client is not None:
            argv += ["--client", spec.client]
        if spec.rate_search is not None:  # each step's run is given its own rate
            raise WorkloadError("a rate search's run has no step rate to hold",
                              fix="queue the experiment again (its steps carry their rates)")
        if spec.rate is not None:
            argv += ["--rate", repr(float(spec.rate)), "--arrivals", spec.arrivals or "uniform"]
        return RunningWorkload(
            argv,
            env=client_env(conn),
            log_path=log_path,
            parser=TpccJsonParser(self.binary),
            name="tpcc",
        )
