"""The results database a bundle carries: one experiment's rows in one self-contained file.

What ``flushbench bundle`` (:mod:`analysis.bundle`) does to the SQLite copy it packs, as
statements on that file: trim it to the experiment, look for secret server variables left in
clear, and leave it without ``-wal``/``-shm`` companions. The archive around it is
:mod:`store.bundles`; the manifest's check of it, :mod:`store.bundle_manifest`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from store.bundle_manifest import database_figures
from store.migrate import sqlite_copy


def trimmed_copy(source_db: Path, experiment_id: int, target: Path) -> dict[str, int]:
    """A consistent copy of ``source_db`` at ``target`` holding only one experiment (its rows
    cascade from ``experiments``; the ``workers`` table, other hosts' live state, emptied),
    vacuumed, in rollback-journal mode. Returns its rows per table."""
    sqlite_copy(source_db, target)
    conn = sqlite3.connect(target)
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("DELETE FROM experiments WHERE id != ?", (experiment_id,))
        conn.execute("DELETE FROM workers")
        conn.commit()
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    finally:
        conn.close()
    return database_figures(target)[1]


@contextlib.contextmanager
def read_only(db: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a SQLite file (nothing is written to it), closed after."""
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    try:
        yield conn
    finally:
        conn.close()


def secret_variables_set(conn: sqlite3.Connection, names: Sequence[str],
                         mask: str) -> list[str]:
    """Which of the server variables ``names`` some run stored with a value (neither empty
    nor ``mask``, the recorder's placeholder), each named once."""
    return [n for (n,) in conn.execute(
        "SELECT DISTINCT name FROM run_variables WHERE value NOT IN ('', ?) AND"
        f" name IN ({','.join('?' * len(names))})", (mask, *names))]


def single_file(path: Path) -> None:
    """Leave a SQLite database as one self-contained file: back in rollback-journal mode
    (which checkpoints the WAL) and without ``-wal``/``-shm`` files beside it."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
