"""How noisy one configuration is under each way of measuring it: an A/A study's variants.

An A/A cell (one configuration run several times — the baseline with ``baseline_repetitions``)
measures the noise floor every verdict stands on. The same runs answer, without running again,
how much each of the measures of ``docs/statistics.md`` buys:

- **window**: the experiment's declared window, and shorter windows ending where it ends
  (e.g. its last 2.5 minutes);
- **steady state**: the window starting where MSER-5 finds the run's throughput settled
  (:mod:`core.steady_state`, capped at half the measured time), ending at the run's end;
- **detection and reruns**: the runs the verdicts count (disturbed ones excluded, their reruns
  in) against what a tool without detection would have kept (every repetition's first
  finished attempt, disturbed or not);
- **drift**: whether the cell's NOTPM follows the order of the night (Spearman's ρ of window
  NOTPM against start time), and its CV once a straight line in time is removed — what a
  blocked order can take out of a comparison, at most.

For each: the runs' window NOTPM, the between-run CV, and the verdict rule's minimum
detectable effect (80 % power, :func:`analysis.statistics.power.mde_pct`) at 5 runs against 5
and at the experiment's own repetitions. ``bench/noise_floor.py`` prints them as a table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from analysis.reading.query import DB, ExperimentRef
from analysis.reading.query import runs as load_runs
from analysis.reading.series import intervals
from analysis.statistics.power import mde_pct
from analysis.statistics.verdicts import cv_to_log_sd
from analysis.tables.frames import load
from core.errors import AnalysisError
from core.steady_state import mser5
from store.models import RunStatus


@dataclass(frozen=True)
class Variant:
    """One way of measuring the A/A cell: its runs' window NOTPM and what that noise allows."""

    name: str
    notpm: tuple[float, ...]
    run_ids: tuple[int, ...]

    @property
    def n(self) -> int:
        """Runs measured."""
        return len(self.notpm)

    @property
    def cv_pct(self) -> float:
        """Between-run CV, % of the mean (NaN below two runs)."""
        x = np.asarray(self.notpm, dtype=float)
        if x.size < 2 or x.mean() <= 0:
            return math.nan
        return float(100.0 * x.std(ddof=1) / x.mean())

    def mde_pct(self, n_a: int, n_b: int) -> float:
        """The verdict rule's minimum detectable effect (%) at ``n_a`` runs against ``n_b``,
        with this variant's CV as the noise of both cells."""
        cv = self.cv_pct
        if not math.isfinite(cv):
            return math.nan
        return mde_pct(n_a, n_b, cv_to_log_sd(cv / 100.0))


def _window_notpm(ivl: pd.DataFrame, start_s: pd.Series, end_s: pd.Series) -> pd.Series:
    """Per run, Σ New-Orders × 60 / Σ interval seconds over the intervals with start < t ≤ end
    (``t`` is an interval's end, as in the declared window)."""
    lo = ivl["run_id"].map(start_s)
    hi = ivl["run_id"].map(end_s)
    inside = ivl[(ivl["t"] > lo) & (ivl["t"] <= hi)]
    g = inside.groupby("run_id")
    return g["primary_count"].sum() * 60.0 / g["interval_s"].sum()


def _steady_starts(ivl: pd.DataFrame, window_end_s: float) -> pd.Series:
    """Per run, where MSER-5 finds its throughput settled (s after measurement start), at most
    half the measured time; the series judged is every interval from 0 to the window's end."""
    out = {}
    for run_id, g in ivl[(ivl["t"] > 0) & (ivl["t"] <= window_end_s)].groupby("run_id"):
        g = g.sort_values("t")
        cut = mser5(g["notpm"].to_numpy(dtype=float))
        times = g["t"].to_numpy(dtype=float)
        start = float(times[cut.start - 1]) if cut.reached and cut.start > 0 else 0.0
        out[int(run_id)] = min(start, window_end_s / 2)
    return pd.Series(out, dtype=float)


def _first_attempts(rdf: pd.DataFrame) -> pd.DataFrame:
    """Each repetition's first finished attempt: what a tool without detection would keep."""
    done = rdf[rdf["status"] == RunStatus.DONE].sort_values(["repetition", "attempt"])
    return done.groupby("repetition", as_index=False).head(1)


