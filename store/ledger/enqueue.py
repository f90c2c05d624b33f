"""Putting an experiment's runs in the queue, and reading a queued experiment back.

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

The ledger stores plain values (:class:`ExperimentEntry`); turning an experiment into them, and
what is read back into an experiment, is :mod:`runner.admission.queue_record`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from core.errors import StoreError
from store.db import ResultsDB
from store.ledger.runs import add_attempt
from store.ledger.takeover import mark_abandoned
from store.models import Cell, Experiment, Run, RunStatus, utcnow


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
class CellEntry:
    """One cell as its row stores it; ``translation`` is what a worker may reuse."""

    key: str
    position: int
    label: str
    is_baseline: bool
    knobs: dict[str, Any]
    translation: dict[str, Any]


@dataclass(frozen=True)
class ExperimentEntry:
    """An experiment as the ledger stores it: its row's values, its cells, and its runs in
    queue order as ``(cell key, repetition)``."""

    name: str
    measurement_hash: str
    spec: dict[str, Any]
    files: dict[str, Any] | None
    placement: str
    hosts: list[str] | None
    window: dict[str, float]
    metric: dict[str, Any]
    description: str
    source: str
    cells: list[CellEntry]
    runs: list[tuple[str, int]]
    #: Cell key → the rate its first run holds, for a rate search's first step (the later
    #: steps are queued as the search goes: :mod:`store.ledger.rate_steps`).
    step_rates: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class EnqueueResult:
    """What enqueueing did: the experiment row id and run counts by what happened to them."""

    experiment_id: int
    queued: int
    kept_done: int
    kept_failed: int
    requeued: int


def enqueue(
    db: ResultsDB,
    entry: ExperimentEntry,
    *,
    host_id: str,
    fresh: bool = False,
    retry_failed: bool = False,
) -> EnqueueResult:
    """Put an experiment's runs in the queue, reusing finished runs of the same cells.

    ``entry`` is stored on the experiment and cell rows; what happens to each cell ×
    repetition that has a run already is :func:`resume_decision`, and so is each later step of
    a rate search (queued after the listed runs; ``fresh`` does not reach them). Runs of the
    experiment whose worker is gone are taken over first (``host_id``: the host this runs on).
    """
    counts = {"queued": 0, "kept_done": 0, "kept_failed": 0, "requeued": 0}
    with db.session() as session, session.begin():
        row = _experiment_row(session, entry)
        mark_abandoned(session, row.id, host_id=host_id)
        cell_rows = _cell_rows(session, row.id, entry)
        listed = set(entry.runs)
        for order_index, (cell_key, repetition) in enumerate(entry.runs):
            crow = cell_rows[cell_key]
            latest = _latest_attempt(session, crow.id, repetition)
            if latest is None:
                session.add(
                    Run(cell_id=crow.id, repetition=repetition, attempt=1, order_index=order_index,
                        step_rate=entry.step_rates.get(cell_key))
                )
                counts["queued"] += 1
                continue
            _resume(session, latest, order_index, counts, fresh=fresh, retry_failed=retry_failed)
        # A rate search's later steps are not in the file's runs (the search queued them as it
        # went): each is resumed like a run, so a step stopped part-way is measured again at its
        # rate, after the runs listed. ``--fresh`` requeues a search's first step only (its
        # later steps are what it found: start it again under a new name), so not here.
        next_index = len(entry.runs)
        for cell_key, repetition in _search_steps_stored(session, row.id):
            if (cell_key, repetition) in listed:
                continue
            latest = _latest_attempt(session, cell_rows[cell_key].id, repetition)
            assert latest is not None
            _resume(session, latest, next_index, counts, fresh=False, retry_failed=retry_failed)
            next_index += 1
        experiment_id = row.id
    return EnqueueResult(experiment_id=experiment_id, **counts)


def _latest_attempt(session: Session, cell_id: int, repetition: int) -> Run | None:
    """The highest attempt of one cell × repetition (None: never queued)."""
    return session.scalar(
        select(Run).where(Run.cell_id == cell_id, Run.repetition == repetition)
        .order_by(Run.attempt.desc()).limit(1))


def _resume(session: Session, latest: Run, order_index: int, counts: dict[str, int], *,
            fresh: bool, retry_failed: bool) -> None:
    """Apply :func:`resume_decision` to one cell × repetition's latest attempt, counting it."""
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
        add_attempt(session, latest, order_index)
        counts["requeued"] += 1


def _search_steps_stored(session: Session, experiment_id: int) -> list[tuple[str, int]]:
    """Each rate-search step stored for the experiment, as ``(cell key, step)``, in cell and
    step order."""
    # The position is selected too: PostgreSQL orders a DISTINCT only by what it selects.
    return [(key, step) for _, key, step in session.execute(
        select(Cell.position, Cell.cell_key, Run.repetition).join(Run, Run.cell_id == Cell.id)
        .where(Cell.experiment_id == experiment_id, Run.step_rate.is_not(None))
        .distinct().order_by(Cell.position, Run.repetition))]


def _experiment_row(session: Session, entry: ExperimentEntry) -> Experiment:
    """The experiment's row (same name and measurement hash), created or brought up to date."""
    row = session.scalar(
        select(Experiment).where(
            Experiment.name == entry.name, Experiment.measurement_hash == entry.measurement_hash
        )
    )
    if row is None:
        row = Experiment(name=entry.name, measurement_hash=entry.measurement_hash,
                         spec=entry.spec, window=entry.window, metric=entry.metric)
        session.add(row)
    row.spec = entry.spec
    row.files = entry.files
    row.placement = entry.placement
    row.hosts = entry.hosts
    row.window = entry.window
    row.metric = entry.metric
    row.description = entry.description
    row.source_path = entry.source
    session.flush()
    return row


def _cell_rows(session: Session, experiment_id: int, entry: ExperimentEntry
               ) -> dict[str, Cell]:
    """The experiment's cell rows by key, each with its stored translation; what is still
    queued for cells that left the experiment file is cancelled."""
    existing = {
        c.cell_key: c
        for c in session.scalars(select(Cell).where(Cell.experiment_id == experiment_id))
    }
    cell_rows: dict[str, Cell] = {}
    for cell in entry.cells:
        crow = existing.get(cell.key)
        if crow is None:
            crow = Cell(experiment_id=experiment_id, cell_key=cell.key, knobs=cell.knobs,
                        variables={})
            session.add(crow)
        crow.position = cell.position
        crow.label = cell.label
        crow.is_baseline = cell.is_baseline
        crow.knobs = cell.knobs
        crow.variables = cell.translation
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


class StoredExperiment(NamedTuple):
    """What the ledger keeps of a queued experiment, in the order
    :meth:`core.experiment.queued.QueuedExperiment.from_stored` takes it."""

    experiment_id: int
    name: str
    spec: dict[str, Any]
    source: str
    files: dict[str, Any] | None
    #: Cell key → the translation stored with it.
    translations: dict[str, dict[str, Any]]


def stored_experiment(db: ResultsDB, experiment_id: int) -> StoredExperiment:
    """Read a queued experiment's row and its cells' stored translations back.

    Raises
    ------
    StoreError
        No such experiment.
    """
    with db.session() as s:
        row = s.get(Experiment, experiment_id)
        if row is None:
            raise StoreError(f"no experiment {experiment_id}", where="experiments")
        spec, source, files, name = row.spec, row.source_path or row.name, row.files, row.name
        stored = {c.cell_key: c.variables for c in
                  s.scalars(select(Cell).where(Cell.experiment_id == experiment_id))}
    return StoredExperiment(experiment_id, name, spec, source, files, stored)
