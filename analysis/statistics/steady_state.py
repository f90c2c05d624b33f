"""Where a run reached steady state: MSER-5 truncation of its warm-up.

The rule lives in :mod:`core.steady_state`, because the runner applies it at the end of
each run of a ``window: {start: steady}`` experiment (and records the start it chose) while the
analysis uses it on stored series; neither may import the other.
"""

from __future__ import annotations

from core.steady_state import BATCH, MIN_BATCHES, Truncation, mser5, steady_start

__all__ = ["BATCH", "MIN_BATCHES", "Truncation", "mser5", "steady_start"]