def aa_variants(db: DB, experiment: ExperimentRef, cell_label: str | None = None, *,
                windows_s: tuple[float, ...] = (150.0,)) -> list[Variant]:
    """The A/A cell's window NOTPM under each variant (see the module docstring).

    Parameters
    ----------
    cell_label:
        The A/A cell (default: the experiment's baseline).
    windows_s:
        Shorter windows (seconds) ending where the declared window ends.

    Raises
    ------
    AnalysisError
        No such cell, or fewer than 3 counted runs in it.
    """
    fr = load(db, experiment)
    cells = fr.cell_summary
    row = cells[cells["cell_label"] == cell_label] if cell_label else cells[cells["is_baseline"]]
    if row.empty:
        raise AnalysisError(f"no cell {cell_label!r} in {fr.experiment['name']!r}" if cell_label
                            else f"{fr.experiment['name']!r} has no baseline cell",
                            where="cell", fix="name one of: " + ", ".join(cells["cell_label"]))
    cell_id = int(row["cell_id"].iloc[0])
    rs = fr.run_summary
    mine = rs[(rs["cell_id"] == cell_id) & (rs["status"] == RunStatus.DONE)
              & rs["notpm"].notna()]
    counted = mine[~mine["excluded"].fillna(False).astype(bool)]
    if len(counted) < 3:
        raise AnalysisError(f"cell {row['cell_label'].iloc[0]!r} has {len(counted)} counted "
                            "run(s); an A/A CV needs 3 or more", where="cell",
                            fix="wait for more of its repetitions, or name another cell")
    every = load_runs(db, experiment, all_attempts=True)
    every = every[every["cell_id"] == cell_id]
    first = _first_attempts(every)
    ids = sorted({*map(int, counted["run_id"]), *map(int, first["run_id"])})
    ivl = intervals(db, run_ids=ids, detail=False)
    win = ivl[ivl["in_window"]].groupby("run_id")["t"].agg(["min", "max"])
    interval = ivl.groupby("run_id")["interval_s"].median()
    # The declared window as the interval ends it holds: (first end − one interval, last end].
    start = win["min"] - interval.reindex(win.index)
    end = win["max"]

    def variant(name: str, values: pd.Series, run_ids: pd.Series) -> Variant:
        chosen = [int(r) for r in run_ids if int(r) in values.index
                  and math.isfinite(values[int(r)])]
        return Variant(name, tuple(float(values[r]) for r in chosen), tuple(chosen))

    declared = _window_notpm(ivl, start, end)
    span = float((end - start).median())
    out = [
        variant(f"declared window ({span / 60:g} min), disturbed runs excluded and rerun",
                declared, counted["run_id"]),
        variant(f"declared window ({span / 60:g} min), no detection (first attempts)",
                declared, first["run_id"]),
    ]
    for w in windows_s:
        short = _window_notpm(ivl, end - w, end)
        out.append(variant(f"last {w / 60:g} min of the window", short, counted["run_id"]))
    steady = _steady_starts(ivl, float(end.max()))
    out.append(variant("steady state (MSER-5 start, ≤ half the run) to the window's end",
                       _window_notpm(ivl, steady.reindex(end.index).fillna(0.0), end),
                       counted["run_id"]))
    return out


def drift(db: DB, experiment: ExperimentRef, variant: Variant) -> dict[str, float]:
    """Does the cell follow the night? Spearman's ρ (and p) of window NOTPM against start
    time, and the CV (%) left after removing a least-squares line in time."""
    rdf = load_runs(db, experiment, run_ids=list(variant.run_ids))
    when = rdf.set_index("run_id").loc[list(variant.run_ids), "started_at"]
    t = (when - when.min()).dt.total_seconds().to_numpy(dtype=float)
    y = np.asarray(variant.notpm, dtype=float)
    if y.size < 3:
        return {"rho": math.nan, "p": math.nan, "detrended_cv_pct": math.nan}
    rho, p = stats.spearmanr(t, y)
    slope, intercept = np.polyfit(t, y, 1)
    resid = y - (slope * t + intercept)
    # n − 2 degrees of freedom: the line used two.
    sd = float(np.sqrt((resid ** 2).sum() / (y.size - 2))) if y.size > 2 else math.nan
    return {"rho": float(rho), "p": float(p), "detrended_cv_pct": 100.0 * sd / float(y.mean())}
