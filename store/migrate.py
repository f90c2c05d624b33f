"""Schema upgrades that cannot lose a row: a backup first, foreign keys off, counts verified.

Why this module exists: SQLite's batch migrations re-create a table (copy, drop, rename). With
``PRAGMA foreign_keys=ON`` — which every flushbench connection sets — dropping ``experiments``
cascades ``ON DELETE CASCADE`` down to cells, runs, intervals and samples, so an upgrade from an
old revision silently emptied the database. So an upgrade here:

1. takes the migration lock (``flock`` on SQLite, an advisory lock on PostgreSQL);
2. writes a backup before touching an existing schema: a consistent copy next to a SQLite file
   (SQLite's online backup API, safe on a live WAL database), or ``pg_dump`` on PostgreSQL
   (refused without one unless the user says ``--i-have-a-backup``);
3. migrates on a connection of its own with foreign keys **off**, in one transaction (explicit
   ``BEGIN IMMEDIATE`` on SQLite, whose Python driver would otherwise autocommit DDL);
4. before committing, runs ``PRAGMA foreign_key_check`` and compares the row count of every
   table the old schema had with its count before: any difference rolls back;
5. on any failure restores the SQLite backup, so the file is exactly what it was.

``docs/architecture.md`` ("Changing the schema") says how a migration is written and tested.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url

from core.errors import StoreError
from core.redaction import redact_url
from store.checks import check_sqlite_file, guarded, known_cause_fix, parse_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
#: Advisory lock key that serializes migrations on PostgreSQL ("flushben" in ASCII).
_PG_MIGRATION_LOCK = 0x666C75736862656E
#: Tables whose counts are not data (Alembic's own bookkeeping).
_NOT_DATA = frozenset({"alembic_version"})


@dataclass
class UpgradeResult:
    """What one upgrade did, for the CLI to say.

    Attributes
    ----------
    before, after:
        The revision before (None: a new, empty database) and after.
    backup:
        Where the backup was written (a file path), or None when none was needed (a new or
        already current database) or the user said they have one.
    backup_note:
        How the backup was made or why there is none, in words.
    counts:
        Rows per table before the upgrade, verified equal after it (empty for a new database).
    """

    before: str | None
    after: str
    backup: Path | None = None
    backup_note: str = ""
    counts: dict[str, int] = field(default_factory=dict)


class MigrationCheckFailed(StoreError):
    """A migration changed what it must keep (rows lost, dangling references): rolled back."""


def alembic_config(url: str) -> Config:
    """An Alembic config pointing at this package's migrations and the given database."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # '%' must be escaped for ConfigParser interpolation (URL-encoded passwords contain it).
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


@functools.cache
def _migration_revisions() -> tuple[tuple[str, ...], frozenset[str]]:
    """(head revisions, every revision) of the migrations shipped with this flushbench.

    Read once per process: the migrations are files of the installed package, and reading
    them (Alembic imports every script) was a tenth of opening a database for a quick verb.
    """
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return (tuple(script.get_heads()),
            frozenset(rev.revision for rev in script.walk_revisions()))


def head_revision() -> str:
    """The single head revision of the migrations (tests assert there is exactly one)."""
    heads = _migration_revisions()[0]
    if len(heads) != 1:
        raise StoreError(f"the migrations have {len(heads)} heads: {heads}", fix="merge them")
    return heads[0]


def known_revisions() -> set[str]:
    """Every revision these migrations know (a database at another one is from a newer tool)."""
    return set(_migration_revisions()[1])


