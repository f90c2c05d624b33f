"""The report's cross-server part: each server against one reference row, as a figure and a
table (:mod:`analysis.comparisons.cross_server`), for an experiment with a server axis.

Every other table of the report compares a row with its own server's baseline; this part
answers the question such an experiment is run for — how the servers compare with each other —
and names the reference row in its heading, figure title, axis and table.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from analysis.comparisons.cross_server import CrossServer, cross_server, starts_range
from analysis.comparisons.row_compare import resolve_cell
from analysis.figures import plots
from analysis.report.figures import FigureList
from analysis.report.model import Heading, Paragraph, ReportData, Section, Value, muted, rich
from analysis.report.sections import table, verdict_span
from core.units import format_number as number


def server_figure(cross: CrossServer, labels: dict[int, str], colours: dict[int, str],
                  *, throughput: str = "NOTPM") -> go.Figure:
    """One dot per server at its throughput over the reference row's, with the 95 % interval
    as whiskers and a line at 1 (the reference); servers top to bottom in row order."""
    ref = labels[cross.reference_id]
    fig = plots.titled_figure(f"Each server against {ref}: {throughput} ratio",
                              "dot: mean over repetitions ÷ the reference's · whiskers: 95 % CI"
                              " (the one verdict rule) · each server's baseline row")
    rows = cross.rows.iloc[::-1]  # plotly draws the first category at the bottom
    for _, r in rows.iterrows():
        cell_id = int(r["cell_id"])
        name = f"{r['server']} · {labels[cell_id]}"
        has_ci = math.isfinite(r["ci_low"]) and math.isfinite(r["ci_high"])
        fig.add_trace(go.Scatter(
            x=[r["ratio"]], y=[name], mode="markers", name=labels[cell_id], showlegend=False,
            marker=dict(size=12, color=colours.get(cell_id, plots.BASELINE_COLOUR)),
            meta=plots.cell_meta(cell_id),
            error_x=dict(type="data", symmetric=False, array=[r["ci_high"] - r["ratio"]],
                         arrayminus=[r["ratio"] - r["ci_low"]], thickness=2, width=6)
            if has_ci else None,
            hovertemplate=f"{name}: %{{x:.2f}}× {r['verdict']}<extra></extra>"))
    fig.add_vline(x=1.0, line=dict(color="#888", width=1, dash="dash"))
    highs = [v for v in (*cross.rows["ci_high"], *cross.rows["ratio"]) if np.isfinite(v)]
    lows = [v for v in (*cross.rows["ci_low"], *cross.rows["ratio"]) if np.isfinite(v)]
    span = max(highs) - min(lows)
    fig.update_xaxes(title_text=f"{throughput} ÷ {ref}'s (1 = the reference)",
                     range=[max(0.0, min(lows) - 0.1 * span), max(highs) + 0.1 * span],
                     tickformat=".2f", nticks=8)
    fig.update_yaxes(title_text="", automargin=True, type="category")
    fig.update_layout(height=max(300, 160 + 48 * len(rows)), hovermode="closest")
    return fig


def server_section(d: ReportData, figs: FigureList, names: dict[int, str],
                   reference: str | None = None) -> Section:
    """The cross-server figure and table (empty for an experiment with fewer than two
    servers): each server's baseline row against ``reference`` (a row as ``plot compare``
    names it: its name, ``C3``, its label; default: the first baseline), named throughout."""
    cells = d.cmp.cells
    ref_id = None
    if reference is not None:
        ref_id = int(resolve_cell(cells, reference, names)["cell_id"])
    cross = cross_server(d.cmp, d.latency.cells, d.efficiency.ledger_cells, reference=ref_id)
    if cross is None:
        return []
    labels = {int(c): names.get(int(c)) or str(lbl)
              for c, lbl in zip(cells["cell_id"], cells["cell_label"], strict=True)}
    ref = labels[cross.reference_id]
    m = d.metric
    unit = "New-Order" if m.per_minute else "transaction"
    lat = d.latency.view.name if d.latency.view.percentile else "p99"
    fig = server_figure(cross, labels, plots.cell_colours(cells), throughput=m.name)
    rows = []
    for _, r in cross.rows.iterrows():
        is_ref = r["verdict"] == "reference"
        ci = (f" ({r['ci_low']:.2f}–{r['ci_high']:.2f})"
              if math.isfinite(r["ci_low"]) else "")
        rows.append([
            rich(Value(r["server"])), rich(Value(labels[int(r["cell_id"])])),
            rich(number(m.of(r["notpm"]), ",.0f")),
            rich(muted("reference")) if is_ref else
            rich(f"{r['ratio']:.2f}×{ci} ", verdict_span(str(r["verdict"])), starts_range(r)),
            rich(number(r["stability"], ".0f")), rich(number(r["latency_ms"], ",.0f")),
            rich(number(r["write_kib"], ",.1f")),
        ])
    return [
        Heading(2, (f"Each server against {ref}",), anchor="servers"),
        Paragraph((f"Every other table compares a row with its own server's baseline; here each"
                   f" server's baseline row is compared with {ref}"
                   + (" (the experiment's first baseline)" if reference is None else "")
                   + " by the same verdict rule (docs/statistics.md); \"starts\" gives the"
                   " ratio wherever the runs' windows could start, and a verdict that changes"
                   " there is window-dependent.",)),
        figs.add("servers", fig),
        table(["server", "row", m.name, f"÷ {ref}'s (95 % CI, verdict)", "stability score",
               f"{lat} ms", f"KiB written per {unit}"], rows, left=2),
    ]
