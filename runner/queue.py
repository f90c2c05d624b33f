"""The run queue in the results database: enqueue an experiment, claim runs under a lease, resume.

Resume rules (what rerunning ``flushbench run FILE`` does):

- a run that is ``done``, ``failed`` or ``cancelled`` is kept as it is (failed runs are final:
  re-running a configuration the server refused would fail the same way at 3 a.m.; pass
  ``retry_failed`` to queue them again);
- a run left ``interrupted``, or ``running`` by a worker that is gone (dead pid on this host,
  or a lease that expired), gets a new attempt; the old row stays as evidence;
- ``fresh`` queues a new attempt of every run.

Experiments are identified by name and a hash of what shapes a measurement (dataset, workload,
server, base config, sampling, fixed knobs...): editing only the matrix, repetitions or order
keeps the same experiment, so finished cells (same stable cell id) are reused.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from flushbench.errors import StoreError
from flushbench.validation import did_you_mean
from runner.spec import CellSpec, ExperimentSpec, measurement_hash, run_order
from store.db import ResultsDB
from store.models import Cell, Experiment, Run, RunEvent, utcnow

LEASE_S = 120.0


def worker_id() -> str:
    """``host:pid`` of this process: the lease owner written on claimed runs."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class EnqueueResult:
    """What enqueueing did: the experiment row id and run counts by what happened to them."""

    experiment_id: int
    queued: int
    kept_done: int
    kept_failed: int
    requeued: int


def _owner_is_gone(owner: str | None, lease_expires_at: dt.datetime | None) -> bool:
    if lease_expires_at is not None:
        expires = (
            lease_expires_at.replace(tzinfo=dt.UTC)
            if lease_expires_at.tzinfo is None
            else lease_expires_at
        )
        if expires < utcnow():
            return True
    if not owner or ":" not in owner:
        return True
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return False  # another host's worker: only its lease can tell
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError):
        return True
    except PermissionError:
        return False
    return False


def mark_abandoned(session: Session, experiment_id: int | None = None) -> int:
    """Mark ``running`` runs whose worker is gone as ``interrupted``; return how many."""
    query = select(Run).where(Run.status == "running")
    if experiment_id is not None:
        query = query.join(Cell).where(Cell.experiment_id == experiment_id)
    count = 0
    for run in session.scalars(query):
        if _owner_is_gone(run.lease_owner, run.lease_expires_at):
            run.status = "interrupted"
            run.finished_at = utcnow()
            run.error = f"worker {run.lease_owner} stopped while the run was in progress"
            session.add(
                RunEvent(
                    run_id=run.id,
                    level="error",
                    kind="interrupted",
                    message=run.error,
                )
            )
            count += 1
    return count


