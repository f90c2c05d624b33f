"""Plotly figures styled for a blog post (the 2011 study's graphs, made readable).

Every function takes DataFrames from :mod:`analysis.tables.frames` /
:mod:`analysis.comparisons.compare` and returns a ``plotly.graph_objects.Figure``; nothing here
reads the store. Titles say what is measured, axes carry units, time is minutes after the
warmup (:data:`TIME_AXIS`; the measurement window is shaded on it), throughput is NOTPM except
where a figure draws each report interval's count and says so (:func:`interval_count_title`).

The figures a report draws once per cell (throughput, checkpoint age and dirty pages,
flushing) also come as a ``*_spec`` twin returning a :data:`FigureSpec` — plain dicts, not
validated by plotly's Python classes, which cost most of a large report's figure time. The
report draws the specs; the test suite validates every figure of its reports.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Callable
from typing import Any, ParamSpec

import numpy as np
import pandas as pd
import plotly.graph_objects as go

#: Colours that stay distinct in print and for common colour-vision deficiencies (Okabe-Ito).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000"]
#: The baseline is drawn the same way in every figure: near-black, and labelled "baseline".
BASELINE_COLOUR = "#222222"
#: One colour per configuration, in the experiment's row order (:func:`cell_colours`); the
#: studies have 12-16 rows, so 20 colours before one repeats. The first six are Okabe-Ito's
#: (colour-blind safe; not its black, which is the baseline's, nor its pale yellow), so a small
#: experiment looks as it always did. The other fourteen were picked one at a time, each the
#: farthest (CIE L*a*b* distance) from every colour before it and from the baseline's, among
#: well-known qualitative colours (Kelly's 22, Tableau's, Trubetskoy's 20) of lightness 30-75
#: (neither near-black like the baseline nor pale on white): no two of the twenty are closer
#: than Okabe-Ito's own closest pair (ΔE 26), none within ΔE 39 of the baseline.
CELL_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                "#F032E6", "#8DB600", "#C2B280", "#BE0032", "#8E44AD", "#F99379",
                "#8C564B", "#00838F", "#2CA02C", "#1B5E20", "#808000", "#4363D8",
                "#FF6F91", "#882D17"]
CHECKPOINT_COLOR = "#C0392B"  # the 2011 graphs: checkpoint age in red...
DIRTY_COLOR = "#1F5FAD"  # ...dirty pages in blue
FONT = "Inter, 'Helvetica Neue', Helvetica, Arial, sans-serif"
WIDTH, HEIGHT = 1000, 480
#: The x axis of every figure over time. Time 0 is the end of the warmup — not the start of the
#: measurement window, which the figures shade later on the same axis — so the origin is named
#: as what it is, the same way in every figure.
TIME_AXIS = "minutes after warmup"
#: The same axis where the warmup is drawn too (memory over the whole run).
TIME_AXIS_WITH_WARMUP = "minutes after warmup (negative: during warmup)"
#: Fewest labelled ticks a log axis shows (:func:`log_ticks`).
MIN_LOG_TICKS = 3

TEMPLATE_NAME = "flushbench"

#: A figure as plain dicts (``{"data": [traces], "layout": {...}}``), the template by name:
#: what :func:`build` validates into a ``go.Figure``, and what :func:`resolved` hands to
#: plotly.js and kaleido without validating.
FigureSpec = dict[str, Any]
P = ParamSpec("P")


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


#: Characters per line of a configuration label on a category axis (about a third of the
#: figure's width at the axis font): a 130-character label on one line took the whole figure.
AXIS_LABEL_CHARS = 40


def axis_label(label: str, width: int = AXIS_LABEL_CHARS) -> str:
    """A configuration label for a category axis, wrapped at spaces into ``<br>`` lines."""
    lines = textwrap.wrap(str(label), width, break_long_words=False, break_on_hyphens=False)
    return "<br>".join(lines) or str(label)


def row_px(labels: list[str], minimum: int) -> int:
    """Height (px) of one category row that holds the tallest of ``labels`` (15 px a line)."""
    lines = max((str(lbl).count("<br>") + 1 for lbl in labels), default=1)
    return max(minimum, 15 * lines + 10)


def cell_colours(cells_df: pd.DataFrame) -> dict[int, str]:
    """Per cell id, its colour in every figure of a report and in ``plot compare``.

    Every baseline (an experiment may have one per server) is :data:`BASELINE_COLOUR`; an
    experiment without a marked baseline compares with its first row
    (:func:`analysis.reading.baselines.baseline_of`), so that row is. The other rows take
    :data:`CELL_COLOURS` in the experiment's row order (``position``), so a row's colour
    depends on the experiment alone, never on which figure draws it or which rows it shows:
    pass every cell of the experiment, not the ones a figure draws. Figures mark each trace
    drawn in a cell's colour with :func:`cell_meta` (a test reads them back).
    """
    ordered = cells_df.sort_values("position")
    marked = ordered["is_baseline"].fillna(False).astype(bool).to_numpy(copy=True)
    if len(ordered) and not marked.any():
        marked[0] = True
    out: dict[int, str] = {}
    k = 0
    for cell_id, is_base in zip(ordered["cell_id"], marked, strict=True):
        if is_base:
            out[int(cell_id)] = BASELINE_COLOUR
        else:
            out[int(cell_id)] = CELL_COLOURS[k % len(CELL_COLOURS)]
            k += 1
    return out


def cell_meta(cell_id: Any) -> dict[str, int]:
    """A trace's ``meta`` saying it is drawn in cell ``cell_id``'s colour (plotly carries it
    without drawing it): what ``tests/analysis/test_figure_colours.py`` reads to check that a
    row has one colour in every figure."""
    return {"cell": int(cell_id)}


def text_colour_on(colour: str) -> str:
    """White or near-black, whichever reads on a ``#rrggbb`` fill (WCAG relative luminance:
    white text on the palette's light colours would be lost)."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    # The luminance where white and #222 text have the same contrast ratio.
    return "white" if luminance < 0.21 else "#222222"


