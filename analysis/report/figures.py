"""The figures of an experiment's report, numbered in page order.

:class:`FigureList` collects the figures while the model is built: each ``add`` names the
figure ``NN-kind`` (its PNG file and its div id), hands it to the PNG renderers at once, and
returns the :class:`~analysis.report.model.Figure` block that stands for it in a section. The
functions below draw each part's figures (:mod:`analysis.figures.plots`,
:mod:`analysis.figures.small_multiples`, :mod:`analysis.figures.distributions`); the sections around
them are :mod:`analysis.report.sections`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go

from analysis.comparisons.compare import Comparison
from analysis.figures import distributions, plots, small_multiples
from analysis.reading.metric import MetricView
from analysis.report.model import Figure, ReportFigure
from analysis.response import latency
from analysis.tables import io_breakdown
from analysis.tables.frames import varying_knobs

if TYPE_CHECKING:
    from analysis.report.model import ReportData

#: Most panels a small-multiples figure draws (cells in the experiment's row order).
MAX_PANELS = 16

_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


class FigureList:
    """Collects the figures in page order while the model is built.

    ``add`` returns the :class:`~analysis.report.model.Figure` block that stands for it in a
    section; ``on_figure`` (optional) hears of each figure as soon as it is final, so
    the PNG export can start drawing while the rest of the model is built.
    """

    def __init__(self, on_figure: Callable[[ReportFigure], None] | None = None) -> None:
        self.items: list[ReportFigure] = []
        self._on_figure = on_figure

    def add(self, name: str, fig: go.Figure | plots.FigureSpec) -> Figure:
        """Register a figure; return the block that stands for it in the page."""
        item = ReportFigure(f"{len(self.items) + 1:02d}-{name}", fig)
        self.items.append(item)
        if self._on_figure is not None:
            self._on_figure(item)
        return Figure(item.slug)


def display_cells(cells: pd.DataFrame, names: dict[int, str]) -> pd.DataFrame:
    """The cells with each row's own name as its label where it has one (``dw-on-50``), for
    the figures that put configurations on an axis; the tables keep the full label."""
    if not names:
        return cells
    return cells.assign(cell_label=[names.get(int(c), label) for c, label
                                    in zip(cells["cell_id"], cells["cell_label"], strict=True)])


def plain_named(label: str, name: str | None) -> str:
    """A cell's label after the row's own short name, as plain text (figure subtitles)."""
    return f"{name} · {label}" if name and str(name) != str(label) else str(label)


def primary(cmp: Comparison) -> str:
    """What the driver's primary count is: New-Orders (TPC-C) or transactions (sysbench)."""
    counts = cmp.experiment["metric"]["counts"]  # stored at enqueue from the workload adapter
    return counts[:1].upper() + counts[1:]


def throughput_kwargs(cmp: Comparison, m: MetricView) -> dict[str, Any]:
    """Per-interval throughput figure arguments in the experiment's metric."""
    interval = cmp.experiment["window"].report_interval
    if m.per_minute:  # counts per interval, as the 2011 graphs showed New-Orders per 10 s
        return {"title": f"{primary(cmp)} per {interval:g} s",
                "unit": primary(cmp).split(" ")[0]}
    return {"title": f"{m.name} per {interval:g} s interval", "column": m.column,
            "y_title": f"{m.name} ({m.unit})"}


def overview(d: ReportData, figs: FigureList, names: dict[int, str]) -> list[Figure]:
    """The experiment-wide figures: throughput bars and distributions, stability, small
    multiples (panels titled with the rows' own ``names`` where the experiment gives them),
    heatmaps (factorial designs only), the thread sweep."""
    cmp, metric = d.cmp, d.metric
    cells = display_cells(cmp.cells, names)  # the rows' own names on the category axes
    rs = cmp.frames.run_summary
    # Figure names (files, ids) follow the metric: a sysbench report has no "notpm" in it.
    slug = metric.name.lower()
    out = [figs.add(slug, plots.notpm_bars(
        cells, unit=metric.name, scale=metric.scale,
        title=f"Throughput per configuration ({metric.name}, window average)"))]
    cell_ivl = cmp.frames.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")
    out.append(figs.add(f"{slug}-distribution", distributions.interval_boxes(
        cell_ivl, cells, column=metric.column, unit=metric.name)))
    out.append(figs.add("stability", distributions.stability_runs(rs, cells)))
    out += _small_multiples(cmp, figs, d.reps, d.smp, metric, names)
    knobs = varying_knobs(rs)
    # Heatmaps only where every tile is a measured cell: a two-knob factorial design.
    if plots.is_factorial(cells, knobs):
        out.append(figs.add("stability-heatmap",
                            plots.stability_heatmap(cells, knobs[0], knobs[1])))
        out.append(figs.add(f"{slug}-heatmap", plots.stability_heatmap(
            metric.scaled(cells), knobs[0], knobs[1], value="notpm_mean", label=metric.name,
            title=f"{metric.name} by {knobs[0]} and {knobs[1]}")))
    if "connections" in knobs and "allocator" in knobs:
        out.append(figs.add("threads", plots.threads_sweep(
            cells, unit=metric.name, scale=metric.scale,
            title=f"{metric.name} vs client threads per allocator")))
    return out


