"""Samples keep mysqld's RSS split: anonymous, file and shared memory, anonymous transparent
huge pages and hugetlbfs pages held (all bytes, nullable: older samples have none).

Revision ID: 0003_i14_memory
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_i14_memory"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = (
    "mysqld_rss_anon_bytes",
    "mysqld_rss_file_bytes",
    "mysqld_rss_shmem_bytes",
    "mysqld_anon_hugepages_bytes",
    "mysqld_hugetlb_bytes",
)


def upgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        for name in COLUMNS:
            batch.add_column(sa.Column(name, sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("samples") as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)