def current_revision(engine_or_conn: Engine | Connection) -> str | None:
    """The revision the database is at, or None for an empty database.

    Raises
    ------
    StoreError
        ``alembic_version`` names several revisions (flushbench writes one: the database was
        stamped by hand or by another tool, and no upgrade path starts there).
    """
    if isinstance(engine_or_conn, Connection):
        heads = MigrationContext.configure(engine_or_conn).get_current_heads()
        url = engine_or_conn.engine.url
    else:
        with engine_or_conn.connect() as conn:
            heads = MigrationContext.configure(conn).get_current_heads()
        url = engine_or_conn.url
    if len(heads) > 1:
        shown = redact_url(url.render_as_string(hide_password=False))
        raise StoreError(
            f"the results database's alembic_version names {len(heads)} revisions"
            f" ({', '.join(sorted(heads))}) where flushbench keeps one, so its schema is"
            " unknown (stamped by hand or by another tool)",
            where=shown,
            fix="restore the database from its backup, or keep only the row of the revision"
                " its tables match in alembic_version, then run"
                f" `flushbench db upgrade --db {shown}`")
    return heads[0] if heads else None


def schema_mismatch(conn: Engine | Connection, revision: str, shown: str) -> None:
    """Refuse a database stamped ``revision`` (this flushbench's head) whose tables lack a
    column or table the models read: stamped by hand or by another tool, every read of that
    column would fail mid-verb.

    Raises
    ------
    StoreError
        Naming what is missing, the revision that adds it and the fix.
    """
    from store.models import Base  # the tables head has (imported late: the models are big)

    inspector = sa.inspect(conn)
    found = set(inspector.get_table_names())
    missing = []
    for table in Base.metadata.sorted_tables:
        if table.name not in found:
            missing.append(table.name)
            continue
        have = {c["name"] for c in inspector.get_columns(table.name)}
        missing += [f"{table.name}.{c.name}" for c in table.columns if c.name not in have]
    if not missing:
        return
    names = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5
                                      else "")
    added = _revision_adding(missing[0].rpartition(".")[2])
    back = f" ({added[1]} if only {added[0]}'s columns are missing)" if added else ""
    raise StoreError(
        f"the results database is stamped revision {revision}, the latest, but lacks {names}:"
        " its tables are older than its stamp (stamped by hand or by another tool)",
        where=shown,
        fix=f"set alembic_version to the revision its tables match{back}, then run"
            f" `flushbench db upgrade --db {shown}`; or restore it from its backup")


def _revision_adding(name: str) -> tuple[str, str] | None:
    """The revision whose migration creates a column or table ``name`` and the one before it
    (read from the migration's source: for a message only)."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    for rev in script.walk_revisions():
        text = Path(rev.path).read_text(encoding="utf-8") if rev.path else ""
        if f'"{name}"' in text and isinstance(rev.down_revision, str):
            return rev.revision, rev.down_revision
    return None


def checked_revision(conn: Engine | Connection, shown: str) -> str | None:
    """The database's revision, refusing one a newer flushbench wrote or a foreign schema.

    Raises
    ------
    StoreError
        An unknown (newer) revision, or tables without a flushbench revision.
    """
    current = current_revision(conn)
    if current is not None and current not in known_revisions():
        raise StoreError(
            f"the results database is at revision {current}, which this flushbench does not"
            " know: a newer flushbench wrote it",
            where=shown,
            fix="use the newer flushbench, or another --db",
        )
    if current is None and set(sa.inspect(conn).get_table_names()) - _NOT_DATA:
        raise StoreError(
            "not a flushbench results database (it has tables but no flushbench schema)",
            where=shown,
            fix="point --db at a flushbench database or an empty one; nothing was written",
        )
    return current


def migration_engine(url: str) -> Engine:
    """An engine for migrating: on SQLite, foreign keys off and DDL inside one transaction.

    Python's ``sqlite3`` commits DDL on its own unless the connection is in autocommit mode
    with an explicit ``BEGIN`` (SQLAlchemy's documented recipe); ``PRAGMA foreign_keys`` is a
    no-op inside a transaction, so it is set as the connection opens.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, poolclass=sa.pool.NullPool)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:  # noqa: ANN001 - DBAPI types vary
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=OFF")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def table_counts(conn: Connection) -> dict[str, int]:
    """Rows per data table (every table but Alembic's), by name."""
    names = sorted(set(sa.inspect(conn).get_table_names()) - _NOT_DATA)
    preparer = conn.dialect.identifier_preparer
    return {name: int(conn.exec_driver_sql(
        f"SELECT COUNT(*) FROM {preparer.quote(name)}").scalar_one()) for name in names}


