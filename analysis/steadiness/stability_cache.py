"""A content-addressed cache of stability figures, so a run's tests are computed once.

The stability figures of a run (:func:`analysis.steadiness.stability.stability`) cost ≈ 3 ms of CPU
per run — surrogate periodograms and resampled shape tests on ~90–180 intervals — which is most
of ``frames.load`` on a 500-run experiment (``docs/benchmarks.md``). They depend on nothing
but the window's series and the code that computes them, so they are stored under a key made
of exactly that:

    sha256(code fingerprint, interval_s, values, times)

where the *code fingerprint* hashes the source of every module the figures come from and the
numpy/scipy versions. A changed algorithm, a changed series or a different library is a new
key: an entry can never be stale, only unused. Nothing about the results database enters the
key, so the cache serves SQLite and PostgreSQL stores, committed read-only databases and
opened bundles alike, and the results database holds only what was measured.

The figures are kept in the analysis cache (:mod:`analysis.reading.figure_cache`: one SQLite file in
flushbench's cache folder, ``FLUSHBENCH_ANALYSIS_CACHE=0`` turns it off); it is an optimisation
only, and a figure is the same whether it was stored or computed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from analysis.reading.figure_cache import cache_path, enabled, get_or_compute, source_fingerprint
from analysis.steadiness.stability import Stability, stability

__all__ = ["SOURCES", "Series", "cache_path", "code_fingerprint", "decode", "enabled", "encode",
           "same_figures", "series_key", "stability_many"]

#: Modules whose source decides the figures (their text is part of every key).
SOURCES = (
    "analysis/steadiness/stability.py",
    "analysis/statistics/_series.py",
    "analysis/statistics/oscillation.py",
    "analysis/statistics/percentiles.py",
    "analysis/statistics/probability.py",
    "analysis/statistics/shape.py",
)
#: The cache table of these figures.
TABLE = "stability"


@dataclass(frozen=True)
class Series:
    """One run's window: throughput per interval, the interval length and interval times."""

    values: np.ndarray
    interval_s: float
    times_s: np.ndarray


@functools.cache
def code_fingerprint() -> str:
    """A hash of the figures' source code and the numeric libraries' versions."""
    import scipy

    return source_fingerprint(SOURCES, f"numpy {np.__version__} scipy {scipy.__version__}")


def series_key(series: Series) -> str:
    """The key of one series' figures (see the module docstring)."""
    h = hashlib.sha256(code_fingerprint().encode())
    h.update(np.float64(series.interval_s).tobytes())
    values = np.ascontiguousarray(series.values, dtype=np.float64)
    times = np.ascontiguousarray(series.times_s, dtype=np.float64)
    h.update(np.int64(values.size).tobytes())
    h.update(values.tobytes())
    h.update(times.tobytes())
    return h.hexdigest()


def encode(st: Stability) -> str:
    """The figures as JSON (NaN kept: Python's json writes and reads it)."""
    def plain(value: object) -> object:  # numpy scalars (np.bool_, np.int64) → Python's
        return value.item() if isinstance(value, np.generic) else value

    return json.dumps({f.name: plain(getattr(st, f.name)) for f in fields(Stability)})


def decode(text: str) -> Stability:
    """The figures back from :func:`encode`'s JSON; ValueError when they do not fit."""
    raw = json.loads(text)
    names = {f.name for f in fields(Stability)}
    if set(raw) != names:
        raise ValueError(f"fields {sorted(set(raw) ^ names)} differ")
    raw["warnings"] = tuple(raw["warnings"])
    return Stability(**raw)


def stability_many(series: Sequence[Series]) -> list[Stability]:
    """The stability figures of every series, from the cache where known, computed otherwise.

    Equal to ``[stability(s.values, s.interval_s, s.times_s) for s in series]`` — the cache
    never changes a figure (tests/analysis/test_stability_cache.py).
    """
    keys = [series_key(s) for s in series]
    return get_or_compute(TABLE, keys, lambda idx: [encode(_compute(series[i])) for i in idx],
                          decode)


def _compute(s: Series) -> Stability:
    return stability(s.values, interval_s=s.interval_s, times_s=s.times_s)


def same_figures(a: Stability, b: Stability) -> bool:
    """Whether two figure sets are equal, NaN equal to NaN (for tests and checks)."""
    for f in fields(Stability):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y:
            return False
    return True
