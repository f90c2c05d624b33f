"""Summaries: one row per run (window NOTPM, stability) and per cell (across repetitions)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.reading.query import DB, ExperimentRef, knob_names, runs
from analysis.reading.series import intervals
from analysis.statistics.intervals import mean_ci
from analysis.steadiness.disturbed import counted, excluded, exclusion_reason
from analysis.steadiness.stability_cache import Series, stability_many
from analysis.steadiness.transients import COLUMNS, summary_row
from analysis.writes.run_digest import run_digests
from store.models import RunStatus


def _nanmedian(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else math.nan


def run_summary(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    runs_df: pd.DataFrame | None = None,
    intervals_df: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per run (latest attempts, every status) with window NOTPM and stability.

    ``notpm`` is the window average (Σ New-Orders × 60 / Σ interval seconds — the "15-minute
    average" of the 2011 study); the stability columns come from
    :func:`analysis.steadiness.stability.stability` on the window's per-interval NOTPM series.
    Pass ``runs_df``/``intervals_df`` to reuse frames already loaded.
    """
    rdf = runs_df if runs_df is not None else runs(db, experiment)
    idf = intervals_df if intervals_df is not None else intervals(
        db, run_ids=list(rdf["run_id"]), detail=False
    )
    win = idf[idf["in_window"]].sort_values(["run_id", "seq"], kind="stable")
    # Plain numpy slices per run: a pandas groupby with a dozen reductions per group costs
    # more than the stability figures themselves on a 500-run experiment.
    col = {c: win[c].to_numpy(dtype=float) for c in (
        "notpm", "t", "interval_s", "primary_count", "p95_ms", "p99_ms", "errors", "retries")}
    ids = win["run_id"].to_numpy()
    cuts = np.flatnonzero(np.diff(ids)) + 1
    bounds = [(lo, hi) for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(ids)], strict=True)
              if hi > lo]
    # Every run's figures in one call: known ones come from the stability cache.
    figures = stability_many([
        Series(col["notpm"][lo:hi], float(np.median(col["interval_s"][lo:hi])), col["t"][lo:hi])
        for lo, hi in bounds])
    per_run: dict[int, dict[str, Any]] = {}
    for (lo, hi), st in zip(bounds, figures, strict=True):
        total_s = float(col["interval_s"][lo:hi].sum())
        row = st.as_dict()
        row.update(
            notpm=float(col["primary_count"][lo:hi].sum() * 60.0 / total_s)
            if total_s else math.nan,
            window_s=total_s,
            n_intervals=int(hi - lo),
            p95_ms_median=_nanmedian(col["p95_ms"][lo:hi]),
            p99_ms_median=_nanmedian(col["p99_ms"][lo:hi]),
            errors=float(np.nansum(col["errors"][lo:hi])),
            retries=float(np.nansum(col["retries"][lo:hi])),
        )
        per_run[int(ids[lo])] = row
    stats = pd.DataFrame.from_dict(per_run, orient="index")
    stats = stats.rename(columns={"median": "notpm_median", "mean": "notpm_interval_mean",
                                  "n": "n_window_intervals"})
    out = rdf.merge(stats, left_on="run_id", right_index=True, how="left")
    if "warnings" not in out.columns:
        out["warnings"] = ""
    if "notpm" not in out:
        out["notpm"] = math.nan  # not one run has a window interval
    # A finished run must never vanish from a table: say it has nothing to count.
    no_data = pd.Series("", index=out.index)
    done_no_data = (out["status"] == RunStatus.DONE) & out["notpm"].isna()
    if done_no_data.any():
        reported = idf.groupby("run_id").size() if len(idf) else pd.Series(dtype=int)
        no_data[done_no_data] = [
            f"done, no data in window: {int(reported.get(r, 0))} intervals reported, none "
            "inside the measurement window" for r in out.loc[done_no_data, "run_id"]
        ]
    # One list per run: no data first, then the runner's own warnings, then the shape's.
    events = out.get("event_warnings", pd.Series("", index=out.index))
    out["warnings"] = [
        "; ".join(w for w in parts if w)
        for parts in zip(no_data, events.fillna(""), out["warnings"].fillna(""), strict=True)
    ]
    # Then a level still trending across the window: the run had not reached steady state
    # (analysis.steadiness.transients; from each done run's samples, computed once per run and
    # cached).
    out = with_not_steady(db, out)
    # A disturbed run the experiment's policy excludes stays in this table, marked and with
    # its reason; every verdict, mean and interval leaves it out
    # (analysis.steadiness.disturbed.counted).
    out["excluded"] = excluded(out).to_numpy()
    out["excluded_reason"] = [exclusion_reason(r) for _, r in out.iterrows()] if len(out) else []
    out.attrs["knobs"] = rdf.attrs.get("knobs", knob_names(rdf["knobs"]))
    return out


