"""The per-cell table printed at the end of ``flushbench run`` (figures come from analysis)."""

from __future__ import annotations

from rich.console import Console

from flushbench.cli import tables
from store.db import ResultsDB


def print_cell_summary(console: Console, db: ResultsDB, experiment_id: int) -> None:
    """Per row (its name in the experiment file, else the knobs that differ from its
    baseline: :func:`analysis.reading.rows.row_labels`): runs done and
    failed, window throughput and its lowest interval, stability score.

    Throughput is in the experiment's metric (NOTPM for TPC-C, TPS for sysbench).
    """
    from analysis.reading.metric import metric_view
    from analysis.reading.rows import row_labels
    from analysis.tables import frames

    runs = frames.runs(db, experiment_id)
    if runs.empty:
        console.print("no runs recorded")
        return
    done_ids = list(runs.loc[runs["status"] == "done", "run_id"])
    intervals = frames.intervals(db, run_ids=done_ids, detail=False)
    summary = frames.run_summary(db, runs_df=runs, intervals_df=intervals)
    cells = frames.cell_summary(db, run_summary_df=summary)
    info = frames.experiment_info(db, experiment_id)
    m = metric_view(info)
    window = intervals[intervals["in_window"]] if not intervals.empty else intervals
    min_by_run = window.groupby("run_id")["notpm"].min() if not window.empty else {}
    names = row_labels(info["stored"].spec, cells)
    console.print(tables.cell_summary_table(cells, summary, min_by_run, m, names))
