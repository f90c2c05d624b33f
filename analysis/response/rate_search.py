"""A rate search's steps judged and its answer (``workload.rate: {max_under: …}``;
docs/tpcc.md, "The highest rate under a target").

Each step is a done fixed-rate run; it is judged on the figures ``show`` prints for it: the
window p99 with stalls and in-flight waits counted (:mod:`analysis.response.latency`), the
window's achieved NOTPM (:mod:`analysis.response.fixed_rate`) and its stall seconds — the
seconds of its window intervals that completed no New-Order, as the target's ``stall_s`` says
(not ``show``'s wider count, which adds intervals whose p99 is 4 × the run's median: at a
fixed rate one slow interval in sixty is the tail the p99 already judges, not a stop). The
worker judges each finished step with :func:`judge_step` to pick the next rate (the CLI hands
it down), and ``show``/``compare`` print the answer with its evidence (:func:`searches`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.reading.query import DB, step_rates
from analysis.response import fixed_rate, latency
from analysis.tables import frames
from core.experiment.rate_search import MaxUnder, SearchAnswer, StepResult, answer, answer_text
from core.experiment.stored import StoredExperiment


def judge_step(db: DB, run_id: int, rate: float) -> StepResult:
    """One done step's figures (its window p99, achieved NOTPM and the seconds its window
    completed no New-Order) at ``rate``.

    A step without a window figure gets NaN, which never holds a target."""
    intervals = frames.intervals(db, run_ids=[run_id], detail=True)
    rates = fixed_rate.per_run(intervals)
    achieved = float(rates.loc[run_id, "notpm"]) if run_id in rates.index else math.nan
    if intervals.empty:
        return StepResult(rate, math.nan, achieved, math.nan, run_id)
    _view, fig, _unread = latency.one_run(db, intervals, run_id, fixed_rate=True)
    p99 = float(fig["window_ms"]) if fig["window_ms"] is not None else math.nan
    window = intervals[intervals["in_window"]]
    stopped = float(window.loc[window["primary_count"] <= 0, "interval_s"].sum()) \
        if len(window) else math.nan
    return StepResult(rate, p99, achieved, stopped, run_id)


@dataclass(frozen=True)
class CellSearch:
    """One cell's search: its label, the target, what it found and its steps' run ids."""

    cell_id: int
    label: str
    target: MaxUnder
    found: SearchAnswer
    #: Steps not done (queued, running, failed…) as ``(step, status)``.
    pending: list[tuple[int, str]]

    @property
    def text(self) -> str:
        """The answer in one sentence (:func:`core.experiment.rate_search.answer_text`)."""
        text = answer_text(self.target, self.found)
        stopped = [f"step {n} {status}" for n, status in self.pending
                   if status not in ("queued", "running")]
        return text + (f" — stopped: {', '.join(stopped)}" if stopped else "")


def searches(db: DB, experiment_id: int) -> list[CellSearch]:
    """Each cell's rate search of an experiment, in row order; empty when it is no search."""
    info = frames.experiment_info(db, experiment_id)
    stored: StoredExperiment = info["stored"]
    search = stored.spec.workload.rate_search
    if search is None:
        return []
    target = search.max_under
    runs = frames.runs(db, experiment_id)
    rates = step_rates(db, experiment_id)
    out = []
    for cell_id, g in runs.sort_values("position").groupby("cell_id", sort=False):
        steps, pending = [], []
        for _, r in g.sort_values("repetition").iterrows():
            rate = rates.get(int(r["run_id"]))
            if r["status"] == "done" and rate is not None:
                steps.append(judge_step(db, int(r["run_id"]), rate))
            elif r["status"] != "done":
                pending.append((int(r["repetition"]), str(r["status"])))
        out.append(CellSearch(int(cell_id), str(g["cell_label"].iloc[0]), target,
                              answer(target, steps), pending))
    return out


def step_table(found: SearchAnswer, target: MaxUnder) -> list[tuple[str, ...]]:
    """The evidence: one row per step by rate — rate, run, p99, achieved, stalls, held."""
    rows = []
    for s in found.steps:
        why = s.failures(target)
        rows.append((f"{s.rate:,.0f}", str(s.run_id), _ms(s.p99_ms),
                     "-" if math.isnan(s.achieved_notpm) else f"{s.achieved_notpm:,.0f}",
                     "-" if math.isnan(s.stall_s) else f"{s.stall_s:g}",
                     "held" if not why else "failed: " + "; ".join(why)))
    return rows


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.0f}"
