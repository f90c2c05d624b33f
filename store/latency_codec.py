"""``intervals.latency_z``: one interval's latency histograms, every type, in a few hundred bytes.

As JSON text a 10 s interval's buckets take ~8 KB at ~1,500 New-Orders; stored like this they
take well under 1 KB. The blob is zlib of one stream of unsigned LEB128 varints::

    version (1), exact_below_us, sub_buckets, buckets, number of types,
    then per type: type code, exact maximum in µs, n (non-empty buckets),
                   n index deltas (the first index, then each index minus the one before),
                   n counts

The layout travels in every blob, so each interval reads on its own. Type codes index
:data:`TYPE_CODES` (append-only: a code never changes meaning): the five transaction types'
completed response times (:data:`TXN_TYPES`), then ``open_<type>`` (:func:`open_code`), the
ages of that type's transactions still in flight at the interval's end (the driver's
``"open"``; blobs stored before it have none). The analysis reads many blobs at once
(:func:`decode_types`): one decompression each, then every varint of a group of blobs decoded
by numpy in one pass.

A stored blob is untrusted (a database may come from anywhere, or be damaged): reading one
never allocates more than its caps allow — the column value must be bytes, at most
:data:`MAX_STORED_BYTES` stored and :data:`MAX_RAW_BYTES` decompressed, its layout at most
:data:`core.latency.MAX_BUCKETS` buckets, its numbers at most 8 bytes and its counts and
maxima below :data:`core.latency.MAX_VALUE` — and a blob outside them is one problem of that
blob alone, never an exception.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from core.latency import MAX_VALUE, Buckets, HistogramFormatError, HistogramLayout

#: Transaction types a blob may hold, by code. Append only.
TYPE_CODES: tuple[str, ...] = ("new_order", "payment", "order_status", "delivery",
                               "stock_level", "open_new_order", "open_payment",
                               "open_order_status", "open_delivery", "open_stock_level")
#: The transaction types whose completed response times a blob holds.
TXN_TYPES: tuple[str, ...] = TYPE_CODES[:5]
#: The prefix of an in-flight code (:func:`open_code`).
OPEN_PREFIX = "open_"


def open_code(name: str) -> str:
    """The code of type ``name``'s transactions in flight at the interval's end."""
    return OPEN_PREFIX + name
#: The format written by :func:`encode`.
VERSION = 1
#: Longest varint read (8 × 7 bits: values below 2^56, far above any µs figure).
_MAX_VARINT_BYTES = 8
_HEADER = 5
#: The most bytes a blob decompresses to. What :func:`encode` writes for the largest layout
#: read (:data:`core.latency.MAX_BUCKETS`) — every type, every bucket, 2-byte index steps and
#: 8-byte counts — is ~820 KB; the driver's layout writes a few KB.
MAX_RAW_BYTES = 1 << 20
#: The most bytes a stored blob may hold (zlib can grow incompressible data a little).
MAX_STORED_BYTES = MAX_RAW_BYTES + (1 << 12)
#: Decompressed bytes decoded in one numpy pass (bounds a pass's arrays to a few hundred MB
#: however many blobs are read at once).
_GROUP_BYTES = 16 << 20


def _leb128(values: np.ndarray) -> bytes:
    """Non-negative integers as unsigned LEB128 varints (vectorized: one pass per byte)."""
    v = values.astype(np.uint64)
    width = np.ones(v.size, dtype=np.int64)
    rest = v >> np.uint64(7)
    while rest.any():
        width += rest > 0
        rest >>= np.uint64(7)
    out = np.empty(int(width.sum()), dtype=np.uint8)
    at = np.cumsum(width) - width
    for k in range(int(width.max(initial=0))):
        some = np.flatnonzero(width > k)
        byte = (v[some] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (width[some] > k + 1).astype(np.uint64) << np.uint64(7)
        out[at[some] + k] = (byte | more).astype(np.uint8)
    return out.tobytes()


def encode(layout: HistogramLayout,
           types: Mapping[str, tuple[Buckets | np.ndarray, float]]) -> bytes:
    """One interval's histograms as a ``latency_z`` blob.

    ``types`` maps a type name (one of :data:`TYPE_CODES`) to its buckets (``(index, count)``
    pairs, indexes increasing: a tuple of pairs or an ``(n, 2)`` array) and its exact maximum
    in ms.

    Raises
    ------
    ValueError
        A type without a code, or buckets that are not increasing non-negative pairs.
    """
    parts = [np.array([VERSION, layout.exact_below_us, layout.sub_buckets, layout.buckets,
                       len(types)], dtype=np.int64)]
    for name, (buckets, max_ms) in types.items():
        if name not in TYPE_CODES:
            raise ValueError(f"no type code for {name!r} (known: {', '.join(TYPE_CODES)})")
        pairs = np.asarray(buckets, dtype=np.int64).reshape(-1, 2)
        index, count = pairs[:, 0], pairs[:, 1]
        deltas = np.diff(index, prepend=0)
        if (index < 0).any() or (deltas[1:] < 1).any() or (count < 0).any() or max_ms < 0:
            raise ValueError(f"{name}: bucket indexes must increase from 0 up and counts and"
                             " the maximum must not be negative")
        parts += [np.array([TYPE_CODES.index(name), round(max_ms * 1000), len(index)],
                           dtype=np.int64), deltas, count]
    return zlib.compress(_leb128(np.concatenate(parts)), 6)


def _values(buf: np.ndarray) -> np.ndarray:
    """Every varint of ``buf`` (uint8), as int64 (vectorized LEB128). Nearly every number is
    one byte (bucket index steps, small counts): the longer ones are completed afterwards,
    one pass per extra byte over those only."""
    if buf.size == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero(buf < 0x80)
    if ends.size == 0 or ends[-1] != buf.size - 1:
        raise HistogramFormatError("latency blob ends inside a number")
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    out = (buf[starts] & 0x7F).astype(np.int64)
    longer = np.flatnonzero(ends != starts)
    lengths = ends[longer] - starts[longer] + 1
    if lengths.size and int(lengths.max()) > _MAX_VARINT_BYTES:
        raise HistogramFormatError("latency blob holds a number longer than 8 bytes")
    for k in range(1, int(lengths.max(initial=1))):
        more = lengths > k
        longer, lengths = longer[more], lengths[more]
        out[longer] |= (buf[starts[longer] + k] & 0x7F).astype(np.int64) << (7 * k)
    return out


@dataclass(frozen=True)
class TypeSegments:
    """One type's buckets in many blobs, flat: what :func:`decode_type` returns.

    ``blob[i]``, ``index[i]``, ``count[i]``: bucket ``index[i]`` of blob number ``blob[i]``
    (its position in the input) holds ``count[i]`` transactions. ``max_us[b]`` is blob ``b``'s
    exact maximum of the type (-1 where it has no such type or could not be read);
    ``layouts[b]`` its layout (None where unreadable); ``problems`` maps a blob number to
    why it could not be read.
    """

    blob: np.ndarray
    index: np.ndarray
    count: np.ndarray
    max_us: np.ndarray
    layouts: list[HistogramLayout | None]
    problems: dict[int, str]


def decode_type(blobs: Sequence[bytes | None], name: str) -> TypeSegments:
    """Type ``name``'s buckets in every blob (a None blob: no histogram).

    A blob that does not decompress or decode is reported in ``problems`` and contributes
    nothing; the others are read as if it were absent.
    """
    return decode_types(blobs, (name,))[name]


def decode_types(blobs: Sequence[object], names: Sequence[str] = TYPE_CODES
                 ) -> dict[str, TypeSegments]:
    """:func:`decode_type` of several types, each blob decompressed and decoded once.

    ``blobs`` are the stored column values as the database returns them: None (no
    histogram), bytes, or anything else a hostile or damaged database holds (text, a number),
    which is a problem of that blob.
    """
    codes = {TYPE_CODES.index(name): name for name in names}
    n = len(blobs)
    problems: dict[int, str] = {}
    max_us = {name: np.full(n, -1, dtype=np.int64) for name in names}
    layouts: list[HistogramLayout | None] = [None] * n
    parts: dict[str, list[TypeSegments]] = {name: [] for name in names}
    type_problems: dict[str, dict[int, str]] = {name: {} for name in names}
    raw: list[bytes] = []
    owners: list[int] = []

    def decode_group() -> None:
        pieces: dict[str, list[tuple[int, int, int]]] = {name: [] for name in names}
        values, offsets = _all_values(raw, owners, problems)
        for owner, (lo, hi) in offsets.items():
            try:
                layouts[owner], found = _walk(values, lo, hi)
            except HistogramFormatError as exc:
                problems[owner] = str(exc)
                continue
            for code, (top, start, count) in found.items():
                if code in codes:
                    max_us[codes[code]][owner] = top
                    pieces[codes[code]].append((owner, start, count))
        for name in names:
            parts[name].append(_segments(values, pieces[name], max_us[name], layouts,
                                         type_problems[name]))
        raw.clear()
        owners.clear()

    size = 0
    for b, blob in enumerate(blobs):
        if blob is None:
            continue
        try:
            data = _decompressed(blob)
        except HistogramFormatError as exc:
            problems[b] = str(exc)
            continue
        raw.append(data)
        owners.append(b)
        size += len(data)
        if size >= _GROUP_BYTES:
            decode_group()
            size = 0
    decode_group()
    out = {}
    for name in names:
        # A blob unreadable as a whole is a problem of every type; one type's bad buckets
        # (found by _segments) of that type only.
        mine = {**problems, **type_problems[name]}
        segs = parts[name]
        out[name] = TypeSegments(*(np.concatenate([getattr(x, f) for x in segs])
                                   for f in ("blob", "index", "count")),
                                 max_us[name], layouts, mine)
    return out


def _decompressed(blob: object) -> bytes:
    """A stored value's decompressed bytes, within :data:`MAX_RAW_BYTES`.

    Raises
    ------
    HistogramFormatError
        A value that is not bytes, or bytes that are not one whole zlib stream within the caps.
    """
    if isinstance(blob, memoryview):  # PostgreSQL's bytea through some drivers
        blob = blob.tobytes()
    if not isinstance(blob, (bytes, bytearray)):
        kind = {str: "text", float: "a real number", int: "an integer"}.get(
            type(blob), type(blob).__name__)
        raise HistogramFormatError(f"latency_z holds {kind}, not a latency blob")
    if len(blob) > MAX_STORED_BYTES:
        raise HistogramFormatError(f"latency blob of {len(blob):,} bytes, more than the"
                                   f" {MAX_STORED_BYTES:,} a histogram takes")
    d = zlib.decompressobj()
    try:
        data = d.decompress(bytes(blob), MAX_RAW_BYTES + 1)
    except zlib.error as exc:
        raise HistogramFormatError(f"latency blob does not decompress ({exc})") from None
    if len(data) > MAX_RAW_BYTES:
        raise HistogramFormatError(f"latency blob decompresses to more than {MAX_RAW_BYTES:,}"
                                   " bytes (a histogram takes a few KB)")
    if not d.eof:
        raise HistogramFormatError("latency blob is cut short (its zlib stream does not end)")
    if d.unused_data:
        raise HistogramFormatError("latency blob has bytes after its zlib stream")
    return data


def _all_values(raw: list[bytes], owners: list[int], problems: dict[int, str]
                ) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
    """Every blob's varints in one array, and each blob's ``[lo, hi)`` range in it."""
    offsets: dict[int, tuple[int, int]] = {}
    good = []
    for owner, data in zip(owners, raw, strict=True):
        # A blob must end on a varint's last byte, so none runs into the next blob.
        if not data or data[-1] >= 0x80:
            problems[owner] = "latency blob ends inside a number"
            continue
        # Nor may it hold a number too long to read (a count of 2^62 takes 9 bytes): one
        # blob's, not the whole group's, problem.
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) < 0x80)
        if int(np.diff(ends, prepend=-1).max()) > _MAX_VARINT_BYTES:
            problems[owner] = (f"latency blob holds a number of more than {_MAX_VARINT_BYTES}"
                               " bytes (2^56 or more)")
            continue
        good.append((owner, data))
    if not good:
        return np.zeros(0, dtype=np.int64), offsets
    buf = np.frombuffer(b"".join(d for _, d in good), dtype=np.uint8)
    values = _values(buf)
    # Values per blob: the varint terminators inside each blob's bytes.
    byte_ends = np.cumsum([len(d) for _, d in good])
    value_ends = np.searchsorted(np.flatnonzero(buf < 0x80), byte_ends, side="left")
    lo = 0
    for (owner, _), hi in zip(good, value_ends.tolist(), strict=True):
        offsets[owner] = (lo, hi)
        lo = hi
    return values, offsets


@functools.cache
def _layout(exact_below_us: int, sub_buckets: int, buckets: int) -> HistogramLayout:
    """One layout object per parameters (every blob of a run has the same)."""
    return HistogramLayout.of(exact_below_us, sub_buckets, buckets)


def _walk(values: np.ndarray, lo: int, hi: int
          ) -> tuple[HistogramLayout, dict[int, tuple[int, int, int]]]:
    """One blob's layout and, per type code: (max µs, first delta's position, n)."""
    if hi - lo < _HEADER:
        raise HistogramFormatError("latency blob too short for its header")
    version, exact, sub, buckets, n_types = (int(v) for v in values[lo:lo + _HEADER])
    if version != VERSION:
        raise HistogramFormatError(f"latency blob format {version}, this flushbench reads"
                                   f" {VERSION}")
    layout = _layout(exact, sub, buckets)
    at, found = lo + _HEADER, {}
    for _ in range(n_types):
        if at + 3 > hi:
            raise HistogramFormatError("latency blob ends inside a type")
        type_code, top, n = (int(v) for v in values[at:at + 3])
        if at + 3 + 2 * n > hi:
            raise HistogramFormatError("latency blob ends inside a type's buckets")
        if n > layout.buckets:
            raise HistogramFormatError(f"latency blob has {n:,} buckets of one type, more than"
                                       f" its layout's {layout.buckets:,}")
        if top >= MAX_VALUE:
            raise HistogramFormatError(f"latency blob's maximum of {top:,} µs is beyond any"
                                       " response time")
        found[type_code] = (top, at + 3, n)
        at += 3 + 2 * n
    if at != hi:
        raise HistogramFormatError("latency blob has bytes after its last type")
    return layout, found


def _segments(values: np.ndarray, pieces: list[tuple[int, int, int]], max_us: np.ndarray,
              layouts: list[HistogramLayout | None], problems: dict[int, str]) -> TypeSegments:
    """The flat bucket arrays of the found pieces (index deltas summed within each piece); a
    blob whose buckets are not increasing indexes inside its layout with counts above 0 is a
    problem and contributes nothing."""
    empty = np.zeros(0, dtype=np.int64)
    owner = np.array([p[0] for p in pieces], dtype=np.int64)
    start = np.array([p[1] for p in pieces], dtype=np.int64)
    n = np.array([p[2] for p in pieces], dtype=np.int64)
    if int(n.sum()) == 0:
        return TypeSegments(empty, empty, empty, max_us, layouts, problems)
    first = np.cumsum(n) - n
    within = np.arange(int(n.sum())) - np.repeat(first, n)
    deltas = values[np.repeat(start, n) + within]
    counts = values[np.repeat(start + n, n) + within]
    # Indexes: a running sum of the deltas, restarted at each piece (pieces with n = 0 add
    # nothing to the flat arrays, so only the non-empty ones restart it).
    running = np.cumsum(deltas)
    has = n > 0
    offset = np.zeros(len(n), dtype=np.int64)
    offset[has] = running[first[has]] - deltas[first[has]]
    index = running - np.repeat(offset, n)
    blob = np.repeat(owner, n)
    limit = np.array([lay.buckets if lay is not None else 0 for lay in layouts],
                     dtype=np.int64)
    wrong = ((index >= limit[blob]) | ((within > 0) & (deltas < 1)) | (counts < 1)
             | (counts >= MAX_VALUE))
    if wrong.any():
        bad = np.unique(blob[wrong])
        for b in bad.tolist():
            problems[b] = ("latency blob's buckets are not increasing indexes inside the"
                           " layout with counts from 1 to 2^53")
        max_us[bad] = -1
        keep = ~np.isin(blob, bad)
        blob, index, counts = blob[keep], index[keep], counts[keep]
    return TypeSegments(blob, index, counts, max_us, layouts, problems)


def decode(blob: bytes) -> tuple[HistogramLayout, dict[str, tuple[Buckets, float]]]:
    """One blob back as its layout and ``{type: (buckets, max_ms)}`` (what :func:`encode`
    was given).

    Raises
    ------
    HistogramFormatError
        When the blob cannot be read.
    """
    out: dict[str, tuple[Buckets, float]] = {}
    layout: HistogramLayout | None = None
    for name, seg in decode_types([blob]).items():
        if seg.problems:
            raise HistogramFormatError(seg.problems[0])
        layout = seg.layouts[0]
        if seg.max_us[0] >= 0:
            out[name] = (tuple(zip(seg.index.tolist(), seg.count.tolist(), strict=True)),
                         int(seg.max_us[0]) / 1000)
    assert layout is not None
    return layout, out