def _foreign_key_problems(conn: Connection) -> list[str]:
    """Rows whose foreign key points nowhere (SQLite only: PostgreSQL enforces them itself)."""
    if conn.dialect.name != "sqlite":
        return []
    rows = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
    return [f"{row[0]} rowid {row[1]} → {row[2]}" for row in rows[:10]]


def verify_kept(before: dict[str, int], after: dict[str, int], shown: str) -> None:
    """Refuse an upgrade that lost (or invented) rows of a table the old schema had.

    Raises
    ------
    MigrationCheckFailed
        Naming every table whose count changed, with both counts.
    """
    changed = [f"{name}: {count} before, {after.get(name, 0)} after"
               for name, count in before.items() if after.get(name, 0) != count]
    if changed:
        raise MigrationCheckFailed(
            "the upgrade changed row counts (" + "; ".join(changed) + ")",
            where=shown,
            fix="nothing was kept from it; report this as a bug with the backup file",
        )


#: Called after each revision is applied, with the revision id; tests use it to inject a
#: failure in the middle of a chain, the CLI to show progress.
RevisionHook = Callable[[str], None]


def _migrate(conn: Connection, url: str, on_revision: RevisionHook | None) -> None:
    """Run Alembic from the connection's revision to head inside the caller's transaction."""
    cfg = alembic_config(url)
    cfg.attributes["connection"] = conn
    if on_revision is not None:
        cfg.attributes["on_version_apply"] = (
            lambda *, step, **_: on_revision(str(step.up_revision_id)))
    command.upgrade(cfg, "head")


def sqlite_file_counts(path: Path) -> dict[str, int]:
    """Rows per data table of a SQLite file, read-only (a backup, a fixture)."""
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
                for name in sorted(set(names) - _NOT_DATA)}
    finally:
        conn.close()


def _timestamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def sqlite_backup_path(path: Path, revision: str) -> Path:
    """Where the backup of ``path`` at ``revision`` goes: beside it, never overwriting one."""
    base = path.with_name(f"{path.stem}.pre-upgrade-{revision}-{_timestamp()}{path.suffix}")
    candidate, n = base, 1
    while candidate.exists():
        candidate = base.with_name(f"{base.stem}-{n}{base.suffix}")
        n += 1
    return candidate


def sqlite_copy(source: Path, target: Path) -> None:
    """A consistent copy through SQLite's online backup API (safe while others write)."""
    src = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def sqlite_backup(source: Path, target: Path) -> None:
    """A backup file: a consistent copy that is one self-contained file (no -wal, no -shm)."""
    sqlite_copy(source, target)
    conn = sqlite3.connect(target)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()


def _pg_dump(url: sa.engine.URL, backup_dir: Path, revision: str) -> Path:
    """Dump a PostgreSQL database with ``pg_dump`` (custom format).

    The connection goes to ``pg_dump`` as a libpq URI without the password (which would show in
    ``ps``); the password, from the URL's userinfo or its ``password`` parameter, goes by
    ``PGPASSWORD``.
    """
    backup_dir.mkdir(parents=True, exist_ok=True)
    name = url.database or "flushbench"
    target = backup_dir / f"{name}.pre-upgrade-{revision}-{_timestamp()}.dump"
    query = dict(url.query)
    password = url.password or query.pop("password", None)
    libpq = url.set(drivername="postgresql", password=None, query=query)
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    if password:
        env["PGPASSWORD"] = str(password if isinstance(password, str) else password[0])
    args = ["pg_dump", "--format=custom", "--no-owner", f"--file={target}",
            f"--dbname={libpq.render_as_string(hide_password=False)}"]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        target.unlink(missing_ok=True)
        reason = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise StoreError(
            f"pg_dump failed before the upgrade, so nothing was changed: {reason}",
            where=url.render_as_string(hide_password=True),
            fix="fix what pg_dump says, or take your own backup and pass --i-have-a-backup",
        )
    return target


