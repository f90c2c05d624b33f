"""Distributions, not only means: what each cell's intervals and runs actually did.

A bar of the mean hides a cell whose intervals swing between half and double the mean, and a
median bar of stability scores hides the one run that scored 0. :func:`interval_boxes` draws,
per cell in the experiment's row order, the spread of the per-interval throughput over every
run's measurement window (box: quartiles, whiskers: 5th and 95th percentiles) with each run's
window mean as a dot; :func:`stability_runs` draws every run's stability score as a dot.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures.plots import (
    HEIGHT,
    FigureSpec,
    as_figure,
    axis_label,
    base_layout,
    cell_colours,
    cell_meta,
    figure_spec,
    log_ticks,
    merge,
    row_px,
    titled_figure,
)

#: Row height (px) of one cell in the horizontal figures.
ROW_PX = 34


def _rows(cells_df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Cells in row order and their axis labels (the baseline says so)."""
    cells = cells_df.sort_values("position")
    names = [axis_label(f"{lbl} (baseline)" if base else str(lbl))
             for lbl, base in zip(cells["cell_label"], cells["is_baseline"], strict=True)]
    return cells, names


def _layout(fig: go.Figure, names: list[str], x_title: str) -> None:
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=names,
                     autorange="reversed", automargin=True, title_text="")
    fig.update_xaxes(title_text=x_title, tickformat=",")
    fig.update_layout(height=max(HEIGHT, 150 + row_px(names, ROW_PX) * len(names)),
                      showlegend=False,
                      hovermode="closest", margin=dict(l=20))


def interval_boxes(
    intervals_df: pd.DataFrame,
    cells_df: pd.DataFrame,
    *,
    column: str = "notpm",
    unit: str = "NOTPM",
    title: str | None = None,
) -> go.Figure:
    """Per cell: the window intervals of all its runs as a box, each run's mean as a dot.

    Parameters
    ----------
    intervals_df:
        :func:`analysis.tables.frames.intervals` with ``cell_id`` (only ``in_window`` rows count).
    cells_df:
        The cell summary (``cell_id``, ``position``, ``cell_label``, ``is_baseline``).
    column, unit:
        The per-interval value (``notpm``, or ``per_s`` for a per-second metric) and its name.

    The boxes are precomputed (quartiles; whiskers at the 5th and 95th percentiles) so the
    page carries five numbers per cell, not every interval.
    """
    cells, names = _rows(cells_df)
    colours = cell_colours(cells_df)
    fig = titled_figure(title
                        or f"{unit} per interval: spread over the window, and each run's mean",
                        "box: quartiles of every interval of every run in the window · whiskers: "
                        "5th–95th percentile · dots: each run's window mean")
    win = intervals_df[intervals_df["in_window"] & intervals_df[column].notna()]
    for (_, cell), name in zip(cells.iterrows(), names, strict=True):
        cid = int(cell["cell_id"])
        values = win.loc[win["cell_id"] == cid, column].to_numpy(dtype=float)
        if values.size == 0:
            continue
        p5, q1, med, q3, p95 = np.percentile(values, [5, 25, 50, 75, 95])
        fig.add_trace(go.Box(
            y=[name], q1=[q1], median=[med], q3=[q3], lowerfence=[p5], upperfence=[p95],
            orientation="h", name=name, marker_color=colours[cid], line=dict(width=1.4),
            meta=cell_meta(cid),
            fillcolor="rgba(0,0,0,0)", boxpoints=False, width=0.6, hoverinfo="x+name"))
        means = win[win["cell_id"] == cid].groupby("run_id")[column].mean()
        fig.add_trace(go.Scatter(
            x=means.to_numpy(), y=[name] * len(means), mode="markers", name=name,
            marker=dict(size=9, color=colours[cid], line=dict(width=1, color="white")),
            meta=cell_meta(cid), customdata=means.index.to_numpy(),
            hovertemplate="run %{customdata}: mean %{x:,.0f}<extra></extra>"))
    _layout(fig, names, f"{unit} per interval")
    return fig


