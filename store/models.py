"""SQLAlchemy 2 models of the results database.

Raw in, derived out: the store keeps what the driver and the sampler saw (cumulative counters,
real timestamps); rates, deltas and scores are computed in ``analysis/``.

Portable on purpose: no SQLite-only SQL, named constraints (so Alembic batch migrations work on
SQLite and plain ALTERs on PostgreSQL), UTC timestamps, JSON columns through SQLAlchemy's
generic ``JSON`` type. No column holds a credential.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from core.clock import utcnow  # noqa: F401 - re-exported: column defaults and callers

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

class RunStatus(StrEnum):
    """The run lifecycle: ``queued → running → done | failed | interrupted | cancelled``.

    Stored as its plain text value; being a ``str``, a member compares equal to the text read
    back from the database and works in SQL expressions and pandas filters alike.
    """

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"


#: Every status, in lifecycle order.
RUN_STATUSES = tuple(RunStatus)
#: Statuses after which a run never changes again.
FINAL_STATUSES = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)
#: Ended without a result: a rerun may take their place.
ENDED_WITHOUT_RESULT = (RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.CANCELLED)


#: Warning kinds (``run_events.kind``) that mark a run as disturbed by the rest of the machine:
#: written by ``runner/run/disturbance.py`` (CPU, steal, I/O) and by the runner (host pauses, missed
#: sampler ticks); read by the analysis (``analysis/steadiness/disturbed.py``) and the rerun policy.
#: Each names a cause outside the run. ``below-limit`` (a throttle that reached its limit but
#: averaged below it) is a warning, not one of them: a server that flushes in bursts (MySQL
#: 5.5's master thread) does that on its own, so it qualifies the run but never excludes or
#: reruns it by itself (docs/statistics.md, "Disturbed runs").
DISTURBANCE_KINDS = ("disturbed-cpu", "disturbed-steal", "disturbed-io",
                     "host-paused", "samples-missed")


class Base(DeclarativeBase):
    """Declarative base with the project's constraint naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


UTCDateTime = DateTime(timezone=True)


