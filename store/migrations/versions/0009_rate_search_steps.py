"""The rate a run was asked to hold as one step of a rate search.

Revision ID: 0009
Revises: 0008

One nullable column: every run stored before it (and every run outside a search) has none —
its rate is its cell's.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("step_rate", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("step_rate")
