"""Claiming the next queued run under a lease, and which experiments a worker may claim from
(``hosts:``, ``placement``).

The claim is one conditional UPDATE (see :func:`claim_next`); the worker's loop around it is
:mod:`runner.fleet.worker`.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from store.db import ResultsDB
from store.ledger.clock import db_now
from store.ledger.lease import LEASE_S
from store.ledger.runs import experiment_id_of_cell
from store.ledger.workers import WorkerIdentity
from store.models import Cell, Experiment, Run, RunStatus

#: How often a claim is retried when PostgreSQL's SKIP LOCKED hid every row for a moment.
CLAIM_RETRIES = 5


class _Retry(Exception):
    """Roll the claim's transaction back and try again (lost a placement race)."""


def _placement_allows(exp_hosts: list[str] | None, host_class: str) -> bool:
    return not exp_hosts or host_class in exp_hosts


def claimable_experiments(db: ResultsDB, identity: WorkerIdentity) -> list[int]:
    """Ids of experiments with queued runs this worker may claim (``hosts:``, placement)."""
    ident = identity
    with db.session() as session:
        rows = session.execute(
            select(Experiment.id, Experiment.hosts, Experiment.placement, Experiment.host_class)
            .where(Experiment.id.in_(
                select(Cell.experiment_id).join(Run, Run.cell_id == Cell.id)
                .where(Run.status == RunStatus.QUEUED)))
            .order_by(Experiment.id)
        ).all()
    return [
        exp_id for exp_id, hosts, placement, pinned in rows
        if _placement_allows(hosts, ident.host_class)
        and (placement == "spread" or pinned is None or pinned == ident.host_class)
    ]


def _claim_once(
    session: Session, experiment_id: int | None, ident: WorkerIdentity, owner: str, lease_s: float
) -> int | None:
    now = db_now(session)
    candidate = (
        select(Run.id)
        .join(Cell, Cell.id == Run.cell_id)
        .join(Experiment, Experiment.id == Cell.experiment_id)
        .where(
            Run.status == RunStatus.QUEUED,
            or_(Experiment.placement == "spread", Experiment.host_class.is_(None),
                Experiment.host_class == ident.host_class),
        )
    )
    if experiment_id is not None:
        candidate = candidate.where(Cell.experiment_id == experiment_id)
    else:
        candidate = candidate.where(Cell.experiment_id.in_(_allowed_ids(session, ident)))
    candidate = (
        candidate.order_by(Run.order_index, Run.id)
        .limit(1)
        # PostgreSQL: lock the chosen row and skip rows other claims hold; SQLite ignores this
        # (it has one writer at a time, so the statement below is atomic there anyway).
        .with_for_update(skip_locked=True, of=Run)
        .scalar_subquery()
    )
    row = session.execute(
        update(Run)
        .where(Run.id == candidate, Run.status == RunStatus.QUEUED)
        .values(status=RunStatus.RUNNING, lease_owner=owner, host_id=ident.host_id,
                lease_expires_at=now + dt.timedelta(seconds=lease_s), started_at=now)
        .returning(Run.id, Run.cell_id)
        .execution_options(synchronize_session=False)
    ).first()
    if row is None:
        return None
    run_id, cell_id = row
    exp_id = experiment_id_of_cell(session, cell_id)
    session.execute(
        update(Experiment)
        .where(Experiment.id == exp_id, Experiment.placement == "one",
               Experiment.host_class.is_(None))
        .values(host_class=ident.host_class)
        .execution_options(synchronize_session=False)
    )
    placement, pinned = session.execute(
        select(Experiment.placement, Experiment.host_class).where(Experiment.id == exp_id)
    ).one()
    if placement == "one" and pinned != ident.host_class:
        raise _Retry  # another host class pinned it between our read and our claim
    return run_id


def _allowed_ids(session: Session, ident: WorkerIdentity) -> list[int]:
    rows = session.execute(select(Experiment.id, Experiment.hosts)).all()
    return [i for i, hosts in rows if _placement_allows(hosts, ident.host_class)]


def _any_claimable(
    session: Session, experiment_id: int | None, ident: WorkerIdentity
) -> bool:
    query = (
        select(Run.id).join(Cell, Cell.id == Run.cell_id)
        .join(Experiment, Experiment.id == Cell.experiment_id)
        .where(Run.status == RunStatus.QUEUED,
               or_(Experiment.placement == "spread", Experiment.host_class.is_(None),
                   Experiment.host_class == ident.host_class))
    )
    if experiment_id is not None:
        query = query.where(Cell.experiment_id == experiment_id)
    return session.scalar(query.limit(1)) is not None


def claim_next(
    db: ResultsDB,
    experiment_id: int | None = None,
    owner: str | None = None,
    *,
    identity: WorkerIdentity,
    lease_s: float = LEASE_S,
) -> int | None:
    """Claim the next queued run (lowest order index) under a lease; return its id or None.

    The claim is one statement: ``UPDATE runs SET status='running'… WHERE id = (SELECT … LIMIT
    1 FOR UPDATE SKIP LOCKED) AND status = 'queued' RETURNING id`` on PostgreSQL, the same
    without the lock clause on SQLite (one writer at a time). Two workers never get the same
    run, and on PostgreSQL they never wait on each other's candidate row either.

    With ``placement: one`` the first claim pins the experiment to the worker's host class
    (in the same transaction); only that class's workers claim its runs afterwards.

    Parameters
    ----------
    experiment_id:
        Only this experiment's runs (None: any experiment this worker may run).
    identity:
        Host id (written on the run), host class (placement), lease owner (default).
    lease_s:
        Seconds the lease holds before a heartbeat must renew it.
    """
    ident = identity
    owner = owner or ident.owner
    if experiment_id is not None:
        with db.session() as session:
            hosts = session.scalar(select(Experiment.hosts).where(Experiment.id == experiment_id))
        if not _placement_allows(hosts, ident.host_class):
            return None
    for _ in range(CLAIM_RETRIES):
        try:
            with db.session() as session, session.begin():
                run_id = _claim_once(session, experiment_id, ident, owner, lease_s)
                if run_id is not None:
                    return run_id
                # PostgreSQL's SKIP LOCKED with LIMIT 1 can come back empty while another
                # claim holds the first row: only "nothing queued" ends the loop.
                if not _any_claimable(session, experiment_id, ident):
                    return None
        except _Retry:
            continue
    return None
