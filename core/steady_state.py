"""Where a run reached steady state: MSER-5 truncation of its warm-up.

The Marginal Standard Error Rule (White 1997; MSER-5: White, Cobb & Spratt 2000) is the
standard truncation rule of simulation output analysis: group the series into batches of 5
observations, and drop the first ``d`` batches where ``d`` minimises

    MSER(d) = Σ_{i>d} (Y_i − Ȳ_d)² / (n − d)²

— the squared standard error of the mean of what is kept. A warm-up transient (a cold buffer
pool filling, checkpoint age climbing to its limit) inflates the sum until it is cut; cutting
stationary data only shrinks ``n − d`` and so raises the error. ``d`` is searched in the first
half of the batches; a minimum at that bound means the series never settled (it drifts to its
end), and the caller should say so rather than measure a sliver.

A run's steady state starts where every series it is judged by (throughput, checkpoint age,
dirty pages) has passed its own truncation point, capped by a maximum warm-up.

Pure (numpy only): the runner applies it at the end of a ``window: {start: steady}`` run
(``runner/run/steady.py``) and the analysis re-exports it (``analysis/statistics/steady_state.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Observations per batch (the "5" of MSER-5).
BATCH = 5
#: Fewest batches the rule is applied to (below it a truncation point means nothing).
MIN_BATCHES = 4


@dataclass(frozen=True)
class Truncation:
    """The MSER-5 answer for one series.

    Attributes
    ----------
    start:
        Index of the first observation kept (a multiple of :data:`BATCH`).
    reached:
        False when the minimum sits at the half-way bound (never settled) or the series is too
        short to judge.
    batches:
        Number of complete batches judged.
    """

    start: int
    reached: bool
    batches: int


def mser5(values: Sequence[float] | np.ndarray) -> Truncation:
    """MSER-5 truncation point of one series (NaNs dropped from the end of each batch's mean).

    Incomplete trailing observations (fewer than a batch) are not judged.
    """
    y = np.asarray(values, dtype=float)
    n = y.size // BATCH
    if n < MIN_BATCHES:
        return Truncation(0, False, n)
    batches = np.nanmean(y[: n * BATCH].reshape(n, BATCH), axis=1)
    batches = batches[np.isfinite(batches)]
    n = batches.size
    if n < MIN_BATCHES:
        return Truncation(0, False, n)
    # Suffix sums give every MSER(d) in one pass.
    rev = batches[::-1]
    count = np.arange(1, n + 1)
    mean = np.cumsum(rev) / count
    sq = np.cumsum(rev * rev) / count
    ss = (sq - mean * mean) * count  # Σ (Y − Ȳ)² of the last k batches
    kept = count[::-1]  # n − d for d = 0 … n−1
    mser = ss[::-1] / (kept * kept)
    # Searched over the first half only: near the end a few remaining batches can have a tiny
    # spread by chance. A minimum at the half-way bound means MSER was still falling there:
    # the series never settled.
    half = n // 2
    d = int(np.argmin(mser[: half + 1]))
    return Truncation(d * BATCH, d < half, n)


def steady_start(series: Mapping[str, Sequence[float] | np.ndarray], *, max_start: int
                 ) -> tuple[int, dict[str, Truncation]]:
    """First observation index at which every series has settled, capped at ``max_start``.

    Parameters
    ----------
    series:
        Equal-length series on one time base (e.g. throughput, checkpoint age, dirty %).
    max_start:
        The longest warm-up allowed (index); a series that never settles contributes it.

    Returns
    -------
    (start, per series)
        The index and each series' :class:`Truncation`.
    """
    found = {name: mser5(values) for name, values in series.items()}
    starts = [t.start if t.reached else max_start for t in found.values()]
    return min(max(starts, default=0), max_start), found
