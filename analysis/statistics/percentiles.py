"""Nearest-rank percentiles: every percentile flushbench prints is a value that occurred.

tpcc-mysql reports response-time percentiles by nearest rank, and so does the Go driver;
numpy's default (linear interpolation) invents values between two observations — with five
zero intervals out of 90, its p5 is a throughput no interval had. Nearest rank (the
definition in Hyndman & Fan 1996, type 1 "inverse of the empirical CDF"):

    rank = ceil(p / 100 × n), at least 1;  percentile = the rank-th smallest value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def nearest_rank(values: Sequence[float] | np.ndarray, pct: float) -> float:
    """The ``pct``-th percentile by nearest rank; NaN values are ignored.

    Parameters
    ----------
    values:
        Observations (any order).
    pct:
        Percentile in [0, 100]; 0 gives the minimum, 100 the maximum.

    Returns
    -------
    float
        One of the observations, or NaN when there is none.

    Raises
    ------
    ValueError
        ``pct`` outside [0, 100].
    """
    return float(nearest_ranks(values, [pct])[0])


def nearest_ranks(
    values: Sequence[float] | np.ndarray, pcts: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Several nearest-rank percentiles at once (one sort); see :func:`nearest_rank`."""
    p = np.asarray(pcts, dtype=float)
    if np.any((p < 0) | (p > 100)) or not np.all(np.isfinite(p)):
        raise ValueError(f"percentiles must lie in [0, 100], got {list(p)}")
    arr = np.asarray(values, dtype=float)
    arr = np.sort(arr[np.isfinite(arr)])
    if arr.size == 0:
        return np.full(p.shape, math.nan)
    # The small epsilon keeps 5 % of 20 at rank 1 exactly (0.05 * 20 = 1.0000000000000002).
    ranks = np.ceil(p / 100.0 * arr.size - 1e-9).astype(int)
    ranks = np.clip(ranks, 1, arr.size)
    return arr[ranks - 1]
