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

from analysis.comparisons.hosts import block_of, host_of, method_note
from analysis.reading import window_cycles
from analysis.reading.baselines import baseline_note, baseline_of
from analysis.reading.rows import row_names
from analysis.reading.window_cycles import RunCycles
from analysis.statistics import blocked, design
from analysis.statistics.verdicts import (
    FASTER,
    NO_DIFFERENCE,
    NOT_ENOUGH,
    SLOWER,
    design_verdict,
    verdict,
)
from analysis.steadiness import claims
from analysis.steadiness.disturbed import counted
from analysis.steadiness.stability_verdicts import steadiness
from analysis.tables.frames import (
    CHECKED_METADATA,
    DB,
    ExperimentRef,
    Frames,
    load,
    require_finished,
    samples,
    varying_knobs,
)
from core.errors import AnalysisError
from core.experiment.spec import ExperimentSpec
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


def counted_runs(run_summary_df: pd.DataFrame) -> pd.DataFrame:
    """The runs every verdict counts: done, with a window value, less disturbed runs the
    experiment's ``disturbed:`` policy excludes."""
    return run_summary_df[counted(run_summary_df)]


_done = counted_runs


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


def design_blocks(run_summary_df: pd.DataFrame, spec: ExperimentSpec
                  ) -> tuple[pd.Series | None, str]:
    """Each run's block in the experiment's design, and what a block is, in words.

    ``order: {mode: blocks}`` makes every round a block (with the host too when spread over
    hosts); an experiment spread over several hosts makes each host a block; otherwise
    (None, "") — the cells are compared as independent samples.
    """
    spread = spec.placement == "spread" and host_of(run_summary_df).nunique() > 1
    by_round = spec.order.mode == "blocks"
    if by_round:
        return block_of(run_summary_df, by_host=spread, by_repetition=True), "round"
    if spread:
        return host_of(run_summary_df), "host"
    return None, ""


