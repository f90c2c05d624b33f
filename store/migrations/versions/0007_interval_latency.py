"""Latency histograms per interval: every transaction type's buckets, compressed.

Revision ID: 0007
Revises: 0006

One nullable column: intervals written before it (and by drivers that print no histogram)
have none; their latency is the driver's own per-interval figures (p95_ms, p99_ms, max_ms,
detail).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("intervals") as batch:
        batch.add_column(sa.Column("latency_z", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("intervals") as batch:
        batch.drop_column("latency_z")
