"""Valid results databases of every shape a read verb may meet (for the read-verb table).

Each shape is a real database at the head revision, written through the store's own models:
:func:`tests.support.synthetic_store.build_store` writes a short experiment exactly as the
runner would, then the shape removes or rewrites rows through the same ORM models (a run that
is still queued has no metadata, no intervals and no samples; a done run whose sampler never
wrote a row has intervals only…). The shapes are states the product itself can reach: a matrix
queued and not yet claimed, a night where every run failed, a worker killed between the
driver's intervals and the sampler's rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import delete, select, update

from store.db import ResultsDB
from store.models import Cell, Interval, Run, RunMetadata, RunVariable, Sample
from tests.support.synthetic_store import SynthCell, build_store

#: The experiment every shape holds (the verbs name it).
NAME = "shape"


def _build(path: Path, cells: list[SynthCell], repetitions: int = 2) -> ResultsDB:
    """A short two-cell experiment (every run done) in a new database at ``path``."""
    db = ResultsDB(path)
    build_store(db, cells, name=NAME, repetitions=repetitions, warmup=20, duration=60,
                interval_s=10, sample_interval_s=10, n_counters=60)
    return db


def _two_cells() -> list[SynthCell]:
    return [SynthCell(knobs={"doublewrite": True}), SynthCell(knobs={"doublewrite": False},
                                                              notpm=40000)]


def _run_ids(db: ResultsDB) -> list[int]:
    with db.session() as s:
        return list(s.scalars(select(Run.id).order_by(Run.id)))


def _unstart(db: ResultsDB, run_ids: list[int], status: str) -> None:
    """Make runs look like they never ran (queued) or never finished measuring."""
    with db.session() as s, s.begin():
        for table in (Interval, Sample, RunMetadata, RunVariable):
            s.execute(delete(table).where(table.run_id.in_(run_ids)))
        never_started = status == "queued"
        # A running run holds a live lease of a worker on another host (else the next verb
        # that reaps takes it over as interrupted).
        lease = dict(host_id="other-host", lease_owner="other-host:4242",
                     lease_expires_at=dt.datetime(2100, 1, 1, tzinfo=dt.UTC)) \
            if status == "running" else {}
        s.execute(update(Run).where(Run.id.in_(run_ids)).values(
            status=status, driver_summary=None, **lease,
            started_at=None if never_started else Run.started_at,
            measure_started_at=None, finished_at=None,
            error="mysqld exited with status 1 (see evidence)" if status == "failed" else None,
        ))


def _drop(db: ResultsDB, run_ids: list[int], *tables: type) -> None:
    with db.session() as s, s.begin():
        for table in tables:
            s.execute(delete(table).where(table.run_id.in_(run_ids)))


def no_cells(path: Path) -> ResultsDB:
    """An experiment whose matrix has no cell (every cell excluded, or deleted by hand)."""
    db = _build(path, _two_cells())
    with db.session() as s, s.begin():
        s.execute(delete(Cell))  # cascades to runs and their rows (foreign keys are on)
    return db


def cells_no_runs(path: Path) -> ResultsDB:
    """Cells but not one run row."""
    db = _build(path, _two_cells())
    with db.session() as s, s.begin():
        s.execute(delete(Run))
    return db


def only_queued(path: Path) -> ResultsDB:
    """A matrix queued, nothing claimed yet."""
    db = _build(path, _two_cells())
    _unstart(db, _run_ids(db), "queued")
    return db


def only_running(path: Path) -> ResultsDB:
    """The first runs claimed and running (no rows yet), the rest queued."""
    db = _build(path, _two_cells())
    ids = _run_ids(db)
    _unstart(db, ids[:1], "running")
    _unstart(db, ids[1:], "queued")
    return db


def only_failed(path: Path) -> ResultsDB:
    """Every run failed before the driver reported anything."""
    db = _build(path, _two_cells())
    _unstart(db, _run_ids(db), "failed")
    return db


def done_without_rows(path: Path) -> ResultsDB:
    """Done runs with neither intervals nor samples (a driver that reported nothing)."""
    db = _build(path, _two_cells())
    _drop(db, _run_ids(db), Interval, Sample)
    return db


def intervals_no_samples(path: Path) -> ResultsDB:
    """Done runs with driver intervals but no sampler row (sampling off, or the sampler died)."""
    db = _build(path, _two_cells())
    _drop(db, _run_ids(db), Sample)
    return db


def samples_no_intervals(path: Path) -> ResultsDB:
    """Done runs with sampler rows but no driver interval."""
    db = _build(path, _two_cells())
    _drop(db, _run_ids(db), Interval)
    return db


def baseline_failed(path: Path) -> ResultsDB:
    """The baseline's runs all failed; the other cell's are done."""
    db = _build(path, _two_cells())
    with db.session() as s:
        ids = list(s.scalars(select(Run.id).join(Cell).where(Cell.is_baseline)))
    _unstart(db, ids, "failed")
    return db


def one_cell_one_run(path: Path) -> ResultsDB:
    """The smallest complete experiment: one cell, one done run."""
    return _build(path, [SynthCell(knobs={"doublewrite": True})], repetitions=1)


def mix(path: Path) -> ResultsDB:
    """Every status at once: done (complete, rows missing either side), failed, retried,
    running and queued runs across three cells."""
    cells = [*_two_cells(), SynthCell(knobs={"doublewrite": False}, notpm=41000,
                                      failed_repetitions=(2,), retried_repetitions=(1,))]
    db = _build(path, cells, repetitions=3)
    ids = _run_ids(db)
    _drop(db, ids[0:1], Sample)
    _drop(db, ids[1:2], Interval)
    _unstart(db, ids[-1:], "queued")
    _unstart(db, ids[-2:-1], "running")
    return db


def empty(path: Path) -> ResultsDB:
    """A new results database: not one experiment."""
    return ResultsDB(path)


#: Shape name → builder (each writes a new database at the path it is given).
SHAPES: dict[str, Callable[[Path], ResultsDB]] = {
    "empty": empty,
    "no-cells": no_cells,
    "cells-no-runs": cells_no_runs,
    "only-queued": only_queued,
    "only-running": only_running,
    "only-failed": only_failed,
    "done-without-rows": done_without_rows,
    "intervals-no-samples": intervals_no_samples,
    "samples-no-intervals": samples_no_intervals,
    "baseline-failed": baseline_failed,
    "one-cell-one-run": one_cell_one_run,
    "mix": mix,
}