#: Characters of a subtitle line (13 px font across the figure's width), and the px each line
#: beyond the first adds to the top margin.
SUBTITLE_CHARS = 120
SUBTITLE_LINE_PX = 22


def _subtitle_lines(subtitle: str) -> list[str]:
    """A plain subtitle wrapped at spaces (a configuration label runs to 130 characters); one
    that carries its own markup (``<br>``, coloured spans) is kept as it is."""
    if "<" in subtitle:
        return [subtitle]
    return textwrap.wrap(subtitle, SUBTITLE_CHARS, break_long_words=False,
                         break_on_hyphens=False) or [subtitle]


def _title_text(title: str, subtitle: str | None) -> str:
    if not subtitle:
        return title
    return title + "".join(f"<br><span style='font-size:13px;color:#666'>{line}</span>"
                           for line in _subtitle_lines(subtitle))


def subtitle_extra_px(subtitle: str | None) -> int:
    """The height (px) a subtitle takes beyond one line once wrapped (0 for one line): a
    figure that sets its own top margin adds it."""
    return SUBTITLE_LINE_PX * (len(_subtitle_lines(subtitle)) - 1) if subtitle else 0


def log_ticks(low: float, high: float) -> dict:
    """Tick values and labels of a log axis from ``low`` to ``high`` (> 0), labelled as plain
    numbers (plotly's own log ticks label each minor step with one digit): 1, 2, 5 × each
    power of ten (only the powers over wide ranges); where that leaves fewer than
    :data:`MIN_LOG_TICKS` inside the range, 1…9 × each power; and where even that does (a
    range within one step), that many values evenly spaced on the log scale, rounded to the
    fewest significant digits (from two) that keep them apart — never fewer than three labels
    on a log axis."""
    if not (low > 0 and high > low):
        return {}

    def ticks(steps: tuple[int, ...]) -> list[float]:
        return [v for v in (m * 10.0 ** k
                            for k in range(math.floor(math.log10(low)),
                                           math.ceil(math.log10(high)) + 1) for m in steps)
                if low <= v <= high]

    values = ticks((1, 2, 5) if math.log10(high / low) <= 3 else (1,))
    if len(values) < MIN_LOG_TICKS:
        values = ticks((1, 2, 3, 4, 5, 6, 7, 8, 9))
    if len(values) < MIN_LOG_TICKS:
        # Inner points of the range, rounded to the fewest significant digits (from two) that
        # keep them distinct and inside it.
        spaced = np.geomspace(low, high, MIN_LOG_TICKS + 2)[1:-1]
        for digits in range(2, 8):
            values = sorted({float(f"{v:.{digits}g}") for v in spaced})
            values = [v for v in values if low <= v <= high]
            if len(values) >= MIN_LOG_TICKS:
                break
        else:
            values = [float(v) for v in spaced]
    return dict(tickmode="array", tickvals=values, ticktext=[f"{v:,.6g}" for v in values])


def log_axis(values: Any, pad: float = 1.15) -> dict:
    """A log axis over ``values`` (sequences of numbers; and 1: ratios are read against it),
    ``pad`` × beyond each
    end: its range (plotly's log axes take powers of ten) and :func:`log_ticks` within it."""
    finite = [float(v) for part in values for v in np.ravel(np.asarray(part, dtype=float))
              if np.isfinite(v) and v > 0] + [1.0]
    low, high = min(finite) / pad, max(finite) * pad
    return dict(type="log", range=[math.log10(low), math.log10(high)],
                **log_ticks(low, high))


def interval_count_title(counts: str, interval_s: float) -> str:
    """The axis title of a figure that draws each report interval's count (``New-Orders per
    10 s``) rather than NOTPM — the 2011 post's graphs did, and an interval's count shows a
    stall as the interval it was — with the factor that makes it NOTPM."""
    factor = 60 / interval_s if interval_s > 0 else math.nan
    per_minute = "NOTPM" if counts.lower().startswith("new-order") else "per minute"
    return f"{counts} per {interval_s:g} s (× {factor:g} = {per_minute})"


def _title_margin(subtitle: str | None) -> dict:
    """The layout update that makes room for a wrapped subtitle's extra lines (else empty)."""
    extra = subtitle_extra_px(subtitle)
    return dict(margin=dict(t=90 + extra)) if extra else {}


def titled_figure(title: str, subtitle: str | None = None) -> go.Figure:
    """An empty figure in the house style with its title and (wrapped) subtitle: what every
    figure built trace by trace starts from, here and in the wings that draw their own."""
    fig = go.Figure()
    fig.update_layout(template=template(), title=dict(text=_title_text(title, subtitle)),
                      **_title_margin(subtitle))
    return fig


