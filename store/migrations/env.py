"""Alembic environment: online migrations only, batch mode so SQLite can ALTER."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from store.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    """Run against the connection flushbench passed in, or one made from the URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.begin() as conn:
        _run(conn)
    engine.dispose()


def _run(connection) -> None:  # noqa: ANN001 - an SQLAlchemy Connection
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        # store/migrate.py passes a hook run after each revision (progress; tests inject
        # failures through it).
        on_version_apply=config.attributes.get("on_version_apply") or (),
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
