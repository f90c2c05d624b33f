"""The per-cell table printed at the end of ``flushbench run`` (figures come from analysis)."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from flushbench.cli.console import literal
from store.db import ResultsDB


def _fmt(value: float, spec: str = ",.0f") -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )


def print_cell_summary(console: Console, db: ResultsDB, experiment_id: int) -> None:
    """Per cell: runs done/failed, window throughput and its lowest interval, stability score.

    Throughput is in the experiment's metric (NOTPM for TPC-C, TPS for sysbench).
    """
    from analysis import frames
    from analysis.metric import metric_view

    runs = frames.runs(db, experiment_id)
    if runs.empty:
        console.print("no runs recorded")
        return
    done_ids = list(runs.loc[runs["status"] == "done", "run_id"])
    intervals = frames.intervals(db, run_ids=done_ids, detail=False)
    summary = frames.run_summary(db, runs_df=runs, intervals_df=intervals)
    cells = frames.cell_summary(db, run_summary_df=summary)
    m = metric_view(frames.experiment_info(db, experiment_id))
    window = intervals[intervals["in_window"]] if not intervals.empty else intervals
    min_by_run = window.groupby("run_id")["notpm"].min() if not window.empty else {}
    table = Table(title="Per-cell summary (measurement window)")
    for col, justify in (
        ("cell", "left"),
        ("done", "right"),
        ("failed", "right"),
        (m.name, "right"),
        (f"min interval {m.name}", "right"),
        ("stability", "right"),
        ("warnings", "left"),
    ):
        table.add_column(col, justify=justify)
    for _, cell in cells.iterrows():
        run_ids = summary.loc[
            (summary["cell_id"] == cell["cell_id"]) & (summary["status"] == "done"), "run_id"
        ]
        mins = [float(min_by_run[r]) for r in run_ids if r in min_by_run]
        label = cell["cell_label"] + (" (baseline)" if cell["is_baseline"] else "")
        table.add_row(
            literal(label),
            str(cell["n_done"]),
            str(cell["n_failed"]),
            _fmt(m.of(cell["notpm_mean"])),
            _fmt(m.of(min(mins))) if mins else "—",
            _fmt(cell["score_median"], ".0f"),
            literal(cell["warnings"] or ""),
        )
    console.print(table)
