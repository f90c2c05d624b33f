"""The reference's stability claims, scored against each row's runs.

A reproduced study is about how the line looks as much as how high it is. The experiment's
reference may say of a row that its line is ``flat``, ``unsteady``, ``oscillating`` (with the
period it saw) or that it ``stalls`` to zero, and that one row is the most stable of a set
(``core/experiment/references.py``). Each claim is scored with the figures every run already has
(:mod:`analysis.steadiness.stability`): the stability score (100 × p5 / median of the window's
intervals), the oscillation test (a period that stands out of the run's own red noise) and the
intervals without a single transaction. The grades are the scorecard's
(:mod:`analysis.comparisons.scorecard`): **reproduced**, **contradicts** or **inconclusive**; the
rule and its thresholds are ``docs/statistics.md``, "Stability claims":

- *flat*: reproduced when no run oscillates or stalls and the row's median score is at least
  :data:`FLAT_SCORE`; contradicts when half its runs or more oscillate or stall, or its median
  score is below :data:`UNSTEADY_SCORE`; else inconclusive. *unsteady* is its mirror.
- *oscillating*: reproduced when half the runs or more oscillate (our period beside the
  reference's: a 1/50 scale keeps no period); contradicts when none does.
- *stalls*: reproduced when half the runs or more have an interval without a transaction;
  contradicts when none has.
- *most stable of a set*: a ranking needs a test — reproduced when the one verdict rule on
  the runs' CV (:mod:`analysis.steadiness.stability_verdicts`) calls the row steadier than every
  other row of the set; contradicts when it calls another row steadier; inconclusive otherwise.

A row whose runs had not reached steady state (``not_steady``: a name → why, from the caller)
is inconclusive whatever its line looked like: its window measured a transient.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.comparisons.scorecard import CONTRADICTS, INCONCLUSIVE, REPRODUCED, include_rows
from analysis.steadiness.disturbed import counted
from analysis.steadiness.stability_verdicts import LESS_STEADY, STEADIER, steadiness
from analysis.steadiness.transients import not_steady_cells
from core.experiment.spec import ExperimentSpec

#: A median stability score at or above this is a flat line (p5 within 30 % of the median).
FLAT_SCORE = 70.0
#: Below this, a line is unsteady (its 5th percentile below half its median).
UNSTEADY_SCORE = 50.0
#: Columns of :func:`stability_scorecard`.
COLUMNS = ("claim", "row", "stated", "runs", "measured", "verdict", "reason")


def _row_figures(runs: pd.DataFrame) -> dict[str, Any]:
    scores = runs["score"].to_numpy(dtype=float)
    osc = runs["oscillates"].fillna(False).astype(bool).to_numpy()
    zero = runs["zero_intervals"].fillna(0).to_numpy(dtype=float) > 0 \
        if "zero_intervals" in runs else np.zeros(len(runs), dtype=bool)
    periods = runs.loc[osc, "period_s"].to_numpy(dtype=float) if len(runs) else np.array([])
    cvs = runs["cv_pct"].to_numpy(dtype=float) if "cv_pct" in runs else np.array([])
    return {"n": len(runs), "score": float(np.median(scores)) if len(scores) else math.nan,
            "scores": scores, "cvs": cvs, "oscillating": int(osc.sum()),
            "stalling": int(zero.sum()), "periods": periods}


def _measured(f: dict[str, Any]) -> str:
    text = (f"score {f['score']:.0f}, {f['oscillating']} of {f['n']} runs oscillate"
            if math.isfinite(f["score"]) else "no run")
    if f["oscillating"]:
        text += f" ({', '.join(f'{p:.0f}' for p in sorted(f['periods']))} s)"
    if f["stalling"]:
        text += f", {f['stalling']} stall to zero"
    return text


def grade_shape(shape: str, f: dict[str, Any], period: float | None = None) -> tuple[str, str]:
    """(grade, reason) of one row's shape claim against its runs' figures."""
    n, half = f["n"], f["n"] / 2
    if n == 0:
        return INCONCLUSIVE, "no counted run"
    bumpy = f["oscillating"] >= half or f["stalling"] >= half
    calm = f["oscillating"] == 0 and f["stalling"] == 0
    if shape in ("flat", "unsteady"):
        flat = calm and f["score"] >= FLAT_SCORE
        unsteady = bumpy or f["score"] < UNSTEADY_SCORE
        if flat or unsteady:
            agrees = flat if shape == "flat" else unsteady
            return (REPRODUCED if agrees else CONTRADICTS,
                    "flat: no run oscillates or stalls, score ≥ 70" if flat else
                    "unsteady: half the runs or more oscillate or stall, or score < 50")
        return INCONCLUSIVE, "between flat and unsteady (score 50–70, or a minority of runs" \
                             " oscillate or stall)"
    if shape == "oscillating":
        theirs = f"; the reference's period {period:.0f} s" if period else ""
        if f["oscillating"] >= half:
            return REPRODUCED, f"{f['oscillating']} of {n} runs oscillate{theirs}"
        if f["oscillating"] == 0:
            return CONTRADICTS, f"no run oscillates{theirs}"
        return INCONCLUSIVE, f"only {f['oscillating']} of {n} runs oscillate{theirs}"
    if f["stalling"] >= half:
        return REPRODUCED, f"{f['stalling']} of {n} runs have intervals without a transaction"
    if f["stalling"] == 0:
        return CONTRADICTS, "no run has an interval without a transaction"
    return INCONCLUSIVE, f"only {f['stalling']} of {n} runs stall to zero"


def grade_most_stable(row: str, figures: Mapping[str, dict[str, Any]]) -> tuple[str, str]:
    """(grade, reason) of "``row`` is the most stable of ``figures``' rows".

    A ranking word needs a test (:mod:`analysis.steadiness.stability_verdicts`): reproduced when the
    one verdict rule on the runs' CVs calls the row steadier than every other row of the set;
    contradicts when it calls another row steadier than it; inconclusive otherwise — the
    median scores' order alone decides nothing.
    """
    if row not in figures or not len(figures[row].get("cvs", [])):
        return INCONCLUSIVE, "no counted run of the row"
    others = [o for o in figures if o != row and len(figures[o].get("cvs", []))]
    if not others:
        return INCONCLUSIVE, "no other row of the set ran"
    judged = {o: steadiness(figures[o]["cvs"], figures[row]["cvs"]) for o in others}
    steadier = [o for o, s in judged.items() if s.word == LESS_STEADY]
    if steadier:
        o = steadier[0]
        return CONTRADICTS, (f"{o} is steadier by the verdict rule on the runs' CV (its CV"
                             f" {1 / judged[o].ratio:.2f}× this row's)")
    unsure = [o for o, s in judged.items() if s.word != STEADIER]
    if not unsure:
        return REPRODUCED, ("steadier than every other row of the set by the verdict rule on"
                            " the runs' CV (CV ratios " + ", ".join(
                                f"{judged[o].ratio:.2f} vs {o}" for o in others) + ")")
    return INCONCLUSIVE, ("the verdict rule on the runs' CV does not separate it from "
                          + ", ".join(f"{o} ({judged[o].word}, CV ratio {judged[o].ratio:.2f})"
                                      for o in unsure)
                          + f"; median scores {figures[row]['score']:.0f} against "
                          + ", ".join(f"{figures[o]['score']:.0f}" for o in unsure))


def stability_scorecard(spec: ExperimentSpec, run_summary: pd.DataFrame, cells: pd.DataFrame,
                        *, not_steady: Mapping[int, str] | None = None) -> pd.DataFrame:
    """One row per stability claim of the reference: the claim, what the runs show, grade.

    Parameters
    ----------
    spec:
        The stored spec or one read from a file (its include rows' ``reference.stability``
        and ``reference.most_stable``).
    run_summary, cells:
        The experiment's run and cell summaries.
    not_steady:
        Cell id → why its runs had not reached steady state (such a row is inconclusive);
        default: the rows whose every counted run carries ``not-steady``
        (:func:`analysis.steadiness.transients.not_steady_cells`).
    """
    # Every include row that ran: a claim names a referenced row, "among" may name any row.
    rows = {r.name: r for r in include_rows(spec, cells) if r.cell_id is not None}
    if not_steady is None:
        not_steady = not_steady_cells(run_summary)
    done = run_summary[counted(run_summary)]
    figures = {name: _row_figures(done[done["cell_id"] == r.cell_id])
               for name, r in rows.items()}
    out = []
    for name, r in rows.items():
        row_ref = spec.include[r.index].reference
        claim = row_ref.stability if row_ref else None
        if not claim:
            continue
        f = figures[name]
        verdict, reason = grade_shape(claim.shape, f, claim.period)
        if not_steady and r.cell_id in not_steady:
            why = not_steady[r.cell_id]
            verdict, reason = INCONCLUSIVE, (why if why.startswith("not at steady state")
                                             else f"not at steady state: {why}")
        stated = claim.shape + (f" ({claim.says})" if claim.says else "")
        out.append({"claim": f"{name}: {claim.shape}", "row": name, "stated": stated,
                    "runs": f["n"], "measured": _measured(f), "verdict": verdict,
                    "reason": reason})
    names = {i: r.name for r in rows.values() for i in [r.index]}
    for most in spec.reference.most_stable if spec.reference else []:
        row = names.get(most.row, most.row)
        among = [names.get(a, a) for a in most.among]
        subset = {a: figures[a] for a in dict.fromkeys([row, *among]) if a in figures}
        verdict, reason = grade_most_stable(row, subset)
        out.append({"claim": most.name, "row": row,
                    "stated": f"the most stable of {', '.join(dict.fromkeys([row, *among]))}"
                              + (f" ({most.says})" if most.says else ""),
                    "runs": figures.get(row, {}).get("n", 0),
                    "measured": _measured(figures[row]) if row in figures else "not run",
                    "verdict": verdict, "reason": reason})
    return pd.DataFrame(out, columns=list(COLUMNS))
