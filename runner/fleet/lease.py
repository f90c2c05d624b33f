"""The worker's heartbeat: one background thread that keeps its ``workers`` row fresh and renews
the lease of the run it holds, for the whole life of that run (restore, start, verify, drain,
warmup, measure, stop, record) — not only when the driver happens to print an interval.

When the lease cannot be renewed — another worker took the run over, or the database stayed
unreachable past the lease's expiry — the heartbeat says the lease is *lost*: it sets
:attr:`Heartbeat.lost` (the run checks it between phases and the measure loop stops the
driver on it) and records why, so a worker never finishes a run someone else restarted.

The statements are the ledger's (:mod:`store.ledger.lease`, :mod:`store.ledger.workers`); the
run sees the heartbeat only as its :class:`runner.run.run_lease.RunLease`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from runner.host.identity import Identity
from runner.run.run_lease import LeaseLost
from store.db import ResultsDB
from store.ledger.clock import db_now
from store.ledger.lease import LEASE_S, extend_lease, run_holder
from store.ledger.workers import mark_worker_stopped, record_heartbeat, register_worker

#: The heartbeat period as a fraction of the lease: three beats may fail before it expires.
BEAT_FRACTION = 0.25


class Heartbeat:
    """Keeps a worker's row and its held run's lease alive from a daemon thread (a
    :class:`~runner.run.run_lease.RunLease` for the run it holds).

    Parameters
    ----------
    db:
        The results database.
    identity:
        Who this worker is (host id, class, pid): written in its ``workers`` row.
    lease_s:
        The lease length; the thread beats every quarter of it.
    notify:
        Called with a one-line message when the database becomes unreachable or comes back,
        and when the lease is lost (the worker's log).
    """

    def __init__(
        self,
        db: ResultsDB,
        identity: Identity,
        lease_s: float = LEASE_S,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.db = db
        self.identity = identity
        self.lease_s = lease_s
        self.period = max(0.1, lease_s * BEAT_FRACTION)
        self.notify = notify or (lambda _msg: None)
        self.worker_row: int | None = None
        self.lost = threading.Event()
        self.lost_reason: str | None = None
        self._lock = threading.Lock()
        self._run_id: int | None = None
        self._experiment_id: int | None = None
        self._state = "idle"
        self._phase = ""
        self._valid_until = 0.0
        self._db_down = False
        self._flushers: list[Callable[[], object]] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- life cycle -------------------------------------------------------------------------

    def start(self) -> Heartbeat:
        """Register the worker row and start beating."""
        self.worker_row = register_worker(self.db, self.identity, self.lease_s)
        self._thread = threading.Thread(target=self._loop, name="flushbench-heartbeat",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating and mark the worker row ``stopped`` (best effort: the db may be gone)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.period + 30)
        if self.worker_row is not None:
            with contextlib.suppress(SQLAlchemyError):
                mark_worker_stopped(self.db, self.worker_row)

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what the worker is doing -----------------------------------------------------------

    def hold(self, run_id: int, experiment_id: int | None = None) -> None:
        """From now on renew this run's lease (the claim just set it)."""
        with self._lock:
            self._run_id = run_id
            self._experiment_id = experiment_id
            self._state = "running"
            self._valid_until = time.monotonic() + self.lease_s
            self.lost.clear()
            self.lost_reason = None
        self._wake.set()

    def release(self) -> None:
        """The run is finished (or given up): stop renewing its lease.

        Call it *before* writing the run's final status, so a beat racing that write never
        mistakes the run's own end for a takeover.
        """
        with self._lock:
            self._run_id = None
            self._state = "idle"
            self._phase = ""
            self._flushers.clear()
        self._wake.set()

    def set_state(self, state: str, phase: str = "") -> None:
        """``idle``, ``waiting`` (for the host lock) or ``running``; shown by ``status``."""
        with self._lock:
            self._state, self._phase = state, phase
        self._wake.set()

    def set_phase(self, phase: str) -> None:
        """The current phase of the held run (``restoring datadir``, ``measuring``...)."""
        with self._lock:
            self._phase = phase[:200]

    def add_flusher(self, flush: Callable[[], object]) -> None:
        """Also call ``flush`` on every beat (a run's buffered writes drain between intervals)."""
        with self._lock:
            self._flushers.append(flush)

    def check(self) -> None:
        """Raise :class:`LeaseLost` when the lease of the held run is lost."""
        if self.lost.is_set():
            raise LeaseLost(
                f"this worker lost its lease on run {self._run_id}: {self.lost_reason}",
                where=f"worker {self.identity.owner}",
                fix="nothing to do: the run is redone as a new attempt by whoever took it over",
            )

    # --- the thread ---------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.beat()
            self._wake.wait(self.period)
            self._wake.clear()

    def beat(self) -> None:
        """One heartbeat: refresh the worker row, renew the held lease, drain buffered writes."""
        with self._lock:
            run_id, exp_id = self._run_id, self._experiment_id
            state, phase = self._state, self._phase
            flushers = list(self._flushers)
        sent_at = time.monotonic()
        try:
            with self.db.session() as s, s.begin():
                now = db_now(s)
                if self.worker_row is not None:
                    record_heartbeat(s, self.worker_row, now, state=state, phase=phase,
                                     run_id=run_id, experiment_id=exp_id)
                if run_id is not None and not self.lost.is_set():
                    renewed = extend_lease(s, run_id, now + dt.timedelta(seconds=self.lease_s),
                                           owner=self.identity.owner)
                    if not renewed:
                        status, owner = run_holder(s, run_id)
                        with self._lock:
                            still_held = self._run_id == run_id
                        if still_held:  # not our own finish racing this beat
                            self._lose(run_id, f"the run is now {status!r} (lease owner"
                                       f" {owner})")
                    else:
                        with self._lock:
                            if self._run_id == run_id:
                                self._valid_until = sent_at + self.lease_s
            if self._db_down:
                self._db_down = False
                self.notify("results database reachable again")
        except SQLAlchemyError as exc:
            if not self._db_down:
                self._db_down = True
                self.notify(f"results database unreachable ({type(exc).__name__}); retrying")
            with self._lock:
                expired = self._run_id is not None and time.monotonic() > self._valid_until
            if expired and not self.lost.is_set():
                self._lose(run_id, "the results database stayed unreachable past the lease"
                           f" expiry ({self.lease_s:g} s); another worker may have taken it")
        for flush in flushers:
            with contextlib.suppress(Exception):  # a flusher reports its own failures
                flush()

    def _lose(self, run_id: int | None, reason: str) -> None:
        self.lost_reason = reason
        self.lost.set()
        self.notify(f"lost the lease on run {run_id}: {reason}")
