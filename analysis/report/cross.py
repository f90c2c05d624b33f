"""The report of a comparison across databases (``flushbench report A@X B@Y -o DIR``).

One self-contained HTML page and a PNG per figure, built from
:func:`analysis.comparisons.crossdb.cross_compare`: the sources (experiment, database, server,
hosts, window), what differs between them, how cells were matched (and which were left out), each
matched cell's throughput and ratio to its own baseline per source, the ratio pooled over
the sources as blocks, and the same cell source against source. Every table and figure names
its sources; each experiment's own report is ``flushbench report NAME --db DB``.
"""

from __future__ import annotations

import os
from pathlib import Path

import plotly.graph_objects as go

from analysis.comparisons.crossdb import CrossComparison, Source, cross_compare, sources_table
from analysis.figures import plots
from analysis.figures.png_export import PngExporter
from analysis.report.folder import ReportFolder
from analysis.report.model import (
    Bullets,
    Figure,
    Heading,
    Link,
    Paragraph,
    Rich,
    Section,
    Table,
    Value,
    code,
    rich,
)
from analysis.report.render import cross_page
from core.units import format_number as number

#: The one figure's name (its PNG file and its div id).
_FIGURE = "01-ratio-per-source"


def _table(headers: list[str], rows: list[list[Rich]]) -> Table:
    """A table with every column left-aligned (sources and cells are words here)."""
    return Table(tuple(headers), tuple(tuple(r) for r in rows), left=len(headers))


def ratio_figure(cross: CrossComparison) -> go.Figure:
    """Per matched cell: each source's ratio to its own baseline (95 % CI) and the pooled one."""
    names = ", ".join(s.label for s in cross.sources)
    fig = plots.titled_figure("Ratio to the baseline, per source and pooled over the sources",
                        f"sources: {names}; 95% CIs")
    first = cross.cells.drop_duplicates("match")
    order = [f"M{m} {label}" for m, label in first[["match", "label"]].itertuples(index=False)]
    row = {k: i for i, k in enumerate(first["key"])}
    # Numeric rows, each source nudged apart, so equal ratios of two sources stay visible.
    step = 0.5 / (len(cross.sources) + 1)
    for i, src in enumerate(cross.sources):
        part = cross.cells[(cross.cells["source"] == src.label) & ~cross.cells["is_baseline"]]
        fig.add_trace(go.Scatter(
            x=part["ratio"], y=[row[k] - 0.25 + step * (i + 1) for k in part["key"]],
            mode="markers", name=src.label,
            marker=dict(color=plots.CELL_COLOURS[i % len(plots.CELL_COLOURS)], size=10),
            error_x=dict(type="data", symmetric=False,
                         array=(part["ratio_ci_high"] - part["ratio"]).fillna(0),
                         arrayminus=(part["ratio"] - part["ratio_ci_low"]).fillna(0))))
    pooled = cross.pooled[cross.pooled["verdict"] != "baseline"]
    if len(pooled):
        fig.add_trace(go.Scatter(
            x=pooled["ratio"], y=[row[k] + 0.3 for k in pooled["key"]], mode="markers",
            name="pooled over the sources", marker=dict(symbol="diamond", size=12,
                                                         color=plots.BASELINE_COLOUR),
            error_x=dict(type="data", symmetric=False,
                         array=(pooled["ratio_ci_high"] - pooled["ratio"]).fillna(0),
                         arrayminus=(pooled["ratio"] - pooled["ratio_ci_low"]).fillna(0))))
    fig.add_vline(x=1, line=dict(color="#555555", width=1))
    shown = cross.cells[~cross.cells["is_baseline"]]
    fig.update_xaxes(title="ratio to the baseline (log scale)", **plots.log_axis(
        [shown[c] for c in ("ratio", "ratio_ci_low", "ratio_ci_high")]
        + [pooled[c] for c in ("ratio", "ratio_ci_low", "ratio_ci_high")]))
    fig.update_yaxes(autorange="reversed", tickvals=list(range(len(order))), ticktext=order,
                     zeroline=False)
    fig.update_layout(height=max(340, 170 + 48 * len(order)), margin=dict(t=120),
                      title=dict(y=1, yanchor="top", pad=dict(t=34)),  # two lines: not cut off
                      legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0))
    return fig


