"""The built-in Go TPC-C driver (``tpcc/bin/tpcc``) behind the workload interface.

``tpcc run --json`` prints one JSON object per line, each with ``"format": 1``: first
``{"type":"histogram_layout",...}`` (the bucket layout of its latency histograms), then
``{"type":"interval",...}`` per report interval (with its own RFC 3339 UTC timestamp, phase and
each type's histogram buckets) and a final ``{"type":"summary",...}`` (with the measurement
phase's merged percentiles). :mod:`runner.workloads.tpcc_format` holds that contract; a line
that breaks it fails the run, and a binary printing another format (or none: one older than the
format version) is named as stale before a run (``tpcc version``, :meth:`TpccWorkload.problems`)
and in one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import resource
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import paths
from core.errors import WorkloadError, bounded, quote
from runner import proc
from runner.connection import ConnectionInfo
from runner.workloads.base import (
    IDENTIFY_TIMEOUT_S,
    IntervalRecord,
    OutputParser,
    RunningWorkload,
    Workload,
    binary_problem,
    client_env,
    create_database,
    run_to_completion,
    whole_seconds,
)
from runner.workloads.tpcc_format import (
    FORMAT_VERSION,
    TXN_TYPES,
    IntervalLine,
    LayoutLine,
    Line,
    StaleFormat,
    SummaryLine,
    read_line,
)
from runner.workloads.tpcc_histogram import (
    HistogramFormatError,
    HistogramLayout,
    TypeHistogram,
    type_histogram,
)
from store.latency_codec import encode as encode_latency

if TYPE_CHECKING:
    from runner.experiment.spec import DatasetSpec, WorkloadSpec

DEFAULT_DATABASE = "tpcc"
#: InnoDB data per TPC-C warehouse (~100 MB) with 30 % for indexes/fragmentation after load.
TPCC_BYTES_PER_WAREHOUSE = int(100 * 1024**2 * 1.3)
#: The built-in parallel loader on the reference machine (2 cores): ~15 s per warehouse.
LOAD_S_PER_WAREHOUSE = 15.0
#: What the built-in driver prints when run without arguments (tpcc/cmd/tpcc).
TPCC_USAGE_MARK = b"usage: tpcc <command>"
#: The driver's bounds on connections (tpcc/internal/run/options.go: MaxConns, ReservedFiles).
MAX_CONNECTIONS = 10_000
RESERVED_FILES = 64
#: How a driver printing another JSON format than this flushbench reads is brought up to date.
STALE_FIX = ("rebuild it from this checkout: scripts/setup.sh (or cd tpcc && go build -o"
             " bin/tpcc ./cmd/tpcc)")
BUILD_FIX = (
    "run `make setup` (or cd tpcc && go build -o bin/tpcc ./cmd/tpcc; FLUSHBENCH_TPCC_BIN"
    " or workload.binaries.tpcc point elsewhere)"
)


def parse_ts(text: str) -> dt.datetime:
    """An RFC 3339 timestamp (Go's RFC3339Nano; nanoseconds truncated) as aware UTC."""
    ts = dt.datetime.fromisoformat(text)
    if ts.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no time zone")
    return ts.astimezone(dt.UTC)


class TpccJsonParser(OutputParser):
    """Line parser for ``tpcc run --json``: every line must keep format 1 (:mod:`tpcc_format`).

    Besides the interval records it keeps the latency histograms: :attr:`layout` (from the
    ``histogram_layout`` line) and :attr:`histograms` (interval ``seq`` → type → buckets and
    exact maximum). The lines come in the format's order: the layout first, intervals numbered
    1, 2, 3… with a growing ``elapsed_s``, the summary last. Any line that breaks the format —
    a field, a bound, the order, a histogram that does not add up to its count — fails the run
    with that line quoted and the reason; a line without format 1 names the binary as stale.
    """

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary
        self._summary: dict[str, Any] | None = None
        self.layout: HistogramLayout | None = None
        self.histograms: dict[int, dict[str, TypeHistogram]] = {}
        self._line_no = 0
        self._seq = 0
        self._elapsed_s = 0.0

    def feed(self, line: str, read_ts: dt.datetime) -> IntervalRecord | None:
        """Consume one line; return a record for an ``interval`` object.

        Raises
        ------
        WorkloadError
            When the line is not a format-1 JSON object or breaks the format: the message
            quotes the line (bounded) and says why, or names the stale binary.
        """
        self._line_no += 1
        if not line.strip():
            return None
        try:
            return self._take(read_line(json.loads(line)))
        except StaleFormat as exc:
            binary = self.binary or "the tpcc driver"
            raise WorkloadError(
                f"{binary} prints another JSON format than this flushbench reads (line"
                f" {self._line_no}: {exc}; this flushbench reads format {FORMAT_VERSION}):"
                f" the binary is stale",
                fix=STALE_FIX,
            ) from None
        except (ValueError, RecursionError, OverflowError) as exc:  # HistogramFormatError too
            raise WorkloadError(
                f"the tpcc driver's output line {self._line_no} breaks its JSON format"
                f" ({bounded(str(exc), 300)}): {quote(line, 300)}",
                fix="the driver or the server misbehaved: see the driver's stdout and stderr"
                " in the run's evidence; " + STALE_FIX,
            ) from None

    def _take(self, parsed: Line) -> IntervalRecord | None:
        """One checked line in its place: the layout, an interval's record, or the summary."""
        if self._summary is not None:
            raise ValueError(f"a {parsed.type} line after the summary")
        if isinstance(parsed, LayoutLine):
            if self.layout is not None or self._seq:
                raise ValueError("a second histogram_layout line")
            self.layout = HistogramLayout.from_line(parsed.model_dump())
            return None
        if isinstance(parsed, SummaryLine):
            self._summary = parsed.model_dump(exclude={"type"}, exclude_none=True)
            return None
        if self.layout is None:
            raise ValueError("an interval before the histogram_layout line")
        if parsed.seq != self._seq + 1 or parsed.elapsed_s < self._elapsed_s:
            raise ValueError(f"interval seq {parsed.seq} at elapsed_s {parsed.elapsed_s} after"
                             f" seq {self._seq} at {self._elapsed_s}: need the next number and"
                             " no step back in time")
        types = {name: _type_histogram(parsed, name, self.layout) for name in TXN_TYPES}
        record = _record(parsed)
        self._seq, self._elapsed_s = parsed.seq, parsed.elapsed_s
        self.histograms[parsed.seq] = types
        blob = encode_latency(self.layout, {name: (h.buckets, h.max_ms)
                                            for name, h in types.items()})
        return dataclasses.replace(record, latency_z=blob)

    def summary(self) -> dict[str, Any] | None:
        """The driver's ``summary`` object (without ``type``, checked), once printed."""
        return self._summary

    def interrupted(self) -> bool:
        """The driver's own ``interrupted`` flag (it stops early on SIGTERM)."""
        return bool(self._summary and self._summary.get("interrupted"))


def _type_histogram(line: IntervalLine, name: str, layout: HistogramLayout) -> TypeHistogram:
    """Type ``name``'s histogram of the interval, checked against the layout and its count."""
    figures = getattr(line, name)
    buckets = [list(pair) for pair in getattr(line.hist, name)]
    try:
        return type_histogram(buckets, figures.max_ms, figures.count, layout)
    except HistogramFormatError as exc:
        raise HistogramFormatError(f"hist.{name}: {exc}") from None


def _record(line: IntervalLine) -> IntervalRecord:
    """The store's row of a checked interval line."""
    no = line.new_order
    return IntervalRecord(
        seq=line.seq,
        ts=parse_ts(line.ts),
        elapsed_s=line.elapsed_s,
        interval_s=line.interval_s,
        phase=line.phase,
        primary_count=float(no.count),
        p95_ms=no.p95_ms,
        p99_ms=no.p99_ms,
        max_ms=no.max_ms,
        errors=float(line.errors),
        retries=float(line.retries),
        detail={name: {"count": t.count, "p95_ms": t.p95_ms, "p99_ms": t.p99_ms,
                       "max_ms": t.max_ms}
                for name in TXN_TYPES[1:] for t in [getattr(line, name)]},
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
        """~15 s per warehouse with the parallel Go loader (2 cores)."""
        return LOAD_S_PER_WAREHOUSE * (dataset.warehouses or 0)

    def found_binaries(self) -> list[Path]:
        """The Go binary."""
        return [self.binary]

    @classmethod
    def spec_problems(cls, spec: WorkloadSpec) -> list[tuple[str, tuple[str, ...]]]:
        """``mode`` and ``client`` are this driver's; ``test`` is sysbench's. The C client
        runs tpcc-mysql mode only."""
        if spec.test is not None:
            return [("`test` is only for the sysbench driver", ("test",))]
        if spec.client == "libmariadb" and spec.mode == "batched":
            return [("client: libmariadb runs the tpcc-mysql mode only — remove `mode: "
                     "batched` or use `client: go`", ("client",))]
        return []

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
        ``--mode``, ``--client``)."""
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
        return RunningWorkload(
            argv,
            env=client_env(conn),
            log_path=log_path,
            parser=TpccJsonParser(self.binary),
            name="tpcc",
        )
