"""Context switches per sample: mysqld's and the driver's, voluntary and involuntary.

Revision ID: 0008
Revises: 0007

Only nullable columns are added: samples written before it have no context switches, and the
cost table shows "–" for their runs (never 0).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SAMPLE_COLUMNS = ("mysqld_ctxsw_voluntary", "mysqld_ctxsw_involuntary",
                  "driver_ctxsw_voluntary", "driver_ctxsw_involuntary")


def upgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        for name in SAMPLE_COLUMNS:
            batch.add_column(sa.Column(name, sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        for name in reversed(SAMPLE_COLUMNS):
            batch.drop_column(name)
