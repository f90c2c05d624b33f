"""A fixed-rate experiment's p99 verdicts over the plausible window starts (docs/statistics.md,
"Flush cycles and the window").

At a fixed rate every row does the same work, so its outcome is response time, and a p99 can
move with where the window falls as much as a throughput mean does: a flush cycle's stall
inside the window or just outside it. The throughput verdicts are judged again at every
plausible window start (:func:`analysis.reading.window_cycles.window_sensitivity`); this does
the same for the p99 verdicts of a fixed-rate experiment: each counted run's window moved by
the same offsets (the same length, an earlier start), its window p99 merged again from the
stored histograms with its waits, the one verdict rule applied at each offset. A verdict
whose direction changes inside the range becomes ``window-dependent``, its reason saying where.

Only fixed-rate experiments: a flat-out run's outcome is its throughput, already judged over
the starts, and the check costs a histogram merge per run and offset.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.comparisons.compare import BASELINE
from analysis.reading.query import DB
from analysis.reading.window_cycles import WINDOW_DEPENDENT, RunCycles, window_offsets
from analysis.response import latency
from analysis.steadiness.disturbed import counted
from analysis.tables.frames import Frames

#: The offsets the p99 is merged again at, at most: evenly spaced over the plausible range,
#: both ends and the stored window (0) kept.
MAX_STARTS = 7


def offsets(cycles: dict[int, RunCycles], run_ids: list[int]) -> np.ndarray:
    """The window offsets (s) to judge the p99 at: the throughput verdicts' plausible starts,
    thinned to at most :data:`MAX_STARTS`."""
    every = window_offsets(cycles, run_ids)
    if every.size > MAX_STARTS:
        keep = np.unique(np.linspace(0, every.size - 1, MAX_STARTS - 1).round().astype(int))
        every = np.unique(np.append(every[keep], 0.0))
    return every


def moved_window(intervals_df: pd.DataFrame, cycles: dict[int, RunCycles],
                 offset_s: float) -> pd.DataFrame | None:
    """``intervals_df`` with each run's window moved by ``offset_s`` at the same length (whole
    report intervals; a run without cycle figures keeps its own); None when some run's window
    cannot move that far inside its measurement."""
    out = intervals_df.reset_index(drop=True)
    flags = out["in_window"].to_numpy(dtype=bool).copy()
    for run_id, g in out.groupby("run_id", sort=False):
        rc = cycles.get(int(run_id))
        if rc is None or offset_s == 0:
            continue
        rows = g.index.to_numpy()
        inside = np.flatnonzero(flags[rows])
        if not inside.size:
            continue
        shift = int(round(offset_s / rc.interval_s))
        first, last = inside[0] + shift, inside[-1] + shift
        measure = g["phase"].to_numpy() == "measure"
        if first < 0 or last >= len(rows) or not measure[first:last + 1].all():
            return None
        flags[rows] = False
        flags[rows[first:last + 1]] = True
    out["in_window"] = flags
    return out


def over_starts(db: DB, fr: Frames, lat: latency.Latency,
                cycles: dict[int, RunCycles]) -> pd.DataFrame:
    """Per cell (index: cell id): ``window_ratio_low``/``window_ratio_high`` (the p99 ratio
    to its baseline over the offsets), ``window_verdicts`` (the distinct verdicts met) and
    ``window_dependent`` (a directional verdict changes); ``attrs["offsets"]`` the range."""
    counted_ids = counted_runs(fr)
    intervals_df = fr.intervals[fr.intervals["run_id"].isin(counted_ids)]
    seen: dict[int, list[tuple[float, float, str]]] = {int(c): [] for c in lat.cells.index}
    judged_at = []
    for off in offsets(cycles, counted_ids):
        if off == 0:
            judged = lat.cells
        else:
            moved = moved_window(intervals_df, cycles, float(off))
            if moved is None:
                continue
            judged = verdicts_in(db, fr, moved)
        judged_at.append(float(off))
        for cell_id in seen:
            seen[cell_id].append((float(off), float(judged.loc[cell_id, "ratio"]),
                                  str(judged.loc[cell_id, "verdict"])))
    rows = {}
    for cell_id, got in seen.items():
        ratios = [r for _, r, _ in got if math.isfinite(r)]
        kinds = sorted({v for _, _, v in got})
        rows[cell_id] = {
            "window_ratio_low": min(ratios) if ratios else math.nan,
            "window_ratio_high": max(ratios) if ratios else math.nan,
            "window_verdicts": ", ".join(kinds),
            "window_dependent": len(kinds) > 1
            and bool({latency.LOWER, latency.HIGHER} & set(kinds)),
            "window_changes": "; ".join(f"{v} at {off:+.0f} s" for off, v in _stretches(got)),
        }
    out = pd.DataFrame.from_dict(rows, orient="index").rename_axis("cell_id")
    out.attrs["offsets"] = (f"{min(judged_at):+.0f}…{max(judged_at):+.0f} s"
                            if len(judged_at) > 1 else "0 s")
    return out


def counted_runs(fr: Frames) -> list[int]:
    """The run ids whose windows the verdicts are judged on (done, not disturbed)."""
    rs = fr.run_summary
    return [int(r) for r in rs.loc[counted(rs), "run_id"]]


def verdicts_in(db: DB, fr: Frames, window: pd.DataFrame) -> pd.DataFrame:
    """The cells' p99 verdicts (:func:`analysis.response.latency.latency_verdicts`) with each
    counted run's window as ``window`` flags it (``fr.intervals``' rows of those runs with
    ``in_window`` set another way): each run's p99 merged again from its histograms and
    waits."""
    measured = latency.fixed_rate_runs(fr.runs)
    p99 = {r: latency.one_run(db, window[window["run_id"] == r], r,
                              fixed_rate=r in measured)[1]["value_ms"]
           for r in counted_runs(fr)}
    return latency.latency_verdicts(pd.DataFrame({"value_ms": pd.Series(p99, dtype=float)}),
                                    fr.run_summary, fr.cell_summary,
                                    fr.experiment["stored"].spec)


def with_starts(db: DB, fr: Frames, lat: latency.Latency,
                cycles: dict[int, RunCycles]) -> latency.Latency:
    """``lat`` with its cells' p99 verdicts judged over the window starts (in place, and
    returned): each compared cell's reason names the ratio's range over the starts, and a
    verdict whose direction changes becomes :data:`WINDOW_DEPENDENT`, saying where."""
    if lat.view.percentile is None or lat.cells.empty or not latency.fixed_rate_runs(fr.runs):
        return lat
    table = over_starts(db, fr, lat, cycles)
    cells = lat.cells
    for column in ("window_ratio_low", "window_ratio_high", "window_verdicts",
                   "window_dependent"):
        cells[column] = table[column].reindex(cells.index)
    for cell_id, t in table.iterrows():
        verdict = cells.at[cell_id, "verdict"]
        if verdict == BASELINE or not math.isfinite(t["window_ratio_low"]) \
                or table.attrs["offsets"] == "0 s":
            continue
        span = (f"over window starts {table.attrs['offsets']}: ratio"
                f" {t['window_ratio_low']:.2f}–{t['window_ratio_high']:.2f}")
        reason = str(cells.at[cell_id, "verdict_reason"])
        if t["window_dependent"]:
            cells.at[cell_id, "verdict"] = WINDOW_DEPENDENT
            cells.at[cell_id, "verdict_reason"] = (
                f"the verdict changes with the window's start ({t['window_changes']}; {span}):"
                f" {verdict} at the stored window — {reason}")
        else:
            cells.at[cell_id, "verdict_reason"] = f"{reason} ({span})"
    return lat


def _stretches(seen: list[tuple[float, float, str]]) -> list[tuple[float, str]]:
    """The first offset of each stretch of equal verdicts (offsets in order)."""
    out: list[tuple[float, str]] = []
    for off, _, v in sorted(seen):
        if not out or out[-1][1] != v:
            out.append((off, v))
    return out
