"""Flush cycles against the measurement window: per run, and per verdict.

Per run (:func:`run_cycles`): the period of its throughput (per driver interval, over the
whole measured run) and of its checkpoint age (per sample), by the calibrated detector of
:mod:`analysis.statistics.cycles`; how many cycles its window holds; and the window mean at
every **plausible window start** — from the run's steady point (MSER-5 of its throughput, or
the declared start when that is earlier) to the latest start that still leaves a window as
long as its own. A window holding a non-whole number of cycles lets the phase move its mean;
the range over starts says by how much.

Per comparison (:func:`window_sensitivity`): the cells' ratio and verdict recomputed by the
one verdict rule with every run's window moved by the same offset over that range. A
verdict that changes inside the range is **window-dependent**: it is reported as such,
never as "faster" or "slower".

``window: {cycles: whole}`` (:func:`whole_cycle_flags`): the analysis cuts a periodic run's
window to the most whole cycles it holds, at read time, so stored studies can be re-judged.
Method and reasons: ``docs/statistics.md`` ("Flush cycles and the window").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.statistics.cycles import (
    Cycle,
    cycles_held,
    detect_cycle,
    is_whole,
    whole_cycle_window,
    window_means,
)
from analysis.statistics.verdicts import FASTER, SLOWER
from core.steady_state import mser5

#: The verdict of a comparison whose verdict changes with the window's start.
WINDOW_DEPENDENT = "window-dependent"
#: Most window offsets a comparison is recomputed at (evenly spaced over the range).
MAX_OFFSETS = 41


@dataclass(frozen=True)
class RunCycles:
    """One run's cycles and what its window makes of them (times in s after warmup)."""

    run_id: int
    throughput: Cycle
    checkpoint: Cycle | None
    window_start_s: float
    window_end_s: float
    cycles: float
    whole: bool
    window_mean: float
    earliest_start_s: float
    latest_start_s: float
    mean_low: float
    mean_high: float
    whole_start_s: float
    whole_end_s: float
    whole_mean: float
    #: The run's report interval (s).
    interval_s: float = 10.0

    @property
    def periodic(self) -> bool:
        """Whether the run's throughput cycles."""
        return self.throughput.periodic

    @property
    def swing_pct(self) -> float:
        """The range of the window mean over starts, % of the stored window's mean."""
        if not (math.isfinite(self.mean_low) and self.window_mean > 0):
            return math.nan
        return 100.0 * (self.mean_high - self.mean_low) / self.window_mean

    @property
    def phase_sensitive(self) -> bool:
        """A periodic run whose window holds a non-whole number of cycles."""
        return self.periodic and not self.whole

    def cycle_text(self) -> str:
        """``throughput cycles every 120 s (p = 0.005); checkpoint age: none found``."""
        parts = [_one("throughput", self.throughput)]
        if self.checkpoint is not None:
            parts.append(_one("checkpoint age", self.checkpoint))
        return "; ".join(parts)

    def window_text(self, unit: str = "NOTPM", scale: float = 1.0) -> str:
        """What the window holds and the range of its mean over window starts (means in
        ``unit``: the per-minute figures times ``scale``)."""
        span = f"the window {self.window_start_s:.0f}–{self.window_end_s:.0f} s"
        if not self.periodic:
            head = f"{span}: no cycle to hold"
        elif self.whole:
            head = f"{span} holds {self.cycles:.1f} cycles — whole cycles"
        else:
            head = (f"{span} holds {self.cycles:.1f} cycles — not a whole number: the phase"
                    " moves its mean")
        if not math.isfinite(self.mean_low):
            return head
        text = (f"{head}; its mean {scale * self.window_mean:,.0f} {unit},"
                f" {scale * self.mean_low:,.0f}–{scale * self.mean_high:,.0f} over window"
                f" starts {self.earliest_start_s:.0f}–{self.latest_start_s:.0f} s"
                f" ({self.swing_pct:.0f} % of it)")
        if self.periodic and not self.whole and math.isfinite(self.whole_mean):
            text += (f"; whole cycles ({self.whole_start_s:.0f}–{self.whole_end_s:.0f} s):"
                     f" {scale * self.whole_mean:,.0f} {unit}")
        return text


