"""Writes what a run produces into the store as it happens (so a crash loses nothing finished).

Intervals are written by the thread reading the driver, samples by the sampler thread. Every
write goes through one ordered, bounded buffer: normally it is written at once in its own
short transaction; when the database blinks (PostgreSQL restarting, the network dropping,
SQLite busy past its timeout) the rows stay buffered, the run goes on, and the next write or
the worker's heartbeat writes them — in order — when the database is back. Only a buffer
that fills up (the database gone for hours) fails the run, with that reason.

Each batch is one transaction, and the run's ``done`` status is written after the last batch
(``runner.run.execute``), so a worker killed mid-run never leaves a ``done`` run missing rows. A
full disk is not "not now": the run fails at once; a reserve file kept next to a SQLite
database while the run records is deleted then, so the failure itself can still be written.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from core.errors import StoreError
from core.redaction import redact_server_variables
from store.db import ResultsDB, redacted
from store.ledger.runs import set_run_columns
from store.models import Interval, RunEvent, RunMetadata, RunVariable, Sample

#: Evidence text kept per event (an error-log tail, the driver's stderr...).
MAX_EVIDENCE_CHARS = 20_000
#: Writes kept while the database is unreachable: 2 h of 1 s samples plus intervals.
MAX_BUFFERED = 10_000
#: Pause between write attempts while draining the buffer at the end of a run.
RETRY_S = 0.5


#: A full disk is an OperationalError too, but waiting does not cure it: SQLite's
#: SQLITE_FULL text, the OS's ENOSPC text, PostgreSQL's SQLSTATE 53100 (disk_full).
_DISK_FULL_TEXTS = ("database or disk is full", "no space left on device")
_DISK_FULL_SQLSTATE = "53100"

#: Room kept on a SQLite results file's file system while a run records: a file
#: ``<database>-reserve-<run id>-<pid>`` of this size, deleted when the disk fills so that the
#: run's failure (its error event and its ``failed`` status) can still be written.
RESERVE_BYTES = 1 << 20

#: Test hook, inert unless set (to a directory): the first measure-phase interval this process
#: records is written inside its transaction, then the recorder creates ``stalled-<pid>`` in
#: that directory and waits (up to STALL_MAX_S) with the transaction open — intervals sent,
#: nothing committed, the sampler's rows waiting behind it — so a test can SIGKILL the worker
#: at that exact point (tests/runner/run/test_recording_safety.py). Never set it in production.
STALL_ENV = "FLUSHBENCH_TEST_STALL_RECORDING"
STALL_MAX_S = 600.0
_stalled = threading.Event()


def is_disk_full(exc: BaseException) -> bool:
    """Whether a database error says the disk holding the database is full."""
    orig = getattr(exc, "orig", None)
    if getattr(orig, "sqlstate", None) == _DISK_FULL_SQLSTATE:
        return True
    text = str(orig if orig is not None else exc).lower()
    return any(t in text for t in _DISK_FULL_TEXTS)


def is_transient(exc: BaseException) -> bool:
    """Whether a database error means "not now" (connection lost, server restarting, busy).

    A full disk is not transient: the run fails at once with that reason instead of
    buffering rows for hours.
    """
    if is_disk_full(exc):
        return False
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
        #: Set when the disk filled: every later row write raises it (a run that lost rows
        #: must never end done); events still go through (they are the failure's evidence).
        self.failure: StoreError | None = None
        self._reserve = _reserve_path(db, run_id)
        if self._reserve is not None:
            try:
                with self._reserve.open("wb") as f:
                    f.write(b"\0" * RESERVE_BYTES)  # written, not sparse: the blocks are taken
            except OSError:  # no room even for the reserve: the first write will say so
                self._reserve.unlink(missing_ok=True)
                self._reserve = None

    def close(self) -> None:
        """Give back the disk reserve (call once the run's status is written)."""
        if self._reserve is not None:
            self._reserve.unlink(missing_ok=True)
            self._reserve = None

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
                if is_disk_full(exc):
                    raise self._disk_full(len(batch)) from exc
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

    def _disk_full(self, lost: int) -> StoreError:
        """Record the disk-full failure: drop the batch, free the reserve, remember why."""
        # Nothing of the batch is in the database (its transaction rolled back); drop it so
        # that the failure's own small writes are not stuck behind it.
        with self._queue_lock:
            self._pending.clear()
        if self.failure is None:
            self.failure = StoreError(
                f"the results database's disk is full: {lost} write(s) of run {self.run_id}"
                " could not be stored",
                where=redacted(self.db.url),
                fix="free space on the file system that holds the results database (this"
                " run is recorded as failed)",
            )
        if self._reserve is not None:  # room for the error event and the failed status
            self._reserve.unlink(missing_ok=True)
            self._reserve = None
        return self.failure

    def _row(self, op: Callable[[Session], None]) -> None:
        """Submit a row write, refused once the disk filled (the run can no longer be whole)."""
        if self.failure is not None:
            raise self.failure
        self._submit(op)

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
        from core.redaction import redact  # one redaction for everything stored

        row = dict(run_id=self.run_id, level=level, kind=kind, message=redact(message),
                   evidence=redact(evidence) if evidence is not None else None)
        self._submit(lambda s: s.add(RunEvent(**row)))

    def set_run_fields(self, **fields: Any) -> None:
        """Update columns of the run row (run_dir, measure_started_at, driver_summary…)."""
        self._row(lambda s: set_run_columns(s, self.run_id, fields))

    def metadata(self, **fields: Any) -> None:
        """Store (or replace) the run's metadata row."""
        self._row(lambda s: s.merge(RunMetadata(run_id=self.run_id, **fields)))

    def variables(self, values: dict[str, str]) -> None:
        """Store the ``SHOW GLOBAL VARIABLES`` snapshot taken right after start.

        Credentials among them (``report_password``…) are masked first: the results database
        never holds one (:func:`core.redaction.redact_server_variables`).
        """
        shown = redact_server_variables({name: str(value) for name, value in values.items()})
        rows = sorted(shown.items())
        self._row(lambda s: s.add_all(
            RunVariable(run_id=self.run_id, name=n, value=v) for n, v in rows))

    def interval(self, record: Any) -> None:
        """Store one driver interval (an ``IntervalRecord``)."""
        fields = dataclasses.asdict(record)

        def write(s: Session) -> None:
            s.add(Interval(run_id=self.run_id, **fields))
            if fields.get("phase") == "measure" and os.environ.get(STALL_ENV):
                _stall_here(s)

        self._row(write)
        self.intervals_written += 1

    def sample(self, record: Any) -> None:
        """Store one sampler tick (a ``SampleRecord``)."""
        fields = dataclasses.asdict(record)
        try:
            self._row(lambda s: s.add(Sample(run_id=self.run_id, **fields)))
        except StoreError as exc:
            if exc is self.failure:
                return  # the sampler's thread cannot act on it: the run's next write fails it
            raise
        self.samples_written += 1


def _reserve_path(db: ResultsDB, run_id: int) -> Path | None:
    """Where the disk reserve of a run goes: next to a SQLite file; None on a server.

    ``<database>-reserve-<run id>-<pid>``; reserves a killed worker left (its pid gone) are
    removed here, so they never pile up.
    """
    url = db.engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    base = Path(url.database)
    for stale in base.parent.glob(f"{base.name}-reserve-*-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            stale.unlink(missing_ok=True)
    return base.with_name(f"{base.name}-reserve-{run_id}-{os.getpid()}")


def _stall_here(s: Session) -> None:
    """The STALL_ENV hook: send the pending INSERTs, say so, wait inside the transaction."""
    if _stalled.is_set():
        return
    _stalled.set()
    s.flush()
    marker = Path(os.environ[STALL_ENV]) / f"stalled-{os.getpid()}"
    marker.write_text(f"{os.getpid()}\n")
    deadline = time.monotonic() + STALL_MAX_S
    while time.monotonic() < deadline:  # the test SIGKILLs this process meanwhile
        time.sleep(0.2)