@contextlib.contextmanager
def _file_lock(url: sa.engine.URL) -> Iterator[None]:
    """An exclusive ``flock`` on a SQLite file's folder while it is migrated (no-op for servers).

    Not on the database file itself: closing *any* descriptor of a file drops every POSIX
    record lock the process holds on it, SQLite's included, and a process that migrates while
    it has the database open (a worker creating its own database, then writing to it) would
    go on without them. The next process to close the database elsewhere then takes it for
    unused and deletes the write-ahead log this one still writes to (seen 2026-11-24). The
    folder's lock serializes migrators of every database in it; they take seconds.
    """
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        yield
        return
    folder = Path(url.database).parent
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def upgrade_database(
    url: str,
    shown: str,
    *,
    i_have_a_backup: bool = False,
    backup_dir: Path | None = None,
    on_revision: RevisionHook | None = None,
) -> UpgradeResult:
    """Bring the database to head without losing a row (see the module docstring).

    Parameters
    ----------
    url, shown:
        The database URL and its printable (redacted) form.
    i_have_a_backup:
        PostgreSQL without ``pg_dump``: the user vouches for their own backup.
    backup_dir:
        Where a PostgreSQL dump goes (default ``results/backups``); a SQLite backup always goes
        beside its file.
    on_revision:
        Called after each revision is applied (inside the transaction).

    Raises
    ------
    StoreError
        A foreign or newer database, no way to back up, a failed check (rolled back and, on
        SQLite, the backup restored), or a database error; a failure of the migration itself
        says what failed and where the backup is (or that none was made).
    """
    parsed = parse_url(url, shown)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    path = Path(parsed.database) if is_sqlite and parsed.database not in (None, "", ":memory:") \
        else None
    if path is not None:
        check_sqlite_file(path, shown, create=True)
    engine = guarded(shown, lambda: migration_engine(url))
    head = head_revision()
    try:
        with _file_lock(engine.url):
            with guarded(shown, engine.connect) as probe:
                before = guarded(shown, lambda: checked_revision(probe, shown))
            if before == head:
                with guarded(shown, engine.connect) as probe:
                    guarded(shown, lambda: schema_mismatch(probe, head, shown))
                return UpgradeResult(before, head, backup_note="already at the latest schema")
            result = UpgradeResult(before, head)
            if before is not None:
                _back_up(result, parsed, path, shown, backup_dir=backup_dir,
                         i_have_a_backup=i_have_a_backup)
            try:
                return _migrate_checked(engine, url, shown, result, path, on_revision)
            except BaseException as exc:
                restored = _restore(result, path)
                failure = _failure(exc, result, path, shown, restored=restored)
                if failure is None:
                    raise  # a bug (or Ctrl-C): its own traceback, the file restored
                raise failure from None
    finally:
        engine.dispose()


def _back_up(result: UpgradeResult, parsed: sa.engine.URL, path: Path | None, shown: str, *,
             backup_dir: Path | None, i_have_a_backup: bool) -> None:
    """Back the existing schema up before it changes (into ``result``), or refuse."""
    assert result.before is not None
    if path is not None:
        result.backup = sqlite_backup_path(path, result.before)
        guarded(shown, lambda: sqlite_backup(path, result.backup))
        result.backup_note = "a consistent copy made with SQLite's backup API"
    elif shutil.which("pg_dump"):
        result.backup = _pg_dump(parsed, backup_dir or Path("results/backups"), result.before)
        result.backup_note = "pg_dump --format=custom (restore with pg_restore)"
    elif i_have_a_backup:
        result.backup_note = "none made: you said you have a backup"
    else:
        raise StoreError(
            "refusing to change the schema of a PostgreSQL results database"
            " without a backup, and pg_dump is not on PATH",
            where=shown,
            fix="install pg_dump (Debian: postgresql-client), or back the"
                " database up yourself and pass --i-have-a-backup",
        )


