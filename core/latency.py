"""Latency histograms: the log-linear bucket layout, merging, and percentiles read off a merge.

The Go TPC-C driver keeps one log-linear histogram of response times per transaction type and
interval (docs/tpcc.md, "JSON output"); the runner stores each interval's buckets
(:mod:`store.latency_codec`) and the analysis merges them. Both sides read percentiles with the
rules here, which are the driver's own: merging the buckets of any set of intervals and reading
a percentile off the sum gives exactly what the driver computes over those intervals —
percentiles are merged, never averaged.

A percentile is the midpoint of the whole microseconds its bucket holds, at most the exact
maximum: within ``relative_width / 2`` of the recorded value (1/128 with the driver's layout).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.errors import quote

#: The only layout the driver emits; another ``scheme`` or ``unit`` is not read.
SCHEME = "log-linear"
UNIT = "us"

#: One type's sparse buckets in one interval: ``(index, count)`` pairs, indexes increasing.
Buckets = tuple[tuple[int, int], ...]
#: The most buckets a layout may have. The driver's has 2,304; a layout read from a stored blob
#: or a driver's line sizes arrays (a dense histogram, its midpoints), so a hostile 2^46 would
#: ask for petabytes.
MAX_BUCKETS = 16_384
#: Bucket counts and exact maxima (µs) stay below this: sums of them in float64 stay exact, and
#: a merge of thousands of intervals stays inside int64.
MAX_VALUE = 1 << 53


class HistogramFormatError(ValueError):
    """A histogram line, field or stored blob that cannot be read (kept without it)."""


@dataclass(frozen=True)
class HistogramLayout:
    """The bucket scheme of the driver's ``histogram_layout`` line.

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
            the driver's log-linear layout (:meth:`checked`).
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
        if not math.isclose(layout.relative_width, 1 / max(1, layout.sub_buckets)):
            raise HistogramFormatError(f"histogram layout {quote(dict(obj), 200)} is not"
                                       " log-linear")
        try:
            return layout.checked()
        except HistogramFormatError as exc:
            raise HistogramFormatError(f"histogram layout {quote(dict(obj), 200)}: {exc}"
                                       ) from None

    @classmethod
    def of(cls, exact_below_us: int, sub_buckets: int, buckets: int) -> HistogramLayout:
        """The layout of these three parameters (``relative_width`` follows), checked."""
        return cls(exact_below_us, sub_buckets, buckets, 1 / max(1, sub_buckets)).checked()

    def checked(self) -> HistogramLayout:
        """This layout, if it is log-linear: ``exact_below_us`` is ``2 × sub_buckets``, a
        power of two, and the buckets above it fill whole powers of two; and at most
        :data:`MAX_BUCKETS` buckets.

        Raises
        ------
        HistogramFormatError
            Otherwise.
        """
        sub = self.sub_buckets
        if self.buckets > MAX_BUCKETS:
            raise HistogramFormatError(
                f"layout of {self.buckets:,} buckets, more than the {MAX_BUCKETS:,} this"
                " flushbench reads")
        if (sub < 1 or sub & (sub - 1) or self.exact_below_us != 2 * sub
                or self.buckets <= self.exact_below_us
                or (self.buckets - self.exact_below_us) % sub):
            raise HistogramFormatError(
                f"layout exact_below_us={self.exact_below_us} sub_buckets={sub}"
                f" buckets={self.buckets} is not log-linear")
        return self

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

    def index_of(self, us: np.ndarray) -> np.ndarray:
        """The bucket of each whole-microsecond value in ``us`` (the driver's ``bucketOf``;
        values beyond the last bucket's range fall in it)."""
        v = np.maximum(np.asarray(us, dtype=np.int64), 0)
        sub_bits = self.sub_buckets.bit_length() - 1
        # frexp's exponent is the bit length of a positive integer (exact below 2^53).
        shift = np.maximum(np.frexp(np.maximum(v, 1).astype(np.float64))[1] - (sub_bits + 1), 1)
        above = self.exact_below_us + (shift - 1) * self.sub_buckets \
            + (v >> shift) - self.sub_buckets
        return np.minimum(np.where(v < self.exact_below_us, v, above), self.buckets - 1)

    @property
    def midpoints_us(self) -> np.ndarray:
        """:meth:`midpoint_us` of every bucket, as one array (read-only; one per layout)."""
        return _midpoints(self.exact_below_us, self.sub_buckets, self.buckets)


@functools.cache
def _midpoints(exact_below_us: int, sub_buckets: int, buckets: int) -> np.ndarray:
    """:meth:`HistogramLayout.midpoint_us` of every bucket, computed at once."""
    index = np.arange(buckets, dtype=np.int64)
    above = np.maximum(index - exact_below_us, 0)
    shift = above // sub_buckets + 1
    low = np.where(index < exact_below_us, index, (above % sub_buckets + sub_buckets) << shift)
    width = np.where(index < exact_below_us, 1, 1 << shift)
    out = low + (width - 1) / 2
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class TypeHistogram:
    """One transaction type's histogram in one interval: its buckets and exact maximum."""

    buckets: Buckets
    max_ms: float


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


def dense_percentile_ms(layout: HistogramLayout, dense: np.ndarray, max_ms: float,
                        p: float) -> float | None:
    """:func:`percentile_ms` of a dense count array (one count per bucket index)."""
    cumulative = np.cumsum(dense, dtype=np.int64)
    n = int(cumulative[-1]) if cumulative.size else 0
    if n == 0:
        return None
    rank = max(1, math.ceil(p / 100 * n))
    # At most the last bucket: a sum that overflowed int64 is not monotone.
    index = min(int(np.searchsorted(cumulative, rank, side="left")), cumulative.size - 1)
    return min(float(layout.midpoints_us[index]), round(max_ms * 1000)) / 1000


def merged_latency(layout: HistogramLayout,
                   histograms: Iterable[TypeHistogram]) -> dict[str, float | None]:
    """``p95_ms``, ``p99_ms`` and ``max_ms`` of several intervals' histograms merged."""
    counts, top = merge(histograms)
    if not counts:
        return {"p95_ms": None, "p99_ms": None, "max_ms": None}
    return {"p95_ms": percentile_ms(layout, counts, top, 95),
            "p99_ms": percentile_ms(layout, counts, top, 99), "max_ms": top}
