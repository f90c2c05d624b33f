"""Each run's latency histograms merged over its measurement window, computed once per run.

The Go driver's intervals carry every type's histogram (``intervals.latency_z``,
:mod:`store.latency_codec`). A run's window figures — its New-Order p99 over the whole window,
each type's, and the cell's over all its runs — are read off merged histograms, never averaged
from per-interval percentiles. Merging means reading every window interval's blob; a done run's
intervals never change, so each run's merged window (sparse bucket counts and the exact maximum
per type) is kept in the analysis cache (:mod:`analysis.reading.figure_cache`) under

    sha256(code fingerprint, the run's window intervals: their seq, time, New-Order count
           and stored blob size)

and a report of runs merged before reads no blob. The merge of several runs (a cell) adds
their counts: :func:`merge_runs`.

Besides the completed transactions' histograms, a run's merge keeps the transactions still in
flight at its window's end (the driver's ``"open"``, stored as ``open_<type>``): the ages at the
end of the window's last interval, and the oldest age at any window interval's end. The window's
tail adds them as waits of at least that age (:mod:`analysis.response.latency_tail`); they are not
completions, so they never add up over intervals.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.reading.figure_cache import get_or_compute, source_fingerprint
from analysis.reading.query import DB, latency_blob_sizes, measured_latency_blobs, session_scope
from core.latency import HistogramLayout, dense_percentile_ms
from store.latency_codec import MAX_STORED_BYTES, OPEN_PREFIX, decode_types

SOURCES = ("analysis/response/latency_histograms.py", "store/latency_codec.py", "core/latency.py")
TABLE = "window_latency"
#: Runs whose blobs are read and decoded together (bounds the memory of a first analysis).
RUNS_PER_READ = 20


@dataclass(frozen=True)
class WindowHistograms:
    """One run's histograms merged over its window intervals.

    ``window_intervals``: the run's window intervals; ``with_histogram``: those whose blob was
    read (the merge is the whole window's only when both are equal: :attr:`complete`);
    ``problem``: why some blob could not be read; ``types``: type → (bucket indexes, counts,
    exact maximum in µs) of the merge; ``open``: type → (bucket indexes and counts of the ages
    of its transactions in flight at the window's end, the oldest of them in µs, the oldest in
    flight at any window interval's end in µs) — empty for a driver that does not say.
    """

    layout: HistogramLayout | None
    window_intervals: int
    with_histogram: int
    problem: str | None
    types: dict[str, tuple[np.ndarray, np.ndarray, int]]
    open: dict[str, tuple[np.ndarray, np.ndarray, int, int]] = dataclasses.field(
        default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every window interval's histogram was merged (so the figures are the window's)."""
        return self.layout is not None and self.with_histogram == self.window_intervals > 0


@functools.cache
def code_fingerprint() -> str:
    """A hash of the merge's source code and numpy's version."""
    return source_fingerprint(SOURCES, f"numpy {np.__version__}")


def window_histograms(db: DB, intervals_df: pd.DataFrame,
                      run_ids: Sequence[int]) -> dict[int, WindowHistograms]:
    """Each run's window histograms (run id → :class:`WindowHistograms`), from the cache
    where known, else read from the store (only its window intervals' blobs) and kept.

    ``intervals_df``: :func:`analysis.reading.series.intervals` of the runs (``run_id``, ``seq``,
    ``in_window``); its window flags decide which intervals merge.
    """
    ids = [int(r) for r in dict.fromkeys(run_ids)]
    if not ids:
        return {}
    window = intervals_df[intervals_df["in_window"] & intervals_df["run_id"].isin(ids)] \
        .sort_values(["run_id", "seq"], kind="stable")
    # Each run's window rows as a slice (a groupby over 500 runs costs more than the keys).
    run_of = window["run_id"].to_numpy(dtype=np.int64)
    seq_arr = window["seq"].to_numpy(dtype=np.int64)
    size_arr = window["latency_bytes"].to_numpy(dtype=np.int64) \
        if "latency_bytes" in window else None  # read with the intervals: no query
    # What the run recorded besides its blobs: two runs whose windows have the same seqs and
    # blob sizes (another database, a rerun, a copy edited since) are told apart by when their
    # intervals ended and how many New-Orders each counted.
    recorded = _recorded(window)
    cuts = np.r_[0, np.flatnonzero(np.diff(run_of)) + 1, len(run_of)]
    spans = {int(run_of[lo]): (int(lo), int(hi))
             for lo, hi in zip(cuts[:-1], cuts[1:], strict=True) if hi > lo}

    def seqs(run_id: int) -> np.ndarray:
        lo, hi = spans.get(run_id, (0, 0))
        return seq_arr[lo:hi]

    with session_scope(db) as s:
        if size_arr is not None:
            keys = [_key(seq_arr[lo:hi], size_arr[lo:hi], recorded[lo:hi]) for lo, hi in
                    (spans.get(r, (0, 0)) for r in ids)]
        else:
            sizes = _blob_sizes(s, ids)
            keys = [_key(seqs(r), np.array(sizes.get(r, (0, 0)), dtype=np.int64),
                         recorded[slice(*spans.get(r, (0, 0)))]) for r in ids]

        def compute(positions: list[int]) -> list[str]:
            todo = [ids[i] for i in positions]
            merged: dict[int, dict[str, Any]] = {}
            # A few runs at a time: every blob's numbers of 500 runs at once would take GBs.
            for at in range(0, len(todo), RUNS_PER_READ):
                merged.update(_merge_from_store(s, {r: seqs(r).tolist() for r in
                                                    todo[at:at + RUNS_PER_READ]}))
            return [json.dumps(merged[r]) for r in todo]

        found = get_or_compute(TABLE, keys, compute, _decode)
    return dict(zip(ids, found, strict=True))


def _blob_sizes(s: Any, ids: list[int]) -> dict[int, tuple[int, int]]:
    """Per run: how many of its intervals have a blob, and their total size."""
    rows = latency_blob_sizes(s, ids)
    return {int(run_id): (int(n), int(size)) for run_id, n, size in rows}


def _recorded(window: pd.DataFrame) -> np.ndarray:
    """Per window interval (rows in order): its end time in ns and its New-Order count, as
    two int64 columns (-1 where the frame has no such column)."""
    out = np.full((len(window), 2), -1, dtype=np.int64)
    if "ts" in window:
        ts = pd.to_datetime(window["ts"], utc=True, errors="coerce").dt.tz_localize(None)
        out[:, 0] = ts.to_numpy(dtype="datetime64[ns]").astype(np.int64)  # NaT: int64's min
    if "primary_count" in window:
        out[:, 1] = pd.to_numeric(window["primary_count"], errors="coerce").fillna(-1) \
            .to_numpy(dtype=np.int64)
    return out


def _key(seqs: np.ndarray, sizes: np.ndarray, recorded: np.ndarray) -> str:
    # A done run's intervals never change: its window, what each interval recorded and its
    # blobs' sizes (each window interval's, or the run's count and total) stand for them.
    h = hashlib.sha256(code_fingerprint().encode())
    h.update(seqs.astype("<i8").tobytes())
    h.update(b"|")
    h.update(sizes.astype("<i8").tobytes())
    h.update(b"|")
    h.update(np.ascontiguousarray(recorded, dtype="<i8").tobytes())
    return h.hexdigest()


def _merge_from_store(s: Any, seqs: dict[int, list[int]]) -> dict[int, dict[str, Any]]:
    """Read the window intervals' blobs of these runs and merge them per run and type."""
    wanted = {(r, q) for r, qs in seqs.items() for q in qs}
    rows = measured_latency_blobs(s, list(seqs), MAX_STORED_BYTES)
    # The stored values as they are (never bytes() of them: bytes(2**62) allocates 2^62 bytes);
    # the codec says what is wrong with one that is not a blob. One too long to read was left
    # in the database (None here, its length beside it).
    mine = sorted(((int(r), int(q), b, int(n or 0)) for r, q, b, n in rows
                   if (int(r), int(q)) in wanted), key=lambda x: x[:2])
    owners = np.array([r for r, *_ in mine], dtype=np.int64)
    per_type = decode_types([b for _, _, b, _ in mine])
    # A blob unreadable for any type counts for none: the window is then incomplete.
    problems = {b: p for seg in per_type.values() for b, p in seg.problems.items()}
    problems.update({b: f"latency_z of {n:,} bytes, more than the {MAX_STORED_BYTES:,} a"
                        " histogram takes" for b, (_, _, blob, n) in enumerate(mine)
                     if blob is None})
    for b in problems:
        # Which interval: the user can look at it (and it tells one bad blob from many).
        problems[b] = (f"interval {mine[b][1]}'s latency histogram could not be read:"
                       f" {problems[b]}")
    layouts = next(iter(per_type.values())).layouts
    out: dict[int, dict[str, Any]] = {
        r: {"layout": None, "window_intervals": len(qs), "with_histogram": 0, "problem": None,
            "types": {}, "open": {}} for r, qs in seqs.items()}
    # The blobs of each run's last window interval: the in-flight ages at the window's end.
    last = np.array([q == max(seqs[r]) for r, q, *_ in mine], dtype=bool)
    good = np.ones(len(mine), dtype=bool)
    good[list(problems)] = False
    for b, run_id in enumerate(owners.tolist()):
        run = out[run_id]
        if not good[b]:
            run["problem"] = run["problem"] or problems[b]
            continue
        run["with_histogram"] += 1
        this = [layouts[b].exact_below_us, layouts[b].sub_buckets, layouts[b].buckets]
        if run["layout"] is None:
            run["layout"] = this
        elif run["layout"] != this:
            run["problem"] = run["problem"] or "the run's intervals have different layouts"
    for name, seg in per_type.items():
        if not name.startswith(OPEN_PREFIX):
            for run_id, merged in _merge_type(seg, owners, good).items():
                out[run_id]["types"][name] = merged
            continue
        at_end = _merge_type(seg, owners, good & last)
        oldest = _merge_type(seg, owners, good)
        for run_id, anywhere in oldest.items():
            end = at_end.get(run_id, {"index": _b64(np.zeros(0, "<i4")),
                                      "count": _b64(np.zeros(0, "<i8")), "max_us": 0})
            out[run_id]["open"][name.removeprefix(OPEN_PREFIX)] = {
                **end, "oldest_us": anywhere["max_us"]}
    for run in out.values():
        if run["problem"] == "the run's intervals have different layouts":
            run.update(layout=None, with_histogram=0, types={}, open={})  # no merge across
    return out


def _merge_type(seg: Any, owners: np.ndarray, good: np.ndarray) -> dict[int, dict[str, Any]]:
    """One type's buckets summed per run over the ``good`` blobs (kept sparse): run id →
    ``index``, ``count`` (base64) and ``max_us``, for the runs with such a blob."""
    out: dict[int, dict[str, Any]] = {}
    if not owners.size:
        return out
    runs, run_pos = np.unique(owners, return_inverse=True)
    width = max(lay.buckets for lay in seg.layouts if lay is not None) if any(
        lay is not None for lay in seg.layouts) else 0
    keep = good[seg.blob] if seg.blob.size else np.zeros(0, dtype=bool)
    flat = run_pos[seg.blob[keep]] * width + seg.index[keep]
    dense = np.bincount(flat, weights=seg.count[keep], minlength=runs.size * width) \
        .reshape(runs.size, width) if width else np.zeros((runs.size, 0))
    tops = np.where(good, seg.max_us, -1)
    top_per_run = np.full(runs.size, -1, dtype=np.int64)
    np.maximum.at(top_per_run, run_pos, tops)
    for i, run_id in enumerate(runs.tolist()):
        if top_per_run[i] < 0:
            continue  # no readable blob of the run holds this type
        index = np.flatnonzero(dense[i])
        out[run_id] = {"index": _b64(index.astype("<i4")),
                       "count": _b64(dense[i, index].astype("<i8")),
                       "max_us": int(top_per_run[i])}
    return out


def _b64(values: np.ndarray) -> str:
    """An array as base64 of its bytes (JSON lists of ints decode ten times slower)."""
    return base64.b64encode(values.tobytes()).decode("ascii")


def _array(text: str, dtype: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype).astype(np.int64)


def _decode(text: str) -> WindowHistograms:
    """One run's merged window back from JSON; ValueError when it does not fit."""
    raw = json.loads(text)
    layout = HistogramLayout.of(*raw["layout"]) if raw["layout"] else None
    types = {name: (_array(t["index"], "<i4"), _array(t["count"], "<i8"), int(t["max_us"]))
             for name, t in raw["types"].items()}
    opened = {name: (_array(t["index"], "<i4"), _array(t["count"], "<i8"), int(t["max_us"]),
                     int(t["oldest_us"])) for name, t in raw.get("open", {}).items()}
    if layout is not None and any(ix.size and int(ix.max()) >= layout.buckets
                                  for ix, *_ in (*types.values(), *opened.values())):
        raise ValueError("bucket outside the layout")
    return WindowHistograms(layout, int(raw["window_intervals"]), int(raw["with_histogram"]),
                            raw["problem"], types, opened)


def merge_runs(runs: Sequence[WindowHistograms], name: str, *, with_open: bool = True,
               waits_ms: Sequence[np.ndarray] | None = None
               ) -> tuple[HistogramLayout, np.ndarray, float] | None:
    """Type ``name``'s histogram over several runs' complete windows: (layout, dense counts,
    exact maximum in ms); None unless every run's window is complete with one layout.

    ``with_open`` adds each run's transactions in flight at its window's end, each counted at
    its age then, and takes the maximum over the oldest in flight at any window interval's end;
    ``waits_ms`` (one array per run) adds further waits no completion measured (a run's stalls:
    :func:`analysis.response.latency_tail.stall_waits_ms`). Without both it is the completed
    transactions' merge, which is what the driver's own summary reads.
    """
    if not runs or not all(r.complete for r in runs):
        return None
    layouts = {r.layout for r in runs}
    if len(layouts) != 1:
        return None
    layout = next(iter(layouts))
    assert layout is not None
    dense = np.zeros(layout.buckets, dtype=np.int64)
    top = 0
    for i, r in enumerate(runs):
        if name in r.types:
            index, count, max_us = r.types[name]
            np.add.at(dense, index, count)
            top = max(top, max_us)
        if with_open and name in r.open:
            index, count, _, oldest_us = r.open[name]
            np.add.at(dense, index, count)
            top = max(top, oldest_us)
        if waits_ms is not None and len(waits_ms[i]):
            us = np.round(np.asarray(waits_ms[i], dtype=float) * 1000).astype(np.int64)
            np.add.at(dense, layout.index_of(us), 1)
            top = max(top, int(us.max()))
    return layout, dense, top / 1000


def percentiles(runs: Sequence[WindowHistograms], name: str = "new_order", *,
                with_open: bool = True, waits_ms: Sequence[np.ndarray] | None = None
                ) -> dict[str, float | None]:
    """``p50_ms``, ``p95_ms``, ``p99_ms``, ``p999_ms`` and ``max_ms`` of type ``name`` over
    the runs' merged windows, with the waits :func:`merge_runs` adds (None each when the merge
    is not possible or holds no transaction)."""
    merged = merge_runs(runs, name, with_open=with_open, waits_ms=waits_ms)
    if merged is None or not merged[1].any():
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "p999_ms": None,
                "max_ms": None}
    layout, dense, top = merged
    return {"p50_ms": dense_percentile_ms(layout, dense, top, 50),
            "p95_ms": dense_percentile_ms(layout, dense, top, 95),
            "p99_ms": dense_percentile_ms(layout, dense, top, 99),
            "p999_ms": dense_percentile_ms(layout, dense, top, 99.9), "max_ms": top}
