"""Several hosts on one database: experiments' placement, the host that claimed each run, and
the workers table (identity, heartbeat, current run and phase).

Revision ID: 0003_i13_workers
Revises: 0003_i14_memory
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_i13_workers"
down_revision = "0003_i14_memory"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("placement", sa.String(length=16), nullable=False,
                                   server_default="one"))
        batch.add_column(sa.Column("hosts", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("host_class", sa.String(length=200), nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("host_id", sa.String(length=200), nullable=True))
    # Runs claimed before 0003 keep host_id NULL: their lease owner names a hostname, which is
    # not a host id (several test "hosts" may share one hostname).
    op.create_table(
        "workers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("host_id", sa.String(length=200), nullable=False),
        sa.Column("host_class", sa.String(length=200), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("lease_s", sa.Float(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("phase", sa.String(length=200), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workers")),
    )
    op.create_index(op.f("ix_workers_host_id"), "workers", ["host_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_workers_host_id"), table_name="workers")
    op.drop_table("workers")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("host_id")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("host_class")
        batch.drop_column("hosts")
        batch.drop_column("placement")
