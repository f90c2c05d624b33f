"""Experiments keep their resolved measurement window and primary metric; spec_hash is named
measurement_hash (what it always held).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _resolved(spec: dict) -> tuple[dict, dict]:
    """The window and metric of an experiment queued before 0002 (the rule of that time)."""
    workload = spec.get("workload") or {}
    window = spec.get("window") or {}
    duration = float(workload.get("duration", 1800.0))
    start, end = window.get("start"), window.get("end")
    resolved = {
        "warmup": float(workload.get("warmup", 10.0)),
        "duration": duration,
        "start": float(start) if start is not None else duration / 2,
        "end": float(end) if end is not None else duration,
        "report_interval": float(workload.get("report_interval", 10.0)),
    }
    if workload.get("driver") == "sysbench":
        metric = {"name": "TPS", "unit": "transactions per second", "counts": "transactions",
                  "per_minute": False}
    else:
        metric = {"name": "NOTPM", "unit": "New-Order transactions per minute",
                  "counts": "New-Order transactions", "per_minute": True}
    return resolved, metric


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("window", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("metric", sa.JSON(), nullable=True))
        batch.alter_column("spec_hash", new_column_name="measurement_hash",
                           existing_type=sa.String(length=64), existing_nullable=False)
        batch.drop_constraint("uq_experiments_name_spec_hash", type_="unique")
    conn = op.get_bind()
    experiments = sa.table("experiments", sa.column("id", sa.Integer),
                           sa.column("spec", sa.JSON), sa.column("window", sa.JSON),
                           sa.column("metric", sa.JSON))
    for row in conn.execute(sa.select(experiments.c.id, experiments.c.spec)).all():
        spec = row.spec if isinstance(row.spec, dict) else json.loads(row.spec)
        window, metric = _resolved(spec)
        conn.execute(experiments.update().where(experiments.c.id == row.id)
                     .values(window=window, metric=metric))
    with op.batch_alter_table("experiments") as batch:
        batch.alter_column("window", existing_type=sa.JSON(), nullable=False)
        batch.alter_column("metric", existing_type=sa.JSON(), nullable=False)
        batch.create_unique_constraint("uq_experiments_name_measurement_hash",
                                       ["name", "measurement_hash"])


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_constraint("uq_experiments_name_measurement_hash", type_="unique")
        batch.alter_column("measurement_hash", new_column_name="spec_hash",
                           existing_type=sa.String(length=64), existing_nullable=False)
        batch.create_unique_constraint("uq_experiments_name_spec_hash", ["name", "spec_hash"])
        batch.drop_column("metric")
        batch.drop_column("window")
