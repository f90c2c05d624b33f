"""What an operator changes in the queue: cancel queued runs, unpin an experiment from the
host class it was pinned to."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from core.errors import StoreError
from core.validation import did_you_mean
from store.db import ResultsDB
from store.ledger.takeover import mark_abandoned
from store.models import Cell, Experiment, Run, RunStatus, utcnow


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


def unpin(db: ResultsDB, experiment_name: str, *, host_id: str) -> list[str]:
    """Release the host class a ``placement: one`` experiment is pinned to; return the classes.

    For when the pinned hosts are gone for good: the next worker of any allowed class claims
    the remaining runs (and pins the experiment again). Runs already done stay where they
    ran; the analysis then sees two host classes and says so.

    Raises
    ------
    StoreError
        Unknown experiment, or a run of it still running under a live lease (a dead worker's
        run is taken over first, as ``status`` does; ``host_id``: the host this runs on).
    """
    with db.session() as session, session.begin():
        ids = _experiment_ids(session, experiment_name)
        mark_abandoned(session, host_id=host_id)
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