def stability_runs(run_summary_df: pd.DataFrame, cells_df: pd.DataFrame) -> go.Figure:
    """Every done run's stability score as a dot, per cell in row order (no median bar).

    Runs of one cell are spread a little up and down (in repetition order) so equal scores
    stay visible; a run without a score (no data in its window) is named in the subtitle.
    """
    cells, names = _rows(cells_df)
    colours = cell_colours(cells_df)
    rs = run_summary_df[run_summary_df["status"] == "done"]
    missing = rs[rs["score"].isna()]
    note = ("" if missing.empty else " · no score (no data in the window): run "
            + ", ".join(str(int(r)) for r in missing["run_id"]))
    fig = titled_figure("Stability score of every run",
                        "100 × p5 / median of the run's per-interval throughput (100 = flat line); "
                        "one dot per run" + note)
    for i, ((_, cell), name) in enumerate(zip(cells.iterrows(), names, strict=True)):
        cid = int(cell["cell_id"])
        runs = rs[(rs["cell_id"] == cid) & rs["score"].notna()].sort_values("repetition")
        if runs.empty:
            continue
        k = len(runs)
        # Numeric y (row index ± a small offset): a category axis cannot spread equal values.
        offsets = np.linspace(-0.22, 0.22, k) if k > 1 else np.zeros(1)
        fig.add_trace(go.Scatter(
            x=runs["score"].to_numpy(dtype=float), y=i + offsets, mode="markers", name=name,
            marker=dict(size=9, color=colours[cid], line=dict(width=1, color="white")),
            meta=cell_meta(cid), customdata=runs["run_id"].to_numpy(),
            hovertemplate="run %{customdata}: score %{x:.1f}<extra>" + name + "</extra>"))
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(names))), ticktext=names,
                     range=[len(names) - 0.5, -0.5], automargin=True, title_text="",
                     showgrid=False, zeroline=False)
    fig.update_xaxes(title_text="stability score", range=[-2, 103])
    fig.update_layout(height=max(HEIGHT, 150 + row_px(names, ROW_PX) * len(names)),
                      showlegend=False,
                      hovermode="closest", margin=dict(l=20))
    return fig


def latency_boxes_spec(
    intervals_df: pd.DataFrame,
    cells_df: pd.DataFrame,
    run_values: pd.Series,
    *,
    column: str = "p99_ms",
    name: str = "New-Order p99",
    run_value_text: str = "each run's window p99",
) -> FigureSpec:
    """Per cell: the window's per-interval percentile of all its runs as a box (quartiles,
    whiskers at the 5th and 95th percentiles), each run's window figure (``run_values``, by run
    id: merged from its histograms, or the median of the per-interval figures) as a dot; a
    log axis, lower is better. Intervals without transactions have no percentile. Plain
    dicts, as the report draws it (:func:`latency_boxes` is the validated figure)."""
    cells, names = _rows(cells_df)
    colours = cell_colours(cells_df)
    win = intervals_df[intervals_df["in_window"] & (intervals_df["primary_count"] > 0)
                       & (intervals_df[column] > 0)]
    traces: list[dict] = []
    for (_, cell), label in zip(cells.iterrows(), names, strict=True):
        cid = int(cell["cell_id"])
        mine = win[win["cell_id"] == cid]
        values = mine[column].to_numpy(dtype=float)
        if values.size == 0:
            continue
        p5, q1, med, q3, p95 = np.percentile(values, [5, 25, 50, 75, 95])
        traces.append(dict(
            type="box", y=[label], q1=[q1], median=[med], q3=[q3], lowerfence=[p5],
            upperfence=[p95], orientation="h", name=label, marker=dict(color=colours[cid]),
            meta=cell_meta(cid),
            line=dict(width=1.4), fillcolor="rgba(0,0,0,0)", boxpoints=False, width=0.6,
            hoverinfo="x+name"))
        dots = run_values.reindex(mine["run_id"].unique()).dropna()
        traces.append(dict(
            type="scatter", x=dots.to_numpy(dtype=float), y=[label] * len(dots),
            mode="markers", name=label,
            marker=dict(size=9, color=colours[cid], line=dict(width=1, color="white")),
            meta=cell_meta(cid), customdata=dots.index.to_numpy(),
            hovertemplate="run %{customdata}: %{x:,.1f} ms<extra></extra>"))
    # Ticks over every value (those outside the drawn range are not shown).
    shown = np.r_[win[column].to_numpy(dtype=float), run_values.dropna().to_numpy(dtype=float)]
    shown = shown[shown > 0]
    layout = merge(base_layout(
        f"{name} per interval: spread over the window, and each run's figure",
        "box: quartiles of every interval of every run in the window · whiskers: 5th–95th"
        f" percentile · dots: {run_value_text} · lower is better"), dict(
        yaxis=dict(type="category", categoryorder="array", categoryarray=names,
                   autorange="reversed", automargin=True, title=dict(text="")),
        xaxis=dict(type="log", title=dict(text=f"{name} (ms, log)"),
                   **(log_ticks(shown.min() / 1.2, shown.max() * 1.2) if shown.size else {})),
        height=max(HEIGHT, 150 + row_px(names, ROW_PX) * len(names)), showlegend=False,
        hovermode="closest", margin=dict(l=20)))
    return figure_spec(traces, layout)


latency_boxes = as_figure(latency_boxes_spec)
