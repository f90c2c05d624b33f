"""Time as the store keeps it: aware UTC datetimes, one home for the helpers every layer uses."""

from __future__ import annotations

import datetime as dt


def utcnow() -> dt.datetime:
    """The current time as an aware UTC datetime (what every timestamp column stores)."""
    return dt.datetime.now(dt.UTC)


def as_utc(value: dt.datetime) -> dt.datetime:
    """An aware UTC datetime (SQLite hands back naive ones, which are UTC by construction)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
