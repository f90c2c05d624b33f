"""Taking over runs whose worker is gone: the ``running`` row is marked ``interrupted`` (kept as
evidence), a new attempt of it is queued, and the gone worker's row says it lost the run.

A worker is gone when its lease expired or, on this host, its pid died. Which host "this host"
is, the caller says (``host_id``): the ledger reads nothing of the machine it runs on.
"""

from __future__ import annotations

import datetime as dt
import os

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from core.clock import as_utc
from store.db import ResultsDB
from store.ledger.clock import db_now
from store.ledger.runs import add_attempt
from store.models import Cell, Run, RunEvent, RunStatus, Worker

#: The state a worker row is given when its run is taken over: the worker lost it (it died, or
#: was cut off from the database for longer than its lease).
LOST = "lost"


def _owner_is_gone(
    owner: str | None, lease_expires_at: dt.datetime | None, now: dt.datetime, host_id: str
) -> bool:
    """Whether a running run's worker is gone: its lease expired, or (same host) its pid died."""
    if lease_expires_at is not None and as_utc(lease_expires_at) < now:
        return True
    if not owner or ":" not in owner:
        return True
    host, _, pid = owner.rpartition(":")
    if host != host_id:
        return False  # another host's worker: only its lease can tell
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError):
        return True
    except PermissionError:
        return False
    return False


def requeue_abandoned(
    session: Session, experiment_id: int | None = None, *, host_id: str
) -> list[tuple[int, int]]:
    """Take over ``running`` runs whose worker is gone: mark them ``interrupted`` and queue a
    new attempt of each (the old row stays as evidence). Returns ``(old id, new id)`` pairs.

    ``host_id`` is the host the caller runs on: its workers' pids are checked directly.
    Safe with several workers doing it at once: each takeover is a conditional UPDATE on the
    old row (status still ``running``, same lease owner), so exactly one of them wins it; on
    PostgreSQL the candidate rows are read ``FOR UPDATE SKIP LOCKED``.
    """
    now = db_now(session)
    query = select(Run).where(
        Run.status == RunStatus.RUNNING,
        or_(Run.lease_expires_at.is_(None), Run.lease_expires_at < now, Run.host_id == host_id,
            Run.host_id.is_(None)),
    )
    if experiment_id is not None:
        query = query.where(Run.cell_id.in_(select(Cell.id).where(
            Cell.experiment_id == experiment_id)))
    taken: list[tuple[int, int]] = []
    for run in session.scalars(query.with_for_update(skip_locked=True, of=Run)).all():
        if not _owner_is_gone(run.lease_owner, run.lease_expires_at, now, host_id):
            continue
        why = (
            f"worker {run.lease_owner} stopped while the run was in progress"
            " (its lease expired or its process is gone)"
        )
        result = session.execute(
            update(Run)
            .where(Run.id == run.id, Run.status == RunStatus.RUNNING,
                   Run.lease_owner == run.lease_owner)
            .values(status=RunStatus.INTERRUPTED, finished_at=now, error=why, lease_expires_at=None)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:
            continue
        new = add_attempt(session, run, run.order_index)
        session.add(RunEvent(run_id=run.id, level="error", kind="interrupted",
                             message=f"{why}; taken over as attempt {new.attempt} (run {new.id})"))
        # The worker's own row would otherwise go on saying it runs this run (listed, stale,
        # for a day): say what became of it.
        session.execute(
            update(Worker)
            .where(Worker.run_id == run.id, Worker.state != "stopped")
            .values(state=LOST, phase=f"run {run.id} taken over as run {new.id}")
            .execution_options(synchronize_session=False)
        )
        taken.append((run.id, new.id))
    return taken


def mark_abandoned(session: Session, experiment_id: int | None = None, *, host_id: str) -> int:
    """Take over runs whose worker is gone (see :func:`requeue_abandoned`); return how many."""
    return len(requeue_abandoned(session, experiment_id, host_id=host_id))


def queue_new_attempt(db: ResultsDB, run_id: int) -> int:
    """Queue a new attempt of an ``interrupted`` run (a worker that lost its lease gives its
    run back this way); return the new run's id."""
    with db.session() as session, session.begin():
        run = session.get(Run, run_id)
        assert run is not None
        return add_attempt(session, run, run.order_index).id
