"""The run queue in the results database: enqueue an experiment, claim runs under a lease, resume.

What is stored of an experiment, and what a worker replays, is one :class:`QueuedExperiment`
(spec, source, cells, per-cell translations, the files it named).

Resume rules (what rerunning ``flushbench run FILE`` does):

- a run that is ``done``, ``failed`` or ``cancelled`` is kept as it is (failed runs are final:
  re-running a configuration the server refused would fail the same way at 3 a.m.; pass
  ``retry_failed`` to queue them again);
- a run left ``interrupted``, or ``running`` by a worker that is gone (dead pid on this host,
  or a lease that expired), gets a new attempt; the old row stays as evidence;
- ``fresh`` queues a new attempt of every run.

The heartbeat's statements are here too (:func:`register_worker`, :func:`record_heartbeat`,
:func:`extend_lease`, :func:`run_holder`, :func:`mark_worker_stopped`), beside the claim
they renew; :mod:`runner.fleet.lease` keeps the thread, its timing and its error handling.

Experiments are identified by name and a hash of what shapes a measurement (dataset, workload,
server, base config, sampling, fixed knobs...): editing only the matrix, repetitions or order
keeps the same experiment, so finished cells (same stable cell id) are reused.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from core.clock import as_utc
from core.errors import StoreError
from core.experiment.cells import run_order
from core.experiment.hashes import measurement_hash
from core.experiment.queued import QueuedExperiment
from core.redaction import redact
from core.validation import did_you_mean
from runner.fleet.identity import Identity, local_identity
from store.db import ResultsDB
from store.models import Cell, Experiment, Run, RunEvent, RunStatus, Worker, utcnow
from store.runs import add_attempt, experiment_id_of_cell

if TYPE_CHECKING:  # preflight reads the queue (QueuedExperiment.reusable); never the reverse
    pass

#: Seconds a claim holds without a heartbeat. The worker's heartbeat thread renews it every
#: quarter of this, so a run is only taken over when its worker is dead or cut off this long.
LEASE_S = 120.0
#: How often a claim is retried when PostgreSQL's SKIP LOCKED hid every row for a moment.
CLAIM_RETRIES = 5


def worker_id() -> str:
    """``host-id:pid`` of this process (default identity): the lease owner on claimed runs."""
    return local_identity().owner


def db_now(session: Session) -> dt.datetime:
    """The database's clock (aware UTC) on PostgreSQL, this host's on SQLite.

    Leases are compared across hosts, so they must be written and read on one clock: the
    shared server's. A SQLite file has a single host, whose clock is the one clock.
    """
    if session.get_bind().dialect.name == "postgresql":
        value = session.scalar(select(func.now()))
        return value.astimezone(dt.UTC)
    return utcnow()


class Resume(StrEnum):
    """What ``enqueue`` does with one (cell, repetition) whose latest attempt exists."""

    KEEP_QUEUED = "queued"
    LEAVE_RUNNING = "running"
    KEEP_DONE = "kept_done"
    KEEP_FAILED = "kept_failed"
    REQUEUE = "requeued"


def resume_decision(latest: str, *, fresh: bool, retry_failed: bool) -> Resume:
    """The resume rule, as a pure function of the latest attempt's status and the flags.

    A run a live worker holds is never touched. Otherwise ``--fresh`` requeues everything;
    without it a queued run keeps its place, a done run is kept, a failed one is kept unless
    ``--retry-failed``, and an interrupted or cancelled one is queued again as a new attempt.
    """
    if latest == RunStatus.RUNNING:
        return Resume.LEAVE_RUNNING
    if fresh:
        return Resume.REQUEUE
    if latest == RunStatus.QUEUED:
        return Resume.KEEP_QUEUED
    if latest == RunStatus.DONE:
        return Resume.KEEP_DONE
    if latest == RunStatus.FAILED and not retry_failed:
        return Resume.KEEP_FAILED
    return Resume.REQUEUE


@dataclass(frozen=True)
class EnqueueResult:
    """What enqueueing did: the experiment row id and run counts by what happened to them."""

    experiment_id: int
    queued: int
    kept_done: int
    kept_failed: int
    requeued: int


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
    session: Session, experiment_id: int | None = None, host_id: str | None = None
) -> list[tuple[int, int]]:
    """Take over ``running`` runs whose worker is gone: mark them ``interrupted`` and queue a
    new attempt of each (the old row stays as evidence). Returns ``(old id, new id)`` pairs.

    Safe with several workers doing it at once: each takeover is a conditional UPDATE on the
    old row (status still ``running``, same lease owner), so exactly one of them wins it; on
    PostgreSQL the candidate rows are read ``FOR UPDATE SKIP LOCKED``.
    """
    host_id = host_id or local_identity().host_id
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
        taken.append((run.id, new.id))
    return taken


def queue_new_attempt(db: ResultsDB, run_id: int) -> int:
    """Queue a new attempt of an ``interrupted`` run (a worker that lost its lease gives its
    run back this way); return the new run's id."""
    with db.session() as session, session.begin():
        run = session.get(Run, run_id)
        assert run is not None
        return add_attempt(session, run, run.order_index).id