def write_cross_report(sources: list[Source], out_dir: str | os.PathLike[str], *,
                       on: list[str] | None = None, pairs: list[list[int]] | None = None,
                       force: bool = False, png: bool = True, overwrite: bool = False,
                       problems: list[str] | None = None) -> Path:
    """Write ``report.html`` (and ``figures/01-ratio-per-source.png``) for several sources,
    by the report folder's rules (:mod:`analysis.report.folder`; ``overwrite`` and
    ``problems`` as in :func:`analysis.report.writer.write_report`). The page is typed blocks
    drawn by :func:`analysis.report.render.cross_page`."""
    cross = cross_compare(sources, on=on, pairs=pairs, force=force)
    with ReportFolder(out_dir, png=png, overwrite=overwrite) as folder:
        folder.check_figures([_FIGURE])
        fig = ratio_figure(cross)
        written, error = _export_png(fig, folder) if png else ([], None)
        if error and problems is not None:
            problems.append(f"{error}; report.html is complete without its PNG")
        png_note = None if not png else (
            Paragraph(("PNG export failed: ", Value(error)), "muted") if error else
            Paragraph(("PNG: ", Link(f"figures/{_FIGURE}.png", (f"{_FIGURE}.png",))), "muted"))
        names = " · ".join(s.label for s in cross.sources)
        blocks: Section = [
            *_sources_part(cross), *_matching_part(cross, pairs), *_per_source_part(cross),
            Figure(_FIGURE), *_pooled_part(cross, names), *_between_part(cross),
            Heading(2, ("Warnings",)),
            Bullets(tuple((Value(w),) for w in cross.warnings) or (("none",),)),
        ]
        page = cross_page(names, "experiments compared across databases", blocks,
                          {_FIGURE: fig}, png_note)
        return folder.commit(page, written, complete=error is None)


def _export_png(fig: go.Figure, folder: ReportFolder) -> tuple[list[Path], str | None]:
    """Draw the figure's PNG into the folder's staging folder: what was drawn, and the
    error (None when it was)."""
    exporter = PngExporter()
    exporter.submit(fig, folder.staged_png(_FIGURE), width=plots.WIDTH,
                    height=int(fig.layout.height or plots.HEIGHT))
    error = exporter.close()
    return list(exporter.written), error


def _sources_part(cross: CrossComparison) -> Section:
    """The sources (experiment, database, server, hosts, window) and what differs."""
    rows: list[list[Rich]] = [
        [(Value(r["source"]),), (Value(f"{r['experiment']} (#{r['experiment_id']})"),),
         (Value(r["database"]),), (Value(r["server"]),), (Value(r["hosts"]),),
         (str(r["cells"]),), (str(r["runs_done"]),), (Value(r["window"]),)]
        for _, r in sources_table(cross).iterrows()]
    context = tuple(
        rich(code(Value(k)), ": ",
             *[rich("; " if i else "", Value(v), " in ", Value(s))
               for i, (s, v) in enumerate(vs.items())])
        for k, vs in cross.context.items())
    return [Heading(2, ("Sources",)),
            _table(["source", "experiment", "database", "server", "hosts", "cells", "runs",
                    "window"], rows),
            *([Paragraph(("Differs between the sources (not matched on):",)), Bullets(context)]
              if context else [])]


