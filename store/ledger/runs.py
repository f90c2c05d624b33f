"""A run's attempts, columns and warnings outside the claim and lease: new attempts (a
disturbed run's replacement among them), the run dirs a dead worker left.

Functions taking a :class:`~sqlalchemy.orm.Session` run inside the caller's transaction (the
caller groups several of them, e.g. a rerun decision and the new attempt it queues); those
taking a :class:`~store.db.ResultsDB` work in a session (and transaction) of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from store.db import ResultsDB
from store.models import (
    DISTURBANCE_KINDS,
    ENDED_WITHOUT_RESULT,
    Cell,
    Run,
    RunEvent,
    RunStatus,
)


class RunPlace(NamedTuple):
    """Where a claimed run belongs: its experiment, its cell's key, its repetition."""

    experiment_id: int
    cell_key: str
    repetition: int


def run_place(db: ResultsDB, run_id: int) -> RunPlace:
    """The experiment, cell key and repetition of a run (which must exist)."""
    with db.session() as s:
        run = s.get(Run, run_id)
        assert run is not None
        cell = s.get(Cell, run.cell_id)
        assert cell is not None
        return RunPlace(cell.experiment_id, cell.cell_key, run.repetition)


def last_attempt(session: Session, cell_id: int, repetition: int) -> int:
    """The highest attempt number of a cell's repetition (0 when it has none)."""
    return session.scalar(
        select(func.max(Run.attempt)).where(Run.cell_id == cell_id, Run.repetition == repetition)
    ) or 0


def add_attempt(session: Session, run: Run, order_index: int) -> Run:
    """Queue a new attempt of ``run``'s cell and repetition at ``order_index``; return its row
    (flushed: it has its id). The attempt number follows the highest one stored."""
    new = Run(cell_id=run.cell_id, repetition=run.repetition,
              attempt=last_attempt(session, run.cell_id, run.repetition) + 1,
              order_index=order_index, step_rate=run.step_rate)
    session.add(new)
    session.flush()
    return new


def experiment_id_of_cell(session: Session, cell_id: int) -> int:
    """The id of the experiment a cell belongs to (a run's cell always exists)."""
    return session.scalars(select(Cell.experiment_id).where(Cell.id == cell_id)).one()


def last_order_index(session: Session, experiment_id: int) -> int:
    """The highest queue position of an experiment's runs (0 when it has none)."""
    return session.scalar(
        select(func.max(Run.order_index)).join(Cell).where(Cell.experiment_id == experiment_id)
    ) or 0


def disturbance_warnings(db: ResultsDB, run_id: int) -> list[str]:
    """The kinds (:data:`~store.models.DISTURBANCE_KINDS`) of a run's disturbance warnings,
    one per warning event."""
    with db.session() as s:
        return list(s.scalars(select(RunEvent.kind).where(
            RunEvent.run_id == run_id, RunEvent.level == "warning",
            RunEvent.kind.in_(DISTURBANCE_KINDS))))


def disturbed_done_attempts(session: Session, cell_id: int, repetition: int) -> int:
    """How many ``done`` attempts of a cell's repetition carry a disturbance warning."""
    return session.scalar(
        select(func.count(func.distinct(Run.id)))
        .join(RunEvent, RunEvent.run_id == Run.id)
        .where(Run.cell_id == cell_id, Run.repetition == repetition,
               Run.status == RunStatus.DONE, RunEvent.level == "warning",
               RunEvent.kind.in_(DISTURBANCE_KINDS))
    ) or 0


def set_run_columns(session: Session, run_id: int, fields: Mapping[str, Any]) -> None:
    """Write columns of a run's row (``run_dir``, ``measure_started_at``, ``window_start_s``…)."""
    session.execute(update(Run).where(Run.id == run_id).values(**fields))


def run_dirs_without_result_on_host(db: ResultsDB, host_id: str) -> list[str | None]:
    """The run dirs of runs claimed under ``host_id`` that ended without a result
    (interrupted, failed, cancelled): where a dead worker of that host may have left a mysqld."""
    with db.session() as s:
        return list(s.scalars(
            select(Run.run_dir).where(
                Run.host_id == host_id,
                Run.status.in_(ENDED_WITHOUT_RESULT),
                Run.run_dir.is_not(None),
            )
        ))


def run_dirs_without_result_of_experiment(db: ResultsDB, experiment_id: int
                                          ) -> list[str | None]:
    """The run dirs of an experiment's runs that ended without a result (interrupted, failed,
    cancelled): where a killed flushbench may have left a mysqld."""
    with db.session() as s:
        return list(s.scalars(
            select(Run.run_dir)
            .join(Cell)
            .where(
                Cell.experiment_id == experiment_id,
                Run.status.in_(ENDED_WITHOUT_RESULT),
                Run.run_dir.is_not(None),
            )
        ))


def queue_disturbed_rerun(db: ResultsDB, run_id: int, kinds: Sequence[str], max_reruns: int
                          ) -> int | None:
    """Queue a replacement of a disturbed ``done`` run (``kinds``: its disturbance warnings),
    placed after every run of its experiment, unless ``max_reruns`` replacements of its
    repetition were queued already; an ``info`` event on the run says which. Returns the new
    run's id, or None (also when the run is not ``done``)."""
    with db.session() as s, s.begin():
        run = s.get(Run, run_id)
        if run is None or run.status != RunStatus.DONE:
            return None
        disturbed_before = disturbed_done_attempts(s, run.cell_id, run.repetition)
        reruns = disturbed_before - 1  # the first disturbed attempt is the original
        if reruns >= max_reruns:
            s.add(RunEvent(run_id=run_id, level="info", kind="rerun",
                           message=f"disturbed ({', '.join(sorted(set(kinds)))}); not rerun:"
                                   f" {reruns} of {max_reruns} reruns used"))
            return None
        experiment_id = experiment_id_of_cell(s, run.cell_id)
        new = add_attempt(s, run, last_order_index(s, experiment_id) + 1)
        s.add(RunEvent(run_id=run_id, level="info", kind="rerun",
                       message=f"disturbed ({', '.join(sorted(set(kinds)))}): rerun "
                               f"{reruns + 1} of {max_reruns} queued as attempt "
                               f"{new.attempt} (run {new.id})"))
        return new.id
