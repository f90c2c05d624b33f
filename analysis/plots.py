"""Plotly figures styled for a blog post (the 2011 study's graphs, made readable).

Every function takes DataFrames from :mod:`analysis.frames` / :mod:`analysis.compare` and
returns a ``plotly.graph_objects.Figure``; nothing here reads the store. Titles say what is
measured, axes carry units, time is minutes since the measurement started (warmup excluded).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

#: Colours that stay distinct in print and for common colour-vision deficiencies (Okabe-Ito).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000"]
CHECKPOINT_COLOR = "#C0392B"  # the 2011 graphs: checkpoint age in red...
DIRTY_COLOR = "#1F5FAD"  # ...dirty pages in blue
FONT = "Inter, 'Helvetica Neue', Helvetica, Arial, sans-serif"
WIDTH, HEIGHT = 1000, 480

TEMPLATE_NAME = "flushbench"


def template() -> str:
    """Register (once) and return the name of the flushbench template.

    plotly_white's layout (no per-trace defaults: they make every figure slower to build),
    larger fonts, a light grid, the legend above the plot. Figures reference it by name, which
    is several times faster than passing the template object to each figure.
    """
    import plotly.io as pio

    if TEMPLATE_NAME not in pio.templates:
        t = go.layout.Template(layout=pio.templates["plotly_white"].layout)
        t.layout.update(
            font=dict(family=FONT, size=14, color="#222"),
            title=dict(font=dict(size=19, color="#111"), x=0.015, xanchor="left",
                       xref="container", y=0.96),
            colorway=PALETTE,
            margin=dict(l=70, r=70, t=90, b=60),
            legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0,
                        font=dict(size=12), bgcolor="rgba(255,255,255,0)"),
            hovermode="x unified",
            xaxis=dict(showline=True, linecolor="#888", ticks="outside", gridcolor="#eee",
                       zeroline=False, title=dict(font=dict(size=14))),
            yaxis=dict(showline=True, linecolor="#888", ticks="outside", gridcolor="#eee",
                       zeroline=False, rangemode="tozero", title=dict(font=dict(size=14))),
            width=WIDTH,
            height=HEIGHT,
        )
        pio.templates[TEMPLATE_NAME] = t
    return TEMPLATE_NAME


def _figure(title: str, subtitle: str | None = None) -> go.Figure:
    fig = go.Figure()
    text = f"{title}<br><span style='font-size:13px;color:#666'>{subtitle}</span>" if (
        subtitle
    ) else title
    fig.update_layout(template=template(), title=dict(text=text))
    return fig


def _shade_window(fig: go.Figure, start_s: float | None, end_s: float | None) -> None:
    if start_s is None or end_s is None:
        return
    fig.add_vrect(x0=start_s / 60, x1=end_s / 60, fillcolor="#888", opacity=0.07, line_width=0,
                  annotation_text="measurement window", annotation_position="top left",
                  annotation_font=dict(size=11, color="#777"), layer="below")


def throughput(
    intervals_df: pd.DataFrame,
    *,
    by: str = "run_id",
    labels: dict[Any, str] | None = None,
    title: str = "New-Order transactions per 10 s",
    subtitle: str | None = None,
    window: tuple[float, float] | None = None,
    unit: str = "New-Orders",
) -> go.Figure:
    """New-Orders per interval over time: one run, all repetitions of a cell, or several cells.

    Parameters
    ----------
    intervals_df:
        From :func:`analysis.frames.intervals` (warmup intervals are dropped here).
    by:
        Column that names a line (``run_id``, ``cell_label``…): one line per value.
    labels:
        Legend text per value of ``by``.
    window:
        (start, end) of the measurement window in seconds, shaded.
    """
    fig = _figure(title, subtitle)
    df = intervals_df[intervals_df["t"] > 0]
    interval = float(df["interval_s"].median()) if len(df) else 10.0
    for i, (key, g) in enumerate(df.groupby(by, sort=False)):
        name = (labels or {}).get(key, str(key))
        fig.add_trace(go.Scattergl(
            x=g["t"].to_numpy() / 60, y=g["primary_count"].to_numpy(), mode="lines",
            name=name, line=dict(width=1.6, color=PALETTE[i % len(PALETTE)]),
            hovertemplate="%{y:,.0f}<extra>" + name + "</extra>",
        ) if len(df) > 20000 else go.Scatter(
            x=g["t"].to_numpy() / 60, y=g["primary_count"].to_numpy(), mode="lines",
            name=name, line=dict(width=1.6, color=PALETTE[i % len(PALETTE)]),
            hovertemplate="%{y:,.0f}<extra>" + name + "</extra>",
        ))
    if window:
        _shade_window(fig, *window)
    fig.update_xaxes(title_text="minutes since measurement start")
    fig.update_yaxes(title_text=f"{unit} per {interval:g} s", tickformat=",")
    fig.update_layout(showlegend=df[by].nunique() > 1 if len(df) else False)
    return fig


def checkpoint_dirty(
    samples_df: pd.DataFrame,
    *,
    title: str = "Checkpoint age and dirty pages",
    subtitle: str | None = None,
    window: tuple[float, float] | None = None,
) -> go.Figure:
    """The 2011 study's second graph for one run.

    Checkpoint age (MB, red, left axis) and dirty pages % of the buffer pool (blue, right
    axis), with dashed lines at the max checkpoint age, at 7/8 of it (where InnoDB starts
    flushing asynchronously), and at ``innodb_max_dirty_pages_pct``. Which line the series
    presses against tells which limit binds.
    """
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    text = f"{title}<br><span style='font-size:13px;color:#666'>{subtitle}</span>" if (
        subtitle
    ) else title
    fig.update_layout(template=template(), title=dict(text=text))
    df = samples_df[(~samples_df["missed"]) & (samples_df["t"] > 0)]
    x = df["t"].to_numpy() / 60
    fig.add_trace(go.Scatter(
        x=x, y=df["checkpoint_age_mb"].to_numpy(), mode="lines", name="checkpoint age (MB)",
        line=dict(color=CHECKPOINT_COLOR, width=2), hovertemplate="%{y:,.1f} MB",
    ), secondary_y=False)
    fig.add_trace(go.Scatter(
        x=x, y=df["dirty_pct"].to_numpy(), mode="lines", name="dirty pages (%)",
        line=dict(color=DIRTY_COLOR, width=2), hovertemplate="%{y:.1f} %",
    ), secondary_y=True)
    max_mb = _first(df, "max_checkpoint_age_mb")
    top_mb = float(np.nanmax(df["checkpoint_age_mb"])) if len(df) and df[
        "checkpoint_age_mb"].notna().any() else 0.0
    if math.isfinite(max_mb):
        fig.add_hline(y=max_mb, line=dict(color=CHECKPOINT_COLOR, dash="dash", width=1.3),
                      annotation_text=f"max checkpoint age {max_mb:,.0f} MB",
                      annotation_position="top left",
                      annotation_font=dict(size=11, color=CHECKPOINT_COLOR))
        fig.add_hline(y=max_mb * 7 / 8, line=dict(color=CHECKPOINT_COLOR, dash="dot", width=1),
                      annotation_text="7/8: async flushing starts",
                      annotation_position="bottom left",
                      annotation_font=dict(size=11, color=CHECKPOINT_COLOR))
        top_mb = max(top_mb, max_mb)
    pct = _first(df, "max_dirty_pages_pct")
    if math.isfinite(pct):
        fig.add_hline(y=pct, line=dict(color=DIRTY_COLOR, dash="dash", width=1.3),
                      yref="y2", annotation_text=f"innodb_max_dirty_pages_pct = {pct:g}",
                      annotation_position="top right",
                      annotation_font=dict(size=11, color=DIRTY_COLOR))
    if window:
        _shade_window(fig, *window)
    fig.update_xaxes(title_text="minutes since measurement start")
    fig.update_yaxes(title_text="checkpoint age (MB)", secondary_y=False,
                     range=[0, top_mb * 1.1 if top_mb > 0 else 1], tickformat=",",
                     title_font=dict(color=CHECKPOINT_COLOR))
    fig.update_yaxes(title_text="dirty pages (% of buffer pool)", secondary_y=True,
                     range=[0, 100], showgrid=False, title_font=dict(color=DIRTY_COLOR))
    return fig


def _first(df: pd.DataFrame, column: str) -> float:
    if column not in df.columns:
        return math.nan
    values = df[column].dropna()
    return float(values.iloc[0]) if len(values) else math.nan


def notpm_bars(
    cells_df: pd.DataFrame,
    *,
    title: str = "Throughput per configuration (NOTPM, window average)",
    subtitle: str | None = "bars: mean over repetitions · whiskers: bootstrap 95% CI",
    unit: str = "NOTPM",
) -> go.Figure:
    """Mean NOTPM per cell with bootstrap 95 % CI whiskers and the ratio to the baseline."""
    df = cells_df.sort_values("notpm_mean", ascending=True)
    fig = _figure(title, subtitle)
    colors = ["#777" if b else PALETTE[0] for b in df["is_baseline"]]
    err_hi = (df["notpm_ci_high"] - df["notpm_mean"]).clip(lower=0)
    err_lo = (df["notpm_mean"] - df["notpm_ci_low"]).clip(lower=0)
    text = []
    for _, r in df.iterrows():
        if r["is_baseline"]:
            text.append("baseline")
        elif "ratio" in r and pd.notna(r["ratio"]):
            text.append(f"{r['ratio']:.2f}×" + (f" · {r['verdict']}" if "verdict" in r else ""))
        else:
            text.append("")
    fig.add_trace(go.Bar(
        y=df["cell_label"], x=df["notpm_mean"], orientation="h", marker_color=colors,
        error_x=dict(type="data", symmetric=False, array=err_hi.fillna(0),
                     arrayminus=err_lo.fillna(0), color="#333", thickness=1.3, width=4),
        text=text, textposition="inside", insidetextanchor="start",
        textfont=dict(color="white", size=12),
        hovertemplate="%{y}<br>%{x:,.0f} " + unit + "<extra></extra>",
    ))
    fig.update_xaxes(title_text=f"{unit} (mean of repetitions)", tickformat=",")
    fig.update_yaxes(title_text="", automargin=True)
    fig.update_layout(height=max(HEIGHT, 120 + 34 * len(df)), showlegend=False,
                      hovermode="closest", margin=dict(l=20))
    return fig


def stability_heatmap(
    cells_df: pd.DataFrame,
    x_knob: str,
    y_knob: str,
    *,
    value: str = "score_median",
    title: str | None = None,
) -> go.Figure:
    """A heatmap of a cell figure (default: median stability score) over two knobs."""
    label = {"score_median": "stability score (100 = flat)", "notpm_mean": "NOTPM",
             "cv_pct_median": "CV (%)"}.get(value, value)
    pivot = cells_df.pivot_table(index=y_knob, columns=x_knob, values=value, aggfunc="mean")
    fig = _figure(title or f"{label.split(' (')[0].capitalize()} by {x_knob} and {y_knob}",
                  "median over repetitions of each cell")
    z = pivot.to_numpy(dtype=float)
    fig.add_trace(go.Heatmap(
        z=z, x=[_fmt(v) for v in pivot.columns], y=[_fmt(v) for v in pivot.index],
        colorscale="RdYlGn" if value == "score_median" else "Blues",
        # Scores below 50 are all "bad"; spreading 50..100 over the scale separates 75 from 97.
        zmin=50 if value == "score_median" else None,
        zmax=100 if value == "score_median" else None,
        text=[[("" if not np.isfinite(v) else f"{v:,.0f}") for v in row] for row in z],
        texttemplate="%{text}", textfont=dict(size=14), colorbar=dict(title=label),
        hovertemplate=f"{x_knob}=%{{x}}<br>{y_knob}=%{{y}}<br>{label}: %{{z:,.1f}}<extra></extra>",
    ))
    fig.update_xaxes(title_text=x_knob, type="category", showgrid=False)
    fig.update_yaxes(title_text=y_knob, type="category", showgrid=False)
    fig.update_layout(hovermode="closest")
    return fig


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def memory(
    samples_df: pd.DataFrame,
    *,
    by: str = "run_id",
    labels: dict[Any, str] | None = None,
    title: str = "mysqld memory: RSS and VSZ",
    subtitle: str | None = None,
) -> go.Figure:
    """mysqld resident (RSS, solid) and virtual (VSZ, dotted) size over time, MB."""
    fig = _figure(title, subtitle)
    df = samples_df[~samples_df["missed"]]
    for i, (key, g) in enumerate(df.groupby(by, sort=False)):
        name = (labels or {}).get(key, str(key))
        color = PALETTE[i % len(PALETTE)]
        x = g["t"].to_numpy() / 60
        fig.add_trace(go.Scatter(x=x, y=g["rss_mb"], mode="lines", name=f"RSS {name}",
                                 line=dict(color=color, width=2)))
        fig.add_trace(go.Scatter(x=x, y=g["vsz_mb"], mode="lines", name=f"VSZ {name}",
                                 line=dict(color=color, width=1.5, dash="dot")))
    fig.update_xaxes(title_text="minutes since measurement start (negative: warmup)")
    fig.update_yaxes(title_text="MB", tickformat=",")
    return fig


def flushing(
    samples_df: pd.DataFrame,
    *,
    title: str = "Flushing activity",
    subtitle: str | None = None,
) -> go.Figure:
    """Pages flushed/s and doublewrite pages/s (left), redo log MB/s (right) for one run."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    text = f"{title}<br><span style='font-size:13px;color:#666'>{subtitle}</span>" if (
        subtitle
    ) else title
    fig.update_layout(template=template(), title=dict(text=text))
    df = samples_df[(~samples_df["missed"]) & (samples_df["t"] > 0)]
    x = df["t"].to_numpy() / 60
    fig.add_trace(go.Scatter(x=x, y=df["pages_flushed_per_s"], name="pages flushed/s",
                             line=dict(color=PALETTE[0], width=2)), secondary_y=False)
    if df["dblwr_pages_per_s"].fillna(0).abs().sum() > 0:
        fig.add_trace(go.Scatter(x=x, y=df["dblwr_pages_per_s"], name="doublewrite pages/s",
                                 line=dict(color=PALETTE[3], width=1.5, dash="dot")),
                      secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=df["log_mb_per_s"], name="redo written (MB/s)",
                             line=dict(color=PALETTE[2], width=1.5)), secondary_y=True)
    fig.update_xaxes(title_text="minutes since measurement start")
    fig.update_yaxes(title_text="pages per second", secondary_y=False, tickformat=",")
    fig.update_yaxes(title_text="redo MB/s", secondary_y=True, showgrid=False,
                     rangemode="tozero")
    return fig


