"""The one clock leases are written and read on: the database's."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from store.models import utcnow


def db_now(session: Session) -> dt.datetime:
    """The database's clock (aware UTC) on PostgreSQL, this host's on SQLite.

    Leases are compared across hosts, so they must be written and read on one clock: the
    shared server's. A SQLite file has a single host, whose clock is the one clock.
    """
    if session.get_bind().dialect.name == "postgresql":
        value = session.scalar(select(func.now()))
        return value.astimezone(dt.UTC)
    return utcnow()
