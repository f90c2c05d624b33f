"""Figures assembled as plain dicts (analysis.figures.plots.build) equal those built call by
call."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go

from analysis.figures.plots import (
    _two_axis_figure,
    base_layout,
    build,
    legend_below,
    legend_below_layout,
    merge,
    titled_figure,
)


def test_merge_merges_nested_dicts_and_replaces_the_rest() -> None:
    base = {"xaxis": {"title": {"text": "a"}, "range": [0, 1]}, "shapes": [1, 2]}
    merge(base, {"xaxis": {"title": {"font": {"size": 3}}, "range": [0, 5]}, "shapes": [3]})
    assert base == {"xaxis": {"title": {"text": "a", "font": {"size": 3}}, "range": [0, 5]},
                    "shapes": [3]}


def test_a_built_figure_equals_the_one_made_with_plotlys_calls() -> None:
    x = np.arange(5.0)
    names = [f"a configuration label long enough to wrap {i}" for i in range(6)]
    by_calls = _two_axis_figure("Title", "sub")
    for i, name in enumerate(names):
        by_calls.add_trace(go.Scatter(x=x, y=x * i, name=name, mode="lines",
                                      yaxis="y2" if i % 2 else "y"))
    by_calls.update_layout(shapes=[dict(type="line", x0=0, x1=1, y0=1, y1=1)],
                           annotations=[dict(text="n", x=0, y=1, showarrow=False)])
    by_calls.update_xaxes(title_text="minutes")
    by_calls.update_layout(yaxis2=dict(title=dict(text="right"), range=[0, 100]))
    legend_below(by_calls, names)

    layout = base_layout("Title", "sub", two_axes=True)
    merge(layout, dict(shapes=[dict(type="line", x0=0, x1=1, y0=1, y1=1)],
                       annotations=[dict(text="n", x=0, y=1, showarrow=False)]))
    merge(layout, dict(xaxis=dict(title=dict(text="minutes")),
                       yaxis2=dict(title=dict(text="right"), range=[0, 100])))
    merge(layout, legend_below_layout(names))
    traces = [dict(type="scatter", x=x, y=x * i, name=name, mode="lines",
                   yaxis="y2" if i % 2 else "y") for i, name in enumerate(names)]
    built = build(traces, layout)
    assert json.loads(built.to_json()) == json.loads(by_calls.to_json())
    assert built.layout.legend.yanchor == "top" and built.layout.height > 500


def test_short_legends_stay_above() -> None:
    assert legend_below_layout(["on", "off"]) == {}
    fig = titled_figure("t")
    legend_below(fig, ["on", "off"])
    assert fig.layout.legend.yanchor is None


def test_long_configuration_labels_wrap_on_category_axes() -> None:
    """A 130-character label (the flash study's) on one line took the whole bar chart: labels
    wrap at spaces into lines of at most AXIS_LABEL_CHARS, and rows grow to hold them."""
    from analysis.figures.plots import AXIS_LABEL_CHARS, axis_label, row_px

    label = ("server=xtradb-5.5 adaptive_flushing=off doublewrite=on max_dirty_pages_pct=60 "
             "io_capacity=500 log_file_size=320M flush_neighbor_pages=none")
    wrapped = axis_label(label)
    lines = wrapped.split("<br>")
    assert " ".join(lines) == label and len(lines) == 4
    assert all(len(line) <= AXIS_LABEL_CHARS for line in lines)
    assert axis_label("dw-on-50") == "dw-on-50"
    assert row_px(["dw-on-50"], 34) == 34 and row_px([wrapped, "a"], 34) == 70


def test_a_long_subtitle_wraps_and_the_top_margin_makes_room() -> None:
    """A per-cell figure's subtitle carries the configuration label (up to 130 characters):
    it was cut off at the figure's right edge."""
    from analysis.figures.plots import SUBTITLE_CHARS, SUBTITLE_LINE_PX, _title_text

    label = ("ps-optimized · server=xtradb-5.5 adaptive_flushing=off doublewrite=on "
             "max_dirty_pages_pct=60 io_capacity=500 log_file_size=320M "
             "flush_neighbor_pages=none adaptive_checkpoint=keep_average · run 11")
    text = _title_text("Checkpoint age", label)
    lines = text.split("<br>")[1:]
    assert len(lines) == 2 and all(len(line) - len("<span style='font-size:13px;color:#666'>"
                                                   "</span>") <= SUBTITLE_CHARS
                                   for line in lines)
    assert base_layout("Checkpoint age", label)["margin"] == {"t": 90 + SUBTITLE_LINE_PX}
    short = base_layout("Checkpoint age", "run 11")
    assert "margin" not in short and short["title"]["text"].count("<br>") == 1
    # A subtitle with its own markup (the checkpoint grid's colour key) is kept as it is.
    marked = "a<br><span style='color:red'>b</span>"
    assert _title_text("T", marked) == f"T<br><span style='font-size:13px;color:#666'>{marked}" \
                                       "</span>"
