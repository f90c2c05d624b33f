"""Is the difference real? Cells against the baseline, knob effects, rankings.

Per cell, across repetitions: NOTPM mean with a bootstrap 95 % CI. Against the baseline cell:
the ratio of means ("1.55×") with a bootstrap 95 % CI, a two-sided Mann-Whitney U p-value and a
verdict:

- ``not enough repetitions`` — fewer than 3 done runs on either side;
- ``faster`` / ``slower`` — the ratio's CI excludes 1 **and** Mann-Whitney agrees: p ≤ 0.05,
  or, when the group sizes make 0.05 unreachable (3 vs 3 runs: the smallest possible p is
  0.10), the groups do not overlap at all (p equals the smallest attainable value);
- ``no clear difference`` — otherwise.

Across the matrix: the main effect of each knob (marginal mean NOTPM per level over runs, as a
ratio to the baseline's level) and two-way interactions (the part of the cell means that the
two main effects do not explain). Runs whose checked metadata differ (host, server flavor and
version, dataset) are not compared unless ``force=True``.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.frames import (
    CHECKED_METADATA,
    DB,
    ExperimentRef,
    Frames,
    load,
    varying_knobs,
)
from analysis.stats import bootstrap_ratio_ci, mann_whitney_p, min_attainable_p
from flushbench.errors import AnalysisError

#: Fewer done runs than this on either side: no verdict.
MIN_REPETITIONS = 3
#: Mann-Whitney threshold (two-sided).
ALPHA = 0.05

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no clear difference"
NOT_ENOUGH = "not enough repetitions"
BASELINE = "baseline"


@dataclass
class Verdict:
    """One cell against the baseline."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str


