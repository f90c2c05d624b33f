"""Every row of a SQLite results database into a PostgreSQL one with the same schema."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa


def copy_rows(sqlite_path: Path, url: str) -> None:
    """Insert every table's rows (``alembic_version`` aside) in foreign-key order.

    The target's schema must exist already (the same revision); JSON columns SQLite hands
    back as text are decoded so PostgreSQL stores them as JSON, not as strings.
    """
    src, dst = sa.create_engine(f"sqlite:///{sqlite_path}"), sa.create_engine(url)
    try:
        src_meta, dst_meta = sa.MetaData(), sa.MetaData()
        src_meta.reflect(src)
        dst_meta.reflect(dst)
        with src.connect() as s, dst.begin() as d:
            for table in dst_meta.sorted_tables:
                if table.name == "alembic_version":
                    continue
                rows = [dict(r) for r in s.execute(
                    sa.select(src_meta.tables[table.name])).mappings()]
                for row in rows:
                    for column in table.columns:
                        if isinstance(column.type, sa.JSON) and isinstance(
                                row.get(column.name), str):
                            row[column.name] = json.loads(row[column.name])
                if rows:
                    d.execute(table.insert(), rows)
    finally:
        src.dispose()
        dst.dispose()
