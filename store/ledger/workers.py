"""The ``workers`` rows: a worker registers one, its heartbeat keeps it fresh, it marks it
stopped on the way out (the thread doing it is :mod:`runner.fleet.lease`), and ``flushbench
status`` lists them."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from store.db import ResultsDB
from store.ledger.clock import db_now
from store.models import Experiment, Run, Worker


class WorkerIdentity(Protocol):
    """Who a worker is, as the ledger writes it (:class:`runner.host.identity.Identity`)."""

    @property
    def host_id(self) -> str: ...
    @property
    def host_class(self) -> str: ...
    @property
    def hostname(self) -> str: ...
    @property
    def pid(self) -> int: ...
    @property
    def owner(self) -> str: ...


def register_worker(db: ResultsDB, identity: WorkerIdentity, lease_s: float) -> int:
    """Add an ``idle`` worker row for ``identity`` (the database's clock); return its id."""
    with db.session() as s, s.begin():
        now = db_now(s)
        row = Worker(host_id=identity.host_id, host_class=identity.host_class,
                     hostname=identity.hostname, pid=identity.pid, lease_s=lease_s,
                     started_at=now, heartbeat_at=now, state="idle", phase="")
        s.add(row)
        s.flush()
        return row.id


def record_heartbeat(
    session: Session,
    worker_row: int,
    now: dt.datetime,
    *,
    state: str,
    phase: str,
    run_id: int | None,
    experiment_id: int | None,
) -> None:
    """Write a worker's heartbeat time and what it is doing (in the caller's transaction)."""
    session.execute(update(Worker).where(Worker.id == worker_row).values(
        heartbeat_at=now, state=state, phase=phase, run_id=run_id,
        experiment_id=experiment_id))


def mark_worker_stopped(db: ResultsDB, worker_row: int) -> None:
    """Mark a worker row ``stopped`` (no phase, no run): ``status`` no longer lists it."""
    with db.session() as s, s.begin():
        s.execute(update(Worker).where(Worker.id == worker_row).values(
            state="stopped", phase="", run_id=None, heartbeat_at=db_now(s)))


def workers_heard_since(
    session: Session, since: dt.datetime
) -> list[tuple[Worker, str | None, dt.datetime | None]]:
    """Workers not stopped whose last heartbeat is after ``since``, by host id and pid: each
    with the name of the experiment it works on and the lease expiry of the run it holds
    (None when it holds none)."""
    rows = session.execute(
        select(Worker, Experiment.name, Run.lease_expires_at)
        .outerjoin(Experiment, Experiment.id == Worker.experiment_id)
        .outerjoin(Run, Run.id == Worker.run_id)
        .where(Worker.state != "stopped", Worker.heartbeat_at > since)
        .order_by(Worker.host_id, Worker.pid)
    ).all()
    return [(worker, name, expires) for worker, name, expires in rows]