def verdict(
    baseline: np.ndarray | list[float],
    other: np.ndarray | list[float],
    *,
    alpha: float = ALPHA,
    min_repetitions: int = MIN_REPETITIONS,
) -> Verdict:
    """Compare one cell's per-run NOTPM with the baseline's (see the module docstring).

    Parameters
    ----------
    baseline, other:
        One NOTPM figure per done run.

    Returns
    -------
    Verdict
        ``ratio = mean(other) / mean(baseline)`` with its bootstrap 95 % CI, the Mann-Whitney
        p-value and the verdict string.
    """
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(other, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    ratio, lo, hi = bootstrap_ratio_ci(a, b)
    p = mann_whitney_p(a, b) if a.size and b.size else math.nan
    if a.size < min_repetitions or b.size < min_repetitions:
        return Verdict(ratio, lo, hi, p, NOT_ENOUGH)
    needed = max(alpha, min_attainable_p(a.size, b.size))
    ci_excludes_one = np.isfinite(lo) and (lo > 1.0 or hi < 1.0)
    if ci_excludes_one and np.isfinite(p) and p <= needed * (1 + 1e-9):
        return Verdict(ratio, lo, hi, p, FASTER if ratio > 1 else SLOWER)
    return Verdict(ratio, lo, hi, p, NO_DIFFERENCE)


def check_metadata(runs_df: pd.DataFrame, *, force: bool = False) -> list[str]:
    """Refuse runs whose checked metadata differ; with ``force``, return warnings instead.

    Raises
    ------
    AnalysisError
        Naming each differing key and its values, unless ``force``.
    """
    done = runs_df[runs_df["status"] == "done"]
    problems = []
    for key in CHECKED_METADATA:
        if key not in done.columns:
            continue
        values = sorted({str(v) for v in done[key].dropna()})
        if len(values) > 1:
            problems.append(f"{key} differs between runs: {', '.join(values)}")
    if problems and not force:
        raise AnalysisError(
            "; ".join(problems),
            where="run_metadata",
            fix="compare runs from one host/server/dataset, or pass --force (force=True) to "
            "compare anyway",
        )
    return [f"forced comparison: {p}" for p in problems]


def compare_cells(run_summary_df: pd.DataFrame, cell_summary_df: pd.DataFrame) -> pd.DataFrame:
    """The cell summary plus ``ratio, ratio_ci_low, ratio_ci_high, p_value, verdict``."""
    done = run_summary_df[(run_summary_df["status"] == "done") & run_summary_df["notpm"].notna()]
    values = {int(c): g["notpm"].to_numpy(dtype=float) for c, g in done.groupby("cell_id")}
    base_rows = cell_summary_df[cell_summary_df["is_baseline"]]
    base_id = int(base_rows["cell_id"].iloc[0]) if len(base_rows) else int(
        cell_summary_df["cell_id"].iloc[0]
    )
    base = values.get(base_id, np.array([]))
    rows = []
    for cell_id in cell_summary_df["cell_id"]:
        if int(cell_id) == base_id:
            rows.append(dict(ratio=1.0, ratio_ci_low=math.nan, ratio_ci_high=math.nan,
                             p_value=math.nan, verdict=BASELINE))
            continue
        v = verdict(base, values.get(int(cell_id), np.array([])))
        rows.append(dict(ratio=v.ratio, ratio_ci_low=v.ci_low, ratio_ci_high=v.ci_high,
                         p_value=v.p_value, verdict=v.verdict))
    out = pd.concat([cell_summary_df.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
    out.attrs.update(cell_summary_df.attrs)
    return out


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _sorted_levels(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=_key)


def main_effects(
    run_summary_df: pd.DataFrame, knobs: list[str] | None = None
) -> pd.DataFrame:
    """Main effect of each varying knob: marginal mean NOTPM per level, over done runs.

    The reference level is the baseline cell's level; each other level gets the ratio of
    marginal means with a bootstrap CI and a Mann-Whitney p-value over the runs.

    Returns
    -------
    DataFrame
        ``knob, level, n_cells, n_runs, notpm_mean, ratio, ratio_ci_low, ratio_ci_high,
        p_value, is_reference``.
    """
    done = run_summary_df[(run_summary_df["status"] == "done") & run_summary_df["notpm"].notna()]
    knobs = knobs if knobs is not None else varying_knobs(run_summary_df)
    base = run_summary_df[run_summary_df["is_baseline"]]
    rows = []
    for knob in knobs:
        col = done["knobs"].map(lambda kn, k=knob: _key(kn.get(k)))
        levels = _sorted_levels([json.loads(x) for x in col.unique()])
        ref = _key(base["knobs"].iloc[0].get(knob)) if len(base) else _key(levels[0])
        ref_values = done.loc[col == ref, "notpm"].to_numpy(dtype=float)
        for level in levels:
            sel = col == _key(level)
            vals = done.loc[sel, "notpm"].to_numpy(dtype=float)
            is_ref = _key(level) == ref
            ratio, lo, hi = (1.0, math.nan, math.nan) if is_ref else bootstrap_ratio_ci(
                ref_values, vals
            )
            rows.append(dict(
                knob=knob, level=level, n_cells=int(done.loc[sel, "cell_id"].nunique()),
                n_runs=int(vals.size), notpm_mean=float(vals.mean()) if vals.size else math.nan,
                ratio=ratio, ratio_ci_low=lo, ratio_ci_high=hi,
                p_value=math.nan if is_ref else mann_whitney_p(ref_values, vals),
                is_reference=is_ref,
            ))
    return pd.DataFrame(rows, columns=[
        "knob", "level", "n_cells", "n_runs", "notpm_mean", "ratio", "ratio_ci_low",
        "ratio_ci_high", "p_value", "is_reference",
    ])


def interactions(
    run_summary_df: pd.DataFrame, knobs: list[str] | None = None
) -> pd.DataFrame:
    """Two-way interactions: how far the cell means are from "effect of A + effect of B".

    For each pair of varying knobs, the table of cell means ``m[a, b]`` (mean NOTPM of the
    runs) is compared with the additive model ``m[a,·] + m[·,b] − m[·,·]``; ``interaction_pct``
    is the RMS of the residuals as % of the grand mean (0 = the knobs act independently).
    ``noise_pct`` is the typical standard error of a cell mean in the same unit, for scale:
    an interaction several times the noise is real. Pairs whose table has holes (cells
    excluded from the matrix) report ``complete = False`` and NaN.

    Returns
    -------
    DataFrame
        ``knob_a, knob_b, levels_a, levels_b, complete, interaction_pct, noise_pct,
        max_residual_pct, table`` (the cell means as a nested dict ``{a: {b: mean}}``).
    """
    done = run_summary_df[(run_summary_df["status"] == "done") & run_summary_df["notpm"].notna()]
    knobs = knobs if knobs is not None else varying_knobs(run_summary_df)
    rows = []
    cell_stats = done.groupby("cell_id")["notpm"].agg(["mean", "std", "count"])
    with np.errstate(invalid="ignore", divide="ignore"):
        sem_pct = 100 * cell_stats["std"] / np.sqrt(cell_stats["count"]) / cell_stats["mean"]
    noise = float(np.nanmedian(sem_pct)) if sem_pct.notna().any() else math.nan
    for a, b in itertools.combinations(knobs, 2):
        ka = done["knobs"].map(lambda kn, k=a: _key(kn.get(k)))
        kb = done["knobs"].map(lambda kn, k=b: _key(kn.get(k)))
        pivot = done.assign(_a=ka, _b=kb).pivot_table(
            index="_a", columns="_b", values="notpm", aggfunc="mean"
        )
        la = _sorted_levels([json.loads(x) for x in pivot.index])
        lb = _sorted_levels([json.loads(x) for x in pivot.columns])
        pivot = pivot.reindex(index=[_key(x) for x in la], columns=[_key(x) for x in lb])
        m = pivot.to_numpy(dtype=float)
        complete = bool(np.isfinite(m).all() and m.shape[0] >= 2 and m.shape[1] >= 2)
        inter = max_res = math.nan
        if complete:
            grand = m.mean()
            resid = m - m.mean(axis=1, keepdims=True) - m.mean(axis=0, keepdims=True) + grand
            inter = float(100 * np.sqrt((resid**2).mean()) / grand)
            max_res = float(100 * np.abs(resid).max() / grand)
        table = {
            str(x): {str(y): (float(m[i, j]) if np.isfinite(m[i, j]) else None)
                     for j, y in enumerate(lb)}
            for i, x in enumerate(la)
        }
        rows.append(dict(knob_a=a, knob_b=b, levels_a=len(la), levels_b=len(lb),
                         complete=complete, interaction_pct=inter, noise_pct=noise,
                         max_residual_pct=max_res, table=table))
    return pd.DataFrame(rows, columns=[
        "knob_a", "knob_b", "levels_a", "levels_b", "complete", "interaction_pct", "noise_pct",
        "max_residual_pct", "table",
    ])


def ranking(cells_df: pd.DataFrame) -> pd.DataFrame:
    """Cells ranked by mean NOTPM (1 = most) and by median stability score (1 = flattest)."""
    cols = ["cell_id", "cell_label", "is_baseline", "n_done", "notpm_mean", "notpm_ci_low",
            "notpm_ci_high", "score_median", "cv_pct_median", "warnings"]
    cols += [c for c in ("ratio", "verdict") if c in cells_df.columns]
    out = cells_df[cols].copy()
    out["rank_notpm"] = out["notpm_mean"].rank(ascending=False, method="min", na_option="bottom")
    out["rank_stability"] = out["score_median"].rank(
        ascending=False, method="min", na_option="bottom"
    )
    out["rank_notpm"] = out["rank_notpm"].astype(int)
    out["rank_stability"] = out["rank_stability"].astype(int)
    return out.sort_values(["rank_notpm", "rank_stability"]).reset_index(drop=True)


@dataclass
class Comparison:
    """Everything ``flushbench compare`` prints and the report shows."""

    frames: Frames
    cells: pd.DataFrame
    main_effects: pd.DataFrame
    interactions: pd.DataFrame
    ranking: pd.DataFrame
    metadata: dict[str, list[str]]
    warnings: list[str] = field(default_factory=list)

    @property
    def experiment(self) -> dict[str, Any]:
        """Experiment id, name, spec and window."""
        return self.frames.experiment


def compare(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    force: bool = False,
    frames: Frames | None = None,
) -> Comparison:
    """Compare every cell of an experiment with its baseline, plus effects and rankings.

    Parameters
    ----------
    db:
        Results database (ResultsDB, Session, path or URL).
    experiment:
        Name, id, or None for the latest experiment.
    force:
        Compare even when the checked metadata differ between runs (warnings say so).
    frames:
        Frames already loaded with :func:`analysis.frames.load`.

    Raises
    ------
    AnalysisError
        No done run at all, or metadata differ without ``force``.
    """
    fr = frames if frames is not None else load(db, experiment)
    rs = fr.run_summary
    done = rs[(rs["status"] == "done") & rs["notpm"].notna()]
    if done.empty:
        raise AnalysisError(
            f"experiment {fr.experiment['name']!r} has no finished run with intervals in "
            "its measurement window",
            where="runs",
            fix="run it (`flushbench run`) or check `flushbench status` for failures",
        )
    warnings = check_metadata(rs, force=force)
    cells = compare_cells(rs, fr.cell_summary)
    knobs = varying_knobs(rs)
    effects = main_effects(rs, knobs)
    inter = interactions(rs, knobs)
    metadata = {
        key: sorted({str(v) for v in done[key].dropna()})
        for key in ("hostname", "server_flavor", "server_version", "dataset_key", "kernel",
                    "cpu_model", "cpu_count", "mem_total_bytes", "datadir_device",
                    "datadir_fstype", "driver")
        if key in done.columns
    }
    for _, row in rs[rs["status"] == "failed"].iterrows():
        warnings.append(
            f"run {row['run_id']} ({row['cell_label']} #{row['repetition']}) failed: "
            f"{row['error'] or 'no error recorded'}"
        )
    for _, row in cells.iterrows():
        if row["n_done"] < MIN_REPETITIONS:
            warnings.append(
                f"{row['cell_label']}: {row['n_done']} done run(s) — fewer than "
                f"{MIN_REPETITIONS}, no verdict"
            )
    for _, row in done[done["warnings"] != ""].iterrows():
        warnings.append(f"run {row['run_id']} ({row['cell_label']} #{row['repetition']}): "
                        f"{row['warnings']}")
    return Comparison(
        frames=fr, cells=cells, main_effects=effects, interactions=inter,
        ranking=ranking(cells), metadata=metadata, warnings=warnings,
    )
