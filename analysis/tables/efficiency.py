"""An experiment's cost per transaction, its write-path ledger and what bound each run, per run
and per cell: what ``compare``, the report and ``export`` show (:mod:`analysis.writes.cost`,
:mod:`analysis.writes.ledger`, :mod:`analysis.writes.bound`).

Both come from the runs' digests (:mod:`analysis.writes.run_digest`: computed once per run from its
samples and cached), so a report of a store whose runs were digested before reads no sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.reading.query import DB
from analysis.tables.frames import Frames
from analysis.writes import bound, cost, ledger
from analysis.writes.digests import RunDigests
from analysis.writes.run_digest import run_digests
from store.models import RunStatus


@dataclass(frozen=True)
class Efficiency:
    """Cost and attribution of an experiment's done runs and of its cells."""

    #: :func:`analysis.writes.cost.per_run` (index: run id).
    cost_runs: pd.DataFrame
    #: :func:`analysis.writes.cost.per_cell` (index: cell id, row order).
    cost_cells: pd.DataFrame
    #: :func:`analysis.writes.bound.per_run` (index: run id).
    bound_runs: pd.DataFrame
    #: :func:`analysis.writes.bound.per_cell` (index: cell id, row order).
    bound_cells: pd.DataFrame
    #: :func:`analysis.writes.ledger.per_run` (index: run id): the write-path ledger.
    ledger_runs: pd.DataFrame
    #: :func:`analysis.writes.ledger.per_cell` (index: cell id, row order).
    ledger_cells: pd.DataFrame


def load(db: DB, fr: Frames, digests: RunDigests | None = None) -> Efficiency:
    """The :class:`Efficiency` of ``fr``'s runs; ``digests`` (of its done runs) saves looking
    them up again."""
    rs = fr.run_summary
    if digests is None:
        digests = run_digests(db, [int(r) for r in rs.loc[rs["status"] == RunStatus.DONE,
                                                          "run_id"]])
    costs = cost.for_runs(digests, fr.intervals, rs)
    runs, cells = bound.for_runs(db, digests, rs, fr.experiment["stored"].spec)
    written = ledger.for_runs(db, digests, fr.intervals, rs)
    return Efficiency(cost_runs=costs, cost_cells=cost.per_cell(costs, rs), bound_runs=runs,
                      bound_cells=cells, ledger_runs=written,
                      ledger_cells=ledger.per_cell(written, rs))
