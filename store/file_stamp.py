"""A SQLite results database's file stamp: text that changes whenever the file's content can
have changed, read without reading the database.

The analysis keeps figures that cost a full read of a table (every sample of every run) under
keys that hash what was read (:mod:`analysis.reading.figure_cache`). The stamp lets it skip that
read when the file is exactly as it was at the last analysis — the rule ``make`` uses for its
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

The main file's header is read through a descriptor this module opens once per file and never
closes. Closing *any* descriptor of a file drops every POSIX lock the process holds on it,
SQLite's included: a worker that read its own database's header with ``open()``/``close()``
after each run lost the shared lock its connections hold, the next reader in another shell to
close its connection took the database for unused, checkpointed it and deleted the
write-ahead log and its index while the worker still wrote to them — its later commits went to
a deleted file that new readers never saw (found 2026-11-26 during the generations study: a
`flushbench show` in another shell saw runs finished minutes earlier as still running). SQLite
keeps its own descriptors open for the same reason. The log is read with a plain
``open()``: SQLite takes no lock on it (its locks are on the main file and the ``-shm``).
"""

from __future__ import annotations

import hashlib
import os
import threading
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
        _update(h, path, _DB_HEADER_BYTES, hold=True)
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > _WAL_HEADER_BYTES:
            _update(h, wal, _WAL_HEADER_BYTES, hold=False)
        return h.hexdigest()
    except OSError:
        return None


#: (device, inode) → a read-only descriptor of a database file, open for the process's life
#: (see the module docstring: closing it would drop SQLite's locks on the file).
_HELD: dict[tuple[int, int], int] = {}
#: Descriptors that lost a race to an already held inode: never closed either, for the same
#: reason.
_SPARE: list[int] = []
_HELD_LOCK = threading.Lock()


def _update(h: hashlib._Hash, path: Path, header_bytes: int, *, hold: bool) -> None:
    """Hash one file's identity, size, modification time and header; ``hold``: read the
    header through a descriptor kept open (the main database file)."""
    st = os.stat(path)
    h.update(repr((path.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)).encode())
    if hold:
        h.update(os.pread(_held_descriptor(path, st), header_bytes, 0))
        return
    with path.open("rb") as f:
        h.update(f.read(header_bytes))


def _held_descriptor(path: Path, st: os.stat_result) -> int:
    """A descriptor of the file ``st`` describes at ``path``, opened once and never closed."""
    with _HELD_LOCK:
        fd = _HELD.get((st.st_dev, st.st_ino))
        if fd is not None:
            return fd
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        opened = os.fstat(fd)
        key = (opened.st_dev, opened.st_ino)
        if key in _HELD:  # the path was replaced between stat and open by a file held already
            _SPARE.append(fd)
            return _HELD[key]
        _HELD[key] = fd
        return fd
