"""Small multiples: one panel per cell, in the experiment's own row order, on shared axes.

The overlaid overview (eight noisy lines in near-identical colours) hid what a post needs to
show: how each configuration behaves over time, and how its repetitions agree. Here each cell
gets a panel; every repetition is a thin grey line, the median run (by its window mean) is bold
in the cell's colour, the measurement window is shaded in every panel, and all panels share
one y axis so heights compare at a glance. The checkpoint grid is the 2011 post's second graph
per cell: checkpoint age as % of its maximum (left, red, with the 7/8 async-flush line) and
dirty pages % (right, blue, with ``innodb_max_dirty_pages_pct``), for the median run.

Built by hand (axis domains) rather than with ``make_subplots``, whose property-path parsing
costs most of a report's figure time (see :func:`analysis.figures.plots._two_axis_figure`). Each
grid comes as a ``*_spec`` function (plain dicts, what the report draws) and its validated
``go.Figure`` twin (:func:`analysis.figures.plots.as_figure`).
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd

from analysis.figures.plots import (
    BASELINE_COLOUR,
    CHECKPOINT_COLOR,
    DIRTY_COLOR,
    TIME_AXIS,
    WIDTH,
    FigureSpec,
    as_figure,
    base_layout,
    cell_colours,
    cell_meta,
    figure_spec,
    interval_count_title,
    log_ticks,
    merge,
    subtitle_extra_px,
)

#: Panels per row.
COLUMNS = 2
#: Height of one panel's plot area (px) and the gap between columns (a fraction of the width).
PANEL_PX = 195
H_GAP = 0.08
#: Between two rows of panels, from top to bottom: the upper panel's x tick labels (12 px font
#: and plotly's padding), its x axis title where a panel above the last row carries one, a
#: pad, then the lower panel's title lines. Too little of it and the tick labels ran into the
#: titles below them (tests/analysis/test_grid_spacing.py checks the drawn figure).
X_TICKS_PX, X_TITLE_PX, ROW_PAD_PX = 24, 20, 8
#: Margins above the first row's titles (the figure's title and subtitle) and below the last
#: row, and where the figure's title starts (from the top).
TOP_PX, BOTTOM_PX, TITLE_TOP_PX = 90, 50, 22
THIN = "rgba(120,120,120,0.55)"
#: A panel title's line (12 px font) and the characters that fit a panel's width on one.
TITLE_LINE_PX = 16
TITLE_CHARS = 62
__all__ = ["BASELINE_COLOUR", "checkpoint_grid", "checkpoint_grid_spec", "latency_grid",
           "latency_grid_spec", "median_runs", "throughput_grid", "throughput_grid_spec"]
X_TITLE = TIME_AXIS


def median_runs(intervals_df: pd.DataFrame) -> dict[int, int]:
    """Per cell, the run whose window mean is the median of its runs (lower middle if even)."""
    window = intervals_df[intervals_df["in_window"]]
    means = window.groupby(["cell_id", "run_id"])["primary_count"].mean().reset_index()
    chosen = {}
    for cell_id, g in means.groupby("cell_id"):
        ordered = g.sort_values(["primary_count", "run_id"])
        chosen[int(cell_id)] = int(ordered.iloc[(len(ordered) - 1) // 2]["run_id"])
    return chosen


def _grid(n: int, title: str, subtitle: str | None, title_lines: int = 1, key_px: int = 0
          ) -> tuple[dict, list[tuple]]:
    """The layout (a plain dict) of a figure with ``n`` panels, and each panel's (x domain,
    y domain). Every row of panels gets room above it for panel titles of ``title_lines``
    lines, and every gap between rows room for the upper row's tick labels (and axis title,
    where it has one); ``key_px`` more goes under the figure's subtitle (a colour key)."""
    rows = max(1, math.ceil(n / COLUMNS))
    titles_px = TITLE_LINE_PX * max(1, title_lines)
    # An odd last row leaves the panel above its empty slot with the x axis title.
    titled_above = any(i >= n - COLUMNS and i // COLUMNS < rows - 1 for i in range(n))
    gap_px = X_TICKS_PX + (X_TITLE_PX if titled_above else 0) + ROW_PAD_PX + titles_px
    # A subtitle wrapped onto more lines pushes the first row's titles down with it.
    top_px = TOP_PX + titles_px + key_px + subtitle_extra_px(subtitle)
    plot_px = rows * PANEL_PX + (rows - 1) * gap_px
    height = top_px + plot_px + BOTTOM_PX
    layout = merge(base_layout(title, subtitle), dict(
        height=height, width=WIDTH, showlegend=False,
        margin=dict(t=top_px, b=BOTTOM_PX, l=70, r=70), hovermode="closest",
        # The title's top a fixed distance from the top: the template's y (a share of the
        # height) put it, with its subtitle, over the first titles of a tall grid.
        title=dict(y=round(1 - TITLE_TOP_PX / height, 6), yanchor="top")))
    cell_w = (1.0 - H_GAP * (COLUMNS - 1)) / COLUMNS
    domains = []
    for i in range(n):
        r, c = divmod(i, COLUMNS)
        x0 = c * (cell_w + H_GAP)
        y1 = 1.0 - r * (PANEL_PX + gap_px) / plot_px
        # Rounded into [0, 1]: float steps leave -5e-17 at the bottom, which plotly refuses.
        domains.append(((round(x0, 6), round(min(1.0, x0 + cell_w), 6)),
                        (round(max(0.0, y1 - PANEL_PX / plot_px), 6), round(y1, 6))))
    return layout, domains


def _minutes(seconds: np.ndarray) -> np.ndarray:
    """Seconds as minutes to 4 decimals (6 ms): ``10 / 60`` printed in full took 19
    characters of the page per point, a third of a 500-run grid's megabytes."""
    return np.round(seconds / 60, 4)


def _axis_names(i: int) -> tuple[str, str]:
    """Layout keys and trace references of panel ``i``'s axes (``xaxis3``/``x3``…)."""
    suffix = "" if i == 0 else str(i + 1)
    return suffix, f"x{suffix}"


# Traces, axes, shapes and annotations are collected as plain dicts and handed to plotly once
# per figure (analysis.figures.plots.build): add_trace/update_layout/add_shape validate and copy on
# every call (≈ 0.1 s per shape for a 20-panel grid, most of the grid's time).


def _shade(window: tuple[float, float], xref: str, yref: str) -> dict:
    """The measurement window as a grey band over one panel's full height."""
    return dict(type="rect", xref=xref, yref=f"{yref} domain", x0=window[0] / 60,
                x1=window[1] / 60, y0=0, y1=1, fillcolor="#888", opacity=0.08,
                line=dict(width=0), layer="below")


def panel_title_lines(cell: pd.Series) -> list[str]:
    """A panel's title as lines that fit the panel: the cell's short name in bold when the
    cells frame carries one (``row_name``: the experiment's own name of the row, e.g. the
    reference's ``dw-on-50``), "baseline", then its label wrapped at spaces."""
    head = [f"<b>{html.escape(str(cell['row_name']), quote=False)}</b>"] if isinstance(
        cell.get("row_name"), str) and cell.get("row_name") else []
    if bool(cell["is_baseline"]):
        head.append("<b>baseline</b>")
    text = " · ".join([*head, html.escape(str(cell['cell_label']), quote=False)])
    # Wrapped on the plain text (tags are not shown), so count the tags' width out.
    lines, line, shown = [], [], 0
    for word in text.split(" "):
        width = len(re.sub(r"<[^>]+>", "", word))
        if line and shown + 1 + width > TITLE_CHARS:
            lines.append(" ".join(line))
            line, shown = [], 0
        line.append(word)
        shown += width + (1 if shown else 0)
    return [*lines, " ".join(line)] if line else lines


def _panel_title(lines: list[str], x: tuple, y: tuple) -> dict:
    return dict(text="<br>".join(lines), xref="paper", yref="paper", x=x[0], y=y[1],
                xanchor="left", yanchor="bottom", align="left", showarrow=False,
                font=dict(size=12, color="#333"))


def throughput_grid_spec(
    intervals_df: pd.DataFrame,
    cells_df: pd.DataFrame,
    *,
    window: tuple[float, float] | None,
    unit: str = "New-Orders",
    title: str = "Throughput per cell",
    subtitle: str | None = None,
    bold_runs: dict[int, int] | None = None,
) -> FigureSpec:
    """One panel per cell (``cells_df`` order by ``position``): every run thin, median bold.

    Parameters
    ----------
    intervals_df:
        :func:`analysis.tables.frames.intervals` with ``cell_id`` (warmup intervals are dropped).
    cells_df:
        The cell summary: ``cell_id``, ``position``, ``cell_label``, ``is_baseline``.
    window:
        (start, end) of the measurement window in seconds after warmup, shaded per panel.
    bold_runs:
        The run drawn bold per cell (default :func:`median_runs`).
    """
    cells = cells_df.sort_values("position")
    df = intervals_df[intervals_df["t"] > 0]
    interval = float(df["interval_s"].median()) if len(df) else 10.0
    medians = bold_runs if bold_runs is not None else median_runs(intervals_df)
    titles = [panel_title_lines(cell) for _, cell in cells.iterrows()]
    layout, domains = _grid(len(cells), title, subtitle, max(map(len, titles), default=1))
    colours = cell_colours(cells_df)
    traces: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    top = float(np.nanmax(df["primary_count"])) if len(df) else 1.0
    for i, (_, cell) in enumerate(cells.iterrows()):
        suffix, xref = _axis_names(i)
        yref = f"y{suffix}"
        (x0, x1), (y0, y1) = domains[i]
        runs = df[df["cell_id"] == cell["cell_id"]]
        colour = colours[int(cell["cell_id"])]
        best = medians.get(int(cell["cell_id"]))
        for run_id, g in runs.groupby("run_id", sort=True):
            bold = int(run_id) == best
            traces.append(dict(
                type="scatter", x=_minutes(g["t"].to_numpy()), y=g["primary_count"].to_numpy(),
                mode="lines", xaxis=xref, yaxis=yref,
                name=f"run {run_id}" + (" (median)" if bold else ""),
                line=dict(width=2.2 if bold else 1.0, color=colour if bold else THIN),
                **({"meta": cell_meta(cell["cell_id"])} if bold else {}),
                hovertemplate="%{y:,.0f}<extra>run " + str(run_id) + "</extra>"))
        merge(layout, {
            f"xaxis{suffix}": dict(domain=[x0, x1], anchor=yref,
                                   title=dict(text=X_TITLE if i >= len(cells) - COLUMNS
                                              else "")),
            f"yaxis{suffix}": dict(domain=[y0, y1], anchor=xref, range=[0, top * 1.08],
                                   tickformat=",", title=dict(
                                       # Two lines: one outruns a short panel's height.
                                       text=interval_count_title(unit, interval).replace(
                                           " (", "<br>(", 1) if i % COLUMNS == 0 else "")),
        })
        if window:
            shapes.append(_shade(window, xref, yref))
        notes.append(_panel_title(titles[i], (x0, x1), (y0, y1)))
    # Room on the left for the two-line axis title.
    return figure_spec(traces, merge(layout, dict(shapes=shapes, annotations=notes,
                                                  margin=dict(l=88))))


throughput_grid = as_figure(throughput_grid_spec)


def checkpoint_grid_spec(
    samples_df: pd.DataFrame,
    cells_df: pd.DataFrame,
    runs_of_cells: dict[int, int],
    *,
    window: tuple[float, float] | None,
    title: str = "Checkpoint age and dirty pages per cell (median run)",
    subtitle: str | None = None,
) -> FigureSpec:
    """Per cell, the median run's checkpoint age and dirty pages, both in % on one axis.

    Checkpoint age is drawn as % of its maximum (red; dashed at the maximum, dotted at 7/8
    where InnoDB starts flushing asynchronously), dirty pages as % of the buffer pool (blue;
    dashed at ``innodb_max_dirty_pages_pct``). Both are percentages, so one axis serves both
    and panels sit side by side without a second axis between them. ``runs_of_cells`` maps a
    cell id to the run drawn (:func:`median_runs`).
    """
    cells = cells_df.sort_values("position")
    key = (f"<span style='color:{CHECKPOINT_COLOR}'>red: checkpoint age, % of its maximum"
           "</span> (dashed: the maximum; dotted: 7/8, async flushing)<br>"
           f"<span style='color:{DIRTY_COLOR}'>blue: dirty pages, % of the buffer pool</span>"
           " (dashed: innodb_max_dirty_pages_pct) · shaded: measurement window")
    titles = [panel_title_lines(cell) for _, cell in cells.iterrows()]
    # key_px: room for the colour key's two lines under the title.
    layout, domains = _grid(len(cells), title, f"{subtitle}<br>{key}" if subtitle else key,
                            max(map(len, titles), default=1), key_px=40)
    n = len(cells)
    traces: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    for i, (_, cell) in enumerate(cells.iterrows()):
        suffix, xref = _axis_names(i)
        yref = f"y{suffix}"
        (x0, x1), (y0, y1) = domains[i]
        run_id = runs_of_cells.get(int(cell["cell_id"]))
        s = samples_df[(samples_df["run_id"] == run_id) & (~samples_df["missed"])
                       & (samples_df["t"] > 0)] if run_id is not None else samples_df.iloc[0:0]
        x = s["t"].to_numpy() / 60
        traces.append(dict(type="scatter", x=x, y=s["checkpoint_age_pct"].to_numpy(),
                           mode="lines", xaxis=xref, yaxis=yref, name="checkpoint age % of max",
                           line=dict(color=CHECKPOINT_COLOR, width=1.8),
                           hovertemplate="%{y:.0f} % of max age<extra>run "
                           + str(run_id) + "</extra>"))
        traces.append(dict(type="scatter", x=x, y=s["dirty_pct"].to_numpy(), mode="lines",
                           xaxis=xref, yaxis=yref, name="dirty pages %",
                           line=dict(color=DIRTY_COLOR, width=1.8),
                           hovertemplate="%{y:.0f} % dirty<extra>run "
                           + str(run_id) + "</extra>"))
        merge(layout, {
            f"xaxis{suffix}": dict(domain=[x0, x1], anchor=yref, title=dict(
                text=X_TITLE if i >= n - COLUMNS else "")),
            f"yaxis{suffix}": dict(domain=[y0, y1], anchor=xref, range=[0, 110],
                                   ticksuffix=" %", title=dict(
                                       text="% (see colours)" if i % COLUMNS == 0 else "")),
        })
        for level, dash in ((100.0, "dash"), (87.5, "dot")):
            shapes.append(_hline(level, xref, yref, CHECKPOINT_COLOR, dash))
        pct = s["max_dirty_pages_pct"].dropna() if "max_dirty_pages_pct" in s else s.iloc[0:0]
        if len(pct):
            shapes.append(_hline(float(pct.iloc[0]), xref, yref, DIRTY_COLOR, "dash"))
        if window:
            shapes.append(_shade(window, xref, yref))
        notes.append(_panel_title(titles[i], (x0, x1), (y0, y1)))
    return figure_spec(traces, merge(layout, dict(shapes=shapes, annotations=notes)))


checkpoint_grid = as_figure(checkpoint_grid_spec)


def _hline(level: float, xref: str, yref: str, colour: str, dash: str) -> dict:
    return dict(type="line", xref=f"{xref} domain", yref=yref, x0=0, x1=1, y0=level,
                y1=level, line=dict(color=colour, dash=dash, width=1))


#: The representative run's stall intervals, marked in its panel.
STALL_COLOUR = "rgba(200,40,30,0.16)"


def latency_grid_spec(
    intervals_df: pd.DataFrame,
    cells_df: pd.DataFrame,
    *,
    window: tuple[float, float] | None,
    column: str = "p99_ms",
    dashed: str | None = "p95_ms",
    name: str = "New-Order p99",
    stalls: dict[int, list[tuple[float, float]]] | None = None,
    title: str | None = None,
    subtitle: str | None = None,
    bold_runs: dict[int, int] | None = None,
) -> FigureSpec:
    """Per cell, a percentile per interval on a log axis: every run thin, the representative
    run bold (its ``dashed`` percentile dashed beside it), the window shaded, and the
    representative run's stall intervals (``stalls``: run id → (start, end) s after warmup)
    as red bands. An interval without transactions has no percentile (a gap in its line).

    Parameters are those of :func:`throughput_grid_spec`; ``column`` and ``dashed`` are
    per-interval columns of :func:`analysis.tables.frames.intervals` in ms.
    """
    cells = cells_df.sort_values("position")
    df = intervals_df[intervals_df["t"] > 0]
    medians = bold_runs if bold_runs is not None else median_runs(intervals_df)
    titles = [panel_title_lines(cell) for _, cell in cells.iterrows()]
    layout, domains = _grid(len(cells), title or f"{name} response time per cell",
                            subtitle, max(map(len, titles), default=1))
    colours = cell_colours(cells_df)
    dashed = dashed if dashed and dashed in df else None
    # Each run's rows as a slice of plain arrays: a groupby per cell and run cost more than
    # the traces themselves on a 500-run experiment.
    df = df.sort_values(["cell_id", "run_id", "seq"], kind="stable")
    arrays = {c: df[c].to_numpy(dtype=float) for c in ("t", "primary_count", column,
                                                        *([dashed] if dashed else []))}
    run_ids, cell_ids = df["run_id"].to_numpy(), df["cell_id"].to_numpy()
    cuts = np.r_[0, np.flatnonzero(np.diff(run_ids)) + 1, len(df)]
    runs_of: dict[int, list[tuple[int, tuple[int, int]]]] = {}
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        if hi > lo:
            runs_of.setdefault(int(cell_ids[lo]), []).append((int(run_ids[lo]),
                                                              (int(lo), int(hi))))
    shown = [c for c in (column, dashed) if c and c in df]
    values = df[shown].to_numpy(dtype=float) if shown else np.zeros((0, 1))
    positive = values[np.isfinite(values) & (values > 0)]
    # The lowest half percent of intervals (a run's last, nearly empty one) would stretch the
    # shared axis over decades nothing else uses.
    low, high = (float(np.percentile(positive, 0.5)) / 1.5, float(positive.max()) * 1.3) \
        if positive.size else (1.0, 10.0)
    y_range = [math.log10(low), math.log10(high)]
    traces: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    for i, (_, cell) in enumerate(cells.iterrows()):
        suffix, xref = _axis_names(i)
        yref = f"y{suffix}"
        (x0, x1), (y0, y1) = domains[i]
        colour = colours[int(cell["cell_id"])]
        best = medians.get(int(cell["cell_id"]))
        for run_id, (lo, hi) in runs_of.get(int(cell["cell_id"]), []):
            bold = run_id == best
            traces.append(_latency_line(arrays, lo, hi, column, xref, yref, run_id, bold,
                                        colour, cell_id=int(cell["cell_id"])))
            if bold and dashed:
                traces.append(_latency_line(arrays, lo, hi, dashed, xref, yref, run_id, bold,
                                            colour, dash=True, cell_id=int(cell["cell_id"])))
        merge(layout, {
            f"xaxis{suffix}": dict(domain=[x0, x1], anchor=yref, title=dict(
                text=X_TITLE if i >= len(cells) - COLUMNS else "")),
            f"yaxis{suffix}": dict(domain=[y0, y1], anchor=xref, type="log", range=y_range,
                                   **log_ticks(low, high),
                                   title=dict(text="ms (log)" if i % COLUMNS == 0 else "")),
        })
        if window:
            shapes.append(_shade(window, xref, yref))
        for start, end in (stalls or {}).get(best, []) if best is not None else []:
            shapes.append(dict(type="rect", xref=xref, yref=f"{yref} domain", x0=start / 60,
                               x1=end / 60, y0=0, y1=1, fillcolor=STALL_COLOUR,
                               line=dict(width=0), layer="below"))
        notes.append(_panel_title(titles[i], (x0, x1), (y0, y1)))
    return figure_spec(traces, merge(layout, dict(shapes=shapes, annotations=notes)))


latency_grid = as_figure(latency_grid_spec)


def _latency_line(arrays: dict[str, np.ndarray], lo: int, hi: int, column: str, xref: str,
                  yref: str, run_id: int, bold: bool, colour: str, dash: bool = False,
                  cell_id: int | None = None) -> dict:
    """One run's percentile per interval (rows ``lo:hi`` of ``arrays``; no transactions: no
    point); a bold line in the colour of ``cell_id``."""
    count = arrays["primary_count"][lo:hi]
    y = arrays[column][lo:hi]
    y = np.where((count > 0) & (y > 0), y, np.nan)
    label = column.removesuffix("_ms")
    return dict(type="scatter", x=_minutes(arrays["t"][lo:hi]), y=y, mode="lines", xaxis=xref,
                yaxis=yref, connectgaps=False,
                name=f"run {run_id} {label}" + (" (representative)" if bold else ""),
                line=dict(width=2.2 if bold and not dash else 1.2 if dash else 1.0,
                          color=colour if bold else THIN, dash="dash" if dash else "solid"),
                **({"meta": cell_meta(cell_id)} if bold and cell_id is not None else {}),
                hovertemplate="%{y:,.1f} ms<extra>run " + str(run_id) + f" {label}</extra>")
