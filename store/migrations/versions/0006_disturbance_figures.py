"""Disturbed-run detection: host CPU, own I/O and throttle-group counters per sample; the
steady-state window start per run.

Revision ID: 0006
Revises: 0005

Only nullable columns are added: rows written before it simply have no figures (their runs
are judged by what they have: host pauses, missed ticks).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SAMPLE_COLUMNS = (
    ("host_cpu_busy_s", sa.Float()),
    ("host_cpu_idle_s", sa.Float()),
    ("host_cpu_steal_s", sa.Float()),
    ("tool_cpu_s", sa.Float()),
    ("own_io_read_bytes", sa.BigInteger()),
    ("own_io_write_bytes", sa.BigInteger()),
    ("group_read_ios", sa.BigInteger()),
    ("group_write_ios", sa.BigInteger()),
    ("group_read_bytes", sa.BigInteger()),
    ("group_write_bytes", sa.BigInteger()),
)


def upgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        for name, kind in SAMPLE_COLUMNS:
            batch.add_column(sa.Column(name, kind, nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("window_start_s", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("window_start_s")
    with op.batch_alter_table("samples") as batch:
        for name, _ in reversed(SAMPLE_COLUMNS):
            batch.drop_column(name)
