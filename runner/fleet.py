"""The workers sharing a results database, as ``flushbench status`` shows them.

A worker is *live* while its heartbeat is younger than its lease, *stale* once it is older
(the process died, the host is down, or it is cut off from the database): its run will be
taken over when the run's lease expires. Workers that stopped cleanly are not listed; stale
ones are listed for a day.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
from dataclasses import dataclass

import psutil
from sqlalchemy import select

from flushbench.clock import as_utc
from runner.queue import db_now
from store.db import ResultsDB
from store.models import Experiment, Run, Worker

#: Stale workers older than this are no longer listed (their runs were taken over long ago).
STALE_LISTED_FOR = dt.timedelta(days=1)


@dataclass(frozen=True)
class WorkerView:
    """One worker as ``status`` lists it."""

    host_id: str
    host_class: str
    hostname: str
    pid: int
    state: str
    phase: str
    experiment: str | None
    run_id: int | None
    heartbeat_age_s: float
    #: Seconds since the held run's lease was last renewed (None: no run held).
    lease_age_s: float | None
    live: bool
    #: When the worker registered (the database's clock).
    started_at: dt.datetime | None = None


def worker_rows(db: ResultsDB) -> list[WorkerView]:
    """Live workers first, then stale ones (host, pid, experiment, run, phase, ages)."""
    with db.session() as s:
        now = db_now(s)
        rows = s.execute(
            select(Worker, Experiment.name, Run.lease_expires_at)
            .outerjoin(Experiment, Experiment.id == Worker.experiment_id)
            .outerjoin(Run, Run.id == Worker.run_id)
            .where(Worker.state != "stopped", Worker.heartbeat_at > now - STALE_LISTED_FOR)
            .order_by(Worker.host_id, Worker.pid)
        ).all()
    out = []
    for worker, exp_name, lease_expires in rows:
        age = (now - as_utc(worker.heartbeat_at)).total_seconds()
        lease_age = None
        if worker.run_id is not None and lease_expires is not None:
            renewed = as_utc(lease_expires) - dt.timedelta(seconds=worker.lease_s)
            lease_age = max(0.0, (now - renewed).total_seconds())
        out.append(WorkerView(
            host_id=worker.host_id, host_class=worker.host_class, hostname=worker.hostname,
            pid=worker.pid, state=worker.state, phase=worker.phase, experiment=exp_name,
            run_id=worker.run_id, heartbeat_age_s=age, lease_age_s=lease_age,
            live=age <= worker.lease_s, started_at=as_utc(worker.started_at),
        ))
    return sorted(out, key=lambda w: (not w.live, w.host_id, w.pid))


#: How ``flushbench queue stop`` asks a worker to stop: between runs, or now.
STOP_BETWEEN_RUNS = signal.SIGUSR1
STOP_NOW = signal.SIGTERM
#: A worker's process may have started this long after its row's clock said it registered
#: (two clocks: the database's and this host's).
CLOCK_SLACK = dt.timedelta(seconds=120)


@dataclass(frozen=True)
class StopRequest:
    """What ``flushbench queue stop`` did about one live worker."""

    worker: WorkerView
    #: ``asked`` (signalled), ``elsewhere`` (another host: stop it there) or ``gone`` (no such
    #: process here any more: the pid is dead or now belongs to a younger process).
    outcome: str


def ask_workers_to_stop(db: ResultsDB, *, now: bool = False) -> list[StopRequest]:
    """Signal every live worker of this machine to stop: between runs (``SIGUSR1``: the run
    in progress finishes and is recorded) or, with ``now``, at once (``SIGTERM``: the run in
    progress is marked interrupted and redone on resume).

    A worker on another machine cannot be signalled from here and is reported as such; a pid
    that no longer belongs to the worker (the process is gone, or the number was reused by a
    process started after the worker registered) is left alone.
    """
    here = socket.gethostname()
    out = []
    for w in worker_rows(db):
        if not w.live:
            continue
        if w.hostname != here:
            out.append(StopRequest(w, "elsewhere"))
            continue
        if not _is_that_worker(w):
            out.append(StopRequest(w, "gone"))
            continue
        try:
            os.kill(w.pid, STOP_NOW if now else STOP_BETWEEN_RUNS)
        except ProcessLookupError:
            out.append(StopRequest(w, "gone"))
            continue
        out.append(StopRequest(w, "asked"))
    return out


def _is_that_worker(w: WorkerView) -> bool:
    try:
        created = dt.datetime.fromtimestamp(psutil.Process(w.pid).create_time(), dt.UTC)
    except psutil.Error:
        return False
    return w.started_at is None or created <= w.started_at + CLOCK_SLACK