def threads_sweep(
    cells_df: pd.DataFrame,
    *,
    threads_knob: str = "connections",
    series_knob: str = "allocator",
    value: str = "notpm_mean",
    title: str = "Throughput vs threads per allocator",
    unit: str = "transactions per minute",
) -> go.Figure:
    """Throughput against thread count (log axis), one line per allocator (sysbench sweeps)."""
    fig = _figure(title, "mean over repetitions; whiskers: bootstrap 95% CI")
    df = cells_df.dropna(subset=[threads_knob]).sort_values(threads_knob)
    for i, (key, g) in enumerate(df.groupby(series_knob, sort=True)):
        fig.add_trace(go.Scatter(
            x=g[threads_knob], y=g[value] / (60 if "second" in unit else 1),
            mode="lines+markers", name=_fmt(key),
            line=dict(color=PALETTE[i % len(PALETTE)], width=2),
            error_y=dict(type="data", symmetric=False,
                         array=(g["notpm_ci_high"] - g[value]).clip(lower=0).fillna(0),
                         arrayminus=(g[value] - g["notpm_ci_low"]).clip(lower=0).fillna(0)),
        ))
    fig.update_xaxes(title_text=f"{threads_knob} (threads)", type="log")
    fig.update_yaxes(title_text=unit, tickformat=",")
    return fig


