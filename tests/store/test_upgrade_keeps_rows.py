"""Upgrading a results database keeps every row: each released revision's database, upgraded
to head by the product's own ``db upgrade``, on SQLite and on PostgreSQL, compared column by
column with the fixture; a backup first; a failure in the middle restores it.

The fixtures (``tests/fixtures/results-db/rev-*.sqlite``, written by
``tests/support/old_databases.py``) are committed: one per revision, old ones never rewritten.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from core.errors import StoreError
from store.db import upgrade
from store.migrate import MigrationCheckFailed, alembic_config, head_revision, sqlite_file_counts
from tests.support import system_tools
from tests.support.cli_runner import CliRun
from tests.support.old_databases import RENAMED, fixture_path, released_revisions
from tests.support.pg_rows import copy_rows
from tests.support.pgcluster import PgCluster

REVISIONS = released_revisions()
OLD = [r for r in REVISIONS if r != head_revision()]


def _copy(revision: str, tmp_path: Path) -> Path:
    target = tmp_path / "results.sqlite"
    shutil.copyfile(fixture_path(revision), target)
    return target


def _primary_key(table: sa.Table) -> tuple[str, ...]:
    return tuple(c.name for c in table.primary_key.columns)


def _normal(value: Any, column: sa.Column) -> Any:
    """One comparable form for a value read from SQLite or PostgreSQL."""
    if value is None:
        return None
    if isinstance(column.type, sa.JSON) and isinstance(value, str):
        return json.loads(value)
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _rows(engine: sa.Engine, name: str) -> tuple[sa.Table, dict[tuple, dict[str, Any]]]:
    table = sa.Table(name, sa.MetaData(), autoload_with=engine)
    key = _primary_key(table)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(table)).mappings().all()
    out = {tuple(r[k] for k in key): {c.name: _normal(r[c.name], c) for c in table.columns}
           for r in rows}
    return table, out


def assert_rows_kept(fixture: Path, upgraded_url: str) -> int:
    """Every row of every table of ``fixture`` is in the upgraded database, column by column
    where the column survives (under its new name when renamed); returns the values compared."""
    old = sa.create_engine(f"sqlite:///{fixture}")
    new = sa.create_engine(upgraded_url)
    compared = 0
    try:
        new_tables = set(sa.inspect(new).get_table_names())
        for name in sorted(set(sa.inspect(old).get_table_names()) - {"alembic_version"}):
            assert name in new_tables, f"table {name} was dropped by the upgrade"
            _, old_rows = _rows(old, name)
            new_table, new_rows = _rows(new, name)
            assert set(new_rows) >= set(old_rows), f"{name}: rows lost"
            survivors = {c.name for c in new_table.columns}
            for pk, row in old_rows.items():
                for column, value in row.items():
                    target = RENAMED.get((name, column), column)
                    if target not in survivors:
                        continue
                    assert new_rows[pk][target] == value, (name, pk, column)
                    compared += 1
    finally:
        old.dispose()
        new.dispose()
    return compared


def test_every_revision_has_a_committed_fixture() -> None:
    """A new migration must add the database its revision writes (docs/architecture.md)."""
    missing = [r for r in REVISIONS if not fixture_path(r).is_file()]
    assert missing == [], f"run `.venv/bin/python -m tests.support.old_databases`: {missing}"


@pytest.mark.parametrize("revision", REVISIONS)
def test_fixture_is_what_its_revision_wrote(revision: str) -> None:
    conn = sqlite3.connect(f"{fixture_path(revision).as_uri()}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == revision
        statuses = {r[0] for r in conn.execute("SELECT DISTINCT status FROM runs")}
        experiments = conn.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    finally:
        conn.close()
    assert {"done", "failed", "interrupted", "queued"} <= statuses
    assert experiments >= 2
    counts = sqlite_file_counts(fixture_path(revision))
    assert all(counts[t] > 0 for t in ("intervals", "samples", "run_events", "run_variables",
                                        "run_metadata"))


@pytest.mark.parametrize("revision", OLD)
def test_db_upgrade_keeps_every_row_on_sqlite(revision: str, tmp_path: Path,
                                              cli: CliRun) -> None:
    db = _copy(revision, tmp_path)
    code, out, err = cli(["db", "upgrade", "--db", str(db)])
    assert code == 0, err
    assert f"upgraded from revision {revision} to {head_revision()}" in out
    backups = list(tmp_path.glob(f"results.pre-upgrade-{revision}-*.sqlite"))
    assert len(backups) == 1 and str(backups[0]) in out.replace("\n", "")
    assert sqlite_file_counts(backups[0]) == sqlite_file_counts(fixture_path(revision))
    assert assert_rows_kept(fixture_path(revision), f"sqlite:///{db}") > 1000
    # The upgraded database is one the read verbs use: no internal error, real numbers.
    code, out, err = cli(["compare", "study-short", "--db", str(db)])
    assert code == 0, err
    assert "doublewrite" in out
    # A second upgrade has nothing to do and makes no second backup.
    code, out, _ = cli(["db", "upgrade", "--db", str(db)])
    assert code == 0 and "already the latest schema" in out
    assert len(list(tmp_path.glob("results.pre-upgrade-*"))) == 1


def _load_into_postgres(revision: str, url: str) -> None:
    """The fixture's rows in a PostgreSQL database whose schema ``revision`` created."""
    command.upgrade(alembic_config(url), revision)
    copy_rows(fixture_path(revision), url)


