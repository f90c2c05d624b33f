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
from analysis.report_folder import ReportFolder
from analysis.report_html import esc, generated_at, html_page, table
from core.units import format_number as number

#: The one figure's name (its PNG file and its div id).
_FIGURE = "01-ratio-per-source"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """A table with every column left-aligned (sources and cells are words here)."""
    return table(headers, rows, left=len(headers))


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
    fig.update_xaxes(type="log", title="ratio to the baseline (log scale)")
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
    by the report folder's rules (:mod:`analysis.report_folder`; ``overwrite`` and
    ``problems`` as in :func:`analysis.report.write_report`)."""
    cross = cross_compare(sources, on=on, pairs=pairs, force=force)
    with ReportFolder(out_dir, png=png, overwrite=overwrite) as folder:
        folder.check_figures([_FIGURE])
        fig = ratio_figure(cross)
        written, error = _export_png(fig, folder) if png else ([], None)
        if error and problems is not None:
            problems.append(f"{error}; report.html is complete without its PNG")
        png_note = "" if not png else (
            f"<p class='muted'>PNG export failed: {esc(error)}</p>" if error else
            f"<p class='muted'>PNG: <a href='figures/{_FIGURE}.png'>{_FIGURE}.png</a></p>")
        fig.update_layout(width=None, autosize=True)
        div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{_FIGURE}",
                          config={"displaylogo": False, "responsive": True})
        names = " · ".join(s.label for s in cross.sources)
        body = (f"<h1>{esc(names)}</h1><p class='sub'>experiments compared across databases"
                f" · generated {generated_at()}</p>"
                + _sources_part(cross) + _matching_part(cross, pairs) + _per_source_part(cross)
                + f"<div class='figure'>{div}{png_note}</div>"
                + _pooled_part(cross, names) + _between_part(cross)
                + "<h2>Warnings</h2><ul>"
                + ("".join(f"<li>{esc(w)}</li>" for w in cross.warnings) or "<li>none</li>")
                + "</ul>")
        return folder.commit(html_page(names, body, browser_hooks=False), written,
                             complete=error is None)


def _export_png(fig: go.Figure, folder: ReportFolder) -> tuple[list[Path], str | None]:
    """Draw the figure's PNG into the folder's staging folder: what was drawn, and the
    error (None when it was)."""
    exporter = PngExporter()
    exporter.submit(fig, folder.staged_png(_FIGURE), width=plots.WIDTH,
                    height=int(fig.layout.height or plots.HEIGHT))
    error = exporter.close()
    return list(exporter.written), error


def _sources_part(cross: CrossComparison) -> str:
    """The sources (experiment, database, server, hosts, window) and what differs."""
    rows = [[esc(r["source"]), esc(f"{r['experiment']} (#{r['experiment_id']})"),
             esc(r["database"]), esc(r["server"]), esc(r["hosts"]), str(r["cells"]),
             str(r["runs_done"]), esc(r["window"])]
            for _, r in sources_table(cross).iterrows()]
    context = "".join(
        f"<li><code>{esc(k)}</code>: " + "; ".join(f"{esc(v)} in {esc(s)}" for s, v in vs.items())
        + "</li>" for k, vs in cross.context.items())
    return ("<h2>Sources</h2>"
            + _table(["source", "experiment", "database", "server", "hosts", "cells", "runs",
                      "window"], rows)
            + (f"<p>Differs between the sources (not matched on):</p><ul>{context}</ul>"
               if context else ""))


def _matching_part(cross: CrossComparison, pairs: list[list[int]] | None) -> str:
    """How the cells were matched, the matched cells and those left out."""
    matched = "".join(
        f"<li>M{r['match']}: {esc(r['label'])}{' (baseline)' if r['is_baseline'] else ''}</li>"
        for _, r in cross.cells.drop_duplicates("match").iterrows())
    unmatched = "".join(f"<li>{esc(u)}</li>" for u in cross.unmatched) or "<li>none</li>"
    return ("<h2>Matching</h2><p class='sub'>Cells matched "
            + ("by hand (<code>--pair</code>)" if pairs else
               f"on {esc(', '.join(cross.on) or 'nothing (one cell each)')}")
            + f".</p><ul>{matched}</ul><p>Left out:</p><ul>{unmatched}</ul>")


def _ratio(ratio: object, low: object, high: object) -> str:
    """``1.17× (1.04 – 1.31)``."""
    return f"{number(ratio, '.2f')}× ({number(low, '.2f')} – {number(high, '.2f')})"


def _per_source_part(cross: CrossComparison) -> str:
    """Each matched cell in each source: throughput and ratio to the source's baseline."""
    m = cross.metric_name
    scale = 1.0 if m == "NOTPM" else 1 / 60
    rows = [[f"M{r['match']}", esc(r["source"]), esc(r["cell_label"]), str(r["n_done"]),
             f"{number(r['mean'] * scale)} ({number(r['ci_low'] * scale)} – "
             f"{number(r['ci_high'] * scale)})",
             "–" if r["is_baseline"] else _ratio(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
             esc(r["verdict"]), number(r["score_median"], ".0f")]
            for _, r in cross.cells.iterrows()]
    return (f"<h2>Per source</h2><p class='sub'>{esc(m)} (mean of repetitions, 95% CI) and the "
            "ratio to the source's own baseline with its verdict.</p>"
            + _table(["cell", "source", "configuration", "runs", f"{m} (95% CI)",
                      "ratio (95% CI)", "verdict", "stability"], rows))


def _pooled_part(cross: CrossComparison, names: str) -> str:
    """The ratio to the baseline pooled over the sources as blocks, and whether they agree."""
    matches = dict(zip(cross.cells["key"], cross.cells["match"], strict=False))
    rows = [[f"M{matches[r['key']]}", str(r["n_sources"]),
             "–" if r["verdict"] == "baseline" else
             _ratio(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
             number(r["p_value"], ".3f"), esc(r["verdict"]), number(r["heterogeneity_p"], ".3g"),
             esc(r["verdict_reason"])] for _, r in cross.pooled.iterrows()]
    return ("<h2>Pooled over the sources</h2><p class='sub'>Each source is a block, as hosts are "
            "for a spread experiment: the ratio to the baseline within each source, pooled with "
            "inverse-variance weights, van Elteren's stratified rank test; Cochran's Q p below "
            f"0.05 says the sources disagree ({esc(names)}).</p>"
            + _table(["cell", "sources", "ratio (95% CI)", "p", "verdict", "Cochran's Q p",
                      "why"], rows))


def _between_part(cross: CrossComparison) -> str:
    """The same cell in each source against the first source."""
    matches = dict(zip(cross.cells["key"], cross.cells["match"], strict=False))
    rows = [[f"M{matches[r['key']]}", esc(f"{r['source']} / {r['versus']}"),
             f"{r['n_other']} vs {r['n_first']}", _ratio(r["ratio"], r["ci_low"], r["ci_high"]),
             number(r["p_value"], ".3f"), esc(r["verdict"]), esc(r["reason"])]
            for _, r in cross.between.iterrows()]
    return (f"<h2>The same cell, source against {esc(cross.sources[0].label)}</h2>"
            + _table(["cell", "sources", "runs", "ratio (95% CI)", "p", "verdict", "why"], rows))