def mark_abandoned(session: Session, experiment_id: int | None = None) -> int:
    """Take over runs whose worker is gone (see :func:`requeue_abandoned`); return how many."""
    return len(requeue_abandoned(session, experiment_id))


def load_queued(db: ResultsDB, experiment_id: int) -> QueuedExperiment:
    """Read a queued experiment back (:meth:`QueuedExperiment.from_stored`).

    Raises
    ------
    StoreError
        No such experiment, or one queued without its base config and server profile.
    """
    with db.session() as s:
        row = s.get(Experiment, experiment_id)
        if row is None:
            raise StoreError(f"no experiment {experiment_id}", where="experiments")
        spec, source, files, name = row.spec, row.source_path or row.name, row.files, row.name
        stored = {c.cell_key: c.variables for c in
                  s.scalars(select(Cell).where(Cell.experiment_id == experiment_id))}
    return QueuedExperiment.from_stored(experiment_id, name, spec, source, files, stored)


def enqueue(
    db: ResultsDB,
    queued: QueuedExperiment,
    *,
    fresh: bool = False,
    retry_failed: bool = False,
) -> EnqueueResult:
    """Put an experiment's runs in the queue, reusing finished runs of the same cells.

    ``queued`` is stored on the experiment and cell rows (:class:`QueuedExperiment`); what
    happens to each cell × repetition that has a run already is :func:`resume_decision`.
    """
    counts = {"queued": 0, "kept_done": 0, "kept_failed": 0, "requeued": 0}
    with db.session() as session, session.begin():
        row = _experiment_row(session, queued)
        mark_abandoned(session, row.id)
        cell_rows = _cell_rows(session, row.id, queued)
        for order_index, (cell, repetition) in enumerate(run_order(queued.exp, queued.cells)):
            crow = cell_rows[cell.key]
            latest = session.scalar(
                select(Run)
                .where(Run.cell_id == crow.id, Run.repetition == repetition)
                .order_by(Run.attempt.desc())
                .limit(1)
            )
            if latest is None:
                session.add(
                    Run(cell_id=crow.id, repetition=repetition, attempt=1, order_index=order_index)
                )
                counts["queued"] += 1
                continue
            decision = resume_decision(latest.status, fresh=fresh, retry_failed=retry_failed)
            if decision is Resume.KEEP_QUEUED:
                latest.order_index = order_index
                counts["queued"] += 1
            elif decision in (Resume.KEEP_DONE, Resume.KEEP_FAILED):
                counts[decision.value] += 1
            elif decision is Resume.REQUEUE:
                if latest.status == RunStatus.QUEUED:
                    latest.status = RunStatus.CANCELLED
                    latest.finished_at = utcnow()
                session.add(Run(cell_id=crow.id, repetition=repetition,
                                attempt=latest.attempt + 1, order_index=order_index))
                counts["requeued"] += 1
        experiment_id = row.id
    return EnqueueResult(experiment_id=experiment_id, **counts)