#: The columns of :func:`cell_summary` (the knob columns come after ``knobs``).
CELL_COLUMNS: tuple[str, ...] = (
    "cell_id", "position", "cell_label", "is_baseline", "knobs", "n_done", "n_no_data",
    "n_failed", "n_other", "n_excluded", "notpm_mean", "notpm_median", "notpm_ci_low",
    "notpm_ci_high",
    "notpm_min", "notpm_max", "notpm_cv_pct", "score_median", "score_min", "cv_pct_median",
    "holes_share_max", "period_s_median", "oscillating_runs", "noisy_runs", "warnings",
)


def cell_summary(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    run_summary_df: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per cell: repetitions, NOTPM mean/median with a 95 % CI, stability.

    The interval is :func:`analysis.statistics.intervals.mean_ci` (lognormal, Cox): it keeps
    its coverage at 3 repetitions, where a percentile bootstrap covers ~75 %.

    Returns
    -------
    DataFrame
        ``cell_id, position, cell_label, is_baseline, knobs`` + knob columns, ``n_done,
        n_no_data`` (done runs without a window interval, named in ``warnings``), ``n_failed,
        n_other, n_excluded`` (done, disturbed, left out by the ``disturbed:`` policy),
        ``notpm_mean, notpm_median, notpm_ci_low, notpm_ci_high, notpm_min, notpm_max,
        notpm_cv_pct`` (between repetitions), ``score_median, score_min,
        cv_pct_median, holes_share_max, period_s_median, oscillating_runs, noisy_runs,
        warnings``.
    """
    rs = run_summary_df if run_summary_df is not None else run_summary(db, experiment)
    names = rs.attrs.get("knobs") or knob_names(rs["knobs"])
    rows = []
    for cell_id, g in rs.groupby("cell_id", sort=False):
        done = g[counted(g)]
        values = done["notpm"].to_numpy(dtype=float)
        ci = mean_ci(values)
        lo, hi = ci.low, ci.high
        first = g.iloc[0]
        cv = (
            float(100 * values.std(ddof=1) / values.mean())
            if values.size > 1 and values.mean() > 0 else math.nan
        )
        warnings = sorted({w for ws in done["warnings"] for w in str(ws).split("; ") if w})
        no_data = g.loc[(g["status"] == RunStatus.DONE) & g["notpm"].isna(), "run_id"]
        no_data_text = (f"{len(no_data)} done, no data in window: run "
                        + ", ".join(str(int(r)) for r in no_data)) if len(no_data) else ""
        rows.append({
            "cell_id": int(cell_id),
            "position": int(first["position"]),
            "cell_label": first["cell_label"],
            "is_baseline": bool(first["is_baseline"]),
            "knobs": first["knobs"],
            **{k: first[k] for k in names},
            "n_done": int(values.size),
            "n_no_data": int(len(no_data)),
            "n_failed": int((g["status"] == RunStatus.FAILED).sum()),
            "n_other": int((~g["status"].isin([RunStatus.DONE, RunStatus.FAILED])).sum()),
            # Done, disturbed, and left out by the experiment's `disturbed:` policy.
            "n_excluded": int(g["excluded"].sum()) if "excluded" in g else 0,
            "notpm_mean": float(values.mean()) if values.size else math.nan,
            "notpm_median": float(np.median(values)) if values.size else math.nan,
            "notpm_ci_low": lo,
            "notpm_ci_high": hi,
            "notpm_min": float(values.min()) if values.size else math.nan,
            "notpm_max": float(values.max()) if values.size else math.nan,
            "notpm_cv_pct": cv,
            "score_median": float(done["score"].median()) if values.size else math.nan,
            "score_min": float(done["score"].min()) if values.size else math.nan,
            "cv_pct_median": float(done["cv_pct"].median()) if values.size else math.nan,
            "holes_share_max": float(done["holes_share"].max()) if values.size else math.nan,
            "period_s_median": float(done["period_s"].median()) if values.size else math.nan,
            "oscillating_runs": int(done["oscillates"].fillna(False).astype(bool).sum())
            if values.size else 0,
            "noisy_runs": int((done["cv_pct"] >= 10).sum()) if values.size else 0,
            "warnings": "; ".join(
                sorted({w.split(":")[0] for w in warnings}) + ([no_data_text] if no_data_text
                                                               else [])
            ),
        })
    # An experiment with no cell, or no run yet, still has a (empty) table with its columns:
    # the callers select columns by name and say "nothing finished" themselves.
    columns = dict.fromkeys([*CELL_COLUMNS[:5], *names, *CELL_COLUMNS[5:]])  # ordered, unique
    out = pd.DataFrame(rows, columns=list(columns))
    out = out.sort_values("position").reset_index(drop=True)
    out.attrs["knobs"] = names
    return out


def representative_runs(run_summary_df: pd.DataFrame) -> dict[int, int]:
    """For each cell, the done run whose NOTPM is closest to the cell's median (cell → run)."""
    out = {}
    done = run_summary_df[counted(run_summary_df)]
    for cell_id, g in done.groupby("cell_id", sort=False):
        med = g["notpm"].median()
        out[int(cell_id)] = int(g.loc[(g["notpm"] - med).abs().idxmin(), "run_id"])
    return out


def not_steady_figures(db: DB, run_ids: Sequence[int]) -> pd.DataFrame:
    """Per run (index: run id), the :data:`~analysis.steadiness.transients.COLUMNS` of these done
    runs, from their digests (computed once per run and cached:
    :mod:`analysis.writes.run_digest`)."""
    ids = [int(r) for r in run_ids]
    figures = run_digests(db, ids).transients if ids else {}
    frame = pd.DataFrame([summary_row(figures.get(r)) for r in ids],
                         index=pd.Index(ids, name="run_id"),
                         columns=list(COLUMNS))
    return frame


def with_not_steady(db: DB, run_summary: pd.DataFrame) -> pd.DataFrame:
    """``run_summary`` with :data:`~analysis.steadiness.transients.COLUMNS` and each done run's
    ``not-steady`` warning added to its ``warnings`` (after the others). Without a database
    (``db`` None: a summary of frames alone) no run is judged."""
    out = run_summary.copy()
    done = [] if db is None else [
        int(r) for r in out.loc[out["status"] == RunStatus.DONE, "run_id"]]
    figures = not_steady_figures(db, done).reindex(out["run_id"].astype(int).to_numpy())
    for column in COLUMNS:
        out[column] = figures[column].to_numpy()
    out.attrs = dict(run_summary.attrs)
    texts = [w if isinstance(w, str) else "" for w in out["not_steady"]]
    out["warnings"] = ["; ".join(p for p in (str(old or ""), new) if p)
                       for old, new in zip(out["warnings"].fillna(""), texts, strict=True)]
    return out
