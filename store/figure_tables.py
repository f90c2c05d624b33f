"""Tables of key → JSON figures in one SQLite file: the analysis cache's file format.

The cache's policy — where the file lives, when it is used, what a key hashes, what happens
when it cannot be read — is :mod:`analysis.reading.figure_cache`'s; here are only the statements on
its file. Each table has two columns, ``key TEXT PRIMARY KEY`` and ``figures TEXT``; table
names come from the analysis code (constants), never from input.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

#: Keys per ``IN (…)`` lookup: well under SQLite's bound-parameter limit.
LOOKUP_CHUNK = 500


def connect(path: Path, table: str, timeout_s: float) -> sqlite3.Connection:
    """An autocommit connection to the cache file in WAL mode, with ``table`` created if
    absent (the parent folder too). Raises ``sqlite3.Error`` (connection closed) when the file
    is damaged, ``OSError`` when the folder cannot be made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                    "(key TEXT PRIMARY KEY, figures TEXT NOT NULL)")
    except sqlite3.Error:
        con.close()  # a damaged file: no connection left open
        raise
    return con


def lookup(con: sqlite3.Connection, table: str, keys: Iterable[str]) -> dict[str, str]:
    """The stored figures (JSON text) of those ``keys`` that ``table`` holds, by key
    (:data:`LOOKUP_CHUNK` keys a query)."""
    found: dict[str, str] = {}
    wanted = sorted(set(keys))
    for i in range(0, len(wanted), LOOKUP_CHUNK):
        chunk = wanted[i:i + LOOKUP_CHUNK]
        marks = ",".join("?" * len(chunk))
        found.update(con.execute(
            f"SELECT key, figures FROM {table} WHERE key IN ({marks})", chunk))
    return found


def put(con: sqlite3.Connection, table: str, entries: Iterable[tuple[str, str]]) -> None:
    """Store ``(key, figures)`` pairs in ``table`` in one transaction (a key already there is
    replaced). Raises ``sqlite3.Error`` when the file cannot be written."""
    with con:
        con.executemany(f"INSERT OR REPLACE INTO {table} (key, figures) VALUES (?, ?)",
                        list(entries))
