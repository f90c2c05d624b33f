"""Fixed-rate runs against their target (``workload.rate``; docs/tpcc.md, "Fixed rate").

A run at a fixed rate offers the same load whatever its configuration; its outcome is response
time, not throughput — but only if it held the rate. Each of its intervals stores the target and
the backlog at the interval's end (``rate_target_notpm``, ``rate_backlog``,
``rate_backlog_oldest_ms`` in the interval detail); its achieved rate is the interval's NOTPM.

A window interval whose NOTPM falls below :data:`HELD_SHARE` of the target is *below*; a run
*missed* its target when its window's NOTPM is below that share — the work was not done, and
its response times are not at the load the other rows carried. ``compare`` never compares a row
with a missed run as if it held the rate (:func:`missed_reason`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from core.experiment.spec import ExperimentSpec

#: The share of its target an interval (and a run's window) must reach to hold it: the Insert
#: Benchmark's rule, and the driver's ``below`` mark.
HELD_SHARE = 0.95

#: Columns of :func:`per_run`.
RUN_COLUMNS = ("target_notpm", "notpm", "intervals", "intervals_below", "backlog_max",
               "backlog_oldest_max_ms", "missed")


def per_run(intervals_df: pd.DataFrame) -> pd.DataFrame:
    """Each fixed-rate run's window against its target, indexed by run id.

    ``intervals_df`` is :func:`analysis.reading.series.intervals` with ``detail=True`` (its
    ``rate_*`` columns) and ``in_window``; runs without a target (the closed loop) are absent.
    ``notpm`` is the window's New-Orders a minute; ``missed`` is ``notpm`` below
    :data:`HELD_SHARE` of the target.
    """
    if "rate_target_notpm" not in intervals_df.columns or intervals_df.empty:
        return pd.DataFrame(columns=list(RUN_COLUMNS)).rename_axis("run_id")
    w = intervals_df[intervals_df["in_window"] & intervals_df["rate_target_notpm"].notna()]
    rows = {}
    for run_id, g in w.groupby("run_id"):
        target = float(g["rate_target_notpm"].max())
        seconds = float(g["interval_s"].sum())
        notpm = float(g["primary_count"].sum()) * 60 / seconds if seconds > 0 else math.nan
        rows[int(run_id)] = {  # type: ignore[call-overload]
            "target_notpm": target,
            "notpm": notpm,
            "intervals": len(g),
            "intervals_below": int((g["notpm"] < HELD_SHARE * g["rate_target_notpm"]).sum()),
            "backlog_max": float(g["rate_backlog"].max()),
            "backlog_oldest_max_ms": float(g["rate_backlog_oldest_ms"].max()),
            "missed": not notpm >= HELD_SHARE * target,
        }
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(RUN_COLUMNS)) \
        .rename_axis("run_id")


def _notpm(x: float) -> str:
    """A rate as written: ``1,000,000``, ``600``, ``612.5``."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def run_text(r: pd.Series) -> str:
    """One run's figures as ``show`` prints them: target, achieved, intervals below, queue."""
    held = "MISSED its target" if r["missed"] else "held"
    return (f"target {_notpm(r['target_notpm'])} NOTPM, achieved {r['notpm']:,.0f} over the"
            f" window ({held}); {int(r['intervals_below'])} of {int(r['intervals'])} window"
            f" intervals below {HELD_SHARE:.0%}; backlog at most {int(r['backlog_max'])}"
            f" starts, the oldest {r['backlog_oldest_max_ms'] / 1000:.1f} s late")


def missed_reason(runs: pd.DataFrame, run_ids: list[int]) -> str | None:
    """Why a row of ``run_ids`` is not compared as if it held its rate, or None when every
    fixed-rate run of it held (or it has none). ``runs`` is :func:`per_run`."""
    mine = runs[runs.index.isin(run_ids)]
    missed = mine[mine["missed"]]
    if missed.empty:
        return None
    worst = missed.loc[missed["notpm"].idxmin()]
    return (f"missed its fixed rate in {len(missed)} of {len(mine)} runs (run {worst.name}:"
            f" {worst['notpm']:,.0f} of {_notpm(worst['target_notpm'])} NOTPM) — not at the"
            " load the other rows carried, so not compared")


def offers_fixed_rate(spec: ExperimentSpec, cells: pd.DataFrame) -> bool:
    """Whether an experiment runs at a fixed rate (``workload.rate: NOTPM``, or ``rate`` as a
    knob of its cells), not flat out; a rate search is not one (its steps are read by
    :mod:`analysis.response.rate_search`)."""
    rate = spec.workload.rate
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        return True
    return any("rate" in (knobs or {}) for knobs in cells["knobs"])
