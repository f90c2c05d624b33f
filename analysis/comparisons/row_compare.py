"""Rows of an experiment on one time axis: the "off vs on" figure a post needs.

:func:`figure` draws one metric of two rows or more over time on one axis: every repetition a
thin line in its row's colour, the median run (by window mean) bold, the measurement window
shaded; the rows' names (the experiment file's ``name:``, else ``C1``…) in the title and the
legend. :func:`compare_cells` is what a notebook and ``flushbench plot compare`` call: it reads
the store, finds the rows by name, by ``C`` number as ``flushbench compare`` lists them, or by
label, and returns the figure; :func:`save` writes it as SVG, PNG (at twice its size: sharp on
a high-density screen) or self-contained HTML.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures.plots import (
    HEIGHT,
    TIME_AXIS,
    WIDTH,
    axis_label,
    cell_colours,
    cell_meta,
    interval_count_title,
    legend_below,
    log_ticks,
    shade_window,
    titled_figure,
)
from analysis.figures.png_export import PngExporter
from analysis.figures.small_multiples import median_runs
from analysis.reading.metric import metric_view
from analysis.reading.rows import row_labels
from analysis.tables import frames
from core.errors import AnalysisError


@dataclass(frozen=True)
class TimeMetric:
    """One per-time-step series a cell comparison can draw.

    Attributes
    ----------
    source:
        ``intervals`` (the driver's report intervals) or ``samples`` (the sampler's ticks).
    column:
        Column of that frame (``primary`` means the experiment's per-interval count).
    title:
        What the y axis shows, with its unit.
    log:
        Drawn on a log axis (response times).
    """

    source: str
    column: str
    title: str
    log: bool = False


#: The metrics ``--metric`` accepts (binary units: MiB = 2^20 bytes).
METRICS: dict[str, TimeMetric] = {
    "throughput": TimeMetric("intervals", "primary", ""),
    # The driver's per-interval figures (the Go driver's: from that interval's histogram).
    "p99": TimeMetric("intervals", "p99_ms", "p99 response time per interval (ms, log)",
                      log=True),
    "p95": TimeMetric("intervals", "p95_ms", "p95 response time per interval (ms, log)",
                      log=True),
    "checkpoint-age": TimeMetric("samples", "checkpoint_age_pct",
                                 "checkpoint age (% of its maximum)"),
    "dirty": TimeMetric("samples", "dirty_pct", "dirty pages (% of the buffer pool)"),
    "pages-flushed": TimeMetric("samples", "pages_flushed_per_s", "pages flushed per second"),
    "redo": TimeMetric("samples", "log_mb_per_s", "redo written (MiB/s)"),
    "disk-write-iops": TimeMetric("samples", "disk_write_iops", "disk write operations per s"),
    "rss": TimeMetric("samples", "rss_mb", "mysqld resident memory (MiB)"),
}


def resolve_cell(cells_df: pd.DataFrame, name: str,
                 names: dict[int, str] | None = None) -> pd.Series:
    """The cell ``name`` designates: what the report calls its row (``names``: cell id →
    name, ``dw-off-50``, or for a row without one the knobs that differ from its baseline,
    ``doublewrite=off``), ``C3`` or ``3`` (row order, as ``flushbench compare`` prints), an
    exact label, or some of its ``knob=value`` words that no other label has all of
    (``doublewrite=off max_dirty_pages_pct=50``; whole words, so ``io_capacity=200`` is not
    ``io_capacity=20000``).

    Raises
    ------
    AnalysisError
        No cell or several cells match; the message lists the cells.
    """
    cells = cells_df.sort_values("position").reset_index(drop=True)
    text = name.strip()
    named = [cid for cid, n in (names or {}).items() if n == text]
    if len(named) == 1:
        return cells[cells["cell_id"] == named[0]].iloc[0]
    index = text[1:] if text[:1] in ("C", "c") else text
    if index.isdigit():
        n = int(index)
        if 1 <= n <= len(cells):
            return cells.iloc[n - 1]
    exact = cells[cells["cell_label"] == text]
    if len(exact) == 1:
        return exact.iloc[0]
    words = set(text.lower().split())
    partial = cells[[words <= set(str(lbl).lower().split()) for lbl in cells["cell_label"]]]
    if len(partial) == 1:
        return partial.iloc[0]
    listing = "; ".join(f"C{i + 1}" + (f" ({names[int(c)]})" if names and int(c) in names
                                       else "") + f" = {label}"
                        for i, (c, label) in enumerate(zip(cells["cell_id"],
                                                           cells["cell_label"], strict=True)))
    what = "matches several cells" if len(partial) > 1 else "names no cell"
    raise AnalysisError(f"{text!r} {what} ({listing})", where="cells",
                        fix="name a cell by its row's name, its C number, its label, or "
                            "knob=value words only it has")


#: Characters of a title line at the title's font across the figure (≈ 10 px a character):
#: a longer title (many rows' names) wraps, and the top margin grows by a line each.
TITLE_CHARS = 90
TITLE_LINE_PX = 26
#: Characters of a legend entry's line: a longer one (a 130-character label) wraps instead of
#: running past the figure's right edge; each extra line adds to the room under the plot.
LEGEND_CHARS = 110
#: Characters of a y axis title's line: the plot is ≈ 330 px tall at 14 px a character's ≈ 8.
Y_TITLE_CHARS = 38
LEGEND_LINE_PX = 18


def figure(
    frame: pd.DataFrame,
    cells_df: pd.DataFrame,
    cell_ids: tuple[int, ...],
    *,
    column: str,
    y_title: str,
    window: tuple[float, float] | None,
    bold_runs: dict[int, int],
    title: str | None = None,
    log: bool = False,
    names: dict[int, str] | None = None,
) -> go.Figure:
    """Two rows' runs or more of one per-time column on one axis (``log``: a log axis).

    Parameters
    ----------
    frame:
        Intervals or samples with ``run_id``, ``cell_id``, ``t`` (s after warmup) and
        ``column`` (warmup and missed samples are dropped here).
    cells_df:
        The cell summary (``cell_id``, ``position``, ``cell_label``, ``is_baseline``) of every
        cell: each drawn cell takes its colour in the report
        (:func:`analysis.figures.plots.cell_colours`).
    cell_ids:
        The rows, drawn and listed in this order.
    bold_runs:
        The run drawn bold per cell (its median run).
    names:
        Cell id → what the row is called (its name in the experiment file, else the knobs
        that differ from its baseline: :func:`analysis.reading.rows.row_labels`); a row
        missing here is ``C<n>``.
    """
    cells = cells_df.set_index("cell_id")
    colours = cell_colours(cells_df)
    short = {c: (names or {}).get(int(c)) or f"C{int(cells.loc[c, 'position']) + 1}"
             for c in cell_ids}
    # The rows' names in the title (labels run to 130 characters); the legend adds labels.
    text = title or f"{' vs '.join(short[c] for c in cell_ids)}: {y_title}"
    lines = textwrap.wrap(text, TITLE_CHARS, break_long_words=False, break_on_hyphens=False)
    fig = titled_figure("<br>".join(lines) or text,
                        "every repetition thin, the median run bold · shaded: measurement window")
    legend = []
    df = frame[frame["t"] > 0]
    if "missed" in df.columns:
        df = df[~df["missed"].astype(bool)]
    for k, cell_id in enumerate(cell_ids):
        cell = cells.loc[cell_id]
        colour = colours[cell_id]
        # Its name (or C<n>) then its label: the name for the title, the label for knobs.
        who = short[cell_id]
        name = (who if who == str(cell["cell_label"]) else f"{who} {cell['cell_label']}") + (
            " (baseline)" if cell["is_baseline"] else "")
        runs = df[df["cell_id"] == cell_id]
        bold = bold_runs.get(int(cell_id))
        entry = axis_label(f"{name} — median run {bold}", LEGEND_CHARS)
        legend.append(entry)
        for run_id, g in runs.groupby("run_id", sort=True):
            is_bold = int(run_id) == bold
            fig.add_trace(go.Scatter(
                x=g["t"].to_numpy() / 60, y=g[column].to_numpy(dtype=float), mode="lines",
                name=entry if is_bold else f"run {run_id}",
                legendgroup=f"cell{k}", showlegend=is_bold, legendrank=k,
                line=dict(width=2.6 if is_bold else 0.9, color=colour), meta=cell_meta(cell_id),
                opacity=1.0 if is_bold else 0.35,
                hovertemplate="%{y:,.1f}<extra>" + f"{who} run {run_id}</extra>"))
    # Bold lines last: drawn on top of the thin ones of the other rows.
    fig.data = tuple(sorted(fig.data, key=lambda t: t.showlegend is True))
    if window:
        shade_window(fig, *window)
    fig.update_xaxes(title_text=TIME_AXIS)
    # A long axis title on two lines: on one it runs past the plot into the subtitle.
    y_lines = textwrap.wrap(y_title, Y_TITLE_CHARS, break_long_words=False) or [y_title]
    fig.update_yaxes(title_text="<br>".join(y_lines), tickformat="" if log else ",",
                     type="log" if log else "linear")
    if len(y_lines) > 1:
        fig.update_layout(margin=dict(l=70 + LEGEND_LINE_PX * (len(y_lines) - 1)))
    if log:
        values = df[column].to_numpy(dtype=float)
        values = values[np.isfinite(values) & (values > 0)]
        if len(values):
            fig.update_yaxes(**log_ticks(float(values.min()), float(values.max())))
    fig.update_layout(legend=dict(traceorder="grouped"), hovermode="closest")
    _make_room(fig, lines, legend)
    return fig


def _make_room(fig: go.Figure, title_lines: list[str], legend: list[str]) -> None:
    """Room for a wrapped title above the plot and for the legend (below the plot when
    long, its wrapped entries' extra lines counted), so nothing is clipped."""
    top = (fig.layout.margin.t or 90) + TITLE_LINE_PX * max(0, len(title_lines) - 1)
    fig.update_layout(margin=dict(t=top))
    # The legend's own layout counts entries, not lines: each <br> adds one line beyond it.
    legend_below(fig, [e.replace("<br>", " ") for e in legend])
    extra = LEGEND_LINE_PX * sum(e.count("<br>") for e in legend)
    if extra:
        below = fig.layout.legend.yanchor == "top"
        height = (fig.layout.height or HEIGHT) + extra
        if below:
            # Height and bottom margin grow alike: the plot, and the legend's place, keep.
            fig.update_layout(height=height, margin=dict(b=(fig.layout.margin.b or 60) + extra))
        else:
            fig.update_layout(height=height, margin=dict(t=top + extra))


def compare_cells(
    db: frames.DB,
    experiment: frames.ExperimentRef,
    *rows: str,
    metric: str = "throughput",
) -> go.Figure:
    """Rows of an experiment on one time axis (what ``flushbench plot compare`` draws).

    Parameters
    ----------
    db, experiment:
        The results database and the experiment (name, id, or None for the latest).
    rows:
        Two rows or more, as :func:`resolve_cell` reads them (a row's name, ``C1``, ``3``,
        a label or part of one), drawn and listed in this order.
    metric:
        A key of :data:`METRICS`.
    """
    if metric not in METRICS:
        raise AnalysisError(f"unknown metric {metric!r}", where="--metric",
                            fix="use one of " + ", ".join(METRICS))
    if len(rows) < 2:
        raise AnalysisError(f"{len(rows)} row named; a comparison draws two or more",
                            where="rows", fix="name two rows or more")
    spec = METRICS[metric]
    fr = frames.load(db, experiment)
    frames.require_finished(fr)
    cells = fr.cell_summary
    # A row by its name, else by the knobs that differ from its baseline (as the report).
    names = row_labels(fr.experiment["stored"].spec, cells)
    chosen = [resolve_cell(cells, r, names) for r in rows]
    ids = tuple(int(c["cell_id"]) for c in chosen)
    for i, cell_id in enumerate(ids):
        if cell_id in ids[:i]:
            other = rows[ids.index(cell_id)]
            raise AnalysisError(f"{other!r} and {rows[i]!r} are the same cell "
                                f"({chosen[i]['cell_label']})", where="cells",
                                fix="name different rows")
    rs = fr.run_summary
    ivl = fr.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")
    ivl = ivl[ivl["cell_id"].isin(ids)]
    bold = median_runs(ivl)
    m = metric_view(fr.experiment)
    win = fr.experiment["window"]
    if spec.source == "intervals" and spec.column != "primary":
        data, column, y_title = _latency_data(ivl, spec, metric, m.per_minute)
    elif spec.source == "intervals":
        interval = float(ivl["interval_s"].median()) if len(ivl) else 10.0
        column = "primary_count" if m.per_minute else m.column
        y_title = (interval_count_title(m.counts, interval) if m.per_minute
                   else f"{m.name} ({m.unit})")
        data = ivl
    else:
        run_ids = [int(r) for r in ivl["run_id"].unique()]
        data = frames.samples(db, fr.experiment["id"], run_ids=run_ids)
        if spec.column not in data.columns or not data[spec.column].notna().any():
            raise AnalysisError(f"the runs of these cells recorded no {metric} samples",
                                where="--metric", fix="choose another metric (throughput "
                                "is always recorded)")
        data = data.merge(rs[["run_id", "cell_id"]], on="run_id")
        column, y_title = spec.column, spec.title
    return figure(data, cells, ids, column=column, y_title=y_title,
                  window=(win.start, win.end), bold_runs=bold, log=spec.log, names=names)


def _latency_data(ivl: pd.DataFrame, spec: TimeMetric, metric: str, tpcc: bool
                  ) -> tuple[pd.DataFrame, str, str]:
    """The intervals with the percentile ``spec`` draws (none where an interval completed no
    transaction), its column and its axis title.

    Raises
    ------
    AnalysisError
        When no interval of these cells has that percentile (sysbench prints one only).
    """
    values = ivl[spec.column] if spec.column in ivl else pd.Series(dtype=float)
    values = values.where((ivl["primary_count"] > 0) & (values > 0))
    if not values.notna().any():
        raise AnalysisError(f"the runs of these cells recorded no {metric} per interval",
                            where="--metric", fix="choose another metric (sysbench prints the"
                            " percentile it was asked for: p95 by default)")
    who = "New-Order " if tpcc else ""
    return ivl.assign(**{spec.column: values}), spec.column, who + spec.title



#: The files :func:`save` writes, by suffix.
SUFFIXES = (".svg", ".png", ".html")
#: A PNG is drawn at this multiple of the figure's size (2000 × 960 px for 1000 × 480): sharp
#: on a high-density screen and in print; SVG and HTML scale by themselves.
PNG_SCALE = 2


def save(fig: go.Figure, path: Path) -> Path:
    """Write ``fig`` as SVG or PNG (through kaleido; the PNG at :data:`PNG_SCALE` × its size)
    or as a self-contained HTML file, by suffix.

    Raises
    ------
    AnalysisError
        Another suffix, or the renderer failed (Chromium missing or broken).
    """
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise AnalysisError(f"cannot write a figure as {suffix or 'a file without suffix'!r}",
                            where=str(path), fix="name a .svg, .png or .html file")
    if suffix == ".html":
        fig.write_html(path, include_plotlyjs=True, full_html=True,
                       config={"displaylogo": False})
        return path
    with PngExporter(renderers=1) as exporter:
        exporter.submit(fig, path, width=WIDTH, height=fig.layout.height or HEIGHT,
                        image_format=suffix[1:], scale=PNG_SCALE if suffix == ".png" else 1)
    if exporter.error is not None:
        raise AnalysisError(f"the figure could not be drawn: {exporter.error}",
                            where=str(path),
                            fix="write .html instead, or check that kaleido's Chromium runs")
    return path