def _experiment_row(session: Session, queued: QueuedExperiment) -> Experiment:
    """The experiment's row (same name and measurement hash), created or brought up to date."""
    exp, files = queued.exp, queued.files
    mhash = measurement_hash(exp, files)
    spec_json = exp.model_dump(mode="json")
    row = session.scalar(
        select(Experiment).where(
            Experiment.name == exp.name, Experiment.measurement_hash == mhash
        )
    )
    if row is None:
        row = Experiment(name=exp.name, measurement_hash=mhash, spec=spec_json,
                         window=exp.resolved_window(), metric=exp.metric())
        session.add(row)
    row.spec = spec_json
    row.files = files
    row.placement = exp.placement
    row.hosts = list(exp.hosts or []) or None
    row.window = exp.resolved_window()
    row.metric = exp.metric()
    row.description = exp.description
    row.source_path = queued.source
    session.flush()
    return row


def _cell_rows(session: Session, experiment_id: int, queued: QueuedExperiment
               ) -> dict[str, Cell]:
    """The experiment's cell rows by key, each with its stored translation; what is still
    queued for cells that left the experiment file is cancelled."""
    existing = {
        c.cell_key: c
        for c in session.scalars(select(Cell).where(Cell.experiment_id == experiment_id))
    }
    cell_rows: dict[str, Cell] = {}
    for cell in queued.cells:
        crow = existing.get(cell.key)
        if crow is None:
            crow = Cell(experiment_id=experiment_id, cell_key=cell.key, knobs=cell.knobs,
                        variables={})
            session.add(crow)
        crow.position = cell.position
        crow.label = cell.label
        crow.is_baseline = cell.is_baseline
        crow.knobs = cell.knobs
        crow.variables = queued.translations.get(cell.key, {})
        cell_rows[cell.key] = crow
    session.flush()
    for key, crow in existing.items():
        if key not in cell_rows:
            session.execute(
                update(Run)
                .where(Run.cell_id == crow.id, Run.status == RunStatus.QUEUED)
                .values(status=RunStatus.CANCELLED, finished_at=utcnow())
            )
    return cell_rows


class _Retry(Exception):
    """Roll the claim's transaction back and try again (lost a placement race)."""


def _placement_allows(exp_hosts: list[str] | None, host_class: str) -> bool:
    return not exp_hosts or host_class in exp_hosts


def claimable_experiments(db: ResultsDB, identity: Identity | None = None) -> list[int]:
    """Ids of experiments with queued runs this worker may claim (``hosts:``, placement)."""
    ident = identity or local_identity()
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
    session: Session, experiment_id: int | None, ident: Identity, owner: str, lease_s: float
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


def _allowed_ids(session: Session, ident: Identity) -> list[int]:
    rows = session.execute(select(Experiment.id, Experiment.hosts)).all()
    return [i for i, hosts in rows if _placement_allows(hosts, ident.host_class)]


def queued_run_count(session: Session, experiment_id: int) -> int:
    """How many of an experiment's runs are ``queued`` (every attempt row counts)."""
    return session.scalar(
        select(func.count(Run.id))
        .join(Cell)
        .where(Cell.experiment_id == experiment_id, Run.status == RunStatus.QUEUED)
    ) or 0