def base_layout(title: str, subtitle: str | None = None, *, two_axes: bool = False) -> dict:
    """The layout a figure starts from, as a plain dict: the template by name, the title and,
    with ``two_axes``, a second y axis on the right (``yaxis="y2"`` on a trace).

    Figures drawn many times per report (per cell, per run) are assembled as plain dicts and
    handed to plotly once (:func:`build`): each ``update_layout``/``add_trace`` call validates
    and copies again, which was most of a 500-run report's figure time.
    """
    layout: dict[str, Any] = dict(template=template(),
                                  title=dict(text=_title_text(title, subtitle)),
                                  **_title_margin(subtitle))
    if two_axes:
        layout["yaxis2"] = dict(overlaying="y", side="right", anchor="x")
    return layout


def merge(base: dict, update: dict) -> dict:
    """``update`` merged into ``base`` the way ``update_layout`` merges (nested dicts merged,
    anything else replaced); returns ``base``."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def figure_spec(traces: list[dict], layout: dict) -> FigureSpec:
    """The figure of plain-dict traces (each with its ``type``) and layout, not validated."""
    return {"data": traces, "layout": layout}


def build(traces: list[dict], layout: dict) -> go.Figure:
    """The figure of plain-dict traces (each with its ``type``) and layout, validated once."""
    return go.Figure(data=traces, layout=layout)


def as_figure(make_spec: Callable[P, FigureSpec]) -> Callable[P, go.Figure]:
    """The validated ``go.Figure`` twin of a ``*_spec`` function (same arguments, its name
    without ``_spec``): what notebooks and readers of one figure use."""
    @functools.wraps(make_spec)
    def figure(*args: P.args, **kwargs: P.kwargs) -> go.Figure:
        made = make_spec(*args, **kwargs)
        return build(made["data"], made["layout"])

    figure.__name__ = figure.__qualname__ = make_spec.__name__.removesuffix("_spec")
    figure.__doc__ = (f"The validated figure of :func:`{make_spec.__name__}`.\n\n"
                      f"{make_spec.__doc__ or ''}")
    return figure


@functools.cache
def _template_content(name: str) -> dict[str, Any]:
    import plotly.io as pio

    return pio.templates[name].to_plotly_json()


def resolved(figure: FigureSpec) -> FigureSpec:
    """``figure`` as plotly.js and kaleido read it: a template given by name (plotly's Python
    classes resolve it; the browser does not) replaced by its content. Shares the traces and
    the template with ``figure``: read it, do not change it."""
    layout = figure.get("layout") or {}
    name = layout.get("template")
    if not isinstance(name, str):
        return figure
    return {**figure, "layout": {**layout, "template": _template_content(name)}}


def marks_layout(marks: list[tuple[dict, dict]]) -> dict:
    """Shapes and annotations of ``(shape, note)`` pairs as a layout update (empty: none)."""
    if not marks:
        return {}
    return dict(shapes=[m[0] for m in marks], annotations=[m[1] for m in marks])


def _two_axis_figure(title: str, subtitle: str | None = None) -> go.Figure:
    """A figure with a second y axis on the right (``yaxis="y2"`` on a trace).

    Built by hand rather than with ``make_subplots(secondary_y=True)``, which costs ~50 ms of
    property-path parsing per figure in plotly 5 — a second per report of 20 cells.
    """
    fig = titled_figure(title, subtitle)
    fig.update_layout(yaxis2=dict(overlaying="y", side="right", anchor="x"))
    return fig


def _add_marks(fig: go.Figure, shapes: list[dict], notes: list[dict]) -> None:
    """Add shapes and annotations as plain dicts in one layout update.

    plotly's add_vrect/add_hline validate and copy the layout on every call, which cost about
    twice as much per figure; a report draws ~80 figures.
    """
    # Existing marks go back as plain dicts: handing plotly its own shape objects makes it
    # diff them property by property (≈ 100 ms for a second call on a two-axis figure).
    fig.update_layout(shapes=[*(s.to_plotly_json() for s in fig.layout.shapes), *shapes],
                      annotations=[*(a.to_plotly_json() for a in fig.layout.annotations),
                                   *notes])


def _hline_marks(y: float, colour: str, dash: str, width: float, text: str, where: str,
                 yref: str = "y") -> tuple[dict, dict]:
    """A horizontal line across the plot and its label at ``where`` (``top left``…)."""
    vertical, horizontal = where.split()
    line = dict(type="line", xref="x domain", yref=yref, x0=0, x1=1, y0=y, y1=y,
                line=dict(color=colour, dash=dash, width=width))
    note = dict(text=text, xref="x domain", yref=yref, x=0 if horizontal == "left" else 1, y=y,
                xanchor=horizontal, yanchor="bottom" if vertical == "top" else "top",
                showarrow=False, font=dict(size=11, color=colour))
    return line, note


def _window_marks(start_s: float | None, end_s: float | None) -> list[tuple[dict, dict]]:
    """The measurement window's shaded band and its label (none without a window)."""
    if start_s is None or end_s is None:
        return []
    # Labelled at the bottom right of the band: the top left is where limit lines put theirs.
    band = dict(type="rect", xref="x", yref="y domain", x0=start_s / 60, x1=end_s / 60, y0=0,
                y1=1, fillcolor="#888", opacity=0.07, line=dict(width=0), layer="below")
    note = dict(text="measurement window", xref="x", yref="y domain", x=end_s / 60, y=0,
                xanchor="right", yanchor="bottom", showarrow=False,
                font=dict(size=11, color="#777"))
    return [(band, note)]


