"""Writes what a run produces into the store as it happens (so a crash loses nothing finished).

Intervals are written by the thread reading the driver, samples by the sampler thread; each
write is its own short transaction, which SQLite (WAL, busy timeout) and PostgreSQL both take.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from sqlalchemy import update

from store.db import ResultsDB
from store.models import Interval, Run, RunEvent, RunMetadata, RunVariable, Sample

#: Evidence text kept per event (an error-log tail, the driver's stderr...).
MAX_EVIDENCE_CHARS = 20_000


class RunRecorder:
    """Store writer bound to one run."""

    def __init__(self, db: ResultsDB, run_id: int) -> None:
        self.db = db
        self.run_id = run_id
        self.intervals_written = 0
        self.samples_written = 0

    def event(self, level: str, kind: str, message: str, evidence: str | None = None) -> None:
        """Record an event (errors keep their evidence, trimmed to the last 20,000 chars)."""
        if evidence is not None and len(evidence) > MAX_EVIDENCE_CHARS:
            evidence = "…" + evidence[-MAX_EVIDENCE_CHARS:]
        with self.db.session() as s, s.begin():
            s.add(
                RunEvent(
                    run_id=self.run_id, level=level, kind=kind, message=message, evidence=evidence
                )
            )

    def set_run_fields(self, **fields: Any) -> None:
        """Update columns of the run row (run_dir, measure_started_at, driver_summary…)."""
        with self.db.session() as s, s.begin():
            s.execute(update(Run).where(Run.id == self.run_id).values(**fields))

    def metadata(self, **fields: Any) -> None:
        """Store (or replace) the run's metadata row."""
        with self.db.session() as s, s.begin():
            s.merge(RunMetadata(run_id=self.run_id, **fields))

    def variables(self, values: dict[str, str]) -> None:
        """Store the ``SHOW GLOBAL VARIABLES`` snapshot taken right after start."""
        with self.db.session() as s, s.begin():
            s.add_all(
                RunVariable(run_id=self.run_id, name=name, value=str(value))
                for name, value in sorted(values.items())
            )

    def interval(self, record: Any) -> None:
        """Store one driver interval (an ``IntervalRecord``)."""
        fields = dataclasses.asdict(record)
        with self.db.session() as s, s.begin():
            s.add(Interval(run_id=self.run_id, **fields))
        self.intervals_written += 1

    def sample(self, record: Any) -> None:
        """Store one sampler tick (a ``SampleRecord``)."""
        fields = dataclasses.asdict(record)
        with self.db.session() as s, s.begin():
            s.add(Sample(run_id=self.run_id, **fields))
        self.samples_written += 1


def as_utc(value: dt.datetime) -> dt.datetime:
    """Aware UTC datetime (SQLite hands back naive ones)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