def _migrate_checked(engine: Engine, url: str, shown: str, result: UpgradeResult,
                     path: Path | None, on_revision: RevisionHook | None) -> UpgradeResult:
    """Migrate in one transaction, checking foreign keys and row counts before it commits."""
    with guarded(shown, engine.begin) as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})")
        # Checked again under the transaction: another process may have migrated.
        before_now = checked_revision(conn, shown)
        if before_now == result.after:
            return UpgradeResult(before_now, result.after,
                                 backup_note="already at the latest schema")
        counts = table_counts(conn) if before_now is not None else {}
        if result.backup is not None and path is not None:
            # The backup must hold what is about to change, or it is no backup.
            verify_kept(sqlite_file_counts(result.backup), counts, shown)
        # A new database is just created: no progress worth showing.
        _migrate(conn, url, on_revision if before_now is not None else None)
        dangling = _foreign_key_problems(conn)
        if dangling:
            raise MigrationCheckFailed(
                "the upgrade left rows pointing at nothing: " + ", ".join(dangling),
                where=shown, fix="report this as a bug with the backup file")
        verify_kept(counts, table_counts(conn), shown)
        result.counts = counts
    return result


def _restore(result: UpgradeResult, path: Path | None) -> bool:
    """Copy a SQLite backup back over the file after a failed migration; False if that failed
    too (the transaction was rolled back; this is the second line of defence)."""
    if result.backup is None or path is None:
        return True
    try:
        sqlite_copy(result.backup, path)
    except (sqlite3.Error, OSError):
        return False
    return True


def _failure(exc: BaseException, result: UpgradeResult, path: Path | None, shown: str, *,
             restored: bool) -> StoreError | None:
    """The one error a failed migration becomes: what failed, and where the backup is (or
    that none was made); None for a bug, which keeps its traceback."""
    if isinstance(exc, StoreError):
        what, fix, kind = exc.what, exc.fix, type(exc)
    elif isinstance(exc, sa.exc.SQLAlchemyError | sqlite3.Error):
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        step = ("creating the schema" if result.before is None else
                f"the upgrade from revision {result.before} to {result.after}")
        what, fix, kind = f"{step} failed: {reason}", _fix_for(reason), StoreError
    else:
        return None
    return kind(f"{what}; {_backup_state(result, path, restored=restored)}", where=shown,
                fix=fix)


def _backup_state(result: UpgradeResult, path: Path | None, *, restored: bool) -> str:
    """Where the database and its backup stand after a failed migration, in words."""
    if result.before is None:
        return "no backup was made: the database was new (nothing in it to keep)"
    if path is not None and result.backup is not None:
        if restored:
            return (f"nothing was changed: {path} was restored from its backup"
                    f" {result.backup}, which is kept")
        return (f"restoring {path} from its backup failed too: copy {result.backup} over it"
                " before using it")
    rolled_back = "nothing was changed (the transaction was rolled back)"
    if result.backup is not None:
        return f"{rolled_back}; the backup pg_dump made is {result.backup}"
    return f"{rolled_back}; no backup was made (--i-have-a-backup)"


def _fix_for(reason: str) -> str:
    """How to get past a database error during a migration, from the driver's message."""
    again = "then run `flushbench db upgrade` again"
    known = known_cause_fix(reason)
    if known is not None:
        return f"{known}; {again}"
    return ("the database's schema is not what its revision says (edited by hand?): fix what"
            f" the message names, {again}; report it with the backup if it was not edited")
