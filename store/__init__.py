"""Results database: SQLAlchemy models, Alembic migrations, sessions, and the run ledger
(:mod:`store.ledger`: every statement on the state of a run or a worker)."""

from store.db import ResultsDB, resolve_url, upgrade
from store.models import (
    Base,
    Cell,
    Experiment,
    Interval,
    Run,
    RunEvent,
    RunMetadata,
    RunVariable,
    Sample,
)

__all__ = [
    "Base",
    "Cell",
    "Experiment",
    "Interval",
    "ResultsDB",
    "Run",
    "RunEvent",
    "RunMetadata",
    "RunVariable",
    "Sample",
    "resolve_url",
    "upgrade",
]
