"""A run's final status: ``done``, ``failed`` or ``interrupted``, written once its rows are in
(the recorder's last batch comes first, so a ``done`` run never misses rows)."""

from __future__ import annotations

from sqlalchemy import update

from core.redaction import redact
from store.db import ResultsDB
from store.models import Run, RunStatus, utcnow


def finish(
    db: ResultsDB, run_id: int, status: str, error: str | None = None, owner: str | None = None
) -> bool:
    """Set a run's final status (``done``, ``failed``, ``interrupted``) and release its lease.

    With ``owner``, only while that owner still holds the run ``running``: a worker that lost
    its lease never overwrites the outcome of a run another worker took over. Returns whether
    the row was updated.
    """
    with db.session() as session, session.begin():
        query = update(Run).where(Run.id == run_id)
        if owner is not None:
            query = query.where(Run.lease_owner == owner, Run.status == RunStatus.RUNNING)
        result = session.execute(
            # Redacted: an error may quote a URL or a client command line (core.redaction).
            query.values(status=status, error=redact(error) if error else error,
                         finished_at=utcnow(), lease_expires_at=None)
        )
        return result.rowcount == 1
