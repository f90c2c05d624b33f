"""Where the legend goes: above the plot for a few short entries, under it for many or long ones."""

from __future__ import annotations

import pandas as pd

from analysis.figures import plots


def _intervals(n_lines: int) -> pd.DataFrame:
    rows = [
        {"run_id": run, "t": 10.0 * k, "interval_s": 10.0, "primary_count": 100 + run + k}
        for run in range(1, n_lines + 1) for k in range(1, 6)
    ]
    return pd.DataFrame(rows)


def test_eight_long_configuration_labels_go_under_the_plot() -> None:
    labels = {run: f"doublewrite=on max_dirty_pages_pct={run}0 io_capacity=20000"
              for run in range(1, 9)}
    fig = plots.throughput(_intervals(8), labels=labels, title="t")

    assert fig.layout.legend.yanchor == "top" and fig.layout.legend.y < 0
    # Room was made below the axis for the rows (8 labels of 54 characters: 2 per row at 1000 px).
    assert fig.layout.margin.b >= 90 + 22 * 4
    assert fig.layout.height > plots.HEIGHT


def test_two_short_labels_stay_above_the_plot() -> None:
    fig = plots.throughput(_intervals(2), labels={1: "glibc", 2: "jemalloc"}, title="t")

    assert fig.layout.legend.y is None  # the template's legend (above the plot) applies
    assert fig.layout.height is None
    assert fig.layout.showlegend is True


def test_one_line_has_no_legend() -> None:
    fig = plots.throughput(_intervals(1), title="t")

    assert fig.layout.showlegend is False