class Experiment(Base):
    """One experiment as it was queued (name + measurement hash identify it).

    ``window`` and ``metric`` are resolved when the experiment is queued, so the analysis reads
    them instead of re-deriving them: ``window`` holds ``warmup``, ``duration``, ``start``,
    ``end`` and ``report_interval`` in seconds (start/end after warmup); ``metric`` holds the
    workload's primary figure: ``name`` (NOTPM, TPS), ``unit``, ``counts`` (what one interval
    count counts) and ``per_minute``.
    """

    __tablename__ = "experiments"
    __table_args__ = (UniqueConstraint("name", "measurement_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    description: Mapped[str] = mapped_column(Text, default="")
    source_path: Mapped[str] = mapped_column(Text, default="")
    #: ``core.experiment.hashes.measurement_hash``: experiments that measure alike share it.
    measurement_hash: Mapped[str] = mapped_column(String(64))
    #: The validated experiment as JSON (the typed model's dump), so analysis never re-reads YAML.
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    window: Mapped[dict[str, Any]] = mapped_column(JSON)
    metric: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The files the experiment named, as queued: ``base_config`` {name, text} and ``server``
    #: {name, profile}. A worker runs these, not whatever the paths hold later (None: queued
    #: by a flushbench before 0005, which a worker refuses).
    files: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: ``one`` (every run on one host class) or ``spread`` (hosts share the experiment).
    placement: Mapped[str] = mapped_column(String(16), default="one", server_default="one")
    #: The host classes allowed to run it (the experiment's ``hosts:``); None: any.
    hosts: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    #: With ``placement: one``, the class the experiment is pinned to (set by the first claim).
    host_class: Mapped[str | None] = mapped_column(String(200), nullable=True)

    cells: Mapped[list[Cell]] = relationship(back_populates="experiment", order_by="Cell.position")


class Cell(Base):
    """One point of the matrix: a set of knob values with a stable id (hash of the values)."""

    __tablename__ = "cells"
    __table_args__ = (UniqueConstraint("experiment_id", "cell_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    cell_key: Mapped[str] = mapped_column(String(32), index=True)
    position: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(400))
    is_baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    #: Logical knob values as written (after unit parsing), e.g. {"doublewrite": false}.
    knobs: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The knobs' translation for the server binary preflight checked (server_options,
    #: expected values, allocator...) and that binary's ``server_version``: a worker runs it.
    variables: Mapped[dict[str, Any]] = mapped_column(JSON)

    experiment: Mapped[Experiment] = relationship(back_populates="cells")
    runs: Mapped[list[Run]] = relationship(back_populates="cell")


class Run(Base):
    """One repetition of one cell; a retry after an interruption is a new attempt row."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("cell_id", "repetition", "attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cell_id: Mapped[int] = mapped_column(ForeignKey("cells.id", ondelete="CASCADE"), index=True)
    repetition: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    #: Position in the experiment's declared run order (as-written, randomized, interleaved).
    order_index: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    queued_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: Start of the measurement phase (end of warmup), in the driver's clock made UTC.
    measure_started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: Who holds the run while it is ``running`` ("host-id:pid"), and until when the lease holds.
    lease_owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    #: The host id of the worker that claimed it (locking, reaping, placement; not a hostname).
    host_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Figures the driver reported at the end (TpmC, totals...), as the driver printed them.
    driver_summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    run_dir: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: With ``window: {start: steady}``: where this run's measurement window starts, seconds
    #: after warmup, as MSER-5 chose it at the end of the run (None: the experiment's window).
    window_start_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: The fixed rate (NOTPM) this run was asked to hold as one step of a rate search
    #: (``workload.rate: {max_under: …}``); None: the cell's own rate, or the closed loop.
    step_rate: Mapped[float | None] = mapped_column(Float, nullable=True)

    cell: Mapped[Cell] = relationship(back_populates="runs")
    run_metadata: Mapped[RunMetadata | None] = relationship(back_populates="run")
    events: Mapped[list[RunEvent]] = relationship(back_populates="run", order_by="RunEvent.id")


class RunMetadata(Base):
    """Where and on what a run ran; the checked keys gate comparisons between runs."""

    __tablename__ = "run_metadata"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(255))
    kernel: Mapped[str] = mapped_column(String(255))
    cpu_model: Mapped[str] = mapped_column(String(255))
    cpu_count: Mapped[int] = mapped_column(Integer)
    mem_total_bytes: Mapped[int] = mapped_column(BigInteger)
    datadir_device: Mapped[str] = mapped_column(String(255))
    datadir_fstype: Mapped[str] = mapped_column(String(64))
    server_flavor: Mapped[str] = mapped_column(String(32))
    server_version: Mapped[str] = mapped_column(String(128))
    dataset_key: Mapped[str] = mapped_column(String(200))
    experiment_hash: Mapped[str] = mapped_column(String(64))
    driver: Mapped[str] = mapped_column(String(64))
    #: Anything else worth keeping (allocator mapped path, page size, flushbench version...).
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    run: Mapped[Run] = relationship(back_populates="run_metadata")


class RunVariable(Base):
    """``SHOW GLOBAL VARIABLES`` of a run's server right after it started."""

    __tablename__ = "run_variables"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Interval(Base):
    """One report interval of the workload driver (warmup intervals kept, flagged)."""

    __tablename__ = "intervals"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: Wall-clock time at the end of the interval (UTC).
    ts: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    #: Seconds since the workload started (warmup included) at the end of the interval.
    elapsed_s: Mapped[float] = mapped_column(Float)
    interval_s: Mapped[float] = mapped_column(Float)
    phase: Mapped[str] = mapped_column(String(16))  # "warmup" | "measure"
    #: The primary throughput count in the interval: New-Orders (TPC-C), transactions (sysbench).
    primary_count: Mapped[float] = mapped_column(Float)
    p95_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    p99_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    errors: Mapped[float] = mapped_column(Float, default=0)
    retries: Mapped[float] = mapped_column(Float, default=0)
    #: Per-transaction-type figures or driver-specific fields ({"payment": {"count":..}, "qps":..}).
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: Every type's latency histogram of the interval, where the driver prints one (the Go
    #: driver): zlib of varints, store/latency_codec.py. None for other drivers and older runs.
    latency_z: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


class Sample(Base):
    """One sampler tick: raw counters with the real sample time; a missed tick is kept as missed."""

    __tablename__ = "samples"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    scheduled_ts: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    ts: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    missed: Mapped[bool] = mapped_column(Boolean, default=False)
    miss_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Raw values read at ``ts`` (cumulative where the source is cumulative).
    lsn: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    checkpoint_lsn: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    pages_dirty: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    pages_data: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    pages_free: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_rss_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_vsz_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: mysqld's RSS split (``/proc/PID/status`` RssAnon/RssFile/RssShmem), anonymous
    #: transparent huge pages (``smaps_rollup`` AnonHugePages) and hugetlbfs pages held
    #: (``HugetlbPages``, not part of VmRSS), bytes.
    mysqld_rss_anon_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_rss_file_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_rss_shmem_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_anon_hugepages_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_hugetlb_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_cpu_user_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    mysqld_cpu_sys_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    driver_cpu_user_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    driver_cpu_sys_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: Context switches of mysqld and of the driver, cumulative over every thread each has
    #: had (``voluntary_ctxt_switches``, ``nonvoluntary_ctxt_switches`` of
    #: ``/proc/PID/task/TID/status``; runner/run/sampler.py ``ProcessSwitches``).
    mysqld_ctxsw_voluntary: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    mysqld_ctxsw_involuntary: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    driver_ctxsw_voluntary: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    driver_ctxsw_involuntary: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    disk_reads: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    disk_writes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    disk_read_sectors: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    disk_write_sectors: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: The whole host's CPU from the ``cpu`` line of ``/proc/stat``, cumulative seconds over
    #: every CPU: busy (user, nice, system, irq, softirq), idle (idle, iowait) and steal (time
    #: the hypervisor ran something else on this VM's CPUs).
    host_cpu_busy_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    host_cpu_idle_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    host_cpu_steal_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: CPU of the flushbench process that samples and records (user + system), seconds.
    tool_cpu_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: Storage-layer bytes of mysqld, the driver and flushbench together (``/proc/PID/io``
    #: ``read_bytes`` and ``write_bytes`` less ``cancelled_write_bytes``), cumulative.
    own_io_read_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    own_io_write_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: The storage throttle group's own counters on its device (None: no throttle group).
    group_read_ios: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    group_write_ios: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    group_read_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    group_write_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: How long the sample itself took to collect (the sampler's own cost), seconds.
    collect_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: Every numeric ``SHOW GLOBAL STATUS`` counter, zlib-compressed JSON ({name: number}).
    status_z: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    #: The LOG section of ``SHOW ENGINE INNODB STATUS``, zlib-compressed text.
    engine_log_z: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


class RunEvent(Base):
    """Something that happened to a run: an error with its evidence, a warning, a phase change."""

    __tablename__ = "run_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    ts: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    level: Mapped[str] = mapped_column(String(16))  # "info" | "warning" | "error"
    kind: Mapped[str] = mapped_column(String(64))  # e.g. "server-start", "driver-exit"
    message: Mapped[str] = mapped_column(Text)
    #: Evidence: error log tail, exit code, last driver output lines...
    evidence: Mapped[str | None] = mapped_column(Text, nullable=True)

    run: Mapped[Run] = relationship(back_populates="events")


class Worker(Base):
    """A worker process (``flushbench worker`` or ``run``): who it is, what it does now.

    Its heartbeat thread refreshes ``heartbeat_at`` (the database's clock) every quarter of
    ``lease_s``; a worker whose heartbeat is older than its lease is stale (dead, or cut off).
    """

    __tablename__ = "workers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    host_id: Mapped[str] = mapped_column(String(200), index=True)
    host_class: Mapped[str] = mapped_column(String(200))
    hostname: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    lease_s: Mapped[float] = mapped_column(Float)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: ``idle``, ``waiting`` (for the host lock), ``running``, ``stopped``, or ``lost`` (its run
    #: was taken over: :mod:`store.ledger.takeover`).
    state: Mapped[str] = mapped_column(String(16), default="idle")
    phase: Mapped[str] = mapped_column(String(200), default="")
    experiment_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    run_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


Index("ix_intervals_run_phase", Interval.run_id, Interval.phase)
