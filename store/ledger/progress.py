"""How far the queue is: runs by status per experiment, what is still queued, and how long a
run takes (``flushbench status``'s counts and time left, the worker's "anything left?")."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from core.clock import as_utc
from store.db import ResultsDB
from store.models import Cell, Experiment, Run, RunStatus


def queued_run_count(session: Session, experiment_id: int) -> int:
    """How many of an experiment's runs are ``queued`` (every attempt row counts)."""
    return session.scalar(
        select(func.count(Run.id))
        .join(Cell)
        .where(Cell.experiment_id == experiment_id, Run.status == RunStatus.QUEUED)
    ) or 0


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