def _small_multiples(cmp: Comparison, figs: FigureList, reps: dict[int, int],
                     smp: pd.DataFrame, metric: MetricView, names: dict[int, str]
                     ) -> list[Figure]:
    """One panel per cell, in row order: throughput of every run, and the representative
    run's checkpoint age and dirty pages (when the server reported them)."""
    rs = cmp.frames.run_summary
    cells = cmp.cells.sort_values("position").head(MAX_PANELS)
    cells = cells.assign(row_name=cells["cell_id"].astype(int).map(names))
    win = cmp.experiment["window"]
    ivl = cmp.frames.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")
    ivl = ivl[ivl["cell_id"].isin(cells["cell_id"])]
    if ivl.empty:
        return []
    more = f" (the first {MAX_PANELS} of {len(cmp.cells)} cells)" if len(cmp.cells) > \
        MAX_PANELS else ""
    unit = throughput_kwargs(cmp, metric).get("unit", "transactions")
    out = [figs.add("throughput-per-cell", small_multiples.throughput_grid_spec(
        ivl, cells, window=(win.start, win.end), unit=unit, bold_runs=reps,
        subtitle="every repetition thin, the representative run bold, the measurement window"
                 f" shaded{more}"))]
    if not smp.empty and smp["checkpoint_age_pct"].notna().any():
        out.append(figs.add("checkpoint-per-cell", small_multiples.checkpoint_grid_spec(
            smp, cells, reps, window=(win.start, win.end),
            title="Checkpoint age and dirty pages per cell (representative run)")))
    return out


def cell_figures(cmp: Comparison, figs: FigureList, cell: pd.Series, runs: pd.DataFrame,
                 rep_run: int | None, run_smp: pd.DataFrame, cell_int: pd.DataFrame, *,
                 metric: MetricView, window: tuple[float, float], name: str | None,
                 memory_figures: bool) -> list[Figure]:
    """One configuration's figures: every repetition's throughput (``cell_int``), then the
    representative run's (``run_smp``) checkpoint age and dirty pages, flushing and (when
    memory matters) memory."""
    out = []
    cell_id = int(cell["cell_id"])
    if len(cell_int):
        labels = {int(r["run_id"]): f"#{int(r['repetition'])}"
                  for _, r in runs.sort_values("repetition").iterrows()}
        out.append(figs.add(f"throughput-cell{cell_id}", plots.throughput_spec(
            cell_int, labels=labels, window=window, **throughput_kwargs(cmp, metric),
            subtitle=f"{plain_named(cell['cell_label'], name)} · every repetition",
        )))
    if len(run_smp) and run_smp["checkpoint_age_mb"].notna().any():
        sub = f"{plain_named(cell['cell_label'], name)} · run {rep_run} (median repetition)"
        out.append(figs.add(f"checkpoint-dirty-cell{cell_id}",
                            plots.checkpoint_dirty_spec(run_smp, subtitle=sub, window=window)))
        if "pages_flushed_per_s" in run_smp and run_smp["pages_flushed_per_s"].notna().any():
            out.append(figs.add(f"flushing-cell{cell_id}",
                                plots.flushing_spec(run_smp, subtitle=sub,
                                                    window=window)))
        if memory_figures and run_smp["rss_mb"].notna().any():
            out.append(figs.add(f"memory-cell{cell_id}", plots.memory(
                run_smp, subtitle=sub, window=window)))
    return out


