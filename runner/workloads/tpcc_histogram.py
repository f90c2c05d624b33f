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

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from flushbench.errors import quote

#: The only layout the driver emits; another ``scheme`` or ``unit`` is not read.
SCHEME = "log-linear"
UNIT = "us"

#: One type's sparse buckets in one interval: ``(index, count)`` pairs, indexes increasing.
Buckets = tuple[tuple[int, int], ...]


class HistogramFormatError(ValueError):
    """A histogram line or field that cannot be read (the run is then kept without it)."""


@dataclass(frozen=True)
class HistogramLayout:
    """The bucket scheme of the ``histogram_layout`` line.

    Buckets ``0 .. exact_below_us - 1`` each hold exactly that many microseconds; above, each
    power of two ``[2^k, 2^(k+1))`` µs is split into ``sub_buckets`` equal buckets. The last of
    ``buckets`` also holds every larger value. ``relative_width`` (``1 / sub_buckets``) is the
    precision: no bucket is wider than that share of its lower bound.
    """

    exact_below_us: int
    sub_buckets: int
    buckets: int
    relative_width: float

    @classmethod
    def from_line(cls, obj: Mapping[str, Any]) -> HistogramLayout:
        """Read a ``histogram_layout`` object.

        Raises
        ------
        HistogramFormatError
            On another scheme or unit, a missing field, or parameters that do not describe
            the driver's log-linear layout (``exact_below_us`` must be ``2 × sub_buckets``, a
            power of two).
        """
        if obj.get("scheme") != SCHEME or obj.get("unit") != UNIT:
            raise HistogramFormatError(
                f"histogram layout scheme {obj.get('scheme')!r} unit {obj.get('unit')!r}, "
                f"this flushbench reads {SCHEME!r} in {UNIT!r}")
        try:
            layout = cls(int(obj["exact_below_us"]), int(obj["sub_buckets"]),
                         int(obj["buckets"]), float(obj["relative_width"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise HistogramFormatError(f"histogram layout lacks a field ({exc})") from None
        sub = layout.sub_buckets
        if (sub < 1 or sub & (sub - 1) or layout.exact_below_us != 2 * sub
                or layout.buckets <= layout.exact_below_us
                or (layout.buckets - layout.exact_below_us) % sub
                or not math.isclose(layout.relative_width, 1 / sub)):
            raise HistogramFormatError(f"histogram layout {quote(dict(obj), 200)} is not"
                                       " log-linear")
        return layout

    def bounds_us(self, index: int) -> tuple[int, int]:
        """Bucket ``index``'s range ``[low, high)`` in whole microseconds."""
        if index < self.exact_below_us:
            return index, index + 1
        above = index - self.exact_below_us
        shift = above // self.sub_buckets + 1
        low = (above % self.sub_buckets + self.sub_buckets) << shift
        return low, low + (1 << shift)

    def midpoint_us(self, index: int) -> float:
        """The value a percentile in bucket ``index`` reports: ``low + (width - 1) / 2``."""
        low, high = self.bounds_us(index)
        return low + (high - low - 1) / 2


@dataclass(frozen=True)
class TypeHistogram:
    """One transaction type's histogram in one interval: its buckets and exact maximum."""

    buckets: Buckets
    max_ms: float


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


def merge(histograms: Iterable[TypeHistogram]) -> tuple[dict[int, int], float]:
    """Merged bucket counts (index → count) and the maximum of several histograms."""
    counts: dict[int, int] = {}
    top = 0.0
    for hist in histograms:
        for index, count in hist.buckets:
            counts[index] = counts.get(index, 0) + count
        top = max(top, hist.max_ms)
    return counts, top


def percentile_ms(layout: HistogramLayout, counts: Mapping[int, int], max_ms: float,
                  p: float) -> float | None:
    """The ``p``-th percentile (0 < p ≤ 100) in ms, as the driver computes it; None if empty.

    The value at rank ``ceil(p/100 × n)``: its bucket's midpoint, at most the exact maximum.
    The driver prints it to 3 decimals; this is the unrounded value.
    """
    n = sum(counts.values())
    if n == 0:
        return None
    share = p / 100 * n
    rank = max(1, math.ceil(share))
    seen = 0
    for index in sorted(counts):
        seen += counts[index]
        if seen >= rank:
            return min(layout.midpoint_us(index), round(max_ms * 1000)) / 1000
    return max_ms


def merged_latency(layout: HistogramLayout,
                   histograms: Iterable[TypeHistogram]) -> dict[str, float | None]:
    """``p95_ms``, ``p99_ms`` and ``max_ms`` of several intervals' histograms merged."""
    counts, top = merge(histograms)
    if not counts:
        return {"p95_ms": None, "p99_ms": None, "max_ms": None}
    return {"p95_ms": percentile_ms(layout, counts, top, 95),
            "p99_ms": percentile_ms(layout, counts, top, 99), "max_ms": top}
