"""Two cells on one time axis: the "off vs on" figure a post needs.

:func:`figure` draws one metric of two cells over time on one axis: every repetition a thin
line in its cell's colour, the median run (by window mean) bold, the measurement window shaded.
:func:`compare_cells` is what a notebook and ``flushbench plot compare`` call: it reads the
store, names the cells the way ``flushbench compare`` does (``C1``… in row order, or a label)
and returns the figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from analysis.figures.plots import (
    HEIGHT,
    WIDTH,
    cell_colours,
    cell_meta,
    legend_below,
    shade_window,
    titled_figure,
)
from analysis.figures.png_export import PngExporter
from analysis.figures.small_multiples import median_runs
from analysis.reading.metric import metric_view
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


def resolve_cell(cells_df: pd.DataFrame, name: str) -> pd.Series:
    """The cell ``name`` designates: ``C3`` or ``3`` (row order, as ``flushbench compare``
    prints), an exact label, or some of its ``knob=value`` words that no other label has all
    of (``doublewrite=off max_dirty_pages_pct=50``; whole words, so ``io_capacity=200`` is not
    ``io_capacity=20000``).

    Raises
    ------
    AnalysisError
        No cell or several cells match; the message lists the cells.
    """
    cells = cells_df.sort_values("position").reset_index(drop=True)
    text = name.strip()
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
    listing = "; ".join(f"C{i + 1} = {label}" for i, label in enumerate(cells["cell_label"]))
    what = "matches several cells" if len(partial) > 1 else "names no cell"
    raise AnalysisError(f"{text!r} {what} ({listing})", where="cells",
                        fix="name a cell by its C number, its label, or knob=value words "
                            "only it has")


def figure(
    frame: pd.DataFrame,
    cells_df: pd.DataFrame,
    cell_ids: tuple[int, int],
    *,
    column: str,
    y_title: str,
    window: tuple[float, float] | None,
    bold_runs: dict[int, int],
    title: str | None = None,
    log: bool = False,
) -> go.Figure:
    """Two cells' runs of one per-time column on one axis (``log``: a log axis).

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
        The two cells, drawn and listed in this order.
    bold_runs:
        The run drawn bold per cell (its median run).
    """
    cells = cells_df.set_index("cell_id")
    colours = cell_colours(cells_df)
    short = [f"C{int(cells.loc[c, 'position']) + 1}" for c in cell_ids]
    # Short ids in the title (labels run to 70 characters); the legend gives whole labels.
    fig = titled_figure(title or f"{short[0]} vs {short[1]}: {y_title}",
                        "every repetition thin, the median run bold · shaded: measurement window")
    names = []
    df = frame[frame["t"] > 0]
    if "missed" in df.columns:
        df = df[~df["missed"].astype(bool)]
    for k, cell_id in enumerate(cell_ids):
        cell = cells.loc[cell_id]
        colour = colours[cell_id]
        position = int(cell["position"]) + 1
        name = f"C{position} {cell['cell_label']}" + (" (baseline)" if cell["is_baseline"]
                                                      else "")
        names.append(name)
        runs = df[df["cell_id"] == cell_id]
        bold = bold_runs.get(int(cell_id))
        for run_id, g in runs.groupby("run_id", sort=True):
            is_bold = int(run_id) == bold
            fig.add_trace(go.Scatter(
                x=g["t"].to_numpy() / 60, y=g[column].to_numpy(dtype=float), mode="lines",
                name=f"{name} — median run {run_id}" if is_bold else f"run {run_id}",
                legendgroup=f"cell{k}", showlegend=is_bold, legendrank=k,
                line=dict(width=2.6 if is_bold else 0.9, color=colour), meta=cell_meta(cell_id),
                opacity=1.0 if is_bold else 0.35,
                hovertemplate="%{y:,.1f}<extra>" + f"C{position} run {run_id}</extra>"))
    # Bold lines last: drawn on top of the thin ones of the other cell.
    fig.data = tuple(sorted(fig.data, key=lambda t: t.showlegend is True))
    if window:
        shade_window(fig, *window)
    fig.update_xaxes(title_text="minutes after warmup")
    fig.update_yaxes(title_text=y_title, tickformat="" if log else ",",
                     type="log" if log else "linear")
    fig.update_layout(legend=dict(traceorder="grouped"), hovermode="closest")
    legend_below(fig, names)
    return fig


def compare_cells(
    db: frames.DB,
    experiment: frames.ExperimentRef,
    a: str,
    b: str,
    *,
    metric: str = "throughput",
) -> go.Figure:
    """Two cells of an experiment on one time axis (what ``flushbench plot compare`` draws).

    Parameters
    ----------
    db, experiment:
        The results database and the experiment (name, id, or None for the latest).
    a, b:
        The cells, as :func:`resolve_cell` reads them (``C1``, ``3``, a label or part of one).
    metric:
        A key of :data:`METRICS`.
    """
    if metric not in METRICS:
        raise AnalysisError(f"unknown metric {metric!r}", where="--metric",
                            fix="use one of " + ", ".join(METRICS))
    spec = METRICS[metric]
    fr = frames.load(db, experiment)
    frames.require_finished(fr)
    cells = fr.cell_summary
    first, second = resolve_cell(cells, a), resolve_cell(cells, b)
    if first["cell_id"] == second["cell_id"]:
        raise AnalysisError(f"{a!r} and {b!r} are the same cell ({first['cell_label']})",
                            where="cells", fix="name two different cells")
    ids = (int(first["cell_id"]), int(second["cell_id"]))
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
        y_title = (f"{m.counts} per {interval:g} s" if m.per_minute
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
                  window=(win.start, win.end), bold_runs=bold, log=spec.log)


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
SUFFIXES = (".png", ".html")


def save(fig: go.Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG (through kaleido) or a self-contained HTML file, by suffix.

    Raises
    ------
    AnalysisError
        Another suffix, or the PNG renderer failed (Chromium missing or broken).
    """
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise AnalysisError(f"cannot write a figure as {suffix or 'a file without suffix'!r}",
                            where=str(path), fix="name a .png or .html file")
    if suffix == ".html":
        fig.write_html(path, include_plotlyjs=True, full_html=True,
                       config={"displaylogo": False})
        return path
    with PngExporter(renderers=1) as exporter:
        exporter.submit(fig, path, width=WIDTH, height=fig.layout.height or HEIGHT)
    if exporter.error is not None:
        raise AnalysisError(f"the PNG could not be drawn: {exporter.error}", where=str(path),
                            fix="write .html instead, or check that kaleido's Chromium runs")
    return path
