"""Is this results database ours, reachable and writable? Checked before anything writes to it.

Opening a SQLite file through the engine switches it to WAL and may create tables: on a file
that is not a flushbench database (another application's SQLite, a text file, a truncated
copy) that would damage it. So a SQLite file is first looked at read-only with the standard
library, and a server database is probed with one connection; every answer that is not "a
flushbench database (or an empty one)" becomes a :class:`StoreError` with what, where and fix.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from core.errors import StoreError, bounded
from core.filecheck import check_input_file
from core.redaction import remember_url

#: Tables only a flushbench database has (a database with other tables only is not ours).
OUR_TABLES = frozenset({"experiments", "cells", "runs", "alembic_version"})

T = TypeVar("T")


def parse_url(url: str, shown: str) -> sa.engine.URL:
    """The URL parsed, or a StoreError naming what is wrong with it (password never shown).

    Refused before any connection: an unencoded ``@`` in the user name, the password or a
    parameter (SQLAlchemy ends the password at the first ``@``, so the driver would take the
    rest for the host and print it), a port that is not 1–65535.
    """
    remember_url(url)  # its password is masked wherever a message would repeat it
    if "://" in url and not url.lower().startswith("sqlite"):  # a file path may hold '@'
        # A server URL's one '@' is the userinfo's; after a path and a query it is a value's.
        rest = url.split("://", 1)[1]
        before = rest.split("@", 1)[0]
        if rest.count("@") > 1 or ("@" in rest and "/" in before and "?" in before):
            raise StoreError(
                "the URL holds an unencoded '@' (in the user name, the password or a"
                " parameter)", where=shown,
                fix="percent-encode it: '@' is %40 (python3 -c 'import urllib.parse,sys;"
                " print(urllib.parse.quote(sys.argv[1], safe=\"\"))' PASSWORD)",
            )
    try:
        parsed = make_url(url)
    except sa.exc.ArgumentError:
        raise StoreError(
            "not a database URL or path", where=shown,
            fix="give a file path or a URL like postgresql+psycopg://user@host/flushbench",
        ) from None
    except ValueError:
        raise StoreError("the URL's port is not a number", where=shown,
                         fix="write the port as digits, e.g. host:5432") from None
    host = parsed.host or ""
    if host and not host.startswith("[") and (
            len(host) > 253 or any(len(label) > 63 for label in host.split("."))):
        raise StoreError("the URL's host name is too long (at most 63 characters between dots,"
                         " 253 in all)", where=bounded(shown, 200),
                         fix="check the host part of the URL") from None
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise StoreError(f"the URL's port {parsed.port} is not between 1 and 65535",
                         where=shown, fix="use the server's port, e.g. 5432") from None
    return parsed


def check_sqlite_file(path: Path, shown: str, *, create: bool) -> None:
    """Refuse a SQLite target that is not a (possibly new) flushbench database.

    Raises
    ------
    StoreError
        Missing file when ``create`` is false, a directory, a file that is not SQLite (or is
        truncated or corrupt), another application's database, an unreadable file.
    """
    if path.is_dir():
        raise StoreError("the results database path is a directory", where=shown,
                         fix="name a file, e.g. results/flushbench.sqlite")
    if path.exists() or path.is_symlink():
        # A FIFO would block the read below (and SQLite's open) forever; a device never ends.
        check_input_file(path, "the results database", error=StoreError)
    if not path.exists():
        if not create:
            raise StoreError("no results database here", where=shown,
                             fix="check the path (--db / $FLUSHBENCH_DB), or run an experiment"
                                 " first to create it")
        parent = next((p for p in path.parents if p.exists()), None)
        if parent is not None and not os.access(parent, os.W_OK):
            raise StoreError(f"cannot create the results database: {parent} is not writable",
                             where=shown, fix="choose a writable folder with --db")
        return
    if not os.access(path, os.R_OK):
        raise StoreError("cannot read the results database: permission denied", where=shown,
                         fix="check the file's permissions")
    # Only SQLite opens the file, never Python's open(): closing any descriptor of a file
    # drops every POSIX lock this process holds on it, SQLite's included. A worker that opened
    # a second handle on its own database would lose its locks, and the next reader to close
    # (`flushbench status` in another shell) would take the database for unused, checkpoint
    # and delete the write-ahead log the worker still writes to — its later writes orphaned
    # (seen 2026-11-24 in the flash-2011 calibration). SQLite shares its locks among the
    # connections of a process and keeps their descriptors open while they are held.
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if "file is not a database" in str(exc):
            raise StoreError("this file is not a SQLite database", where=shown,
                             fix="point --db at a flushbench results database (or a new path)"
                             ) from None
        raise StoreError(f"the results database is damaged or truncated ({exc})", where=shown,
                         fix="restore it from a backup, or start a new one with another --db"
                         ) from None
    if tables and "alembic_version" not in tables:
        others = ", ".join(sorted(tables)[:5])
        raise StoreError(f"not a flushbench results database (it holds tables: {others})",
                         where=shown, fix="point --db at a flushbench database or a new path;"
                         " this file was left untouched")


def guarded(shown: str, action: Callable[[], T]) -> T:
    """Run a database action; connection, driver and permission failures become StoreErrors."""
    try:
        return action()
    except StoreError:
        raise
    except ModuleNotFoundError as exc:
        raise StoreError(f"the database driver is not installed ({exc.name})", where=shown,
                         fix="use sqlite or postgresql+psycopg (part of `make setup`)") from None
    except sa.exc.NoSuchModuleError:
        raise StoreError("unknown database driver in the URL", where=shown,
                         fix="use a path, sqlite:///PATH or postgresql+psycopg://…") from None
    except sa.exc.OperationalError as exc:
        text = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StoreError(f"cannot use the results database: {text}", where=shown,
                         fix=database_error_fix(text, is_sqlite=shown.startswith("sqlite"))
                         ) from None
    except sa.exc.DatabaseError as exc:
        text = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StoreError(f"the results database refused: {text}", where=shown,
                         fix="check that this is a flushbench database") from None


def database_error_fix(reason: str, *, is_sqlite: bool) -> str:
    """How to get past a database error, from the driver's own words (``reason``).

    One place for the fixes every store message gives: opening (:func:`guarded`), a verb's
    write that fails mid-command (:func:`store.db.database_failure`), a migration.
    """
    known = known_cause_fix(reason)
    if known is not None:
        return known
    if is_sqlite:
        # SQLite also writes its -wal and -shm files beside the database: the folder counts.
        return "check that the file and its folder exist and are readable and writable"
    return "check the host, port, database name and that the server runs"


def known_cause_fix(reason: str) -> str | None:
    """The fix for a cause the driver's words name (read-only, full, locked), else None."""
    text = reason.lower()
    if "readonly" in text or "read-only" in text:
        return ("make the file and its folder writable (not read-only, not immutable), or copy"
                " the database somewhere writable and name that with --db")
    if "disk is full" in text or "no space" in text:
        return "free space on that disk, or move the database to another with --db"
    if "database is locked" in text:
        return "stop the other process writing to the database (a worker, a notebook)"
    return None