def _one(name: str, c: Cycle) -> str:
    if c.periodic:
        return f"{name} cycles every {c.period_s:.0f} s (false-alarm p = {c.fap:.3f})"
    if c.n and math.isfinite(c.period_s):
        return f"{name}: no cycle (best {c.period_s:.0f} s, p = {c.fap:.2f})"
    return f"{name}: no cycle ({c.reason})"


@functools.lru_cache(maxsize=4096)
def _cached_cycle(values: bytes, times: bytes, dt: float | None) -> Cycle:
    """:func:`detect_cycle` memoized on the series: frames and compare ask for the same runs."""
    return detect_cycle(np.frombuffer(values), np.frombuffer(times), interval_s=dt)


def cycle_of(values: np.ndarray, times: np.ndarray, dt: float | None = None) -> Cycle:
    """The cycle of one series (seconds ``times``), computed once per series and process."""
    return _cached_cycle(np.ascontiguousarray(values, dtype=float).tobytes(),
                         np.ascontiguousarray(times, dtype=float).tobytes(), dt)


def _run_series(g: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(end time, count, seconds) of a run's measured intervals, in order."""
    m = g[(g["phase"] == "measure") & g["interval_s"].gt(0)].sort_values("t")
    return (m["t"].to_numpy(dtype=float), m["primary_count"].to_numpy(dtype=float),
            m["interval_s"].to_numpy(dtype=float))


def steady_point(t: np.ndarray, counts: np.ndarray, secs: np.ndarray,
                 age: pd.DataFrame | None = None) -> float:
    """Where the run settles, as a start time: the later of the MSER-5 cuts of its
    throughput and of its checkpoint age (``age``: samples with ``t`` and
    ``checkpoint_age_bytes``), as ``window: {start: steady}`` chooses (``runner/run/steady.py``);
    a series the rule cannot judge or that never settles adds nothing."""
    if not t.size:
        return math.nan
    cut = mser5(counts / secs)
    i = cut.start if cut.reached and cut.start < t.size else 0
    point = float(t[i] - secs[i])
    if age is not None and len(age):
        a = mser5(age["checkpoint_age_bytes"].to_numpy(dtype=float))
        if a.reached and a.start < len(age):
            point = max(point, float(age["t"].iloc[a.start]))
    return point


def run_cycles(intervals_df: pd.DataFrame, samples_df: pd.DataFrame | None = None
               ) -> dict[int, RunCycles]:
    """Each run's :class:`RunCycles` from its stored series.

    ``intervals_df``: :func:`analysis.reading.series.intervals` (every phase, with ``in_window``);
    ``samples_df``: :func:`analysis.reading.series.samples` (for the checkpoint age), or None.
    """
    out: dict[int, RunCycles] = {}
    ages: dict[int, pd.DataFrame] = {}
    if samples_df is not None and not samples_df.empty and "checkpoint_age_bytes" in samples_df:
        ages = {int(r): g for r, g in samples_df.groupby("run_id")}
    for run_id, g in intervals_df.groupby("run_id"):
        t, counts, secs = _run_series(g)
        win = g[g["in_window"]]
        if not t.size or win.empty:
            continue
        dt = float(np.median(secs))
        thr = cycle_of(counts / secs, t, dt)
        ckpt, a = None, None
        if int(run_id) in ages:
            a = ages[int(run_id)]
            a = a[(a["t"] > 0) & a["checkpoint_age_bytes"].notna()].sort_values("t")
            if len(a):
                ckpt = cycle_of(a["checkpoint_age_bytes"].to_numpy(dtype=float),
                                a["t"].to_numpy(dtype=float))
        w_start = float((win["t"] - win["interval_s"]).min())
        w_end = float(win["t"].max())
        length = w_end - w_start
        mean = float(win["primary_count"].sum() * 60.0 / win["interval_s"].sum())
        earliest = min(steady_point(t, counts, secs, a), w_start)
        latest = max(float(t[-1]) - length, w_start)
        starts = np.arange(earliest, latest + dt / 2, dt)
        means = 60.0 * window_means(t, counts, secs, starts, length)
        held = cycles_held(length, thr.period_s) if thr.periodic else math.nan
        ws, we = whole_cycle_window(w_start, w_end, thr.period_s if thr.periodic else math.nan,
                                    dt)
        whole_mean = float(60.0 * window_means(t, counts, secs, [ws], we - ws)[0])
        out[int(run_id)] = RunCycles(
            run_id=int(run_id), throughput=thr, checkpoint=ckpt, window_start_s=w_start,
            window_end_s=w_end, cycles=held, whole=is_whole(held), window_mean=mean,
            earliest_start_s=float(earliest), latest_start_s=float(latest),
            mean_low=float(np.nanmin(means)) if np.isfinite(means).any() else math.nan,
            mean_high=float(np.nanmax(means)) if np.isfinite(means).any() else math.nan,
            whole_start_s=ws, whole_end_s=we, whole_mean=whole_mean, interval_s=dt)
    return out


def whole_cycle_flags(intervals_df: pd.DataFrame) -> pd.Series:
    """``in_window`` with every periodic run's window cut to its whole cycles.

    What ``window: {cycles: whole}`` means at read time: a run whose throughput cycles keeps
    its window start and ends at the last whole cycle (:func:`whole_cycle_window`); a run
    without a cycle, or whose window holds less than one, keeps its window.
    """
    flags = intervals_df["in_window"].copy()
    for run_id, rc in run_cycles(intervals_df).items():
        if not rc.periodic or (rc.whole_start_s, rc.whole_end_s) == (rc.window_start_s,
                                                                    rc.window_end_s):
            continue
        rows = intervals_df["run_id"] == run_id
        mid = intervals_df.loc[rows, "t"] - intervals_df.loc[rows, "interval_s"] / 2
        flags.loc[rows] = (intervals_df.loc[rows, "phase"] == "measure") & \
            (mid > rc.whole_start_s) & (mid <= rc.whole_end_s)
    return flags


def window_offsets(cycles: dict[int, RunCycles], run_ids: list[int]) -> np.ndarray:
    """Offsets (s) every one of these runs' windows can move by and stay plausible."""
    rc = [cycles[r] for r in run_ids if r in cycles]
    if not rc:
        return np.zeros(1)
    lo = max(c.earliest_start_s - c.window_start_s for c in rc)
    hi = min(c.latest_start_s - c.window_start_s for c in rc)
    step = max(c.interval_s for c in rc)  # one report interval: the unit a window holds
    if hi < lo:
        return np.zeros(1)
    offsets = np.arange(math.ceil(lo / step) * step, hi + step / 2, step)
    if offsets.size > MAX_OFFSETS:
        # Long runs: every verdict is recomputed per offset; evenly spaced ones, both ends kept.
        offsets = offsets[np.unique(np.linspace(0, offsets.size - 1, MAX_OFFSETS).round()
                                    .astype(int))]
    return np.unique(np.append(offsets, 0.0))


def shifted_means(intervals_df: pd.DataFrame, cycles: dict[int, RunCycles],
                  offsets: np.ndarray) -> dict[int, np.ndarray]:
    """Per run, its window mean (NOTPM) with its window moved by each offset."""
    out = {}
    for run_id, g in intervals_df.groupby("run_id"):
        rc = cycles.get(int(run_id))
        if rc is None:
            continue
        t, counts, secs = _run_series(g)
        out[int(run_id)] = 60.0 * window_means(
            t, counts, secs, rc.window_start_s + offsets, rc.window_end_s - rc.window_start_s)
    return out


def window_sensitivity(cells: pd.DataFrame, run_summary_df: pd.DataFrame,
                       intervals_df: pd.DataFrame, cycles: dict[int, RunCycles],
                       verdict_of: Any) -> pd.DataFrame:
    """Each comparison's ratio and verdict over the plausible window starts.

    ``verdict_of(run_summary_df)`` recomputes the cells' comparison (the one verdict rule,
    as :func:`analysis.comparisons.compare.compare_cells` does) from a run summary whose ``notpm``
    is each run's window mean at one offset. Adds ``window_ratio_low``, ``window_ratio_high``,
    ``window_offsets`` (e.g. ``-170…0 s``), ``window_verdicts`` (the distinct verdicts met)
    and ``window_dependent``; a window-dependent directional verdict becomes
    :data:`WINDOW_DEPENDENT`, its reason saying where it changes.
    """
    out = cells.copy()
    counted = [int(r) for r in run_summary_df["run_id"]]
    offsets = window_offsets(cycles, counted)
    means = shifted_means(intervals_df[intervals_df["run_id"].isin(counted)], cycles, offsets)
    ratios: dict[int, list[float]] = {int(c): [] for c in out["cell_id"]}
    seen: dict[int, list[tuple[float, str]]] = {int(c): [] for c in out["cell_id"]}
    for k, off in enumerate(offsets):
        rs = run_summary_df.copy()
        rs["notpm"] = [float(means[int(r)][k]) if int(r) in means else v
                       for r, v in zip(rs["run_id"], rs["notpm"], strict=True)]
        judged = verdict_of(rs)
        for _, row in judged.iterrows():
            if row["verdict"] == "baseline":
                continue
            ratios[int(row["cell_id"])].append(float(row["ratio"]))
            seen[int(row["cell_id"])].append((float(off), str(row["verdict"])))
    lows, highs, verdicts, dependent, reasons, stated = [], [], [], [], [], []
    for _, row in out.iterrows():
        cid = int(row["cell_id"])
        r = [x for x in ratios[cid] if math.isfinite(x)]
        lows.append(min(r) if r else math.nan)
        highs.append(max(r) if r else math.nan)
        kinds = sorted({v for _, v in seen[cid]} | ({row["verdict"]} if seen[cid] else set()))
        verdicts.append(", ".join(kinds))
        changes = len(kinds) > 1 and bool({FASTER, SLOWER} & set(kinds))
        dependent.append(changes)
        reason = row["verdict_reason"]
        if changes:
            where = "; ".join(f"{v} at {off:+.0f} s" for off, v in _runs_of(seen[cid]))
            reason = (f"the verdict changes with the window's start ({where}; ratio "
                      f"{lows[-1]:.2f}–{highs[-1]:.2f}): {row['verdict']} at the stored window"
                      f" — {reason}")
        reasons.append(reason)
        stated.append(WINDOW_DEPENDENT if changes else row["verdict"])
    span = (f"{offsets.min():+.0f}…{offsets.max():+.0f} s" if offsets.size > 1 else "0 s")
    out["window_ratio_low"], out["window_ratio_high"] = lows, highs
    out["window_offsets"] = span
    out["window_verdicts"] = verdicts
    out["window_dependent"] = dependent
    out["verdict_at_window"] = out["verdict"]
    out["verdict"], out["verdict_reason"] = stated, reasons
    out.attrs.update(cells.attrs)
    if offsets.size > 1:
        out.attrs["window_note"] = (
            f"starts: the ratio with every run's window moved by {span} (from the runs' steady"
            " point to the latest start that leaves a window as long), each by the same verdict"
            " rule; a verdict that changes inside that range is window-dependent"
            " (docs/statistics.md, \"Flush cycles and the window\").")
    return out


def _runs_of(seen: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """The first offset of each stretch of equal verdicts (offsets in order)."""
    out: list[tuple[float, str]] = []
    for off, v in sorted(seen):
        if not out or out[-1][1] != v:
            out.append((off, v))
    return out


def phase_note(cycles: dict[int, RunCycles], run_ids: list[int], mde_pct: float | None = None
               ) -> str:
    """One sentence naming the runs whose window holds a non-whole number of cycles, or
    whose phase moves the mean by more than ``mde_pct`` (%), with their ranges; ``""``."""
    named = []
    for r in run_ids:
        rc = cycles.get(r)
        if rc is None or not rc.periodic:
            continue
        big = mde_pct is not None and math.isfinite(rc.swing_pct) and rc.swing_pct >= mde_pct
        if rc.whole and not big:
            continue
        named.append(f"run {r} ({rc.throughput.period_s:.0f} s cycle, {rc.cycles:.1f} in its"
                     f" window; mean {rc.mean_low:,.0f}–{rc.mean_high:,.0f} over window starts)")
    if not named:
        return ""
    return ("Windows that hold a non-whole number of flush cycles, or too few for the phase to"
            " move the mean less than the design's MDE: " + "; ".join(named) + ".")

