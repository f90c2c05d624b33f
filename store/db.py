"""Opening the results database: URL resolution, SQLite pragmas, revision checks.

Upgrades (with their backup and row-count checks) live in ``store/migrate.py``.

SQLite is the default (one file, WAL, foreign keys on). Any SQLAlchemy URL works, so several
benchmark hosts can share a PostgreSQL database (``postgresql+psycopg://…``); the URL's
password, if any, is never logged or stored.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from core.errors import StoreError, bounded
from store.bundles import bundle_database, is_bundle_path, read_only_bundle
from store.checks import check_sqlite_file, guarded, parse_url
from store.migrate import (
    RevisionHook,
    UpgradeResult,
    alembic_config,  # noqa: F401 - re-exported: tests and tools build Alembic configs here
    checked_revision,
    current_revision,
    head_revision,
    schema_mismatch,
    upgrade_database,
)

#: Where results go when neither ``--db`` nor ``FLUSHBENCH_DB`` says otherwise.
DEFAULT_DB_PATH = Path("results") / "flushbench.sqlite"


def resolve_url(db: str | os.PathLike[str] | None = None, *, write: bool = True) -> str:
    """Turn ``--db`` (a path, a SQLAlchemy URL or a study bundle), ``$FLUSHBENCH_DB`` or the
    default into a URL.

    A study bundle is read-only: ``write`` (the caller may write to the database) refuses
    one, naming it; a reader passes ``write=False`` and gets the bundle's database, unpacked
    once into the cache and checked.
    """
    value = str(db) if db is not None else os.environ.get("FLUSHBENCH_DB", str(DEFAULT_DB_PATH))
    if "://" in value:
        return value
    bundle = named_bundle(value)
    if bundle is not None:
        if write:
            raise read_only_bundle(bundle)
        return f"sqlite:///{bundle_database(bundle).absolute()}"
    return f"sqlite:///{Path(value).expanduser().resolve()}"


def named_bundle(db: str | os.PathLike[str] | None = None) -> Path | None:
    """The study bundle ``--db`` (or ``$FLUSHBENCH_DB``) names, as named; None for a database."""
    value = str(db) if db is not None else os.environ.get("FLUSHBENCH_DB", str(DEFAULT_DB_PATH))
    return Path(value).expanduser() if "://" not in value and is_bundle_path(value) else None


def refuse_read_only(db: str | os.PathLike[str] | None = None) -> None:
    """Refuse, before anything starts, a ``--db`` that cannot be written: a study bundle
    (for commands that prepare at length before they open the database to write)."""
    bundle = named_bundle(db)
    if bundle is not None:
        raise read_only_bundle(bundle)


def redacted(url: str) -> str:
    """The URL with any password replaced by ``***`` — the only form that may be printed.

    Delegates to :func:`core.redaction.redact_url` (userinfo, ``?password=``, an
    unencoded ``@``); the password is remembered so a driver's echo of it is masked too.
    """
    from core.redaction import redact_url, remember_url

    remember_url(url)
    return redact_url(url)


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


def _sqlite_reader_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001
    # A reader leaves the journal mode as the file has it: the mode is stored in the file, so
    # switching a committed study's database to WAL would change the file a `report` only
    # reads. A file a worker writes is in WAL already (the worker switched it).
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


#: The attribute :func:`make_engine`'s engines put on every database error they raise: the
#: database's printable (redacted) name, for :func:`database_failure`.
DATABASE_ATTRIBUTE = "flushbench_database"


def make_engine(url: str, *, write: bool = True) -> Engine:
    """Create an engine; for SQLite, create the parent folder and set the pragmas (WAL only
    for a writer: ``write=False`` leaves the file's journal mode as it is).

    Every database error the engine raises carries the database's redacted name (see
    :data:`DATABASE_ATTRIBUTE`), so a failure in the middle of a verb can name it.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url)
        event.listen(engine, "connect", _sqlite_pragmas if write else _sqlite_reader_pragmas)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    shown = redacted(url)

    def name_the_database(context) -> None:  # noqa: ANN001 - sqlalchemy's ExceptionContext
        setattr(context.sqlalchemy_exception, DATABASE_ATTRIBUTE, shown)

    event.listen(engine, "handle_error", name_the_database)
    return engine


def database_failure(exc: Exception) -> StoreError:
    """The one error a database failure in the middle of a verb becomes (read-only, full,
    locked, gone): the driver's reason, the database it happened on, and a fix that fits."""
    from store.checks import database_error_fix

    orig = getattr(exc, "orig", None)
    reason = str(orig).strip().splitlines()[0] if orig and str(orig).strip() \
        else type(exc).__name__
    shown = getattr(exc, DATABASE_ATTRIBUTE, None)
    return StoreError(f"the results database failed: {bounded(reason, 300)}",
                      where=shown or "the results database (--db / $FLUSHBENCH_DB)",
                      fix=database_error_fix(reason, is_sqlite=str(shown).startswith("sqlite")))


def upgrade(
    db: str | os.PathLike[str] | None = None,
    *,
    i_have_a_backup: bool = False,
    backup_dir: Path | None = None,
    on_revision: RevisionHook | None = None,
) -> UpgradeResult:
    """Create the database, or migrate it to head without losing a row.

    An existing schema is backed up first and every table's row count verified after the
    migration (``store/migrate.py``); a new, empty database is simply created.
    """
    url = resolve_url(db)
    return upgrade_database(url, redacted(url), i_have_a_backup=i_have_a_backup,
                            backup_dir=backup_dir, on_revision=on_revision)


class ResultsDB:
    """A handle on the results database: an engine plus a session factory.

    Parameters
    ----------
    db:
        A path, a SQLAlchemy URL or None (``$FLUSHBENCH_DB`` or ``results/flushbench.sqlite``).
    create:
        Bring an empty (new) database to head. A database at an older revision is never
        migrated silently: that raises :class:`StoreError` telling to run ``flushbench db upgrade``.
    write:
        The caller may write to the database. A study bundle is read-only: it is refused
        then; a reader passes ``write=False`` (``bundle`` is then the bundle it reads).
    """

    def __init__(self, db: str | os.PathLike[str] | None = None, *, create: bool = True,
                 write: bool = True) -> None:
        self.url = resolve_url(db, write=write)
        #: The study bundle this handle reads (its database is a cache copy), or None.
        self.bundle = named_bundle(db)
        shown = redacted(self.url)
        parsed = parse_url(self.url, shown)
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            # Looked at read-only first: a foreign or damaged file must not be touched.
            check_sqlite_file(Path(parsed.database), shown, create=create)
        self.engine = guarded(shown, lambda: make_engine(self.url, write=write))
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        guarded(shown, lambda: self._check_revision(create))

    def _check_revision(self, create: bool) -> None:
        current = current_revision(self.engine)
        head = head_revision()
        if current == head:
            # A database stamped head whose tables are older: one sentence now, not a
            # "no such column" in the middle of a verb.
            schema_mismatch(self.engine, head, redacted(self.url))
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
            fix=f"run `flushbench db upgrade --db {redacted(self.url)}` (it backs the database"
                " up first)",
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
