"""Whether a run's checkpoint age or dirty-page share still trends across its window.

A run whose checkpoint age climbs from 38 % to 82 % of its maximum while it is measured has
not reached steady state: its throughput is that of a transient, and a longer run would have
measured something else. The flash study's ``ps-bigredo-60`` row (320M of redo, XtraDB with
``adaptive_checkpoint: none``) did that in all four runs and was reported as a steady result.
Here every done run is judged from its stored samples, so databases recorded before the rule
existed get it too; a run that trends carries the warning ``not-steady`` with its figures:

    not-steady: checkpoint age +23.7 MiB/min across the window, 38 % → 82 % of the maximum
    (98 → 212 of 259 MiB)

The rule (``docs/statistics.md``, "Not at steady state"), per level — checkpoint age, dirty
share of the buffer pool — over the window's samples (at least :data:`MIN_SAMPLES`):

- the change across the window, the Theil–Sen slope × the window's span, is at least
  :data:`MIN_AGE_CHANGE_PCT` % of the maximum checkpoint age, or :data:`MIN_DIRTY_CHANGE_POINTS`
  points of the buffer pool;
- the level moves one way: Spearman's rank correlation with time is at least
  :data:`MIN_RANK_CORRELATION` in size, with the slope's sign (a saw-tooth of checkpoints, or
  an oscillation, has a slope but no rank order);
- a rise that ends at the level's limit reached the limit and stays there, which is steady:
  not flagged when the median of the window's last third is at or above
  :data:`AGE_LIMIT_PCT` % of the maximum checkpoint age (InnoDB's asynchronous preflush
  point), or :data:`DIRTY_LIMIT_SHARE` of ``max_dirty_pages_pct``.

The figures are computed once per done run and kept with its digest
(:mod:`analysis.writes.run_digest`); :func:`analysis.tables.summaries.with_not_steady` puts them in
a run summary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.statistics.shape import theil_sen_slope
from analysis.steadiness.disturbed import counted

#: The warning's kind (the text before its first colon).
KIND = "not-steady"
#: Fewest window samples a level is judged on.
MIN_SAMPLES = 6
#: Smallest change of checkpoint age across the window that counts, % of its maximum.
MIN_AGE_CHANGE_PCT = 20.0
#: Smallest change of the dirty share across the window that counts, points of the pool.
MIN_DIRTY_CHANGE_POINTS = 10.0
#: Smallest size of Spearman's rank correlation with time: the level moves one way.
MIN_RANK_CORRELATION = 0.8
#: A rise whose last third sits at or above this % of the maximum checkpoint age reached
#: InnoDB's asynchronous preflush point (7/8 of the maximum: ``max_modified_age_async``),
#: where InnoDB's own flushing holds it — a limit, not a transient.
AGE_LIMIT_PCT = 87.5
#: A rise of the dirty share whose last third sits at or above this share of
#: ``max_dirty_pages_pct`` reached the limit InnoDB flushes to.
DIRTY_LIMIT_SHARE = 0.95
#: Columns :func:`analysis.tables.summaries.with_not_steady` adds to a run summary.
COLUMNS = ("not_steady", "not_steady_levels", "checkpoint_age_trend_mib_per_min",
           "checkpoint_age_change_pct", "dirty_trend_points_per_min", "dirty_change_points")

MIB = 1024.0 * 1024.0
#: The two levels judged: figure key, the name a warning gives it.
_AGE, _DIRTY = "checkpoint age", "dirty pages"


# ---------------------------------------------------------------------------- figures


def level_trend(times_s: np.ndarray, values: np.ndarray) -> dict[str, float] | None:
    """One level's trend over a window: the Theil–Sen line and how the level moved.

    Returns ``n, span_s, slope_per_s, start, end`` (the line at the window's first and last
    sample), ``rho`` (Spearman's rank correlation with time), ``first_third``,
    ``last_third`` (medians); None below :data:`MIN_SAMPLES` finite values.
    """
    keep = np.isfinite(times_s) & np.isfinite(values)
    t, y = np.asarray(times_s, float)[keep], np.asarray(values, float)[keep]
    if t.size < MIN_SAMPLES:
        return None
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    slope = theil_sen_slope(y, t)
    if not math.isfinite(slope):
        return None
    intercept = float(np.median(y - slope * t))
    third = max(t.size // 3, 1)
    # Ranks with ties averaged (pandas), so a flat stretch is not read as an order.
    ranks_y = pd.Series(y).rank().to_numpy()
    ranks_t = np.arange(1, t.size + 1, dtype=float)
    rho = float(np.corrcoef(ranks_t, ranks_y)[0, 1]) if np.ptp(ranks_y) > 0 else 0.0
    return {"n": int(t.size), "span_s": float(t[-1] - t[0]), "slope_per_s": slope,
            "start": intercept + slope * float(t[0]), "end": intercept + slope * float(t[-1]),
            "rho": rho, "first_third": float(np.median(y[:third])),
            "last_third": float(np.median(y[-third:]))}


def run_figures(samples_df: pd.DataFrame) -> dict[int, dict[str, Any]]:
    """Each run's window trends (:func:`level_trend`) of checkpoint age (bytes) and dirty
    share (%), with their limits (``age_limit`` bytes, ``dirty_limit`` %; NaN unknown).

    ``samples_df``: :func:`analysis.reading.series.samples` (``counters=None`` is enough).
    """
    out: dict[int, dict[str, Any]] = {}
    window = samples_df[samples_df["in_window"]]
    for run_id, g in window.groupby("run_id", sort=True):
        t = g["t"].to_numpy(dtype=float)
        out[int(run_id)] = {
            "age": level_trend(t, g["checkpoint_age_bytes"].to_numpy(dtype=float)),
            "age_limit": _finite_max(g["max_checkpoint_age_bytes"]),
            "dirty": level_trend(t, g["dirty_pct"].to_numpy(dtype=float)),
            "dirty_limit": _finite_max(g["max_dirty_pages_pct"]),
        }
    return out


def _finite_max(values: pd.Series) -> float:
    finite = values[np.isfinite(values.to_numpy(dtype=float))]
    return float(finite.max()) if len(finite) else math.nan


# ---------------------------------------------------------------------------- the rule


def _moves_one_way(trend: Mapping[str, float], change: float, minimum: float) -> bool:
    """The change is large enough and the rank correlation agrees with it in sign."""
    return (abs(change) >= minimum and abs(trend["rho"]) >= MIN_RANK_CORRELATION
            and math.copysign(1.0, trend["rho"]) == math.copysign(1.0, change))


def age_finding(figures: Mapping[str, Any]) -> str | None:
    """``checkpoint age +23.7 MiB/min across the window, 38 % → 82 % of the maximum (98 →
    212 of 259 MiB)`` when the run's checkpoint age trends (the rule above), else None."""
    trend, limit = figures.get("age"), figures.get("age_limit", math.nan)
    if not trend or not (isinstance(limit, (int, float)) and limit > 0):
        return None
    change_pct = 100.0 * trend["slope_per_s"] * trend["span_s"] / limit
    if not _moves_one_way(trend, change_pct, MIN_AGE_CHANGE_PCT):
        return None
    if change_pct > 0 and 100.0 * trend["last_third"] / limit >= AGE_LIMIT_PCT:
        return None  # climbed to the preflush point and held there: a limit, not a transient
    start, end = trend["start"], trend["end"]
    return (f"{_AGE} {trend['slope_per_s'] * 60 / MIB:+.1f} MiB/min across the window, "
            f"{100 * start / limit:.0f} % → {100 * end / limit:.0f} % of the maximum "
            f"({start / MIB:.0f} → {end / MIB:.0f} of {limit / MIB:.0f} MiB)")


def dirty_finding(figures: Mapping[str, Any]) -> str | None:
    """``dirty pages +2.1 points/min across the window, 41 % → 64 % of the buffer pool
    (max_dirty_pages_pct 75)`` when the run's dirty share trends, else None."""
    trend, limit = figures.get("dirty"), figures.get("dirty_limit", math.nan)
    if not trend:
        return None
    change = trend["slope_per_s"] * trend["span_s"]
    if not _moves_one_way(trend, change, MIN_DIRTY_CHANGE_POINTS):
        return None
    known = isinstance(limit, (int, float)) and math.isfinite(limit) and limit > 0
    if change > 0 and known and trend["last_third"] >= DIRTY_LIMIT_SHARE * limit:
        return None  # reached the share InnoDB flushes to
    return (f"{_DIRTY} {trend['slope_per_s'] * 60:+.1f} points/min across the window, "
            f"{trend['start']:.0f} % → {trend['end']:.0f} % of the buffer pool"
            + (f" (max_dirty_pages_pct {limit:g})" if known else ""))


def warning(figures: Mapping[str, Any]) -> str:
    """The run's ``not-steady: …`` warning, or "" when neither level trends.

    Both findings are joined by " and ", never by "; ", which separates a run's warnings
    (:data:`analysis.steadiness.claims.WARNING_SEPARATOR`).
    """
    found = [f for f in (age_finding(figures), dirty_finding(figures)) if f]
    return f"{KIND}: " + " and ".join(found) if found else ""


def summary_row(figures: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run summary's columns (:data:`COLUMNS`) of one run; None/NaN when not judged."""
    nan = math.nan
    if not figures or (not figures.get("age") and not figures.get("dirty")):
        return {"not_steady": None, "not_steady_levels": None,
                **dict.fromkeys(COLUMNS[2:], nan)}
    age, dirty = figures.get("age"), figures.get("dirty")
    limit = figures.get("age_limit", nan)
    levels = [name for name, finding in ((_AGE, age_finding(figures)),
                                         (_DIRTY, dirty_finding(figures))) if finding]
    return {
        "not_steady": warning(figures),
        "not_steady_levels": ", ".join(levels),
        "checkpoint_age_trend_mib_per_min": age["slope_per_s"] * 60 / MIB if age else nan,
        "checkpoint_age_change_pct": (100 * age["slope_per_s"] * age["span_s"] / limit
                                      if age and limit > 0 else nan),
        "dirty_trend_points_per_min": dirty["slope_per_s"] * 60 if dirty else nan,
        "dirty_change_points": dirty["slope_per_s"] * dirty["span_s"] if dirty else nan,
    }


# ---------------------------------------------------------------------------- run summaries


def not_steady_cells(run_summary: pd.DataFrame) -> dict[int, str]:
    """The cells (cell id → why) whose every counted run carries ``not-steady``: rows not at
    steady state, for the scorecard and the report to mark.

    ``run_summary``: a run summary with :data:`COLUMNS`
    (:func:`~analysis.tables.summaries.with_not_steady`; as
    :func:`analysis.tables.summaries.run_summary` returns it). Text: ``not at steady state:
    checkpoint age trends in all 4 runs (+23.3 to +23.8 MiB/min across the window)``.
    """
    if "not_steady" not in run_summary:
        return {}
    runs = run_summary[counted(run_summary)]
    out: dict[int, str] = {}
    for cell_id, g in runs.groupby("cell_id", sort=False):
        texts = [t for t in g["not_steady"] if isinstance(t, str)]
        if not texts or len(texts) < len(g) or not all(texts):
            continue
        levels = [name for name in (_AGE, _DIRTY)
                  if all(name in str(v).split(", ") for v in g["not_steady_levels"])]
        parts = []
        for name, column, unit in ((_AGE, "checkpoint_age_trend_mib_per_min", "MiB/min"),
                                   (_DIRTY, "dirty_trend_points_per_min", "points/min")):
            if name in levels:
                lo, hi = g[column].min(), g[column].max()
                span = f"{lo:+.1f}" if round(lo, 1) == round(hi, 1) else f"{lo:+.1f} to {hi:+.1f}"
                parts.append(f"{name} {span} {unit}")
        what = " and ".join(parts) if parts else "checkpoint age or dirty pages"
        runs_text = f"all {len(g)} runs" if len(g) > 1 else "its one run"
        out[int(cell_id)] = f"not at steady state: {KIND} in {runs_text} ({what} across the window)"
    return out