def shade_window(fig: go.Figure, start_s: float | None, end_s: float | None) -> None:
    """Shade the measurement window (a figure with other marks adds them in the same call:
    each layout update costs plotly more than the marks themselves)."""
    marks = _window_marks(start_s, end_s)
    if marks:
        _add_marks(fig, [m[0] for m in marks], [m[1] for m in marks])


#: Above this many legend entries the legend goes under the plot: above it, it covers the title.
LEGEND_ABOVE_MAX = 3


def legend_below(fig: go.Figure, names: list[str]) -> None:
    """Put a legend of many (or long) entries under the plot and make room for it (see
    :func:`legend_below_layout`)."""
    update = legend_below_layout(names, width=fig.layout.width, height=fig.layout.height,
                                 top=fig.layout.margin.t)
    if update:
        fig.update_layout(**update)


def legend_below_layout(names: list[str], *, width: float | None = None,
                        height: float | None = None, top: float | None = None) -> dict:
    """The layout update that puts a legend of many (or long) entries under the plot.

    The template puts the legend above the plot, which is right for two or three short entries;
    eight configuration labels of ~50 characters wrap into four rows that run over the title.
    Rows are estimated from the longest label (≈7 px per character at the legend's font).
    ``width``, ``height`` and ``top`` (margin) are the figure's own, None for the template's.
    Empty when the legend stays above.
    """
    if len(names) <= LEGEND_ABOVE_MAX and sum(len(n) for n in names) < 90:
        return {}
    width = width or WIDTH
    per_row = max(1, min(3, int((width - 100) // (60 + 7 * max(len(n) for n in names)))))
    rows = math.ceil(len(names) / per_row)
    height = (height or HEIGHT) + 22 * rows
    bottom = 90 + 22 * rows
    top = top if top is not None else 90
    # Below the x axis title (≈ 50 px under the plot), in the paper's fraction of the plot.
    plot_px = max(100, height - top - bottom)
    return dict(height=height, margin=dict(b=bottom),
                legend=dict(orientation="h", yanchor="top", y=-66 / plot_px, x=0.0))


def throughput_spec(
    intervals_df: pd.DataFrame,
    *,
    by: str = "run_id",
    labels: dict[Any, str] | None = None,
    title: str = "New-Order transactions per 10 s",
    subtitle: str | None = None,
    window: tuple[float, float] | None = None,
    unit: str = "New-Orders",
    column: str = "primary_count",
    y_title: str | None = None,
) -> FigureSpec:
    """New-Orders per interval over time: one run, all repetitions of a cell, or several cells.

    Parameters
    ----------
    intervals_df:
        From :func:`analysis.tables.frames.intervals` (warmup intervals are dropped here).
    by:
        Column that names a line (``run_id``, ``cell_label``…): one line per value.
    labels:
        Legend text per value of ``by``.
    window:
        (start, end) of the measurement window in seconds, shaded.
    column, y_title:
        The per-interval value drawn (default the count per interval; ``per_s`` gives the
        rate of a per-second metric such as TPS) and its axis title.
    """
    df = intervals_df[intervals_df["t"] > 0]
    interval = float(df["interval_s"].median()) if len(df) else 10.0
    groups = dict(tuple(df.groupby(by, sort=False)))
    # Legend in the order of ``labels`` (repetition or row order), then any other line.
    order = [k for k in (labels or {}) if k in groups] + [k for k in groups
                                                         if k not in (labels or {})]
    kind = "scattergl" if len(df) > 20000 else "scatter"
    traces = []
    for i, key in enumerate(order):
        g = groups[key]
        name = (labels or {}).get(key, str(key))
        traces.append(dict(
            type=kind, x=g["t"].to_numpy() / 60, y=g[column].to_numpy(), mode="lines",
            name=name, line=dict(width=1.6, color=PALETTE[i % len(PALETTE)]),
            hovertemplate="%{y:,.0f}<extra>" + name + "</extra>",
        ))
    names = [(labels or {}).get(key, str(key)) for key in order]
    layout = base_layout(title, subtitle)
    merge(layout, marks_layout(_window_marks(*window) if window else []))
    merge(layout, dict(
        xaxis=dict(title=dict(text=TIME_AXIS)),
        yaxis=dict(title=dict(text=y_title or interval_count_title(unit, interval)),
                   tickformat=","),
        showlegend=len(names) > 1))
    if len(names) > 1:
        merge(layout, legend_below_layout(names))
    return figure_spec(traces, layout)


throughput = as_figure(throughput_spec)


def checkpoint_dirty_spec(
    samples_df: pd.DataFrame,
    *,
    title: str = "Checkpoint age and dirty pages",
    subtitle: str | None = None,
    window: tuple[float, float] | None = None,
) -> FigureSpec:
    """The 2011 study's second graph for one run.

    Checkpoint age (MiB, red, left axis) and dirty pages % of the buffer pool (blue, right
    axis), with dashed lines at the max checkpoint age, at 7/8 of it (where InnoDB starts
    flushing asynchronously), and at ``innodb_max_dirty_pages_pct``. Which line the series
    presses against tells which limit binds.
    """
    df = samples_df[(~samples_df["missed"]) & (samples_df["t"] > 0)]
    x = df["t"].to_numpy() / 60
    traces = [
        dict(type="scatter", x=x, y=df["checkpoint_age_mb"].to_numpy(), mode="lines",
             name="checkpoint age (MiB)", line=dict(color=CHECKPOINT_COLOR, width=2),
             hovertemplate="%{y:,.1f} MiB"),
        dict(type="scatter", x=x, y=df["dirty_pct"].to_numpy(), mode="lines",
             name="dirty pages (%)", line=dict(color=DIRTY_COLOR, width=2),
             hovertemplate="%{y:.1f} %", yaxis="y2"),
    ]
    max_mb = _first(df, "max_checkpoint_age_mb")
    top_mb = float(np.nanmax(df["checkpoint_age_mb"])) if len(df) and df[
        "checkpoint_age_mb"].notna().any() else 0.0
    marks = []
    if math.isfinite(max_mb):
        marks.append(_hline_marks(max_mb, CHECKPOINT_COLOR, "dash", 1.3,
                                  f"max checkpoint age {max_mb:,.0f} MiB", "top left"))
        marks.append(_hline_marks(max_mb * 7 / 8, CHECKPOINT_COLOR, "dot", 1,
                                  "7/8: async flushing starts", "bottom left"))
        top_mb = max(top_mb, max_mb)
    pct = _first(df, "max_dirty_pages_pct")
    if math.isfinite(pct):
        marks.append(_hline_marks(pct, DIRTY_COLOR, "dash", 1.3,
                                  f"innodb_max_dirty_pages_pct = {pct:g}", "top right", "y2"))
    marks += _window_marks(*window) if window else []
    layout = base_layout(title, subtitle, two_axes=True)
    merge(layout, dict(shapes=[m[0] for m in marks], annotations=[m[1] for m in marks]))
    merge(layout, dict(
        xaxis=dict(title=dict(text=TIME_AXIS)),
        yaxis=dict(title=dict(text="checkpoint age (MiB)", font=dict(color=CHECKPOINT_COLOR)),
                   range=[0, top_mb * 1.1 if top_mb > 0 else 1], tickformat=","),
        yaxis2=dict(title=dict(text="dirty pages (% of buffer pool)",
                               font=dict(color=DIRTY_COLOR)),
                    range=[0, 100], showgrid=False),
    ))
    return figure_spec(traces, layout)


checkpoint_dirty = as_figure(checkpoint_dirty_spec)


def _first(df: pd.DataFrame, column: str) -> float:
    if column not in df.columns:
        return math.nan
    values = df[column].dropna()
    return float(values.iloc[0]) if len(values) else math.nan


def notpm_bars(
    cells_df: pd.DataFrame,
    *,
    title: str = "Throughput per configuration (NOTPM, window average)",
    subtitle: str | None = "bars: mean over repetitions · whiskers: 95% CI (lognormal, Cox)",
    unit: str = "NOTPM",
    scale: float = 1.0,
) -> go.Figure:
    """Mean throughput per cell with 95 % CI whiskers and the ratio to the baseline, each bar
    in its row's colour (:func:`cell_colours`; ``cells_df`` holds every cell). With several
    baselines (``baseline_id``), rows are grouped under their baseline, the first on top, and
    each ratio names its baseline.

    ``unit`` names the metric; ``scale`` turns the per-minute ``notpm*`` columns into it.
    """
    df = cells_df.sort_values("notpm_mean", ascending=True)
    # Several baselines (one per server): each group of rows together under its baseline,
    # and every ratio names the baseline it is over.
    grouped = "baseline_id" in df.columns and df["baseline_id"].nunique() > 1
    if grouped:
        position = dict(zip(cells_df["cell_id"], cells_df["position"], strict=True))
        # plotly draws the first category at the bottom: the first baseline's group on top.
        df = df.assign(_group=[-position.get(b, 0) for b in df["baseline_id"]]).sort_values(
            ["_group", "notpm_mean"], kind="stable").drop(columns="_group")
    label_of = dict(zip(cells_df["cell_id"], cells_df["cell_label"], strict=True))
    if scale != 1.0:
        df = df.assign(**{c: df[c] * scale for c in ("notpm_mean", "notpm_ci_low",
                                                      "notpm_ci_high")})
    fig = titled_figure(title, subtitle)
    colour_of = cell_colours(cells_df)  # every row's colour, as in every other figure
    colors = [colour_of[int(c)] for c in df["cell_id"]]
    err_hi = (df["notpm_ci_high"] - df["notpm_mean"]).clip(lower=0)
    err_lo = (df["notpm_mean"] - df["notpm_ci_low"]).clip(lower=0)
    text = []
    for _, r in df.iterrows():
        if r["is_baseline"]:
            text.append("baseline")
        elif "ratio" in r and pd.notna(r["ratio"]):
            versus = f" vs {label_of.get(r['baseline_id'], '')}" if grouped else ""
            text.append(f"{r['ratio']:.2f}×{versus}"
                        + (f" · {r['verdict']}" if "verdict" in r else ""))
        else:
            text.append("")
    labels = [axis_label(lbl) for lbl in df["cell_label"]]
    fig.add_trace(go.Bar(
        y=labels, x=df["notpm_mean"], orientation="h", marker_color=colors,
        error_x=dict(type="data", symmetric=False, array=err_hi.fillna(0),
                     arrayminus=err_lo.fillna(0), color="#333", thickness=1.3, width=4),
        text=text, textposition="inside", insidetextanchor="start",
        textfont=dict(color=[text_colour_on(c) for c in colors], size=12),
        meta={"cells": [int(c) for c in df["cell_id"]]},  # bar by bar, as cell_meta
        hovertemplate="%{y}<br>%{x:,.0f} " + unit + "<extra></extra>",
    ))
    fig.update_xaxes(title_text=f"{unit} (mean of repetitions)", tickformat=",")
    fig.update_yaxes(title_text="", automargin=True)
    fig.update_layout(height=max(HEIGHT, 120 + row_px(labels, 34) * len(df)),
                      showlegend=False, hovermode="closest", margin=dict(l=20))
    return fig


def is_factorial(cells_df: pd.DataFrame, knobs: list[str]) -> bool:
    """Whether the cells are exactly the full grid of ``knobs`` (two of them, nothing else
    varying): every combination of their levels run once, so every tile of a heatmap is a
    measured cell rather than an empty square or an average over other knobs."""
    if len(knobs) != 2 or any(k not in cells_df.columns for k in knobs):
        return False
    a, b = (cells_df[k].map(knob_text) for k in knobs)
    pairs = set(zip(a, b, strict=True))
    return len(pairs) == len(cells_df) == a.nunique() * b.nunique() and a.nunique() > 1 \
        and b.nunique() > 1


def stability_heatmap(
    cells_df: pd.DataFrame,
    x_knob: str,
    y_knob: str,
    *,
    value: str = "score_median",
    title: str | None = None,
    label: str | None = None,
) -> go.Figure:
    """A two-knob factorial design as a heatmap, coloured by the difference to the baseline.

    ``value`` is ``score_median`` (tile: the score; colour: points above or below the
    baseline's) or ``notpm_mean`` (tile: the ratio to the baseline and the verdict; colour:
    % above or below). The scale is diverging and centred on the baseline, so "no clear
    difference" is pale, not a colour at one end of a scale; its colours (purple–orange) stay
    apart for red–green colour blindness. Only for factorial designs (:func:`is_factorial`).
    """
    throughput = value != "score_median"
    label = label or ("NOTPM" if throughput else "stability score (100 = flat)")
    base = cells_df[cells_df["is_baseline"]]
    base_value = float(base[value].iloc[0]) if len(base) else math.nan
    df = cells_df.assign(_x=cells_df[x_knob].map(knob_text), _y=cells_df[y_knob].map(knob_text))
    xs = sorted(df["_x"].unique(), key=_level_key)
    ys = sorted(df["_y"].unique(), key=_level_key)
    z = np.full((len(ys), len(xs)), np.nan)
    text = [["" for _ in xs] for _ in ys]
    for _, r in df.iterrows():
        i, j = ys.index(r["_y"]), xs.index(r["_x"])
        v = float(r[value])
        if not math.isfinite(v):
            text[i][j] = "no data"
            continue
        if throughput:
            ratio = float(r["ratio"]) if "ratio" in r and pd.notna(r.get("ratio")) else (
                v / base_value if base_value else math.nan)
            z[i][j] = 100.0 * (ratio - 1.0)
            text[i][j] = (f"baseline<br>{v:,.0f}" if r["is_baseline"] else
                          f"{ratio:.2f}×<br>{r['verdict']}" if "verdict" in r else
                          f"{ratio:.2f}×")
        else:
            z[i][j] = v - base_value
            text[i][j] = f"{v:.0f}" + ("<br>baseline" if r["is_baseline"] else "")
    span = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    span = span if span > 0 else 1.0
    what = "% vs the baseline" if throughput else "points vs the baseline"
    fig = titled_figure(title or f"{label.split(' (')[0].capitalize()} by {x_knob} and {y_knob}",
                        "colour: " + what + " (pale: close to it)" + (
                            " · tile: ratio and verdict" if throughput else
                            " · tile: median score over repetitions"))
    fig.add_trace(go.Heatmap(
        z=z, x=xs, y=ys, colorscale="PuOr", zmid=0, zmin=-span, zmax=span, text=text,
        texttemplate="%{text}", textfont=dict(size=13), colorbar=dict(title=what),
        hovertemplate=f"{x_knob}=%{{x}}<br>{y_knob}=%{{y}}<br>%{{text}}<extra></extra>",
    ))
    fig.update_xaxes(title_text=x_knob, type="category", showgrid=False)
    fig.update_yaxes(title_text=y_knob, type="category", showgrid=False)
    fig.update_layout(hovermode="closest")
    return fig


def _level_key(text: str) -> tuple[int, float, str]:
    """Sort knob levels numerically when they are numbers (15 before 100), else as text."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


#: How a knob a cell does not set reads in a label (a knob only one server has, say).
NOT_SET = "(not set)"


def knob_text(v: Any) -> str:
    """A knob's value as labels and the report's knob tables show it: ``on``/``off``, whole
    floats without ``.0``, and :data:`NOT_SET` for a knob the cell does not set."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return NOT_SET
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def memory(
    samples_df: pd.DataFrame,
    *,
    title: str = "mysqld resident memory",
    subtitle: str | None = None,
    window: tuple[float, float] | None = None,
) -> go.Figure:
    """mysqld's RSS and its split over time for one run, MiB (VSZ is never drawn here).

    RSS (solid), its anonymous part (malloc'd memory and the buffer pool), file-backed part
    (binary and libraries) and shared memory, anonymous transparent huge pages (part of the
    anonymous RSS) and hugetlbfs pages held (``large_pages``, outside RSS) when any.
    ``samples_df`` is :func:`analysis.reading.series.samples` or
    :func:`analysis.reading.memory.memory_series`.
    """
    from analysis.reading.memory import memory_series

    fig = titled_figure(title, subtitle)
    df = memory_series(samples_df)
    x = df["t"].to_numpy() / 60
    lines = [("rss_mb", "RSS", dict(color=PALETTE[0], width=2.4)),
             ("rss_anon_mb", "anonymous", dict(color=PALETTE[1], width=1.6)),
             ("rss_file_mb", "file-backed", dict(color=PALETTE[2], width=1.6)),
             ("rss_shmem_mb", "shared memory", dict(color=PALETTE[3], width=1.4, dash="dot")),
             ("anon_huge_mb", "anonymous huge pages (THP)",
              dict(color=PALETTE[4], width=1.6, dash="dash")),
             ("hugetlb_mb", "hugetlbfs pages (large_pages, outside RSS)",
              dict(color=PALETTE[5], width=1.6, dash="dashdot"))]
    for column, name, line in lines:
        y = df[column].to_numpy(dtype=float)
        if column != "rss_mb" and not (np.isfinite(y) & (y > 0)).any():
            continue  # a part this run does not have: no flat zero line
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, line=line,
                                 hovertemplate="%{y:,.1f} MiB<extra>" + name + "</extra>"))
    if window:
        shade_window(fig, *window)
    fig.update_xaxes(title_text=TIME_AXIS_WITH_WARMUP)
    fig.update_yaxes(title_text="resident memory (MiB)", tickformat=",")
    return fig


def rss_over_time(
    samples_df: pd.DataFrame,
    *,
    labels: dict[Any, str],
    colors: dict[Any, str] | None = None,
    dashes: dict[Any, str] | None = None,
    cell_of: dict[Any, int] | None = None,
    title: str = "mysqld RSS over time",
    subtitle: str | None = "one line per configuration: its median repetition",
    window: tuple[float, float] | None = None,
) -> go.Figure:
    """RSS (MiB) of several runs overlaid on one axis, one line per run (e.g. per cell).

    Parameters
    ----------
    samples_df:
        Samples of the runs to draw (``run_id``, ``t``, ``mysqld_rss_bytes``…).
    labels:
        Legend text per run id; runs not in it are not drawn.
    colors, dashes:
        Line colour and dash per run id (the report: its configuration's colour, dash per
        a varying knob).
    cell_of:
        The cell id per run id, marked on its line (:func:`cell_meta`) when ``colors`` are
        the cells' colours.
    """
    from analysis.reading.memory import memory_series

    fig = titled_figure(title, subtitle)
    df = memory_series(samples_df)
    for i, (run_id, name) in enumerate(labels.items()):
        g = df[df["run_id"] == run_id].sort_values("t")
        line = dict(width=2, color=(colors or {}).get(run_id, PALETTE[i % len(PALETTE)]),
                    dash=(dashes or {}).get(run_id, "solid"))
        # Markers too: a run whose sampler missed most ticks must still show its few points.
        fig.add_trace(go.Scatter(x=g["t"].to_numpy() / 60, y=g["rss_mb"].to_numpy(dtype=float),
                                 mode="lines+markers", marker=dict(size=4), name=name, line=line,
                                 meta=cell_meta(cell_of[run_id]) if run_id in (cell_of or {})
                                 else None,
                                 hovertemplate="%{y:,.1f} MiB<extra>" + name + "</extra>"))
    if window:
        shade_window(fig, *window)
    fig.update_xaxes(title_text=TIME_AXIS_WITH_WARMUP)
    fig.update_yaxes(title_text="mysqld RSS (MiB)", tickformat=",")
    legend_below(fig, list(labels.values()))
    return fig


def flushing_spec(
    samples_df: pd.DataFrame,
    *,
    title: str = "Flushing activity",
    subtitle: str | None = None,
    window: tuple[float, float] | None = None,
) -> FigureSpec:
    """Pages flushed/s and doublewrite pages/s (left), redo log MiB/s (right) for one run.

    Rates between consecutive samples: with 10 s samples and InnoDB flushing in bursts (one
    batch per second, a larger one when the checkpoint age nears its limit), the line
    alternates between fuller and emptier samples; the window is shaded as elsewhere.
    """
    df = samples_df[(~samples_df["missed"]) & (samples_df["t"] > 0)]
    x = df["t"].to_numpy() / 60
    traces = [dict(type="scatter", x=x, y=df["pages_flushed_per_s"], name="pages flushed/s",
                   line=dict(color=PALETTE[0], width=2))]
    if df["dblwr_pages_per_s"].fillna(0).abs().sum() > 0:
        traces.append(dict(type="scatter", x=x, y=df["dblwr_pages_per_s"],
                           name="doublewrite pages/s",
                           line=dict(color=PALETTE[3], width=1.5, dash="dot")))
    traces.append(dict(type="scatter", x=x, y=df["log_mb_per_s"], name="redo written (MiB/s)",
                       line=dict(color=PALETTE[2], width=1.5), yaxis="y2"))
    layout = base_layout(title, subtitle, two_axes=True)
    merge(layout, marks_layout(_window_marks(*window) if window else []))
    merge(layout, dict(
        xaxis=dict(title=dict(text=TIME_AXIS)),
        yaxis=dict(title=dict(text="pages per second"), tickformat=","),
        yaxis2=dict(title=dict(text="redo MiB/s"), showgrid=False, rangemode="tozero"),
    ))
    return figure_spec(traces, layout)


flushing = as_figure(flushing_spec)


def threads_sweep(
    cells_df: pd.DataFrame,
    *,
    threads_knob: str = "connections",
    series_knob: str = "allocator",
    value: str = "notpm_mean",
    title: str = "Throughput vs threads per allocator",
    unit: str = "NOTPM",
    scale: float = 1.0,
) -> go.Figure:
    """Throughput against thread count, one line per allocator with CI whiskers.

    The x axis is logarithmic with a tick at every thread count tested (and only there); the
    allocators' points are dodged a little left and right of the tick so their whiskers do not
    hide each other. A cell without data (every run failed, or done without an interval in its
    window) is drawn as a gap in its line and an "x" marker on the x axis labelled "no data":
    missing, not skipped; the subtitle mentions that marker only when one is drawn.

    Parameters
    ----------
    cells_df:
        :func:`analysis.tables.summaries.cell_summary` rows (every cell, with or without data).
    value:
        The per-minute column to plot (``notpm_mean``); CIs from ``notpm_ci_low/high``.
    unit, scale:
        The metric's name and the factor from the per-minute columns (1/60 for TPS).
    """
    fig = titled_figure(title, "mean over repetitions · whiskers: 95% CI")
    df = cells_df.dropna(subset=[threads_knob]).copy()
    df[threads_knob] = pd.to_numeric(df[threads_knob])
    tested = sorted(df[threads_knob].unique())
    floor = 0.0  # "no data" markers sit on the x axis (the y axis starts at zero)
    missing_legend = False
    n_series = df[series_knob].nunique()
    for i, (key, g) in enumerate(df.groupby(series_knob, sort=True)):
        color = PALETTE[i % len(PALETTE)]
        # Dodge: ±4 % of an octave per series around the tick (multiplicative on a log axis).
        shift = 2.0 ** (0.06 * (i - (n_series - 1) / 2))
        xs = [t * shift for t in tested]
        # One point per tested count: a count this allocator lacks is NaN, breaking the line.
        g = g.groupby(threads_knob).first().reindex(tested)
        y = pd.to_numeric(g[value], errors="coerce") * scale
        hi = (pd.to_numeric(g["notpm_ci_high"], errors="coerce") * scale - y).clip(lower=0)
        lo = (y - pd.to_numeric(g["notpm_ci_low"], errors="coerce") * scale).clip(lower=0)
        fig.add_trace(go.Scatter(
            x=xs, y=y.to_numpy(dtype=float), mode="lines+markers", name=knob_text(key),
            line=dict(color=color, width=2), marker=dict(size=8), connectgaps=False,
            error_y=dict(type="data", symmetric=False, array=hi.fillna(0).to_numpy(),
                         arrayminus=lo.fillna(0).to_numpy(), color=color, thickness=1.3,
                         width=5),
            customdata=tested,
            hovertemplate="%{customdata} threads: %{y:,.1f} " + unit + "<extra>" + knob_text(key)
            + "</extra>",
        ))
        gaps = [t for t, v in zip(tested, y, strict=True) if not np.isfinite(v)]
        present = [t for t in gaps if t in set(df.loc[df[series_knob] == key, threads_knob])]
        if present:
            fig.add_trace(go.Scatter(
                x=[t * shift for t in present], y=[floor] * len(present),
                mode="markers+text", customdata=present,
                name="no data", legendgroup="no data", showlegend=not missing_legend,
                marker=dict(symbol="x-open", size=12, color=color, line=dict(width=2)),
                text=["no data"] * len(present), textposition="top center",
                textfont=dict(size=11, color=color),
                hovertemplate="%{customdata} threads: no data<extra>" + knob_text(key)
                + "</extra>",
            ))
            missing_legend = True
    if missing_legend:
        fig.update_layout(title_text=fig.layout.title.text.replace(
            "95% CI", "95% CI · x on the axis: no data"))
    fig.update_xaxes(title_text=f"{threads_knob} (client threads)", type="log",
                     tickmode="array", tickvals=tested, ticktext=[knob_text(t) for t in tested],
                     minor=dict(showgrid=False, ticks=""))
    fig.update_yaxes(title_text=unit, tickformat=",", rangemode="tozero")
    fig.update_layout(hovermode="closest")
    return fig


def score_bars(cells_df: pd.DataFrame) -> go.Figure:
    """Median stability score per cell (100 = a flat line), worst at the bottom."""
    df = cells_df.sort_values("score_median", ascending=True)
    fig = titled_figure("Stability score per configuration",
                        "100 × p5 / median of the per-interval throughput series, median over "
                        "repetitions (100 = flat line)")
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

