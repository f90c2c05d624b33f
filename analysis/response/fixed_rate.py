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


#: The verdict of a row with a run that missed its rate, and of every row when the baseline
#: did (``compare``'s tables, the report's ranking and response-time tables).
MISSED, NOT_COMPARED = "missed rate", "not compared"


def flag_missed(rates: pd.DataFrame, runs: pd.DataFrame, cells: pd.DataFrame,
                *verdict_frames: pd.DataFrame) -> dict[int, str]:
    """Mark the rows that missed their fixed rate in the comparison's verdicts; return cell id
    → why (:func:`missed_reason`).

    A row with a run that missed its rate did less work than the rows it would be compared
    with: its throughput and response-time verdicts become :data:`MISSED`, with the reason. A
    baseline that missed its rate is no yardstick: every other row becomes
    :data:`NOT_COMPARED`. ``rates`` is :func:`per_run`; ``runs`` the runs (``run_id``,
    ``cell_id``); ``cells`` and each of ``verdict_frames`` a frame with ``verdict`` and
    ``verdict_reason`` per cell (``cell_id`` as a column or the index), changed in place.
    """
    if rates.empty:
        return {}
    notes = {int(cell_id): why for cell_id, ids in runs.groupby("cell_id")["run_id"]
             if (why := missed_reason(rates, [int(x) for x in ids])) is not None}
    base = {int(c) for c in cells.loc[cells["is_baseline"].astype(bool), "cell_id"]} & set(notes)
    flagged = {int(cid): notes.get(int(cid)) or "not compared: its baseline missed its fixed"
               " rate" for cid in (cells["cell_id"] if base else notes)}
    for frame in (cells, *verdict_frames):
        if "verdict" not in frame.columns:
            continue
        at = frame["cell_id"] if "cell_id" in frame.columns else frame.index.to_series()
        for cell_id, why in flagged.items():
            frame.loc[(at == cell_id).to_numpy(), ["verdict", "verdict_reason"]] = \
                [MISSED if cell_id in notes else NOT_COMPARED, why]
    return notes


def offers_fixed_rate(spec: ExperimentSpec, cells: pd.DataFrame) -> bool:
    """Whether an experiment runs at a fixed rate (``workload.rate: NOTPM``, or ``rate`` as a
    knob of its cells), not flat out; a rate search is not one (its steps are read by
    :mod:`analysis.response.rate_search`)."""
    rate = spec.workload.rate
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        return True
    return any("rate" in (knobs or {}) for knobs in cells["knobs"])
