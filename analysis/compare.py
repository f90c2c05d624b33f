"""Is the difference real? Cells against the baseline, knob effects, rankings.

Per cell, across repetitions: NOTPM mean with a 95 % interval that holds its coverage at
3 repetitions (:func:`analysis.statistics.intervals.mean_ci`). Against the baseline cell: the
ratio with a Welch-on-log 95 % interval, an exact Mann-Whitney p-value and a verdict
(:func:`analysis.statistics.verdicts.verdict`): ``faster``/``slower`` only when p < 0.05 *and*
the interval excludes 1; ``not enough repetitions`` when the group sizes cannot reach p < 0.05;
``no clear difference`` otherwise — each with its reason and the minimum detectable effect
(the change that could hide at this n and noise; the A/A noise floor counts when known).

Across the matrix: main effects and two-way interactions only where the design identifies
them (:mod:`analysis.statistics.design`); otherwise "not estimable: confounded with …". Runs
whose checked metadata differ (host, server flavor and version, dataset) are not compared
unless ``force=True``. Methods and simulated error rates: ``docs/statistics.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis import claims
from analysis.disturbed import counted
from analysis.frames import (
    CHECKED_METADATA,
    DB,
    ExperimentRef,
    Frames,
    load,
    require_finished,
    varying_knobs,
)
from analysis.hosts import block_of, blocked_comparison, host_of, method_note
from analysis.statistics import design
from analysis.statistics.hypothesis_tests import min_attainable_stratified_p, van_elteren
from analysis.statistics.verdicts import (
    FASTER,
    NO_DIFFERENCE,
    NOT_ENOUGH,
    SLOWER,
    verdict,
)
from flushbench.errors import AnalysisError
from store.models import RunStatus

BASELINE = "baseline"
#: A cell repeated at least this often measures the run-to-run noise floor (A/A).
AA_MIN_REPETITIONS = 5

__all__ = [
    "BASELINE", "FASTER", "NOT_ENOUGH", "NO_DIFFERENCE", "SLOWER", "Comparison",
    "check_metadata", "compare", "compare_cells", "interactions", "main_effects",
    "noise_floor", "ranking", "verdict",
]


#: Run metadata that a `server` knob explains (one dataset per server build).
SERVER_METADATA = ("server_flavor", "server_version", "dataset_key")


def check_metadata(runs_df: pd.DataFrame, *, force: bool = False) -> list[str]:
    """Refuse runs whose checked metadata differ; with ``force``, return warnings instead.

    Raises
    ------
    AnalysisError
        Naming each differing key and its values, unless ``force``.
    """
    done = runs_df[runs_df["status"] == RunStatus.DONE]
    problems = []
    # Servers as a matrix axis (a `server` knob): the server's metadata differs by design
    # between its levels, so those keys must agree within each server, not across them.
    per_server = "server" in done.columns and done["server"].nunique() > 1
    for key in CHECKED_METADATA:
        if key not in done.columns:
            continue
        if per_server and key in SERVER_METADATA:
            for server, group in done.groupby("server"):
                values = sorted({str(v) for v in group[key].dropna()})
                if len(values) > 1:
                    problems.append(f"{key} differs between runs of server {server}:"
                                    f" {', '.join(values)}")
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


def _done(run_summary_df: pd.DataFrame) -> pd.DataFrame:
    # Done runs with a window value, less disturbed runs the `disturbed:` policy excludes.
    return run_summary_df[counted(run_summary_df)]


def aa_floor(run_summary_df: pd.DataFrame, cell_id: int) -> dict[str, float | int]:
    """The A/A measurement of one cell: its runs' spread of throughput and of stability.

    ``n`` done runs, ``cv_pct`` (run-to-run CV of the metric, %), and ``score_min``,
    ``score_median``, ``score_max`` of the runs' stability scores (how far two runs of one
    configuration can disagree about stability). The floor counts only from
    :data:`AA_MIN_REPETITIONS` runs on (``n`` is 0 below that).
    """
    cv, n = noise_floor(run_summary_df, cell_id)
    done = _done(run_summary_df)
    scores = done.loc[done["cell_id"] == cell_id, "score"].to_numpy(dtype=float)
    scores = scores[np.isfinite(scores)]
    if n < AA_MIN_REPETITIONS or not math.isfinite(cv):
        return {"n": 0, "cv_pct": math.nan, "score_min": math.nan, "score_median": math.nan,
                "score_max": math.nan}
    return {"n": n, "cv_pct": 100 * cv,
            "score_min": float(scores.min()) if scores.size else math.nan,
            "score_median": float(np.median(scores)) if scores.size else math.nan,
            "score_max": float(scores.max()) if scores.size else math.nan}


def aa_floor_text(floor: dict[str, float | int]) -> str:
    """``the baseline's 5 runs: CV 3.1 %, stability 71–88 (median 80)``, or ``""``."""
    if not floor.get("n"):
        return ""
    text = f"the baseline's {floor['n']} runs: throughput CV {floor['cv_pct']:.1f} %"
    if math.isfinite(float(floor["score_median"])):
        text += (f", stability score {floor['score_min']:.0f}–{floor['score_max']:.0f}"
                 f" (median {floor['score_median']:.0f})")
    return text


