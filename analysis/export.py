"""Export an experiment's tables (intervals, samples, run summaries) to CSV or Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flushbench.errors import AnalysisError


def export(db: Any, experiment: str | int | None, out: Path | str, *, fmt: str = "csv",
           what: str = "intervals") -> Path:
    """Library form of ``flushbench export`` (returns the written path)."""
    from analysis import frames

    if fmt not in ("csv", "parquet"):
        raise AnalysisError(f"unknown format {fmt!r}", where="--format", fix="use csv or parquet")
    from analysis.memory import MB, MEMORY_COLUMNS
    from analysis.metric import metric_view

    m = metric_view(frames.experiment_info(db, experiment))
    metric_col = m.name.lower()
    if what == "intervals":
        df = frames.intervals(db, experiment)
        df[metric_col] = df[m.column]  # the per-interval rate in the experiment's metric
    elif what == "samples":
        df = frames.samples(db, experiment)
        for raw, name in MEMORY_COLUMNS.items():
            if raw in df and name not in df:
                df[name] = df[raw] / MB
    elif what == "runs":
        df = frames.run_summary(db, experiment)
        df[metric_col] = df["notpm"] * m.scale  # the window average in the metric's unit
    else:
        raise AnalysisError(f"unknown table {what!r}", where="--what",
                            fix="use intervals, samples or runs")
    # Dict columns (knobs, extra, driver_summary) become JSON text in both formats.
    import json

    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, (dict, list))).any():
            df[col] = df[col].map(lambda v: json.dumps(v, sort_keys=True, default=str))
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path