def _matching_part(cross: CrossComparison, pairs: list[list[int]] | None) -> Section:
    """How the cells were matched, the matched cells and those left out."""
    matched = tuple(
        (f"M{r['match']}: ", Value(r["label"]), " (baseline)" if r["is_baseline"] else "")
        for _, r in cross.cells.drop_duplicates("match").iterrows())
    unmatched = tuple((Value(u),) for u in cross.unmatched) or (("none",),)
    how: Rich = (("by hand (", code("--pair"), ")") if pairs else
                 ("on ", Value(", ".join(cross.on) or "nothing (one cell each)")))
    return [Heading(2, ("Matching",)), Paragraph(rich("Cells matched ", how, "."), "sub"),
            Bullets(tuple(rich(*m) for m in matched)), Paragraph(("Left out:",)),
            Bullets(unmatched)]


def _ratio(ratio: object, low: object, high: object) -> str:
    """``1.17× (1.04 – 1.31)``."""
    return f"{number(ratio, '.2f')}× ({number(low, '.2f')} – {number(high, '.2f')})"


def _per_source_part(cross: CrossComparison) -> Section:
    """Each matched cell in each source: throughput and ratio to the source's baseline."""
    m = cross.metric_name
    scale = 1.0 if m == "NOTPM" else 1 / 60
    rows: list[list[Rich]] = [
        [(f"M{r['match']}",), (Value(r["source"]),), (Value(r["cell_label"]),),
         (str(r["n_done"]),),
         (f"{number(r['mean'] * scale)} ({number(r['ci_low'] * scale)} – "
          f"{number(r['ci_high'] * scale)})",),
         ("–" if r["is_baseline"] else
          _ratio(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),),
         (Value(r["verdict"]),), (number(r["score_median"], ".0f"),)]
        for _, r in cross.cells.iterrows()]
    return [Heading(2, ("Per source",)),
            Paragraph((Value(m), " (mean of repetitions, 95% CI) and the ratio to the source's"
                       " own baseline with its verdict."), "sub"),
            _table(["cell", "source", "configuration", "runs", f"{m} (95% CI)",
                    "ratio (95% CI)", "verdict", "stability"], rows)]


def _pooled_part(cross: CrossComparison, names: str) -> Section:
    """The ratio to the baseline pooled over the sources as blocks, and whether they agree."""
    matches = dict(zip(cross.cells["key"], cross.cells["match"], strict=False))
    rows: list[list[Rich]] = [
        [(f"M{matches[r['key']]}",), (str(r["n_sources"]),),
         ("–" if r["verdict"] == "baseline" else
          _ratio(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),),
         (number(r["p_value"], ".3f"),), (Value(r["verdict"]),),
         (number(r["heterogeneity_p"], ".3g"),), (Value(r["verdict_reason"]),)]
        for _, r in cross.pooled.iterrows()]
    return [Heading(2, ("Pooled over the sources",)),
            Paragraph(("Each source is a block, as hosts are for a spread experiment: the ratio"
                       " to the baseline within each source, pooled with inverse-variance"
                       " weights, van Elteren's stratified rank test; Cochran's Q p below 0.05"
                       " says the sources disagree (", Value(names), ")."), "sub"),
            _table(["cell", "sources", "ratio (95% CI)", "p", "verdict", "Cochran's Q p",
                    "why"], rows)]


def _between_part(cross: CrossComparison) -> Section:
    """The same cell in each source against the first source."""
    matches = dict(zip(cross.cells["key"], cross.cells["match"], strict=False))
    rows: list[list[Rich]] = [
        [(f"M{matches[r['key']]}",), (Value(f"{r['source']} / {r['versus']}"),),
         (f"{r['n_other']} vs {r['n_first']}",),
         (_ratio(r["ratio"], r["ci_low"], r["ci_high"]),), (number(r["p_value"], ".3f"),),
         (Value(r["verdict"]),), (Value(r["reason"]),)]
        for _, r in cross.between.iterrows()]
    return [Heading(2, ("The same cell, source against ", Value(cross.sources[0].label))),
            _table(["cell", "sources", "runs", "ratio (95% CI)", "p", "verdict", "why"], rows)]
