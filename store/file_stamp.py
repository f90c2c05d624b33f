"""A SQLite results database's file stamp: text that changes whenever the file's content can
have changed, read without reading the database.

The analysis keeps figures that cost a full read of a table (every sample of every run) under
keys that hash what was read (:mod:`analysis.figure_cache`). The stamp lets it skip that read
when the file is exactly as it was at the last analysis — the rule ``make`` uses for its
targets, tightened by what SQLite writes on every commit:

- the main file's device, inode, size, modification time (ns) and its header's *file change
  counter* (bytes 24–27, incremented by every transaction committed in rollback-journal mode
  and by every checkpoint of a WAL);
- the write-ahead log's size, modification time and header (its checkpoint sequence number and
  salts, which change whenever the log is reset) when it holds frames — a WAL database's
  commits append frames there before any checkpoint reaches the main file. An empty log (no
  frames, as a reader's own connection leaves it) holds no content and is left out, so reading
  a database does not change its stamp.

A PostgreSQL store or an in-memory database has no stamp (None): its callers read the table.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sqlalchemy.orm import Session

#: The SQLite file header's bytes read: the change counter is at offset 24 (4 bytes).
_DB_HEADER_BYTES = 100
#: A write-ahead log's header; a log no longer than this holds no frame.
_WAL_HEADER_BYTES = 32


def sqlite_file(session: Session) -> Path | None:
    """The file behind ``session``'s database when it is a SQLite file, else None."""
    url = session.get_bind().url
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).expanduser().resolve()


def file_stamp(session: Session) -> str | None:
    """The stamp (a hex digest) of ``session``'s SQLite database file as it is now; None for a
    PostgreSQL or in-memory database, or when the file cannot be read."""
    path = sqlite_file(session)
    if path is None:
        return None
    try:
        h = hashlib.sha256(str(path).encode())
        _update(h, path, _DB_HEADER_BYTES)
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > _WAL_HEADER_BYTES:
            _update(h, wal, _WAL_HEADER_BYTES)
        return h.hexdigest()
    except OSError:
        return None


def _update(h: hashlib._Hash, path: Path, header_bytes: int) -> None:
    """Hash one file's identity, size, modification time and header."""
    st = os.stat(path)
    h.update(repr((path.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)).encode())
    with path.open("rb") as f:
        h.update(f.read(header_bytes))
