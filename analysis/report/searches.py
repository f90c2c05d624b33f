"""The report of a rate search (``workload.rate: {max_under: …}``): the highest rate each row
held under the target, its evidence step by step, and the figure of p99 against the offered
rate.

A search's runs are steps at different rates, not repetitions, so the parts of a report that
pool a row's runs — the ranking by throughput, the knob effects, the scorecard — would
compare a step at 1,000 NOTPM with one at 8,000 as if they were the same measurement. The
report of a search puts this part where the ranking stands and leaves those out
(:func:`analysis.report.build.build_report_model`); the per-row parts keep every step's runs
table and time series. The answers come from :mod:`analysis.response.rate_search`, the same
as ``compare``'s.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.figures import plots
from analysis.figures.rate_curves import StepPoint, rate_curve_figure
from analysis.report.figures import FigureList
from analysis.report.model import (
    Bullets,
    Heading,
    Paragraph,
    Rich,
    Section,
    Value,
    bold,
    rich,
    row_name,
)
from analysis.report.sections import table
from analysis.response.rate_search import CellSearch, step_table


def search_verdict(found: list[CellSearch], names: dict[int, str]) -> Bullets:
    """The first screen's verdict of a search: one line per row, its answer with the step
    that held and the one that failed (:attr:`CellSearch.text`)."""
    return Bullets(tuple(rich(row_name(s.label, names.get(s.cell_id)), ": ", Value(s.text))
                         for s in found), "summary")


def search_section(found: list[CellSearch], names: dict[int, str], cells: pd.DataFrame,
                   figs: FigureList) -> Section:
    """The part that answers a search: how a step is judged, the answers in one table, the
    p99-against-rate figure, then each row's steps (rate, run, p99, achieved, stalls,
    held or why not)."""
    if not found:
        return []
    target = found[0].target
    colours = plots.cell_colours(cells)
    curves = {s.cell_id: [StepPoint(step.rate, step.p99_ms, step.held(target))
                          for step in s.found.steps] for s in found}
    answers = {s.cell_id: (s.found.best.rate if s.found.best is not None else None)
               for s in found}
    figure = figs.add("rate-search", rate_curve_figure(
        curves, {s.cell_id: names.get(s.cell_id, s.label) for s in found}, colours,
        target.p99, answers))
    blocks: Section = [
        Heading(2, ("The highest rate under the target",), "rate-search"),
        Paragraph((
            f"Each row was measured at a sequence of fixed rates, each step one run. A step"
            f" held the target ({target.target_text()}) when its window p99 — stalls and the"
            " transactions still in flight at the window's end counted — was within it, it"
            " achieved at least 95 % of its rate, and its stalls — the seconds of its window"
            " intervals that completed no New-Order — were within the limit. The"
            " answer is the highest rate held below the lowest rate that failed. The steps are"
            " different loads, not repetitions: no throughput is pooled across them, and no"
            " ranking by throughput is drawn.",)),
        table(["row", "highest rate held (NOTPM)", "p99 there (ms)", "lowest failure (NOTPM)",
               "steps", "finished"], [_answer_row(s, names) for s in found]),
        figure,
    ]
    for s in found:
        blocks += [
            Heading(3, rich(row_name(s.label, names.get(s.cell_id)), " — steps")),
            Paragraph((Value(s.text),), "sub"),
            table(["rate (NOTPM)", "run", "p99 (ms)", "achieved (NOTPM)", "stalls (s)",
                   "held"], [[(part,) for part in r] for r in
                             step_table(s.found, s.target)], left=0),
        ]
    return blocks


def _answer_row(s: CellSearch, names: dict[int, str]) -> list[Rich]:
    best, failed = s.found.best, s.found.lowest_failure
    return [
        row_name(s.label, names.get(s.cell_id)),
        (bold(f"{best.rate:,.0f}"),) if best is not None else ("none held",),
        (_ms(best.p99_ms),) if best is not None else ("–",),
        (f"{failed.rate:,.0f}",) if failed is not None else ("none failed",),
        (str(len(s.found.steps)),),
        ("yes" if s.found.finished else "no",),
    ]


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:,.0f}"
