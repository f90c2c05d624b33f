"""The steps of a rate search (``workload.rate: {max_under: …}``) as runs: each step is one
run of its cell, its repetition the step's number, its ``step_rate`` the rate it holds.

What the next rate is, the experiment model decides (:mod:`core.experiment.rate_search`);
the ledger reads the steps stored and queues the one asked for. A step interrupted is queued
again as a new attempt of the same step (same ``step_rate``) — by the takeover when its worker
died (:func:`store.ledger.runs.add_attempt`), by the next ``run`` of the file when it was stopped
(:func:`store.ledger.enqueue.enqueue`) — so a search resumes at the rate it was trying.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from store.db import ResultsDB
from store.ledger.runs import last_order_index
from store.models import Cell, Run, RunStatus


@dataclass(frozen=True)
class StepRow:
    """One step's latest attempt: its run, step number, status and rate."""

    run_id: int
    step: int
    status: str
    rate: float | None


def search_steps(db: ResultsDB, experiment_id: int) -> dict[str, list[StepRow]]:
    """Each cell's steps (by cell key), the latest attempt of each, in step order."""
    latest = (select(Run.cell_id, Run.repetition, func.max(Run.attempt).label("attempt"))
              .group_by(Run.cell_id, Run.repetition).subquery())
    q = (select(Cell.cell_key, Run.id, Run.repetition, Run.status, Run.step_rate)
         .join(Run, Run.cell_id == Cell.id)
         .join(latest, (latest.c.cell_id == Run.cell_id)
               & (latest.c.repetition == Run.repetition) & (latest.c.attempt == Run.attempt))
         .where(Cell.experiment_id == experiment_id)
         .order_by(Cell.position, Run.repetition))
    out: dict[str, list[StepRow]] = {}
    with db.session() as s:
        for key, run_id, step, status, rate in s.execute(q):
            out.setdefault(key, []).append(StepRow(run_id, step, status, rate))
    return out


def queue_step(db: ResultsDB, experiment_id: int, cell_key: str, rate: float, *,
               after: int) -> int | None:
    """Queue the cell's step ``after + 1`` at ``rate``; return its run id, or None when the
    cell's steps moved on meanwhile (another worker queued it, or a step is still queued or
    running): ``after`` is the highest step the caller decided from.

    Queued at the end of the experiment's queue, so the other cells' steps already queued
    keep their turn. Two workers deciding at once cannot both queue it: the check and the
    insert are one transaction, and the step number is unique per cell.
    """
    try:
        with db.session() as s, s.begin():
            cell_id = s.scalars(select(Cell.id).where(Cell.experiment_id == experiment_id,
                                                      Cell.cell_key == cell_key)).one()
            highest = s.scalar(select(func.max(Run.repetition)).where(Run.cell_id == cell_id))
            busy = s.scalar(select(func.count()).select_from(Run).where(
                Run.cell_id == cell_id, Run.status.in_((RunStatus.QUEUED, RunStatus.RUNNING))))
            if (highest or 0) != after or busy:
                return None
            run = Run(cell_id=cell_id, repetition=after + 1, attempt=1, step_rate=rate,
                      order_index=last_order_index(s, experiment_id) + 1)
            s.add(run)
            s.flush()
            return run.id
    except IntegrityError:
        return None  # another worker queued the same step first


def searching_experiments(db: ResultsDB) -> list[int]:
    """Ids of the experiments that have rate-search steps (runs with a ``step_rate``)."""
    with db.session() as s:
        return list(s.scalars(
            select(Cell.experiment_id).join(Run, Run.cell_id == Cell.id)
            .where(Run.step_rate.is_not(None)).distinct().order_by(Cell.experiment_id)))


def step_rate_of(db: ResultsDB, run_id: int) -> float | None:
    """The rate a run holds as a search step (None: not a step)."""
    with db.session() as s:
        return s.scalar(select(Run.step_rate).where(Run.id == run_id))
