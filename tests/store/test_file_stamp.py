"""A SQLite file's stamp is unchanged by reading it and changed by every commit, in both
journal modes; other databases have none."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from store.file_stamp import file_stamp


def _stamp(path: Path | str) -> str | None:
    url = "sqlite://" if path == ":memory:" else f"sqlite:///{path}"
    engine = create_engine(url)
    try:
        with Session(engine) as s:
            return file_stamp(s)
    finally:
        engine.dispose()


def _make(path: Path, mode: str) -> None:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA journal_mode={mode}")
    con.execute("CREATE TABLE t (a INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    con.commit()
    con.close()


@pytest.mark.parametrize("mode", ["DELETE", "WAL"])
def test_reading_keeps_the_stamp_and_a_commit_changes_it(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "r.sqlite"
    _make(db, mode)
    first = _stamp(db)
    assert first is not None
    reader = sqlite3.connect(db)  # a reader's connection: a WAL database's log is made
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (100,)
    assert _stamp(db) == first, "a reader's open connection changed the stamp"
    reader.close()
    assert _stamp(db) == first, "reading changed the stamp"
    # A commit that keeps the file's size (one value rewritten in place), with a writer that
    # stays open (a WAL database's frames stay in its log) and after it closes.
    writer = sqlite3.connect(db)
    writer.execute("UPDATE t SET a = a + 1 WHERE a = 7")
    writer.commit()
    during = _stamp(db)
    assert during != first
    writer.execute("UPDATE t SET a = a + 1 WHERE a = 9")
    writer.commit()
    assert _stamp(db) not in (first, during)
    writer.close()
    assert _stamp(db) != first


def test_a_copy_has_its_own_stamp(tmp_path: Path) -> None:
    """Same bytes at another path (a copy made and later changed would otherwise share it)."""
    db = tmp_path / "a.sqlite"
    _make(db, "DELETE")
    copy = tmp_path / "b.sqlite"
    copy.write_bytes(db.read_bytes())
    assert _stamp(copy) not in (None, _stamp(db))


def test_no_stamp_without_a_file(tmp_path: Path) -> None:
    assert _stamp(":memory:") is None
    assert _stamp(tmp_path / "absent" / "r.sqlite") is None
