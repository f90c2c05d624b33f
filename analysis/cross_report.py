"""The report of a comparison across databases (``flushbench report A@X B@Y -o DIR``).

One self-contained HTML page and a PNG per figure, built from
:func:`analysis.crossdb.cross_compare`: the sources (experiment, database, server, hosts,
window), what differs between them, how cells were matched (and which were left out), each
matched cell's throughput and ratio to its own baseline per source, the ratio pooled over
the sources as blocks, and the same cell source against source. Every table and figure names
its sources; each experiment's own report is ``flushbench report NAME --db DB``.
"""

from __future__ import annotations

import datetime as dt
import html
import math
import os
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from analysis import plots
from analysis.crossdb import CrossComparison, Source, cross_compare, sources_table
from analysis.png_export import PngExporter


def _e(value: Any) -> str:
    return html.escape(str(value))


def _n(value: Any, fmt: str = ".2f") -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "–"
    return format(v, fmt) if math.isfinite(v) else "–"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th class='l'>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td class='l'>{c}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def ratio_figure(cross: CrossComparison) -> go.Figure:
    """Per matched cell: each source's ratio to its own baseline (95 % CI) and the pooled one."""
    names = ", ".join(s.label for s in cross.sources)
    fig = plots._figure("Ratio to the baseline, per source and pooled over the sources",
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
                       force: bool = False, png: bool = True) -> Path:
    """Write ``report.html`` (and ``figures/01-ratio-per-source.png``) for several sources."""
    from plotly.offline import get_plotlyjs

    from analysis.report import _CSS

    cross = cross_compare(sources, on=on, pairs=pairs, force=force)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    m = cross.metric_name
    scale = 1.0 if m == "NOTPM" else 1 / 60
    fig = ratio_figure(cross)
    png_note = ""
    if png:
        exporter = PngExporter()
        exporter.submit(fig, out / "figures" / "01-ratio-per-source.png", width=plots.WIDTH,
                        height=int(fig.layout.height or plots.HEIGHT))
        error = exporter.close()
        png_note = (f"<p class='muted'>PNG export failed: {_e(error)}</p>" if error else
                    "<p class='muted'>PNG: <a href='figures/01-ratio-per-source.png'>"
                    "01-ratio-per-source.png</a></p>")
    fig.update_layout(width=None, autosize=True)
    src_rows = [[_e(r["source"]), _e(f"{r['experiment']} (#{r['experiment_id']})"),
                 _e(r["database"]), _e(r["server"]), _e(r["hosts"]), str(r["cells"]),
                 str(r["runs_done"]), _e(r["window"])]
                for _, r in sources_table(cross).iterrows()]
    context = "".join(
        f"<li><code>{_e(k)}</code>: " + "; ".join(f"{_e(v)} in {_e(s)}" for s, v in vs.items())
        + "</li>" for k, vs in cross.context.items())
    matched = "".join(
        f"<li>M{r['match']}: {_e(r['label'])}{' (baseline)' if r['is_baseline'] else ''}</li>"
        for _, r in cross.cells.drop_duplicates("match").iterrows())
    unmatched = "".join(f"<li>{_e(u)}</li>" for u in cross.unmatched) or "<li>none</li>"
    cell_rows = [[f"M{r['match']}", _e(r["source"]), _e(r["cell_label"]), str(r["n_done"]),
                  f"{_n(r['mean'] * scale, ',.0f')} ({_n(r['ci_low'] * scale, ',.0f')} – "
                  f"{_n(r['ci_high'] * scale, ',.0f')})",
                  "–" if r["is_baseline"] else
                  f"{_n(r['ratio'])}× ({_n(r['ratio_ci_low'])} – {_n(r['ratio_ci_high'])})",
                  _e(r["verdict"]), _n(r["score_median"], ".0f")]
                 for _, r in cross.cells.iterrows()]
    matches = dict(zip(cross.cells["key"], cross.cells["match"], strict=False))
    pooled_rows = [[f"M{matches[r['key']]}", str(r["n_sources"]),
                    "–" if r["verdict"] == "baseline" else
                    f"{_n(r['ratio'])}× ({_n(r['ratio_ci_low'])} – {_n(r['ratio_ci_high'])})",
                    _n(r["p_value"], ".3f"), _e(r["verdict"]), _n(r["heterogeneity_p"], ".3g"),
                    _e(r["verdict_reason"])] for _, r in cross.pooled.iterrows()]
    between_rows = [[f"M{matches[r['key']]}", _e(f"{r['source']} / {r['versus']}"),
                     f"{r['n_other']} vs {r['n_first']}",
                     f"{_n(r['ratio'])}× ({_n(r['ci_low'])} – {_n(r['ci_high'])})",
                     _n(r["p_value"], ".3f"), _e(r["verdict"]), _e(r["reason"])]
                    for _, r in cross.between.iterrows()]
    names = " · ".join(s.label for s in cross.sources)
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = (
        f"<h1>{_e(names)}</h1><p class='sub'>experiments compared across databases · "
        f"generated {generated}</p>"
        f"<h2>Sources</h2>{_table(['source', 'experiment', 'database', 'server', 'hosts', 'cells', 'runs', 'window'], src_rows)}"  # noqa: E501
        + (f"<p>Differs between the sources (not matched on):</p><ul>{context}</ul>"
           if context else "")
        + "<h2>Matching</h2><p class='sub'>Cells matched "
        + ("by hand (<code>--pair</code>)" if pairs else
           f"on {_e(', '.join(cross.on) or 'nothing (one cell each)')}")
        + f".</p><ul>{matched}</ul><p>Left out:</p><ul>{unmatched}</ul>"
        f"<h2>Per source</h2><p class='sub'>{_e(m)} (mean of repetitions, 95% CI) and the "
        "ratio to the source's own baseline with its verdict.</p>"
        + _table(["cell", "source", "configuration", "runs", f"{m} (95% CI)",
                  "ratio (95% CI)", "verdict", "stability"], cell_rows)
        + f"<div class='figure'>{fig.to_html(full_html=False, include_plotlyjs=False, div_id='fig-01-ratio-per-source', config={'displaylogo': False, 'responsive': True})}{png_note}</div>"  # noqa: E501
        + "<h2>Pooled over the sources</h2><p class='sub'>Each source is a block, as hosts are "
        "for a spread experiment: the ratio to the baseline within each source, pooled with "
        "inverse-variance weights, van Elteren's stratified rank test; Cochran's Q p below "
        f"0.05 says the sources disagree ({_e(names)}).</p>"
        + _table(["cell", "sources", "ratio (95% CI)", "p", "verdict", "Cochran's Q p",
                  "why"], pooled_rows)
        + f"<h2>The same cell, source against {_e(cross.sources[0].label)}</h2>"
        + _table(["cell", "sources", "runs", "ratio (95% CI)", "p", "verdict", "why"],
                 between_rows)
        + "<h2>Warnings</h2><ul>" + ("".join(f"<li>{_e(w)}</li>" for w in cross.warnings)
                                     or "<li>none</li>") + "</ul>")
    page = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(names)} — flushbench report</title><style>{_CSS}</style>"
            f"<script type='text/javascript'>{get_plotlyjs()}</script></head>"
            f"<body><main>{body}</main></body></html>")
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
