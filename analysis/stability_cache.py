"""A content-addressed cache of stability figures, so a run's tests are computed once.

The stability figures of a run (:func:`analysis.stability.stability`) cost ≈ 3 ms of CPU per
run — surrogate periodograms and resampled shape tests on ~90–180 intervals — which is most
of ``frames.load`` on a 500-run experiment (``docs/benchmarks.md``). They depend on nothing
but the window's series and the code that computes them, so they are stored under a key made
of exactly that:

    sha256(code fingerprint, interval_s, values, times)

where the *code fingerprint* hashes the source of every module the figures come from and the
numpy/scipy versions. A changed algorithm, a changed series or a different library is a new
key: an entry can never be stale, only unused. Nothing about the results database enters the
key, so the cache serves SQLite and PostgreSQL stores, committed read-only databases and
opened bundles alike, and the results database holds only what was measured.

The cache is one SQLite file in the user's cache folder (``$FLUSHBENCH_CACHE_DIR``, else
``$XDG_CACHE_HOME/flushbench``, else ``~/.cache/flushbench``); ``FLUSHBENCH_ANALYSIS_CACHE=0``
turns it off. It is an optimisation only: a folder that cannot be written, a locked or damaged
file or an entry that does not decode means the figures are computed as if it were absent.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from analysis.stability import Stability, stability
from flushbench.paths import cache_dir

log = logging.getLogger(__name__)

#: The cache file's name inside :func:`flushbench.paths.cache_dir`.
FILE_NAME = "analysis-cache.sqlite"
#: Modules whose source decides the figures (their text is part of every key).
SOURCES = (
    "analysis/stability.py",
    "analysis/statistics/_series.py",
    "analysis/statistics/oscillation.py",
    "analysis/statistics/percentiles.py",
    "analysis/statistics/shape.py",
)
#: How long a writer waits for another process's write before giving up (the figures are then
#: simply computed again next time).
BUSY_TIMEOUT_S = 2.0
_SCHEMA = ("CREATE TABLE IF NOT EXISTS stability ("
           "key TEXT PRIMARY KEY, figures TEXT NOT NULL)")


@dataclass(frozen=True)
class Series:
    """One run's window: throughput per interval, the interval length and interval times."""

    values: np.ndarray
    interval_s: float
    times_s: np.ndarray


def enabled() -> bool:
    """Whether the cache is used (``FLUSHBENCH_ANALYSIS_CACHE=0`` turns it off)."""
    return os.environ.get("FLUSHBENCH_ANALYSIS_CACHE", "1").strip().lower() not in (
        "0", "off", "no", "false")


def cache_path() -> Path:
    """The cache file (it may not exist yet)."""
    return cache_dir() / FILE_NAME


@functools.cache
def code_fingerprint() -> str:
    """A hash of the figures' source code and the numeric libraries' versions."""
    import scipy

    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(f"numpy {np.__version__} scipy {scipy.__version__}".encode())
    for rel in SOURCES:
        h.update(rel.encode())
        h.update((root / rel).read_bytes())
    return h.hexdigest()


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


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(_SCHEMA)
    return con


def _lookup(con: sqlite3.Connection, keys: Sequence[str]) -> dict[str, Stability]:
    found: dict[str, Stability] = {}
    wanted = sorted(set(keys))
    step = 500  # well under SQLite's bound-parameter limit
    for i in range(0, len(wanted), step):
        chunk = wanted[i:i + step]
        marks = ",".join("?" * len(chunk))
        for key, text in con.execute(
                f"SELECT key, figures FROM stability WHERE key IN ({marks})", chunk):
            try:
                found[key] = decode(text)
            except (ValueError, TypeError) as exc:  # an entry of another shape: recompute
                log.debug("stability cache entry %s unusable: %s", key[:12], exc)
    return found


def _store(con: sqlite3.Connection, entries: Iterable[tuple[str, Stability]]) -> None:
    rows = [(key, encode(st)) for key, st in entries]
    if rows:
        with con:
            con.executemany("INSERT OR REPLACE INTO stability (key, figures) VALUES (?, ?)",
                            rows)


def stability_many(series: Sequence[Series]) -> list[Stability]:
    """The stability figures of every series, from the cache where known, computed otherwise.

    Equal to ``[stability(s.values, s.interval_s, s.times_s) for s in series]`` — the cache
    never changes a figure (tests/analysis/test_stability_cache.py).
    """
    if not series:
        return []
    if not enabled():
        return [_compute(s) for s in series]
    keys = [series_key(s) for s in series]
    try:
        con = _connect(cache_path())
    except (OSError, sqlite3.Error) as exc:
        log.debug("stability cache unavailable (%s): computing", exc)
        return [_compute(s) for s in series]
    try:
        try:
            known = _lookup(con, keys)
        except sqlite3.Error as exc:
            log.debug("stability cache unreadable (%s): computing", exc)
            known = {}
        out: list[Stability] = []
        new: dict[str, Stability] = {}
        for key, s in zip(keys, series, strict=True):
            st = known.get(key) or new.get(key)
            if st is None:
                st = new[key] = _compute(s)
            out.append(st)
        try:
            _store(con, new.items())
        except sqlite3.Error as exc:  # read-only, locked, full: next time computes again
            log.debug("stability cache not written (%s)", exc)
        return out
    finally:
        con.close()


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
