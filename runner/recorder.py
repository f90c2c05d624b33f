"""Writes what a run produces into the store as it happens (so a crash loses nothing finished).

Intervals are written by the thread reading the driver, samples by the sampler thread. Every
write goes through one ordered, bounded buffer: normally it is written at once in its own
short transaction; when the database blinks (PostgreSQL restarting, the network dropping,
SQLite busy past its timeout) the rows stay buffered, the run goes on, and the next write or
the worker's heartbeat writes them — in order — when the database is back. Only a buffer
that fills up (the database gone for hours) fails the run, with that reason.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from flushbench.errors import StoreError
from store.db import ResultsDB, redacted
from store.models import Interval, Run, RunEvent, RunMetadata, RunVariable, Sample

#: Evidence text kept per event (an error-log tail, the driver's stderr...).
MAX_EVIDENCE_CHARS = 20_000
#: Writes kept while the database is unreachable: 2 h of 1 s samples plus intervals.
MAX_BUFFERED = 10_000
#: Pause between write attempts while draining the buffer at the end of a run.
RETRY_S = 0.5


def is_transient(exc: BaseException) -> bool:
    """Whether a database error means "not now" (connection lost, server restarting, busy)."""
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def retrying(fn: Callable[[], Any], timeout_s: float, what: str, db: ResultsDB) -> Any:
    """Call ``fn`` until it stops failing transiently or ``timeout_s`` passes.

    Raises
    ------
    StoreError
        When the database stayed unreachable for ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return fn()
        except SQLAlchemyError as exc:
            if not is_transient(exc) or time.monotonic() >= deadline:
                raise StoreError(
                    f"could not {what}: {type(exc).__name__}: {str(exc).splitlines()[0]}",
                    where=redacted(db.url),
                    fix="check that the results database is up and reachable",
                ) from exc
            time.sleep(RETRY_S)


class RunRecorder:
    """Store writer bound to one run, buffering while the database is unreachable.

    Parameters
    ----------
    max_buffered:
        Writes kept while the database is down; one more fails the run (StoreError).
    """

    def __init__(self, db: ResultsDB, run_id: int, max_buffered: int = MAX_BUFFERED) -> None:
        self.db = db
        self.run_id = run_id
        self.max_buffered = max_buffered
        self.intervals_written = 0
        self.samples_written = 0
        #: Writes that waited for the database at least once (what the blink cost).
        self.buffered_total = 0
        self.down_since: float | None = None
        self._pending: deque[Callable[[Session], None]] = deque()
        self._queue_lock = threading.Lock()
        self._write_lock = threading.Lock()

    # --- the buffer ------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Writes buffered, not yet in the database."""
        return len(self._pending)

    def _submit(self, op: Callable[[Session], None]) -> None:
        with self._queue_lock:
            if len(self._pending) >= self.max_buffered:
                raise StoreError(
                    f"the results database has been unreachable for"
                    f" {time.monotonic() - (self.down_since or time.monotonic()):.0f} s and"
                    f" {len(self._pending)} writes are buffered (the limit)",
                    where=redacted(self.db.url),
                    fix="bring the database back; this run is redone as a new attempt",
                )
            self._pending.append(op)
        if not self.flush():
            self.buffered_total += 1

    def flush(self) -> bool:
        """Write every buffered row in order; True when the buffer is empty afterwards.

        A transient failure keeps the rows (the next call retries); any other error raises.
        """
        with self._write_lock:
            with self._queue_lock:
                batch = list(self._pending)
            if not batch:
                return True
            try:
                with self.db.session() as s, s.begin():
                    for op in batch:
                        op(s)
            except SQLAlchemyError as exc:
                if not is_transient(exc):
                    raise
                if self.down_since is None:
                    self.down_since = time.monotonic()
                return False
            with self._queue_lock:
                for _ in batch:
                    self._pending.popleft()
            self.down_since = None
            return not self._pending

    def drain(self, timeout_s: float) -> None:
        """Flush until the buffer is empty; StoreError when the database stays down."""
        deadline = time.monotonic() + timeout_s
        while not self.flush():
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"{self.pending} buffered writes of run {self.run_id} could not be written"
                    f" within {timeout_s:g} s",
                    where=redacted(self.db.url),
                    fix="bring the database back; this run is redone as a new attempt",
                )
            time.sleep(RETRY_S)

    # --- what a run writes -------------------------------------------------------------------

    def event(self, level: str, kind: str, message: str, evidence: str | None = None) -> None:
        """Record an event (errors keep their evidence, trimmed to the last 20,000 chars)."""
        if evidence is not None and len(evidence) > MAX_EVIDENCE_CHARS:
            evidence = "…" + evidence[-MAX_EVIDENCE_CHARS:]
        from flushbench.redaction import redact  # one redaction for everything stored

        row = dict(run_id=self.run_id, level=level, kind=kind, message=redact(message),
                   evidence=redact(evidence) if evidence is not None else None)
        self._submit(lambda s: s.add(RunEvent(**row)))

    def set_run_fields(self, **fields: Any) -> None:
        """Update columns of the run row (run_dir, measure_started_at, driver_summary…)."""
        stmt = update(Run).where(Run.id == self.run_id).values(**fields)
        self._submit(lambda s: s.execute(stmt))

    def metadata(self, **fields: Any) -> None:
        """Store (or replace) the run's metadata row."""
        self._submit(lambda s: s.merge(RunMetadata(run_id=self.run_id, **fields)))

    def variables(self, values: dict[str, str]) -> None:
        """Store the ``SHOW GLOBAL VARIABLES`` snapshot taken right after start."""
        rows = [(name, str(value)) for name, value in sorted(values.items())]
        self._submit(lambda s: s.add_all(
            RunVariable(run_id=self.run_id, name=n, value=v) for n, v in rows))

    def interval(self, record: Any) -> None:
        """Store one driver interval (an ``IntervalRecord``)."""
        fields = dataclasses.asdict(record)
        self._submit(lambda s: s.add(Interval(run_id=self.run_id, **fields)))
        self.intervals_written += 1

    def sample(self, record: Any) -> None:
        """Store one sampler tick (a ``SampleRecord``)."""
        fields = dataclasses.asdict(record)
        self._submit(lambda s: s.add(Sample(run_id=self.run_id, **fields)))
        self.samples_written += 1


def as_utc(value: dt.datetime) -> dt.datetime:
    """Aware UTC datetime (SQLite hands back naive ones)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
