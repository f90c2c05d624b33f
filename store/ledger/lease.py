"""A claimed run's lease: its length, renewing it, and who holds it now.

The heartbeat thread that calls these is :mod:`runner.fleet.lease`; the claim that first sets a
lease is :mod:`store.ledger.claim`.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from store.db import ResultsDB
from store.ledger.clock import db_now
from store.models import Run, RunStatus

#: Seconds a claim holds without a heartbeat. The worker's heartbeat thread renews it every
#: quarter of this, so a run is only taken over when its worker is dead or cut off this long.
LEASE_S = 120.0


def renew_lease(
    db: ResultsDB, run_id: int, owner: str | None = None, lease_s: float = LEASE_S
) -> bool:
    """Extend a running run's lease; False when the run is no longer this owner's to renew.

    With ``owner`` the update only touches the run while that owner still holds it: a worker
    whose run was taken over learns it here (and stops) instead of renewing another's claim.
    """
    with db.session() as session, session.begin():
        now = db_now(session)
        return extend_lease(session, run_id, now + dt.timedelta(seconds=lease_s), owner)


def extend_lease(
    session: Session, run_id: int, until: dt.datetime, owner: str | None = None
) -> bool:
    """Set a running run's lease to expire at ``until`` (in the caller's transaction); False
    when the run is not ``running`` (or, with ``owner``, no longer that owner's)."""
    query = update(Run).where(Run.id == run_id, Run.status == RunStatus.RUNNING)
    if owner is not None:
        query = query.where(Run.lease_owner == owner)
    return session.execute(query.values(lease_expires_at=until)).rowcount == 1


def run_holder(session: Session, run_id: int) -> tuple[str, str | None]:
    """A run's status and lease owner: who holds it now (the heartbeat asks when its renewal
    matched nothing)."""
    status, owner = session.execute(
        select(Run.status, Run.lease_owner).where(Run.id == run_id)
    ).one()
    return status, owner
