"""The analysis cache's store: tables of key → JSON in one SQLite file of flushbench's cache.

Figures that cost real time and depend on nothing but their inputs and the code computing them
(a run's stability tests, :mod:`analysis.steadiness.stability_cache`; the per-run figures drawn from
every sample of a run, :mod:`analysis.writes.run_digest`) are stored under a key that hashes exactly
those inputs and the source of the modules that compute them. A changed input, algorithm or library
is a new key: an entry can never be stale, only unused. Nothing about the results database
enters a key, so the cache serves SQLite and PostgreSQL stores, committed read-only databases
and opened bundles alike, and the results database holds only what was measured.

The file is ``analysis-cache.sqlite`` in the user's cache folder
(:func:`core.paths.cache_dir`); ``FLUSHBENCH_ANALYSIS_CACHE=0`` turns it off. It is an
optimisation only: a folder that cannot be written, a locked or damaged file or an entry that
does not decode means the figures are computed as if it were absent. The statements on the
file (its tables, lookups and writes) are :mod:`store.figure_tables`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from core.paths import cache_dir
from store import figure_tables

log = logging.getLogger(__name__)

#: The cache file's name inside :func:`core.paths.cache_dir`.
FILE_NAME = "analysis-cache.sqlite"
#: How long a writer waits for another process's write before giving up (the figures are then
#: simply computed again next time).
BUSY_TIMEOUT_S = 2.0
#: The project folder: fingerprinted sources are named relative to it.
_ROOT = Path(__file__).resolve().parents[2]

T = TypeVar("T")


def enabled() -> bool:
    """Whether the cache is used (``FLUSHBENCH_ANALYSIS_CACHE=0`` turns it off)."""
    return os.environ.get("FLUSHBENCH_ANALYSIS_CACHE", "1").strip().lower() not in (
        "0", "off", "no", "false")


def cache_path() -> Path:
    """The cache file (it may not exist yet)."""
    return cache_dir() / FILE_NAME


def source_fingerprint(sources: Sequence[str], extra: str = "") -> str:
    """A hash of the named modules' source (paths relative to the project) and ``extra``
    (library versions, say): the code part of every key of one kind of figure."""
    h = hashlib.sha256(extra.encode())
    for rel in sources:
        h.update(rel.encode())
        h.update((_ROOT / rel).read_bytes())
    return h.hexdigest()


def get_or_compute(
    table: str,
    keys: Sequence[str],
    compute: Callable[[list[int]], list[str]],
    decode: Callable[[str], T],
) -> list[T]:
    """The decoded figures of every key: stored ones read, the others computed and stored.

    ``compute(indices)`` returns the encoded figures (JSON text) of the items at those
    positions, in order; it is called once, for the first item of each key not stored (every
    key when the cache is off or unusable). Computed figures are decoded like stored
    ones, so a result never depends on whether it came from the cache. An entry that does not
    decode (``ValueError``, ``TypeError``, ``KeyError``) is computed again.
    """
    if not keys:
        return []
    texts: dict[str, str] = {}
    con: sqlite3.Connection | None = None
    if enabled():
        try:
            con = figure_tables.connect(cache_path(), table, BUSY_TIMEOUT_S)
            texts = figure_tables.lookup(con, table, keys)
        except (OSError, sqlite3.Error) as exc:
            log.debug("analysis cache unavailable (%s): computing", exc)
    try:
        out: dict[str, T] = {}
        for key, text in texts.items():
            try:
                out[key] = decode(text)
            except (ValueError, TypeError, KeyError) as exc:  # another shape: recompute
                log.debug("%s cache entry %s unusable: %s", table, key[:12], exc)
        first_missing: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in out:
                first_missing.setdefault(key, i)
        if first_missing:
            fresh = compute(list(first_missing.values()))
            for key, text in zip(first_missing, fresh, strict=True):
                out[key] = decode(text)
            if con is not None:
                try:
                    figure_tables.put(con, table, zip(first_missing, fresh, strict=True))
                except sqlite3.Error as exc:  # read-only, locked, full: computed next time
                    log.debug("%s cache not written (%s)", table, exc)
        return [out[key] for key in keys]
    finally:
        if con is not None:
            con.close()