def latency_figures(d: ReportData, figs: FigureList, names: dict[int, str]) -> list[Figure]:
    """The percentile over time per cell (small multiples) and its spread per cell."""
    lat, cmp = d.latency, d.cmp
    v = lat.view
    rs = cmp.frames.run_summary
    cells = cmp.cells.sort_values("position").head(MAX_PANELS)
    cells = cells.assign(row_name=cells["cell_id"].astype(int).map(names))
    ivl = cmp.frames.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")
    if ivl.empty:
        return []
    who = "New-Order " if d.metric.per_minute else ""
    win = cmp.experiment["window"]
    dashed = "p95_ms" if v.percentile == 99 and ivl["p95_ms"].notna().any() else None
    more = f" (the first {MAX_PANELS} of {len(cmp.cells)} cells)" if len(cmp.cells) > \
        MAX_PANELS else ""
    grid = small_multiples.latency_grid_spec(
        ivl[ivl["cell_id"].isin(cells["cell_id"])], cells, window=(win.start, win.end),
        column=v.column, dashed=dashed, name=f"{who}{v.name}", bold_runs=d.reps,
        stalls=latency.stall_spans(ivl, v.column, list(d.reps.values())),
        subtitle=f"the driver's {v.name} per interval, log axis · every repetition thin, the"
                 " representative run bold" + (" (its p95 dashed)" if dashed else "")
                 + " · shaded: the window; red: its stall intervals" + more)
    boxes = distributions.latency_boxes_spec(
        ivl, display_cells(cmp.cells, names), lat.runs["value_ms"], column=v.column,
        name=f"{who}{v.name}", run_value_text=f"each run's window {v.name}"
        + (" (merged, waits included)" if v.exact
           else " (median of its intervals, at least what its stalls prove)"))
    return [figs.add("latency-per-cell", grid), figs.add("latency-distribution", boxes)]


def io_figure(figs: FigureList, table: pd.DataFrame, unit: str, shown: dict[str, str]) -> Figure:
    """What each transaction wrote per configuration; ``shown`` renames a configuration
    label on the axis (the row's own name)."""
    return figs.add("io-per-transaction", io_breakdown.figure(
        table.rename(index=lambda label: shown.get(label, label)), unit=unit))


def rss_figure(cmp: Comparison, figs: FigureList, reps: dict[int, int], smp: pd.DataFrame,
               names: dict[int, str]) -> Figure | None:
    """RSS per configuration over time (median repetitions), each line in its row's colour
    (:func:`analysis.figures.plots.cell_colours`, as in every figure) and dashed by one varying knob
    (the allocator where it varies); the legend names a row by its own name where it has
    one. None when no configuration has a representative run or there are no samples."""
    win = cmp.experiment["window"]
    colour_of = plots.cell_colours(cmp.cells)
    cells = cmp.cells.set_index("cell_id")
    knobs = varying_knobs(cmp.frames.run_summary)
    dash_knob = "allocator" if "allocator" in knobs else (knobs[0] if knobs else None)

    def level(value: Any) -> Any:
        # A knob set in some rows only is NaN (or None) in the others: one "unset" level, as
        # NaN equals nothing, itself included.
        return None if value is None or (isinstance(value, float) and math.isnan(value)) \
            else value

    dashes = [] if dash_knob is None else sorted(
        {level(cells.loc[c, dash_knob]) for c in cells.index}, key=lambda v: (str(type(v)), v))
    labels, colours, dash_of, cell_of = {}, {}, {}, {}
    # Legend in the experiment's row order.
    for cell_id in cells.sort_values("position").index:
        if cell_id not in reps:
            continue
        run_id = reps[cell_id]
        cell = cells.loc[cell_id]
        labels[run_id] = names.get(int(cell_id), str(cell["cell_label"]))
        colours[run_id], cell_of[run_id] = colour_of[int(cell_id)], int(cell_id)
        if dash_knob is not None:
            dash_of[run_id] = _DASHES[dashes.index(level(cell[dash_knob])) % len(_DASHES)]
    if not (labels and len(smp)):
        return None
    sub = "median repetition of each configuration · colour: the configuration"
    if dash_knob:
        sub += f" · dash: {dash_knob}"
    return figs.add("rss-over-time", plots.rss_over_time(
        smp, labels=labels, colors=colours, dashes=dash_of, cell_of=cell_of, subtitle=sub,
        window=(win.start, win.end)))