def score_bars(cells_df: pd.DataFrame) -> go.Figure:
    """Median stability score per cell (100 = a flat line), worst at the bottom."""
    df = cells_df.sort_values("score_median", ascending=True)
    fig = _figure("Stability score per configuration", "100 × p5 / median of the per-interval "
                  "throughput series, median over repetitions (100 = flat line)")
    fig.add_trace(go.Bar(
        y=df["cell_label"], x=df["score_median"], orientation="h",
        marker_color=[PALETTE[2] if s >= 90 else PALETTE[4] if s >= 70 else PALETTE[1]
                      for s in df["score_median"].fillna(0)],
        text=[f"{s:.0f}" for s in df["score_median"].fillna(0)], textposition="outside",
        hovertemplate="%{y}<br>score %{x:.1f}<extra></extra>",
    ))
    fig.update_xaxes(title_text="stability score", range=[0, 105])
    fig.update_yaxes(automargin=True)
    fig.update_layout(height=max(HEIGHT, 120 + 34 * len(df)), showlegend=False,
                      hovermode="closest", margin=dict(l=20))
    return fig


def cell_label_map(df: pd.DataFrame, key: str = "run_id", fmt: str = "#{repetition}") -> dict:
    """Legend labels ``{run_id: "#1"}`` (or any format over the row's columns)."""
    return {row[key]: fmt.format(**row) for row in df.to_dict("records")}

