"""How many repetitions a difference needs: the power planner behind ``plan --detect``.

The noise comes from a pilot (an experiment's baseline runs in the results database), or from a
CV the user states; the power is that of the verdict rule itself
(:mod:`analysis.statistics.power`), so "10 runs per cell find +10 %" means the report's
verdict will say "faster" in 80 % of such experiments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.comparisons.compare import noise_floor
from analysis.reading.query import DB
from analysis.statistics.blocked import blocked_mde_pct
from analysis.statistics.power import runs_needed
from analysis.statistics.verdicts import POWER, cv_to_log_sd, minimum_detectable_effect
from analysis.tables.frames import load
from core.errors import AnalysisError


@dataclass(frozen=True)
class Noise:
    """Run-to-run noise used for planning: a CV (fraction) and where it came from."""

    cv: float
    source: str


@dataclass(frozen=True)
class ComparisonPower:
    """One comparison (a cell against the baseline) at the declared and at the needed size."""

    label: str
    effect_pct: float
    n_baseline: int
    n_other: int
    mde_pct: float
    runs_needed: int | None
    hours_needed: float | None

    @property
    def can_detect(self) -> bool:
        """Whether the declared repetitions reach the power at the effect asked about."""
        return self.mde_pct <= self.effect_pct


def pilot_noise(db: DB, experiment: str) -> Noise:
    """The run-to-run CV of ``experiment``'s baseline (its done runs) as planning noise.

    Raises
    ------
    AnalysisError
        The experiment has no baseline or fewer than 3 done baseline runs (two runs give a CV
        too uncertain to plan with).
    """
    frames = load(db, experiment)
    base = frames.cell_summary.loc[frames.cell_summary["is_baseline"], "cell_id"]
    if base.empty:
        raise AnalysisError(f"experiment {experiment!r} has no baseline cell",
                            fix="name a pilot whose file sets `baseline:`, or give --cv")
    cv, n = noise_floor(frames.run_summary, int(base.iloc[0]))
    if n < 3 or not math.isfinite(cv):
        raise AnalysisError(
            f"experiment {experiment!r} has {n} done baseline run(s); a noise figure needs 3+",
            fix="run the pilot's baseline more often (baseline_repetitions: 5), or give --cv")
    return Noise(cv, f"the baseline of {experiment!r} ({n} runs: CV {100 * cv:.1f} %)")


def comparison_power(label: str, n_baseline: int, n_other: int, seconds_per_run: float,
                     effect_pct: float, noise: Noise, *, blocked_cells: int | None = None
                     ) -> ComparisonPower:
    """The MDE at the declared sizes, and the runs (both cells equal) and hours to reach it.

    ``seconds_per_run`` is the estimated wall time of one run of either cell; the hours are
    for running both cells ``runs_needed`` times. ``blocked_cells``: the experiment runs in
    blocks (``order: blocks``) of this many cells, so the blocked rule's power counts
    (:func:`analysis.statistics.blocked.blocked_mde_pct`): a run per cell per block, and the
    runs needed are blocks.
    """
    sd = cv_to_log_sd(noise.cv)
    if blocked_cells is None:
        mde = minimum_detectable_effect(n_baseline, n_other, sd)
        need = runs_needed(effect_pct, sd)
    else:
        mde = blocked_mde_pct(blocked_cells, min(n_baseline, n_other), sd)
        need = next((b for b in range(2, 51)
                     if blocked_mde_pct(blocked_cells, b, sd) <= effect_pct), None)
    hours = None if need is None else 2 * need * seconds_per_run / 3600
    return ComparisonPower(label, effect_pct, n_baseline, n_other, mde, need, hours)


def power_sentence(effect_pct: float, noise: Noise) -> str:
    """The line under the table: what the figures mean."""
    return (f"to find a change of {effect_pct:g} % with {100 * POWER:.0f} % power by the"
            f" report's own verdict rule (docs/statistics.md), with run-to-run"
            f" noise from {noise.source}")
