"""Latency histograms for the synthetic store: what the Go driver would print per interval.

Each type's response times are lognormal around a median that grows as the interval's
throughput falls below the run's level (a fixed number of connections: Little's law), so a
hole in the throughput is a stall in the latency. The bucket counts are drawn per interval
(a multinomial over the driver's layout), stored with :func:`store.latency_codec.encode`, and
the interval's printed figures (count, p95, p99, exact max per type) are read off them the
way the driver reads its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import ndtr

from core.latency import HistogramLayout, dense_percentile_ms
from store.latency_codec import encode

#: The Go driver's layout (docs/tpcc.md, "JSON output").
LAYOUT = HistogramLayout.of(128, 64, 2304)
#: Median response time (ms) and log-normal spread of each type at the run's level.
TYPE_LATENCY: dict[str, tuple[float, float]] = {
    "new_order": (6.0, 0.55), "payment": (3.0, 0.55), "order_status": (1.5, 0.5),
    "delivery": (25.0, 0.5), "stock_level": (8.0, 0.6),
}
#: Bucket edges in µs: bucket i holds [EDGES[i], EDGES[i + 1]).
_EDGES = np.array([LAYOUT.bounds_us(i)[0] for i in range(LAYOUT.buckets)]
                  + [LAYOUT.bounds_us(LAYOUT.buckets - 1)[1]], dtype=float)
_LOG_EDGES = np.log(np.maximum(_EDGES, 0.5))


def _pmf(median_ms: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """The buckets a lognormal response time falls into with any real chance, and those
    chances (summing to 1)."""
    cdf = ndtr((_LOG_EDGES - np.log(median_ms * 1000)) / sigma)
    cdf[0], cdf[-1] = 0.0, 1.0
    p = np.diff(cdf)
    keep = np.flatnonzero(p > 1e-9)
    return keep, p[keep] / p[keep].sum()


def interval_latency(rng: np.random.Generator, counts: dict[str, int], slowdown: float
                     ) -> tuple[bytes, dict[str, dict[str, float]]]:
    """One interval's ``latency_z`` and the figures the driver prints per type.

    ``counts``: transactions per type in the interval; ``slowdown``: how many times the
    median response time is above the run's level.
    """
    stored: dict[str, tuple[np.ndarray, float]] = {}
    printed: dict[str, dict[str, float]] = {}
    for name, n in counts.items():
        median, sigma = TYPE_LATENCY[name]
        where, p = _pmf(median * slowdown, sigma)
        drawn = rng.multinomial(int(n), p)
        filled = drawn > 0
        index, count = where[filled], drawn[filled]
        if index.size:
            low, high = LAYOUT.bounds_us(int(index[-1]))
            max_ms = (low + int(rng.integers(high - low))) / 1000
        else:
            max_ms = 0.0
        stored[name] = (np.column_stack([index, count]), max_ms)
        dense = np.zeros(LAYOUT.buckets, dtype=np.int64)
        dense[index] = count
        figures: dict[str, Any] = {"count": float(n)}
        for q in (95, 99):
            # Printed to 3 decimals, as the driver prints it.
            figures[f"p{q}_ms"] = round(dense_percentile_ms(LAYOUT, dense, max_ms, q) or 0.0, 3)
        figures["max_ms"] = max_ms
        printed[name] = figures
    return encode(LAYOUT, stored), printed