def noise_floor(run_summary_df: pd.DataFrame, cell_id: int) -> tuple[float, int]:
    """Run-to-run CV (fraction) of one cell and its number of done runs (an A/A measurement)."""
    values = _done(run_summary_df)
    values = values.loc[values["cell_id"] == cell_id, "notpm"].to_numpy(dtype=float)
    if values.size < 2 or values.mean() <= 0:
        return math.nan, int(values.size)
    return float(values.std(ddof=1) / values.mean()), int(values.size)


def compare_cells(
    run_summary_df: pd.DataFrame,
    cell_summary_df: pd.DataFrame,
    *,
    noise_floor_cv: float | None = None,
) -> pd.DataFrame:
    """The cell summary plus the verdict columns against the baseline cell.

    Added columns: ``ratio, ratio_ci_low, ratio_ci_high, p_value, verdict, verdict_reason,
    mde_pct`` (minimum detectable effect, %), ``noise_cv_pct``, ``ci_method``, ``test_method``.
    """
    values = {int(c): g["notpm"].to_numpy(dtype=float)
              for c, g in _done(run_summary_df).groupby("cell_id")}
    base_rows = cell_summary_df[cell_summary_df["is_baseline"]]
    base_id = int(base_rows["cell_id"].iloc[0]) if len(base_rows) else int(
        cell_summary_df["cell_id"].iloc[0]
    )
    base = values.get(base_id, np.array([]))
    rows = []
    for cell_id in cell_summary_df["cell_id"]:
        if int(cell_id) == base_id:
            rows.append(dict(ratio=1.0, ratio_ci_low=math.nan, ratio_ci_high=math.nan,
                             p_value=math.nan, verdict=BASELINE,
                             verdict_reason="the reference cell", mde_pct=math.nan,
                             noise_cv_pct=math.nan, ci_method="", test_method=""))
            continue
        v = verdict(base, values.get(int(cell_id), np.array([])), noise_floor_cv=noise_floor_cv)
        rows.append(dict(ratio=v.ratio, ratio_ci_low=v.ci_low, ratio_ci_high=v.ci_high,
                         p_value=v.p_value, verdict=v.verdict, verdict_reason=v.reason,
                         mde_pct=v.mde_pct, noise_cv_pct=v.noise_cv_pct,
                         ci_method=v.ci_method, test_method=v.test_method))
    out = pd.concat([cell_summary_df.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
    out.attrs.update(cell_summary_df.attrs)
    return out


def _blocked_verdicts(run_summary_df: pd.DataFrame, cells: pd.DataFrame,
                      blocks: pd.Series | None = None, what: str = "host") -> pd.DataFrame:
    """Verdicts with the host as a block: the ratio pooled over hosts, a stratified rank test.

    Each cell is compared with the baseline within each host; the ratio and its interval are
    the inverse-variance pool of the per-host log ratios (:func:`analysis.hosts.blocked_comparison`)
    and the test is van Elteren's stratified Mann-Whitney. "faster"/"slower" needs p < 0.05 and
    an interval that excludes 1, as for one host; hosts that disagree are said in the reason.
    ``blocks`` (:func:`analysis.hosts.block_of`) blocks on something else — the repetition of
    ``order: {mode: blocks}``, with or without the host; ``what`` names it in the reason.
    """
    done = _done(run_summary_df)
    done = done.assign(_host=host_of(done) if blocks is None else blocks.reindex(done.index))
    blocked = blocked_comparison(run_summary_df, blocks=blocks).set_index("cell_id")
    base_id = int(cells.loc[cells["is_baseline"], "cell_id"].iloc[0])
    out = cells.copy()
    for i, row in out.iterrows():
        cell_id = int(row["cell_id"])
        if cell_id == base_id or cell_id not in blocked.index:
            continue
        b = blocked.loc[cell_id]
        pairs = [(g.loc[g["cell_id"] == base_id, "notpm"].to_numpy(float),
                  g.loc[g["cell_id"] == cell_id, "notpm"].to_numpy(float))
                 for _, g in done.groupby("_host")]
        pairs = [(a, c) for a, c in pairs if len(a) and len(c)]
        p = van_elteren(pairs).p_value if pairs else math.nan
        # Too few blocks for the exact stratified test to ever say p < 0.05 (4 blocks of one
        # run a side: 0.125 at best): "not enough", not a "no clear difference" that a
        # clear interval beside it would contradict.
        floor_p = min_attainable_stratified_p([(a.size, c.size) for a, c in pairs])
        excludes = math.isfinite(b["ratio_ci_low"]) and (b["ratio_ci_low"] > 1
                                                        or b["ratio_ci_high"] < 1)
        unit = "host" if what == "host" else "block"
        n = int(b["n_hosts"])
        if math.isfinite(b["ratio_ci_low"]) and math.isfinite(b["ratio_ci_high"]):
            interval = f"pooled 95% CI {b['ratio_ci_low']:.3f}–{b['ratio_ci_high']:.3f}"
        else:  # a queue part-way through its first blocks: say so, never print "nan"
            interval = (f"no pooled interval yet: it needs 2 {unit}s holding both this cell"
                        " and the baseline")
        stated_p = f"van Elteren p = {p:.3g}" if math.isfinite(p) else "no rank test yet"
        text = f"{what} blocks: {n} {unit}{'' if n == 1 else 's'}, {stated_p}, {interval}"
        if math.isfinite(b["heterogeneity_p"]) and b["heterogeneity_p"] < 0.05:
            text += f"; the {unit}s disagree (Cochran's Q p = {b['heterogeneity_p']:.3g})"
        if math.isfinite(p) and p < 0.05 and excludes:
            verdict_text = FASTER if b["ratio"] > 1 else SLOWER
        elif not (math.isfinite(floor_p) and floor_p < 0.05):
            verdict_text = NOT_ENOUGH
            text += (f"; van Elteren's exact test cannot reach p < 0.05 with these {unit}s"
                     + (f" (its smallest p is {floor_p:.3g})" if math.isfinite(floor_p) else "")
                     + f": more {unit}s holding both this cell and the baseline are needed"
                     " (6 of one run a side can reach 0.031)")
        else:
            verdict_text = NO_DIFFERENCE
        out.loc[i, ["ratio", "ratio_ci_low", "ratio_ci_high", "p_value"]] = [
            b["ratio"], b["ratio_ci_low"], b["ratio_ci_high"], p]
        out.loc[i, ["verdict", "verdict_reason", "test_method", "ci_method"]] = [
            verdict_text, text, f"van Elteren ({what} blocks)",
            "inverse-variance over hosts" if what == "host" else "paired t over blocks"]
        out.loc[i, "mde_pct"] = math.nan
    return out


def main_effects(
    run_summary_df: pd.DataFrame, knobs: list[str] | None = None
) -> pd.DataFrame:
    """Main effect of each varying knob (ratio to its first level), where the design allows.

    Returns
    -------
    DataFrame
        ``knob, level, reference, estimable, reason, ratio, ci_low, ci_high, p_value, df``
        (:func:`analysis.statistics.design.main_effects`): a non-estimable knob has NaN
        figures and ``reason`` names what it is confounded with.
    """
    done = _done(run_summary_df)
    knobs = knobs if knobs is not None else varying_knobs(run_summary_df)
    return design.main_effects(done, [k for k in knobs if k in done.columns], "notpm")


def interactions(
    run_summary_df: pd.DataFrame, knobs: list[str] | None = None
) -> pd.DataFrame:
    """Two-way interactions where the design identifies them (F test on log NOTPM).

    Returns
    -------
    DataFrame
        ``knob_a, knob_b, estimable, reason, f_stat, p_value, df_num, df_den, rms_pct``.
    """
    done = _done(run_summary_df)
    knobs = knobs if knobs is not None else varying_knobs(run_summary_df)
    return design.interactions(done, [k for k in knobs if k in done.columns], "notpm")


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
    done = require_finished(fr)
    spread = (fr.experiment["spec"].get("placement") == "spread"
              and host_of(done).nunique() > 1)
    # Spread over hosts, runs are never compared across hosts: the host is a block, so a
    # differing hostname is expected rather than a reason to refuse.
    warnings = check_metadata(rs.drop(columns=["hostname"]) if spread else rs, force=force)
    base_ids = fr.cell_summary.loc[fr.cell_summary["is_baseline"], "cell_id"]
    # The baseline repeated often enough is the experiment's own A/A measurement.
    floor = aa_floor(rs, int(base_ids.iloc[0])) if len(base_ids) else aa_floor(rs, -1)
    aa = floor["cv_pct"] / 100 if floor["n"] else None
    cells = compare_cells(rs, fr.cell_summary, noise_floor_cv=aa)
    cells.attrs["noise_floor"] = floor
    # `order: {mode: blocks}`: the repetition is a block in time (with the host when spread).
    by_run_block = (fr.experiment["spec"].get("order") or {}).get("mode") == "blocks"
    if spread and not by_run_block:
        cells = _blocked_verdicts(rs, cells)
        cells.attrs["hosts_note"] = method_note(rs)
    elif by_run_block:
        cells = _blocked_verdicts(rs, cells, block_of(rs, by_host=spread, by_repetition=True),
                                  what="run")
        cells.attrs["hosts_note"] = (
            "Runs of this experiment ran in blocks (order: blocks): each cell is compared with"
            " the baseline within each block, the per-block log ratios averaged (paired t"
            " interval), van Elteren's stratified rank test across blocks."
            + (f" {method_note(rs)}" if spread else ""))
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
    for _, row in rs[rs["status"] == RunStatus.FAILED].iterrows():
        warnings.append(
            f"run {row['run_id']} ({row['cell_label']} #{row['repetition']}) failed: "
            f"{row['error'] or 'no error recorded'}"
        )
    for _, row in cells.iterrows():
        if row["verdict"] == NOT_ENOUGH:
            warnings.append(f"{row['cell_label']}: no verdict — {row['verdict_reason']}")
    if "excluded" in rs:
        for _, row in rs[rs["excluded"].fillna(False).astype(bool)].iterrows():
            warnings.append(f"run {row['run_id']} ({row['cell_label']} #{row['repetition']})"
                            f" {row['excluded_reason']}")
    warnings.extend(claims.run_warnings_by_kind(done))
    return Comparison(
        frames=fr, cells=cells, main_effects=effects, interactions=inter,
        ranking=ranking(cells), metadata=metadata, warnings=warnings,
    )
