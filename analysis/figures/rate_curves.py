"""The figure of a rate search: each row's window p99 against the rate it was offered, the
target drawn across, every step marked held or failed (``workload.rate: {max_under: …}``;
docs/tpcc.md, "The highest rate under a target").

It takes plain values (the steps' rate, p99 and whether each held), not the analysis's search
objects: the figures wing sits below the response wing that judges the steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import plotly.graph_objects as go

from analysis.figures import plots


@dataclass(frozen=True)
class StepPoint:
    """One step of a search as drawn: the rate offered, its window p99 (ms; NaN when the
    window had none) and whether it held the target."""

    rate: float
    p99_ms: float
    held: bool


def rate_curve_figure(curves: dict[int, list[StepPoint]], names: dict[int, str],
                      colours: dict[int, str], target_ms: float,
                      answers: dict[int, float | None]) -> go.Figure:
    """Window p99 (log axis) against the offered rate, one line per row in its report colour;
    a filled marker is a step that held, an open one a step that failed; the target p99 is a
    dashed line, each row's answer (the highest rate held below its lowest failure) a ring.

    Parameters
    ----------
    curves:
        Cell id → its steps (any order; drawn by rate).
    names, colours:
        Cell id → the row's name and its colour (:func:`analysis.figures.plots.cell_colours`).
    target_ms:
        The search's p99 target.
    answers:
        Cell id → the rate the search answers with (None: no rate held).
    """
    fig = plots.titled_figure(
        "Window p99 at each offered rate",
        f"each step one run at a fixed rate; filled: held the target (p99 ≤ {target_ms:,.0f} ms,"
        " ≥ 95 % of its rate achieved, stalls within the limit), open: failed; ringed: the"
        " answer")
    p99s: list[float] = [target_ms]
    for cell_id, steps in curves.items():
        steps = sorted(steps, key=lambda s: s.rate)
        colour = colours.get(cell_id, plots.BASELINE_COLOUR)
        drawn = [s for s in steps if math.isfinite(s.p99_ms) and s.p99_ms > 0]
        p99s += [s.p99_ms for s in drawn]
        fig.add_trace(go.Scatter(
            x=[s.rate for s in drawn], y=[s.p99_ms for s in drawn], mode="lines+markers",
            name=names.get(cell_id, str(cell_id)), meta=plots.cell_meta(cell_id),
            line=dict(color=colour, width=2),
            marker=dict(size=9, color=[colour if s.held else "white" for s in drawn],
                        line=dict(color=colour, width=2)),
            hovertemplate="%{x:,.0f} NOTPM offered: p99 %{y:,.0f} ms<extra>%{fullData.name}"
                          "</extra>"))
        answer = answers.get(cell_id)
        at = [s for s in drawn if answer is not None and s.rate == answer]
        if at:
            fig.add_trace(go.Scatter(
                x=[at[0].rate], y=[at[0].p99_ms], mode="markers", showlegend=False,
                meta=plots.cell_meta(cell_id), hoverinfo="skip",
                marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(color=colour, width=2))))
    fig.add_hline(y=target_ms, line=dict(color="#888888", dash="dash", width=1),
                  annotation_text=f"target p99 {target_ms:,.0f} ms",
                  annotation_position="top left")
    fig.update_xaxes(title_text="offered rate (NOTPM)", rangemode="tozero")
    fig.update_yaxes(title_text="window p99 (ms, stalls counted)", **plots.log_axis([p99s]))
    plots.legend_below(fig, [names.get(c, str(c)) for c in curves])
    return fig