def compare_cells(
    run_summary_df: pd.DataFrame,
    cell_summary_df: pd.DataFrame,
    *,
    noise_floor_cv: float | dict[int, float | None] | None = None,
    blocks: pd.Series | None = None,
    block_unit: str = "block",
) -> pd.DataFrame:
    """The cell summary plus the verdict columns against each cell's own baseline.

    Each cell is compared with its baseline (:func:`analysis.reading.baselines.baseline_of`: the
    experiment's baseline, or its own server's when the experiment names one per server);
    ``noise_floor_cv`` is one A/A floor, or one per baseline cell id.

    Every verdict comes from :func:`analysis.statistics.verdicts.design_verdict`, the one rule
    (``blocks``: each run's block when the experiment ran in blocks — rounds, hosts or source
    databases — else None).

    Added columns: ``ratio, ratio_ci_low, ratio_ci_high, p_value, verdict, verdict_reason,
    mde_pct`` (minimum detectable effect, %), ``noise_cv_pct``, ``ci_method``, ``test_method``,
    ``baseline_id`` and ``baseline_label`` (``the baseline``, or the baseline cell's label when
    the experiment has several).
    """
    done = _done(run_summary_df)
    values = done["notpm"].to_numpy(dtype=float)
    cell_ids = done["cell_id"].astype(int).to_list()
    block_list = None if blocks is None else blocks.reindex(done.index).to_list()
    model = None
    if block_list is not None and len(values):
        ok = np.isfinite(values) & (values > 0)
        model = blocked.fit(np.log(values[ok]), [c for c, k in zip(cell_ids, ok, strict=True)
                                                 if k],
                            [b for b, k in zip(block_list, ok, strict=True) if k])
    own_baseline = baseline_of(cell_summary_df)
    labels = dict(zip(cell_summary_df["cell_id"].astype(int), cell_summary_df["cell_label"],
                      strict=True))
    several = len(set(own_baseline.values())) > 1
    floors = noise_floor_cv if isinstance(noise_floor_cv, dict) else None
    rows = []
    for cell_id in cell_summary_df["cell_id"].astype(int):
        base_id = own_baseline[cell_id]
        base_label = labels[base_id] if several else "the baseline"
        if cell_id == base_id:
            rows.append(dict(ratio=1.0, ratio_ci_low=math.nan, ratio_ci_high=math.nan,
                             p_value=math.nan, verdict=BASELINE,
                             verdict_reason="the reference cell", mde_pct=math.nan,
                             noise_cv_pct=math.nan, ci_method="", test_method="",
                             baseline_id=base_id, baseline_label=base_label))
            continue
        floor = floors.get(base_id) if floors is not None else noise_floor_cv
        v = design_verdict(values, cell_ids, block_list, base_id, cell_id,
                           noise_floor_cv=floor, model=model, block_unit=block_unit)
        rows.append(dict(ratio=v.ratio, ratio_ci_low=v.ci_low, ratio_ci_high=v.ci_high,
                         p_value=v.p_value, verdict=v.verdict, verdict_reason=v.reason,
                         mde_pct=v.mde_pct, noise_cv_pct=v.noise_cv_pct,
                         ci_method=v.ci_method, test_method=v.test_method,
                         baseline_id=base_id, baseline_label=base_label))
    out = pd.concat([cell_summary_df.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
    out.attrs.update(cell_summary_df.attrs)
    return out


def steadiness_vs_baseline(counted_df: pd.DataFrame, cells: pd.DataFrame,
                           blocks: pd.Series | None = None) -> list[str]:
    """Per cell, its steadiness against its own baseline by the verdict rule on the runs'
    CV (:mod:`analysis.steadiness.stability_verdicts`; ``blocks``: each run's block, as the
    throughput verdicts use them): ``steadier``, ``less steady``, ``no clear difference in
    steadiness``, ``not enough repetitions``; ``baseline`` for a baseline."""
    groups = {int(c): g for c, g in counted_df.groupby("cell_id")}

    def of(cell: int) -> tuple[list[float], list[object] | None]:
        g = groups.get(cell)
        if g is None:
            return [], None if blocks is None else []
        cv = g["cv_pct"].astype(float).to_list()
        return cv, None if blocks is None else blocks.reindex(g.index).to_list()

    out = []
    for _, c in cells.iterrows():
        cid, base = int(c["cell_id"]), int(c["baseline_id"])
        if cid == base:
            out.append(BASELINE)
            continue
        (cv_a, b_a), (cv_b, b_b) = of(base), of(cid)
        out.append(steadiness(cv_a, cv_b, b_a, b_b).word)
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
        figures and ``reason`` names what it is confounded with. A level the rows leave unset
        (the server keeps its default) reads :data:`UNSET_LEVEL`, not NaN.
    """
    done = _done(run_summary_df)
    knobs = knobs if knobs is not None else varying_knobs(run_summary_df)
    out = design.main_effects(done, [k for k in knobs if k in done.columns], "notpm")
    for column in ("level", "reference"):
        out[column] = [UNSET_LEVEL if _unset(v) else v for v in out[column]]
    return out


#: How a main-effect row names the level of a knob that some rows leave unset: those rows run
#: with the server's default ("none vs nan" told a reader nothing).
UNSET_LEVEL = "default"


def _unset(value: Any) -> bool:
    """Whether a knob level is "not set" (None, or the NaN a column gets for a missing key)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


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
    cols += [c for c in ("ratio", "verdict", "steadiness") if c in cells_df.columns]
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
    #: Each done run's flush cycle against its window (run id →
    #: :func:`analysis.reading.window_cycles.run_cycles`' figures): kept here, not in
    #: ``cells.attrs``, which pandas deep-copies on every operation on the frame.
    cycles: dict[int, RunCycles] = field(default_factory=dict)

    @property
    def experiment(self) -> dict[str, Any]:
        """Experiment id, name, spec and window."""
        return self.frames.experiment


def _verdict_warnings(cells: pd.DataFrame, names: dict[int, str]) -> list[str]:
    """The rows whose verdict depends on where the window falls, or that have none."""
    out = []
    for _, row in cells.iterrows():
        who = names.get(int(row["cell_id"]), row["cell_label"])
        if row["window_dependent"]:
            out.append(f"{who}: window-dependent — ratio "
                       f"{row['window_ratio_low']:.2f}–{row['window_ratio_high']:.2f} over"
                       f" window starts {row['window_offsets']} from the stored window")
        if row["verdict"] == NOT_ENOUGH:
            out.append(f"{who}: no verdict — {row['verdict_reason']}")
    return out


def compare(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    force: bool = False,
    frames: Frames | None = None,
    cycles: str | None = None,
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
        Frames already loaded with :func:`analysis.tables.frames.load`.
    cycles:
        ``whole`` or ``as-set``: how periodic runs' windows are cut (default: the
        experiment's ``window.cycles``; :func:`analysis.tables.frames.load`).

    Raises
    ------
    AnalysisError
        No done run at all, or metadata differ without ``force``.
    """
    fr = frames if frames is not None else load(db, experiment, cycles=cycles)
    rs = fr.run_summary
    done = require_finished(fr)
    spread = (fr.experiment["stored"].spec.placement == "spread"
              and host_of(done).nunique() > 1)
    # Spread over hosts, runs are never compared across hosts: the host is a block, so a
    # differing hostname is expected rather than a reason to refuse.
    warnings = check_metadata(rs.drop(columns=["hostname"]) if spread else rs, force=force)
    base_ids = fr.cell_summary.loc[fr.cell_summary["is_baseline"], "cell_id"]
    # The baseline repeated often enough is the experiment's own A/A measurement.
    # Each baseline repeated often enough is its own rows' A/A measurement.
    floor = aa_floor(rs, int(base_ids.iloc[0])) if len(base_ids) else aa_floor(rs, -1)
    floors = {int(b): aa_floor(rs, int(b)) for b in base_ids}
    aa = {b: f["cv_pct"] / 100 if f["n"] else None for b, f in floors.items()}
    blocks, unit = design_blocks(rs, fr.experiment["stored"].spec)
    cells = compare_cells(rs, fr.cell_summary, noise_floor_cv=aa, blocks=blocks,
                          block_unit=unit)
    # The verdicts over every plausible window start (flush cycles:
    # analysis/reading/window_cycles.py).
    cycles = window_cycles.run_cycles(
        fr.intervals, samples(db, run_ids=[int(r) for r in done["run_id"]], counters=()))
    cells = window_cycles.window_sensitivity(
        cells, counted_runs(rs), fr.intervals, cycles,
        lambda moved: compare_cells(moved, fr.cell_summary, noise_floor_cv=aa, blocks=blocks,
                                    block_unit=unit))
    cells["steadiness"] = steadiness_vs_baseline(counted_runs(rs), cells, blocks)
    cells.attrs["noise_floor"] = floor
    cells.attrs["baselines_note"] = baseline_note(fr.cell_summary)
    if blocks is not None:
        cells.attrs["hosts_note"] = (
            f"The runs ran in blocks ({unit}s): every cell is compared with the baseline in one"
            f" model of log throughput with a cell and a {unit} effect, its noise pooled over"
            " every cell; a verdict also needs van Elteren's stratified rank test where the"
            f" {unit}s can reach p < 0.05, else it must hold with any one {unit} left out"
            " (docs/statistics.md)."
            + (f" {method_note(rs)}" if unit != "round" or spread else ""))
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
    # A row the experiment names (`dw-off-60`) is named so in the warnings, not by its knobs.
    names = row_names(fr.experiment["stored"].spec, cells)
    for _, row in rs[rs["status"] == RunStatus.FAILED].iterrows():
        warnings.append(
            f"run {row['run_id']} ({names.get(int(row['cell_id']), row['cell_label'])}"
            f" #{row['repetition']}) failed: "
            f"{row['error'] or 'no error recorded'}"
        )
    # A rate search's runs are steps at different rates, never pooled: the warnings about
    # pooled verdicts (their window phase, their dependence on the window, too few runs for
    # one) say nothing about it; its runs' own warnings still apply.
    pooled = fr.experiment["stored"].spec.workload.rate_search is None
    phase = window_cycles.phase_note(
        cycles, [int(r) for r in done["run_id"]],
        float(np.nanmin(cells["mde_pct"])) if cells["mde_pct"].notna().any() else None)
    if pooled:
        warnings.extend([phase] if phase else [])
        warnings.extend(_verdict_warnings(cells, names))
    if "excluded" in rs:
        for _, row in rs[rs["excluded"].fillna(False).astype(bool)].iterrows():
            warnings.append(f"run {row['run_id']} ("
                            f"{names.get(int(row['cell_id']), row['cell_label'])}"
                            f" #{row['repetition']}) {row['excluded_reason']}")
    warnings.extend(claims.run_warnings_by_kind(done))
    return Comparison(
        frames=fr, cells=cells, main_effects=effects, interactions=inter,
        ranking=ranking(cells), metadata=metadata, warnings=warnings, cycles=cycles,
    )
