"""The results store: migrations from empty to head (SQLite and PostgreSQL), one head, schema
snapshot, old revisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from core.errors import StoreError
from store import ResultsDB, upgrade
from store.db import alembic_config, head_revision, redacted, resolve_url
from store.models import Base

SNAPSHOT = Path(__file__).with_name("schema_snapshot.txt")


def describe_schema(engine: sa.Engine) -> str:
    """A stable text rendering of tables, columns, keys and indexes (the snapshot format)."""
    insp = sa.inspect(engine)
    lines = []
    for table in sorted(insp.get_table_names()):
        if table == "alembic_version":
            continue
        lines.append(f"table {table}")
        for col in insp.get_columns(table):
            null = "NULL" if col["nullable"] else "NOT NULL"
            lines.append(f"  column {col['name']} {col['type']} {null}")
        pk = insp.get_pk_constraint(table)
        lines.append(f"  pk {pk['name']} ({', '.join(pk['constrained_columns'])})")
        for fk in sorted(insp.get_foreign_keys(table), key=lambda f: f["name"] or ""):
            lines.append(
                f"  fk {fk['name']} ({', '.join(fk['constrained_columns'])}) -> "
                f"{fk['referred_table']} ondelete={fk['options'].get('ondelete')}"
            )
        for uq in sorted(insp.get_unique_constraints(table), key=lambda u: u["name"] or ""):
            lines.append(f"  unique {uq['name']} ({', '.join(uq['column_names'])})")
        for ix in sorted(insp.get_indexes(table), key=lambda i: i["name"] or ""):
            lines.append(f"  index {ix['name']} ({', '.join(ix['column_names'])})")
    return "\n".join(lines) + "\n"


def test_exactly_one_migration_head() -> None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1
    assert head_revision() == script.get_heads()[0]


def test_upgrade_from_empty_to_head_matches_models(empty_results_url: str) -> None:
    assert upgrade(empty_results_url).after == head_revision()
    engine = sa.create_engine(empty_results_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == [], f"models and migrations disagree — add a migration: {diff}"


def test_schema_snapshot(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "r.sqlite")
    current = describe_schema(db.engine)
    db.dispose()
    assert SNAPSHOT.read_text() == current, (
        "schema changed: review it, add a migration, then refresh tests/store/schema_snapshot.txt"
    )


def test_sqlite_pragmas_are_on(tmp_path: Path) -> None:
    with ResultsDB(tmp_path / "r.sqlite") as db, db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_old_revision_asks_for_db_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    ResultsDB(path).dispose()
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
    engine.dispose()
    with pytest.raises(StoreError, match="flushbench db upgrade"):
        ResultsDB(path)


def test_unknown_revision_is_a_newer_flushbench(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    ResultsDB(path).dispose()
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_future'")
    engine.dispose()
    with pytest.raises(StoreError, match="a newer flushbench wrote it"):
        ResultsDB(path)


def test_empty_database_not_created_when_asked_not_to(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="empty"):
        ResultsDB(tmp_path / "new.sqlite", create=False)


def test_password_never_rendered() -> None:
    url = "postgresql+psycopg://bench:s3cret@db.example/flushbench"
    assert "s3cret" not in redacted(url)
    assert resolve_url(url) == url


def test_upgrade_0001_to_head_backfills_window_and_metric(empty_results_url: str) -> None:
    """A database queued before 0002 keeps its experiments: window and metric filled in."""
    from alembic import command

    url = empty_results_url
    command.upgrade(alembic_config(url), "0001")
    engine = sa.create_engine(url)
    spec = {"workload": {"driver": "sysbench", "duration": 60.0, "warmup": 5.0,
                         "report_interval": 10.0}, "window": {"start": None, "end": None}}
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO experiments (name, description, source_path, spec_hash, spec,"
            " created_at) VALUES ('old', '', '', 'h', :spec, '2026-01-01 00:00:00')"),
            {"spec": json.dumps(spec)})
    engine.dispose()
    assert upgrade(url).after == head_revision()
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        window, metric, mhash, placement = conn.execute(sa.text(
            'SELECT "window", metric, measurement_hash, placement FROM experiments')).one()
    engine.dispose()
    window, metric = (json.loads(v) if isinstance(v, str) else v for v in (window, metric))
    assert placement == "one"  # 0003: experiments queued before placement existed
    assert window == {"warmup": 5.0, "duration": 60.0, "start": 30.0, "end": 60.0,
                                  "report_interval": 10.0}
    assert metric["name"] == "TPS" and mhash == "h"


@pytest.mark.slow  # six Python processes at once
def test_processes_opening_a_new_database_at_once_do_not_collide(tmp_path: Path) -> None:
    """Six processes create the same new SQLite database together: one migrates, none fails."""
    import subprocess
    import sys

    path = tmp_path / "r.sqlite"
    code = f"from store import ResultsDB; ResultsDB({str(path)!r}).dispose()"
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2]) for _ in range(6)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == (
            head_revision())
    engine.dispose()


def test_downgrade_to_0002_and_back(results_url: str) -> None:
    """0003 reverses cleanly (the lead re-chains revisions; each must stand alone)."""
    from alembic import command

    command.downgrade(alembic_config(results_url), "0002")
    engine = sa.create_engine(results_url)
    assert "workers" not in sa.inspect(engine).get_table_names()
    engine.dispose()
    assert upgrade(results_url).after == head_revision()
