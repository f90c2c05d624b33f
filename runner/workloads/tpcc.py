"""The built-in Go TPC-C driver (``tpcc/bin/tpcc``) behind the workload interface.

``tpcc run --json`` prints one JSON object per line: first ``{"type":"histogram_layout",...}``
(the bucket layout of its latency histograms), then ``{"type":"interval",...}`` per report
interval (with its own RFC 3339 UTC timestamp, phase and each type's histogram buckets) and a
final ``{"type":"summary",...}`` (with the measurement phase's merged percentiles). An interval
line's ``"open"`` (the ages of the transactions still in flight at its end) is stored with its
histograms as ``open_<type>``. A binary older than the histograms prints no layout line and no
buckets: its runs parse as before, without them (:attr:`TpccJsonParser.histogram_problem` says so).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import paths
from core.errors import WorkloadError, quote
from runner.connection import ConnectionInfo
from runner.workloads.base import (
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
from runner.workloads.tpcc_histogram import (
    HistogramFormatError,
    HistogramLayout,
    TypeHistogram,
    type_histogram,
)
from store.latency_codec import encode as encode_latency
from store.latency_codec import open_code

if TYPE_CHECKING:
    from runner.experiment.spec import DatasetSpec, WorkloadSpec

#: Transaction types in the driver's JSON; New-Order is the primary count (NOTPM).
TXN_TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")
DEFAULT_DATABASE = "tpcc"
#: InnoDB data per TPC-C warehouse (~100 MB) with 30 % for indexes/fragmentation after load.
TPCC_BYTES_PER_WAREHOUSE = int(100 * 1024**2 * 1.3)
#: The built-in parallel loader on the reference machine (2 cores): ~15 s per warehouse.
LOAD_S_PER_WAREHOUSE = 15.0
#: What the built-in driver prints when run without arguments (tpcc/cmd/tpcc).
TPCC_USAGE_MARK = b"usage: tpcc <command>"
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
    """Line parser for ``tpcc run --json``: every non-blank line must be one JSON object.

    Besides the interval records it keeps the latency histograms: :attr:`layout` (from the
    ``histogram_layout`` line) and :attr:`histograms` (interval ``seq`` → type → buckets and
    exact maximum). A missing or malformed histogram never fails the run: that interval has
    none, and :attr:`histogram_problem` names the first problem.
    """

    def __init__(self) -> None:
        self._summary: dict[str, Any] | None = None
        self.layout: HistogramLayout | None = None
        self.histograms: dict[int, dict[str, TypeHistogram]] = {}
        self._problem: str | None = None
        self._intervals_seen = 0

    def feed(self, line: str, read_ts: dt.datetime) -> IntervalRecord | None:
        """Consume one line; return a record for an ``interval`` object.

        Raises
        ------
        WorkloadError
            When the line is not JSON or lacks a field (the message quotes the line).
        """
        if not line.strip():
            return None
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            kind = obj.get("type")
            if kind == "interval":
                record = self._record(obj)
                self._intervals_seen += 1
                self._read_histograms(obj, record.seq)
                return self._with_latency(record)
            if kind == "histogram_layout":
                self._read_layout(obj)
                return None
            if kind == "summary":
                self._summary = {k: v for k, v in obj.items() if k != "type"}
                return None
            raise ValueError(f"unknown type {kind!r}")
        except (ValueError, KeyError, TypeError) as exc:
            raise WorkloadError(
                f"cannot parse tpcc driver output line ({exc}): {line[:500]!r}",
                fix="rebuild tpcc/bin/tpcc from this checkout (cd tpcc && go build -o bin/tpcc"
                " ./cmd/tpcc) so its JSON matches this flushbench",
            ) from None

    @staticmethod
    def _record(obj: dict[str, Any]) -> IntervalRecord:
        no = obj["new_order"]
        detail = {name: obj[name] for name in TXN_TYPES[1:] if name in obj}
        return IntervalRecord(
            seq=int(obj["seq"]),
            ts=parse_ts(obj["ts"]),
            elapsed_s=float(obj["elapsed_s"]),
            interval_s=float(obj["interval_s"]),
            phase=obj["phase"],
            primary_count=float(no["count"]),
            p95_ms=_opt_float(no.get("p95_ms")),
            p99_ms=_opt_float(no.get("p99_ms")),
            max_ms=_opt_float(no.get("max_ms")),
            errors=float(obj.get("errors", 0)),
            retries=float(obj.get("retries", 0)),
            detail=detail,
        )

    def _read_layout(self, obj: dict[str, Any]) -> None:
        try:
            self.layout = HistogramLayout.from_line(obj)
        except HistogramFormatError as exc:
            self._note(f"histogram_layout line: {exc}")

    def _read_histograms(self, obj: dict[str, Any], seq: int) -> None:
        """Keep interval ``seq``'s buckets per type, or note why they cannot be read."""
        hist = obj.get("hist")
        if hist is None:
            return
        if self.layout is None:
            self._note(f"interval {seq} has histogram buckets but no readable histogram_layout"
                       " line came before it")
            return
        try:
            if not isinstance(hist, dict):
                raise HistogramFormatError(f"hist is {type(hist).__name__}, not an object")
            self.histograms[seq] = {
                name: type_histogram(hist[name], obj[name]["max_ms"], obj[name]["count"],
                                     self.layout)
                for name in TXN_TYPES
            }
        except (HistogramFormatError, KeyError, TypeError, ValueError) as exc:
            self._note(f"interval {seq}: histogram not readable ({exc!r})"[:300])
            return
        self._read_open(obj, seq)

    def _read_open(self, obj: dict[str, Any], seq: int) -> None:
        """Keep interval ``seq``'s ``"open"`` (the ages of the transactions still in flight at
        its end, per type; docs/tpcc.md) beside its histograms as ``open_<type>``, or note why
        it cannot be read (the completed ones are kept either way)."""
        found = obj.get("open")
        if found is None:
            return  # a driver older than it
        try:
            if not isinstance(found, dict) or not set(found) <= set(TXN_TYPES):
                raise HistogramFormatError(f"open is {quote(found, 120)}: need an object keyed"
                                           " by transaction type")
            assert self.layout is not None
            opened = {open_code(name): type_histogram(v["hist"], v["max_ms"], v["count"],
                                                      self.layout)
                      for name, v in found.items()}
        except (HistogramFormatError, KeyError, TypeError, ValueError) as exc:
            self._note(f"interval {seq}: in-flight ages not readable ({exc!r})"[:300])
            return
        self.histograms[seq].update(opened)

    def _with_latency(self, record: IntervalRecord) -> IntervalRecord:
        """The record with its interval's histograms encoded for the store, when read."""
        types = self.histograms.get(record.seq)
        if types is None or self.layout is None:
            return record
        try:
            blob = encode_latency(self.layout, {name: (h.buckets, h.max_ms)
                                                for name, h in types.items()})
        except ValueError as exc:
            self._note(f"interval {record.seq}: histogram not stored ({exc})"[:300])
            return record
        return dataclasses.replace(record, latency_z=blob)

    def _note(self, problem: str) -> None:
        if self._problem is None:
            self._problem = problem

    @property
    def histogram_problem(self) -> str | None:
        """Why some interval has no latency histogram (the first reason), or None."""
        if self._problem is None and self._intervals_seen and not self.histograms:
            return ("the driver printed no latency histograms (a tpcc binary older than them:"
                    " rebuild tpcc/bin/tpcc)")
        return self._problem

    def notes(self) -> tuple[str, ...]:
        """The run is kept without latency histograms (some or all): why."""
        problem = self.histogram_problem
        return () if problem is None else (f"latency histograms: {problem}",)

    def summary(self) -> dict[str, Any] | None:
        """The driver's ``summary`` object (without ``type``), once printed."""
        return self._summary

    def interrupted(self) -> bool:
        """The driver's own ``interrupted`` flag (it stops early on SIGTERM)."""
        return bool(self._summary and self._summary.get("interrupted"))


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


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
        """The Go binary must exist (it is built from ``tpcc/``) and be flushbench's driver.

        Run without arguments it prints its usage (``usage: tpcc <command>``): any other
        program named by ``workload.binaries.tpcc`` (``/bin/sh``…) is refused before a run.
        """
        if not (self.binary.is_file() and os.access(self.binary, os.X_OK)):
            return [f"the built-in TPC-C driver {self.binary} is not built — {BUILD_FIX}"]
        return binary_problem(self.binary, "the built-in TPC-C driver", BUILD_FIX,
                              identify=([], TPCC_USAGE_MARK))

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
            parser=TpccJsonParser(),
            name="tpcc",
        )