def _any_claimable(
    session: Session, experiment_id: int | None, ident: Identity
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
    identity: Identity | None = None,
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
        Host id (written on the run), host class (placement); default: this process.
    lease_s:
        Seconds the lease holds before a heartbeat must renew it.
    """
    ident = identity or local_identity()
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


# --- the workers' rows (written by the heartbeat, runner.fleet.lease) -------------------------


def register_worker(db: ResultsDB, identity: Identity, lease_s: float) -> int:
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


def cancel(db: ResultsDB, experiment_name: str, run_ids: Sequence[int] | None = None) -> int:
    """Cancel the queued runs of an experiment (all its hashes); return how many.

    ``run_ids`` limits it to those runs (a rerun that is not wanted, say); a run of them that
    is not queued, or not of this experiment, is left alone and not counted.

    Raises
    ------
    StoreError
        No experiment of that name is in the database (the message lists the known ones).
    """
    with db.session() as session, session.begin():
        _experiment_ids(session, experiment_name)
        ids = select(Cell.id).join(Experiment).where(Experiment.name == experiment_name)
        chosen = Run.cell_id.in_(ids) & (Run.status == RunStatus.QUEUED)
        if run_ids is not None:
            chosen &= Run.id.in_([int(r) for r in run_ids])
        result = session.execute(
            update(Run).where(chosen).values(status=RunStatus.CANCELLED, finished_at=utcnow()))
        return result.rowcount


def _experiment_ids(session: Session, experiment_name: str) -> list[int]:
    """Ids of every queued version (hash) of an experiment; refuse an unknown name."""
    known = session.scalars(select(Experiment.name).distinct()).all()
    if experiment_name not in known:
        raise StoreError(
            f"no experiment {experiment_name!r} in the results database",
            where="queue",
            fix=did_you_mean(experiment_name, known) if known else "queue one first",
        )
    return list(session.scalars(select(Experiment.id).where(Experiment.name == experiment_name)))


def unpin(db: ResultsDB, experiment_name: str) -> list[str]:
    """Release the host class a ``placement: one`` experiment is pinned to; return the classes.

    For when the pinned hosts are gone for good: the next worker of any allowed class claims
    the remaining runs (and pins the experiment again). Runs already done stay where they
    ran; the analysis then sees two host classes and says so.

    Raises
    ------
    StoreError
        Unknown experiment, or a run of it still running under a live lease (a dead worker's
        run is taken over first, as ``status`` does).
    """
    with db.session() as session, session.begin():
        ids = _experiment_ids(session, experiment_name)
        mark_abandoned(session)
        running = session.scalar(
            select(func.count(Run.id)).join(Cell, Cell.id == Run.cell_id)
            .where(Cell.experiment_id.in_(ids), Run.status == RunStatus.RUNNING))
        if running:
            raise StoreError(
                f"{experiment_name}: {running} run(s) still running under a live lease",
                where="queue unpin",
                fix="wait for them to finish (or stop their worker) and unpin again",
            )
        pinned = sorted({c for c in session.scalars(
            select(Experiment.host_class).where(Experiment.id.in_(ids))) if c is not None})
        session.execute(
            update(Experiment).where(Experiment.id.in_(ids)).values(host_class=None)
            .execution_options(synchronize_session=False))
        return pinned


def status_counts(db: ResultsDB) -> list[dict[str, Any]]:
    """Per experiment: runs by status (latest attempt of each cell × repetition only)."""
    with db.session() as session:
        latest = (
            select(Run.cell_id, Run.repetition, func.max(Run.attempt).label("attempt"))
            .group_by(Run.cell_id, Run.repetition)
            .subquery()
        )
        rows = session.execute(
            select(Experiment.id, Experiment.name, Run.status, func.count())
            .join(Cell, Cell.experiment_id == Experiment.id)
            .join(Run, Run.cell_id == Cell.id)
            .join(
                latest,
                (latest.c.cell_id == Run.cell_id)
                & (latest.c.repetition == Run.repetition)
                & (latest.c.attempt == Run.attempt),
            )
            .group_by(Experiment.id, Experiment.name, Run.status)
            .order_by(Experiment.id)
        ).all()
    out: dict[int, dict[str, Any]] = {}
    for exp_id, name, status, n in rows:
        entry = out.setdefault(exp_id, {"experiment_id": exp_id, "name": name})
        entry[status] = n
    return list(out.values())


def run_seconds(db: ResultsDB) -> dict[int, float]:
    """Per experiment: the median wall time of its finished runs (every attempt that started
    and ended: done or failed), from start to end — restore, start, warmup, measuring,
    shutdown and recording, what one more queued run will take on this host."""
    with db.session() as session:
        rows = session.execute(
            select(Cell.experiment_id, Run.started_at, Run.finished_at)
            .join(Run, Run.cell_id == Cell.id)
            .where(Run.status.in_([RunStatus.DONE, RunStatus.FAILED]),
                   Run.started_at.is_not(None), Run.finished_at.is_not(None))
        ).all()
    spans: dict[int, list[float]] = {}
    for exp_id, started, finished in rows:
        seconds = (as_utc(finished) - as_utc(started)).total_seconds()
        if seconds > 0:
            spans.setdefault(int(exp_id), []).append(seconds)
    out = {}
    for exp_id, values in spans.items():
        values.sort()
        mid = len(values) // 2
        out[exp_id] = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return out