def enqueue(
    db: ResultsDB,
    exp: ExperimentSpec,
    cells: list[CellSpec],
    variables_by_cell: dict[str, dict[str, Any]],
    source: str,
    *,
    fresh: bool = False,
    retry_failed: bool = False,
) -> EnqueueResult:
    """Put an experiment's runs in the queue, reusing finished runs of the same cells.

    Parameters
    ----------
    variables_by_cell:
        Per cell key, the translation checked by preflight and the binary it was checked
        against (:func:`runner.execute.stored_cells`): what a worker runs.
    source:
        The experiment file path (stored for the record).
    """
    mhash = measurement_hash(exp)
    spec_json = exp.model_dump(mode="json")
    counts = {"queued": 0, "kept_done": 0, "kept_failed": 0, "requeued": 0}
    with db.session() as session, session.begin():
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
        row.window = exp.resolved_window()
        row.metric = exp.metric()
        row.description = exp.description
        row.source_path = source
        session.flush()
        mark_abandoned(session, row.id)

        existing = {
            c.cell_key: c for c in session.scalars(select(Cell).where(Cell.experiment_id == row.id))
        }
        cell_rows: dict[str, Cell] = {}
        for cell in cells:
            crow = existing.get(cell.key)
            if crow is None:
                crow = Cell(experiment_id=row.id, cell_key=cell.key, knobs=cell.knobs, variables={})
                session.add(crow)
            crow.position = cell.position
            crow.label = cell.label
            crow.is_baseline = cell.is_baseline
            crow.knobs = cell.knobs
            crow.variables = variables_by_cell.get(cell.key, {})
            cell_rows[cell.key] = crow
        session.flush()

        # Cells that left the experiment file: cancel what is still queued for them.
        for key, crow in existing.items():
            if key not in cell_rows:
                session.execute(
                    update(Run)
                    .where(Run.cell_id == crow.id, Run.status == "queued")
                    .values(status="cancelled", finished_at=utcnow())
                )

        for order_index, (cell, repetition) in enumerate(run_order(exp, cells)):
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
            status = latest.status
            if status == "queued" and not fresh:
                latest.order_index = order_index
                counts["queued"] += 1
                continue
            if status == "running":
                # Held by a live worker (mark_abandoned left it): leave it alone.
                continue
            if not fresh:
                if status == "done":
                    counts["kept_done"] += 1
                    continue
                if status == "failed" and not retry_failed:
                    counts["kept_failed"] += 1
                    continue
                if status == "cancelled":
                    pass  # re-queue: the user asked for this experiment again
            if status == "queued":
                latest.status = "cancelled"
                latest.finished_at = utcnow()
            session.add(
                Run(
                    cell_id=crow.id,
                    repetition=repetition,
                    attempt=latest.attempt + 1,
                    order_index=order_index,
                )
            )
            counts["requeued"] += 1
        experiment_id = row.id
    return EnqueueResult(experiment_id=experiment_id, **counts)


def claim_next(
    db: ResultsDB, experiment_id: int | None = None, owner: str | None = None
) -> int | None:
    """Claim the next queued run (lowest order index) under a lease; return its id or None.

    The claim is a conditional UPDATE (``WHERE status = 'queued'``), so two workers sharing a
    database (SQLite file or PostgreSQL) never run the same run.
    """
    owner = owner or worker_id()
    while True:
        with db.session() as session, session.begin():
            query = select(Run.id).where(Run.status == "queued")
            if experiment_id is not None:
                query = query.join(Cell).where(Cell.experiment_id == experiment_id)
            run_id = session.scalar(query.order_by(Run.order_index, Run.id).limit(1))
            if run_id is None:
                return None
            now = utcnow()
            result = session.execute(
                update(Run)
                .where(Run.id == run_id, Run.status == "queued")
                .values(
                    status="running",
                    lease_owner=owner,
                    lease_expires_at=now + dt.timedelta(seconds=LEASE_S),
                    started_at=now,
                )
            )
            if result.rowcount == 1:
                return run_id


def renew_lease(db: ResultsDB, run_id: int) -> None:
    """Extend a running run's lease (called on every sampler tick / driver interval)."""
    with db.session() as session, session.begin():
        session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == "running")
            .values(lease_expires_at=utcnow() + dt.timedelta(seconds=LEASE_S))
        )


def finish(db: ResultsDB, run_id: int, status: str, error: str | None = None) -> None:
    """Set a run's final status (``done``, ``failed``, ``interrupted``) and release its lease."""
    with db.session() as session, session.begin():
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status=status, error=error, finished_at=utcnow(), lease_expires_at=None)
        )


def cancel(db: ResultsDB, experiment_name: str) -> int:
    """Cancel every queued run of an experiment (all its hashes); return how many.

    Raises
    ------
    StoreError
        No experiment of that name is in the database (the message lists the known ones).
    """
    with db.session() as session, session.begin():
        known = session.scalars(select(Experiment.name).distinct()).all()
        if experiment_name not in known:
            raise StoreError(
                f"no experiment {experiment_name!r} in the results database",
                where="queue",
                fix=did_you_mean(experiment_name, known) if known else "queue one first",
            )
        ids = select(Cell.id).join(Experiment).where(Experiment.name == experiment_name)
        result = session.execute(
            update(Run)
            .where(Run.cell_id.in_(ids), Run.status == "queued")
            .values(status="cancelled", finished_at=utcnow())
        )
        return result.rowcount


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
