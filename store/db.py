"""Opening the results database: URL resolution, SQLite pragmas, revision checks, upgrades.

SQLite is the default (one file, WAL, foreign keys on). Any SQLAlchemy URL works, so several
benchmark hosts can share a PostgreSQL database (``postgresql+psycopg://…``); the URL's
password, if any, is never logged or stored.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from flushbench.errors import StoreError
from store.checks import check_sqlite_file, guarded, parse_url

#: Where results go when neither ``--db`` nor ``FLUSHBENCH_DB`` says otherwise.
DEFAULT_DB_PATH = Path("results") / "flushbench.sqlite"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def resolve_url(db: str | os.PathLike[str] | None = None) -> str:
    """Turn ``--db`` (a path or a SQLAlchemy URL), ``$FLUSHBENCH_DB`` or the default into a URL."""
    value = str(db) if db is not None else os.environ.get("FLUSHBENCH_DB", str(DEFAULT_DB_PATH))
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


def redacted(url: str) -> str:
    """The URL with any password replaced by ``***`` — the only form that may be printed."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparseable URL is shown without anything after @
        return url.split("@")[-1] if "@" in url else url


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001 - DBAPI types vary
    cursor = dbapi_connection.cursor()
    # WAL lets the report read while a worker writes; FKs make cascades real; busy_timeout
    # lets two flushbench processes (worker + status) share the file without "database locked".
    # busy_timeout first: switching to WAL needs a moment of exclusive access, which another
    # process (a migration, a worker's commit) may hold.
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str) -> Engine:
    """Create an engine; for SQLite, create the parent folder and set the pragmas."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def alembic_config(url: str) -> Config:
    """An Alembic config pointing at this package's migrations and the given database."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # '%' must be escaped for ConfigParser interpolation (URL-encoded passwords contain it).
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The single head revision of the migrations (tests assert there is exactly one)."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    heads = script.get_heads()
    if len(heads) != 1:
        raise StoreError(f"the migrations have {len(heads)} heads: {heads}", fix="merge them")
    return heads[0]


def _known_revisions() -> set[str]:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return {rev.revision for rev in script.walk_revisions()}


def _has_foreign_tables(engine: Engine) -> bool:
    """Whether a database without a flushbench revision holds tables of someone else."""
    return bool(set(sa.inspect(engine).get_table_names()) - {"alembic_version"})


def checked_revision(engine: Engine, shown: str) -> str | None:
    """The database's revision, refusing one a newer flushbench wrote or a foreign schema.

    Raises
    ------
    StoreError
        An unknown (newer) revision, or tables without a flushbench revision.
    """
    current = current_revision(engine)
    if current is not None and current not in _known_revisions():
        raise StoreError(
            f"the results database is at revision {current}, which this flushbench does not"
            " know: a newer flushbench wrote it",
            where=shown,
            fix="use the newer flushbench, or another --db",
        )
    if current is None and _has_foreign_tables(engine):
        raise StoreError(
            "not a flushbench results database (it has tables but no flushbench schema)",
            where=shown,
            fix="point --db at a flushbench database or an empty one; nothing was written",
        )
    return current


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(db: str | None = None) -> str:
    """Migrate the database to the head revision (creating it if empty); return the revision."""
    url = resolve_url(db)
    shown = redacted(url)
    parsed = parse_url(url, shown)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        check_sqlite_file(Path(parsed.database), shown, create=True)
    engine = guarded(shown, lambda: make_engine(url))
    try:
        cfg = alembic_config(url)
        # Two processes opening a new database at once (a worker and `status`, two workers)
        # must not both create the tables: the second waits, then finds the database at head.
        with _migration_lock(engine.url), guarded(shown, engine.begin) as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})")
            # Checked under the lock: before it, another process may be halfway through
            # creating the tables, which would look like someone else's database.
            guarded(shown, lambda: checked_revision(engine, shown))
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        return current_revision(engine) or ""
    finally:
        engine.dispose()


#: Advisory lock key that serializes migrations on PostgreSQL ("flushben" in ASCII).
_PG_MIGRATION_LOCK = 0x666C75736862656E


@contextlib.contextmanager
def _migration_lock(url: sa.engine.URL) -> Iterator[None]:
    """An exclusive ``flock`` on a SQLite file while it is migrated (no-op for servers).

    ``flock`` locks are separate from the POSIX record locks SQLite itself takes, so this
    serializes migrators without getting in SQLite's way.
    """
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        yield
        return
    path = Path(url.database)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class ResultsDB:
    """A handle on the results database: an engine plus a session factory.

    Parameters
    ----------
    db:
        A path, a SQLAlchemy URL or None (``$FLUSHBENCH_DB`` or ``results/flushbench.sqlite``).
    create:
        Bring an empty (new) database to head. A database at an older revision is never
        migrated silently: that raises :class:`StoreError` telling to run ``flushbench db upgrade``.
    """

    def __init__(self, db: str | os.PathLike[str] | None = None, *, create: bool = True) -> None:
        self.url = resolve_url(db)
        shown = redacted(self.url)
        parsed = parse_url(self.url, shown)
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            # Looked at read-only first: a foreign or damaged file must not be touched.
            check_sqlite_file(Path(parsed.database), shown, create=create)
        self.engine = guarded(shown, lambda: make_engine(self.url))
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        guarded(shown, lambda: self._check_revision(create))

    def _check_revision(self, create: bool) -> None:
        current = current_revision(self.engine)
        head = head_revision()
        if current == head:
            return
        if current is None:
            if create:
                upgrade(self.url)  # refuses a foreign or newer database under its lock
                return
            checked_revision(self.engine, redacted(self.url))  # someone else's tables?
            raise StoreError(
                "the results database is empty",
                where=redacted(self.url),
                fix="run an experiment first, or `flushbench db upgrade` to create it",
            )
        checked_revision(self.engine, redacted(self.url))  # a newer flushbench's database?
        raise StoreError(
            f"the results database is at revision {current}, this flushbench needs {head}",
            where=redacted(self.url),
            fix="run `flushbench db upgrade` (back the file up first if it matters)",
        )

    def session(self) -> Session:
        """A new ORM session (use as a context manager)."""
        return self._sessions()

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    def __enter__(self) -> ResultsDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()
