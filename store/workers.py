"""The ``workers`` rows as ``flushbench status`` lists them (the heartbeat writes them: the
queue's :mod:`runner.fleet.queue`)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from store.models import Experiment, Run, Worker


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