@pytest.mark.postgres
@pytest.mark.parametrize("revision", OLD)
def test_db_upgrade_keeps_every_row_on_postgres(revision: str, pg_cluster: PgCluster,
                                                tmp_path: Path) -> None:
    url = pg_cluster.create_database()
    _load_into_postgres(revision, url)
    if system_tools.which("pg_dump") is None:
        pytest.fail("pg_dump is not on PATH (Debian's postgresql-client, part of make setup)")
    result = upgrade(url, backup_dir=tmp_path / "backups")
    assert (result.before, result.after) == (revision, head_revision())
    assert result.backup is not None and result.backup.stat().st_size > 0
    assert "pg_dump" in result.backup_note
    assert result.counts == sqlite_file_counts(fixture_path(revision))
    assert assert_rows_kept(fixture_path(revision), url) > 1000


@pytest.mark.postgres
def test_postgres_refuses_to_migrate_without_a_backup(pg_cluster: PgCluster,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_cluster.create_database()
    _load_into_postgres(OLD[0], url)
    monkeypatch.setattr("store.migrate.shutil.which", lambda _name: None)
    with pytest.raises(StoreError, match="--i-have-a-backup"):
        upgrade(url)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == OLD[0]
    engine.dispose()
    result = upgrade(url, i_have_a_backup=True)
    assert result.backup is None and "you said you have a backup" in result.backup_note
    assert result.after == head_revision()


def test_a_failure_in_the_middle_restores_the_backup(tmp_path: Path) -> None:
    """A migration that dies after its second revision leaves the file as it was."""
    db = _copy(OLD[0], tmp_path)
    applied: list[str] = []

    def fail_after_two(revision: str) -> None:
        applied.append(revision)
        if len(applied) == 2:
            raise RuntimeError("injected failure in the middle of the upgrade")

    with pytest.raises(RuntimeError, match="injected"):
        upgrade(db, on_revision=fail_after_two)
    assert applied == REVISIONS[1:3]
    assert sqlite_file_counts(db) == sqlite_file_counts(fixture_path(OLD[0]))
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == OLD[0]
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert len(list(tmp_path.glob("results.pre-upgrade-*.sqlite"))) == 1
    assert assert_rows_kept(fixture_path(OLD[0]), f"sqlite:///{db}") > 1000


def test_rows_lost_by_a_migration_are_refused_with_both_counts(tmp_path: Path,
                                                               cli: CliRun,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """The row-count check catches a migration that deletes data, and restores the backup."""
    db = _copy(OLD[0], tmp_path)
    before = sqlite_file_counts(db)
    import store.migrate as migrate

    original = migrate._migrate

    def losing(conn: sa.Connection, url: str, hook: Any) -> None:
        original(conn, url, hook)
        conn.exec_driver_sql("DELETE FROM samples WHERE seq > 3")

    monkeypatch.setattr(migrate, "_migrate", losing)
    code, _, err = cli(["db", "upgrade", "--db", str(db)])
    assert code != 0
    assert f"samples: {before['samples']} before," in err and "Traceback" not in err
    assert sqlite_file_counts(db) == before
    with pytest.raises(MigrationCheckFailed):
        upgrade(db)


def test_the_fixtures_would_catch_the_cascade_of_release_one(tmp_path: Path) -> None:
    """Why the upgrade turns foreign keys off: with them on (every flushbench connection's
    setting), SQLite's batch re-creation of ``experiments`` cascades and empties the database.
    This is the bug the first release's users met; the fixture comparison sees it."""
    db = _copy(OLD[0], tmp_path)
    engine = sa.create_engine(f"sqlite:///{db}")
    sa.event.listen(engine, "connect",
                    lambda dbapi, _rec: dbapi.execute("PRAGMA foreign_keys=ON"))
    cfg = alembic_config(f"sqlite:///{db}")
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    engine.dispose()
    assert sqlite_file_counts(db)["runs"] == 0 < sqlite_file_counts(fixture_path(OLD[0]))["runs"]
    with pytest.raises(AssertionError):
        assert_rows_kept(fixture_path(OLD[0]), f"sqlite:///{db}")
