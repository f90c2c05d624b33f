"""Results databases as each released schema revision wrote them: the upgrade fixtures.

``tests/fixtures/results-db/rev-<REVISION>.sqlite`` holds, for every revision the migrations
know, a small database whose schema was created by that revision's own migrations and whose
rows have the shapes the runner writes: two experiments (TPC-C and sysbench), done, failed,
interrupted and queued runs, intervals, samples (with zlib'd ``SHOW GLOBAL STATUS``), run
events with evidence, run variables, run metadata and, from the revision that added it, a
worker row. The rows come from one head-schema store built by
:mod:`tests.support.synthetic_store`, copied column by column into each revision's tables
(``spec_hash`` is 0001's name for ``measurement_hash``).

Regenerate (only when adding a revision — committed fixtures must not change)::

    .venv/bin/python -m tests.support.old_databases
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import tempfile
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from store.db import ResultsDB
from store.migrate import alembic_config
from store.models import RunEvent, Worker

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "results-db"
#: Columns that an old revision named differently: (table, old name) -> head name.
RENAMED = {("experiments", "spec_hash"): "measurement_hash"}


def fixture_path(revision: str) -> Path:
    """The committed fixture written by ``revision``."""
    return FIXTURE_DIR / f"rev-{revision}.sqlite"


def released_revisions() -> list[str]:
    """Every revision of the migrations, oldest first."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def build_head_store(path: Path) -> None:
    """The rows every fixture holds, in a database at head."""
    from tests.support.synthetic_store import SynthCell, build_store

    start = dt.datetime(2026, 11, 20, 22, 0, tzinfo=dt.UTC)
    cells = [
        SynthCell(knobs={"doublewrite": True}, notpm=8000, failed_repetitions=(2,)),
        SynthCell(knobs={"doublewrite": False}, notpm=9000, retried_repetitions=(1,)),
    ]
    build_store(path, cells, name="study-short", repetitions=2, warmup=10, duration=60,
                n_counters=60, start=start, seed=1)
    build_store(path, [SynthCell(knobs={"var.innodb_purge_threads": 4}, notpm=500),
                       SynthCell(knobs={"var.innodb_purge_threads": 1}, notpm=480)],
                name="sysbench-short", repetitions=1, warmup=10, duration=30, n_counters=40,
                driver="sysbench", start=start + dt.timedelta(days=1), seed=2)
    db = ResultsDB(path)
    with db.session() as s:
        failed = s.execute(sa.select(sa.text("id")).select_from(sa.text("runs"))
                           .where(sa.text("status = 'failed'"))).scalars().all()
        interrupted = s.execute(sa.select(sa.text("id")).select_from(sa.text("runs"))
                                .where(sa.text("status = 'interrupted'"))).scalars().all()
        for run_id in failed:
            s.add(RunEvent(run_id=run_id, ts=start, level="error", kind="server-exit",
                           message="mysqld exited with status 1",
                           evidence="[ERROR] InnoDB: Cannot allocate memory for the buffer pool"))
        for run_id in interrupted:
            s.add(RunEvent(run_id=run_id, ts=start, level="warning", kind="interrupted",
                           message="the worker stopped during the run", evidence=None))
        s.execute(sa.text(
            "INSERT INTO runs (cell_id, repetition, attempt, order_index, status, queued_at)"
            " SELECT cell_id, 9, 1, 99, 'queued', queued_at FROM runs ORDER BY id LIMIT 1"))
        s.add(Worker(host_id="bench-1", host_class="2cpu-24g", hostname="bench-host", pid=4242,
                     lease_s=60.0, started_at=start, heartbeat_at=start, state="stopped",
                     phase="", experiment_id=None, run_id=None))
        s.commit()
    db.dispose()


def write_fixture(head_db: Path, revision: str, target: Path) -> None:
    """A database created by ``revision``'s migrations holding the head store's rows."""
    target.unlink(missing_ok=True)
    url = f"sqlite:///{target}"
    command.upgrade(alembic_config(url), revision)  # a plain engine: empty, nothing to cascade
    conn = sqlite3.connect(target)
    try:
        conn.execute("ATTACH DATABASE ? AS head", (str(head_db),))
        tables = [row[0] for row in conn.execute(
            "SELECT name FROM main.sqlite_master WHERE type = 'table'"
            " AND name NOT IN ('alembic_version') AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            columns = [row[1] for row in conn.execute(f'PRAGMA main.table_info("{table}")')]
            sources = [RENAMED.get((table, c), c) for c in columns]
            conn.execute(
                f'INSERT INTO main."{table}" ({", ".join(f"{c!r}" for c in columns)})'
                f' SELECT {", ".join(f"{c!r}" for c in sources)} FROM head."{table}"'
                .replace("'", '"'))
        conn.commit()
        conn.execute("DETACH DATABASE head")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    finally:
        conn.close()


def main() -> None:
    """Write one fixture per revision that has none (existing ones are never rewritten)."""
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        head_db = Path(tmp) / "head.sqlite"
        build_head_store(head_db)
        for revision in released_revisions():
            path = fixture_path(revision)
            if path.exists():
                print(f"{path}: kept")
                continue
            write_fixture(head_db, revision, path)
            print(f"{path}: written ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
