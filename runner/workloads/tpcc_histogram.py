"""The Go TPC-C driver's latency histograms, as ``tpcc run --json`` emits them.

The driver keeps a log-linear histogram of response times per transaction type. Its first JSON
line states the bucket layout (``{"type":"histogram_layout",...}``); each interval line carries
every type's non-empty buckets (``"hist": {"new_order": [[index, count], ...], ...}``) beside its
exact ``max_ms``. Merging the buckets of several intervals and reading a percentile off the
merge gives exactly what the driver computes over the same intervals (its summary's
``latency`` for the measurement phase): percentiles are merged, never averaged.

A percentile is the midpoint of the whole microseconds its bucket holds, at most the exact
maximum: within ``relative_width / 2`` of the true value (docs/tpcc.md, "JSON output").
"""

from __future__ import annotations

from typing import Any

from core.errors import quote

# The layout, merging and percentiles are shared with the store and the analysis
# (core/latency.py); re-exported here, where the driver's JSON is read.
from core.latency import (
    SCHEME,
    UNIT,
    Buckets,
    HistogramFormatError,
    HistogramLayout,
    TypeHistogram,
    merge,
    merged_latency,
    percentile_ms,
)

__all__ = ["SCHEME", "UNIT", "Buckets", "HistogramFormatError", "HistogramLayout",
           "TypeHistogram", "merge", "merged_latency", "parse_buckets", "percentile_ms",
           "type_histogram"]


def parse_buckets(value: Any, layout: HistogramLayout) -> Buckets:
    """Read one type's ``[[index, count], ...]`` list.

    Raises
    ------
    HistogramFormatError
        Unless it is a list of two-integer pairs with increasing indexes inside the layout and
        counts above 0.
    """
    if not isinstance(value, list):
        raise HistogramFormatError(f"buckets are {type(value).__name__}, not a list")
    pairs: list[tuple[int, int]] = []
    prev = -1
    for pair in value:
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(type(v) is int for v in pair)):
            raise HistogramFormatError(f"bucket {quote(pair)} is not an [index, count] pair")
        index, count = pair
        if index <= prev or index >= layout.buckets or count < 1:
            raise HistogramFormatError(
                f"bucket {quote(pair)} after index {prev}: need increasing indexes below "
                f"{layout.buckets} and counts above 0")
        pairs.append((index, count))
        prev = index
    return tuple(pairs)


def type_histogram(value: Any, max_ms: Any, count: Any,
                   layout: HistogramLayout) -> TypeHistogram:
    """One type's interval histogram from its buckets, ``max_ms`` and ``count``.

    Raises
    ------
    HistogramFormatError
        When the buckets do not parse (:func:`parse_buckets`), do not add up to ``count``, or
        the maximum is not in the last non-empty bucket.
    """
    buckets = parse_buckets(value, layout)
    top = float(max_ms)
    total = sum(c for _, c in buckets)
    if total != count:
        raise HistogramFormatError(f"buckets hold {total} transactions, count is {count!r}")
    if buckets:
        low, high = layout.bounds_us(buckets[-1][0])
        top_us = round(top * 1000)
        if top_us < low or (top_us >= high and buckets[-1][0] != layout.buckets - 1):
            raise HistogramFormatError(
                f"max_ms {top} is not in the last non-empty bucket [{low}, {high}) µs")
    return TypeHistogram(buckets, top)
