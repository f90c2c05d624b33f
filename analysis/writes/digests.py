"""What a run digest holds: the per-run figures of a set of runs, as their consumers take them.

:mod:`analysis.writes.run_digest` computes and caches the figures; :mod:`analysis.writes.cost`,
:mod:`analysis.writes.ledger` and :mod:`analysis.writes.bound` read them. The container lives
apart from both so that the readers need not import the digest that calls them (an import
circle, were the type annotations counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class RunDigests:
    """The digest figures of a set of runs, as the consumers take them."""

    #: :func:`analysis.reading.memory.run_memory` of the runs that have good samples.
    memory: pd.DataFrame
    #: :func:`analysis.steadiness.claims.checkpoint_age_peaks` (index: run id).
    checkpoint_age_peaks: pd.Series
    #: :func:`analysis.reading.series.window_growth` of
    #: :data:`analysis.writes.run_digest.WINDOW_COUNTERS` (index: run id).
    window: pd.DataFrame
    #: :func:`analysis.steadiness.transients.run_figures` (run id → figures; runs without a window
    #: sample are absent).
    transients: dict[int, dict[str, Any]]
    #: :func:`analysis.writes.cost.window_usage` (index: run id).
    usage: pd.DataFrame
    #: :func:`analysis.writes.bound.window_pressure` (run id → figures; runs without a window
    #: sample are absent).
    pressure: dict[int, dict[str, Any]]
