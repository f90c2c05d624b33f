"""Small multiples from a real recorded database (the committed 2011 study): one panel per
cell in the experiment's row order, every repetition drawn, the median run bold, the window
shaded in every panel, one shared scale."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.figures.small_multiples import (
    BASELINE_COLOUR,
    checkpoint_grid,
    median_runs,
    throughput_grid,
)
from analysis.tables import frames


@pytest.fixture(scope="module")
def study(recorded_study: Path) -> tuple[frames.Frames, object]:
    fr = frames.load(recorded_study, "stability-2011")
    intervals = fr.intervals.merge(fr.run_summary[["run_id", "cell_id"]], on="run_id")
    return fr, intervals


def _annotations(fig) -> list[str]:  # noqa: ANN001 - a plotly Figure
    return [a.text for a in fig.layout.annotations]


def test_throughput_grid_panels_runs_and_median(study: tuple) -> None:
    fr, intervals = study
    window = fr.experiment["window"]
    fig = throughput_grid(intervals, fr.cell_summary, window=(window.start, window.end))
    cells = fr.cell_summary.sort_values("position")
    titles = _annotations(fig)
    assert len(titles) == len(cells) == 8
    # Panels in the experiment's row order; the baseline says so.
    assert [t.replace("<br>", " ").removeprefix("<b>baseline</b> · ")
            for t in titles] == list(cells["cell_label"])
    assert titles[0].startswith("<b>baseline</b>")
    medians = median_runs(intervals)
    done = fr.run_summary[fr.run_summary["status"] == "done"]
    for i, (_, cell) in enumerate(cells.iterrows()):
        xref = "x" if i == 0 else f"x{i + 1}"
        traces = [t for t in fig.data if t.xaxis == xref]
        assert len(traces) == (done["cell_id"] == cell["cell_id"]).sum()  # every repetition
        bold = [t for t in traces if t.line.width > 2]
        assert len(bold) == 1 and bold[0].name == f"run {medians[int(cell['cell_id'])]} (median)"
        assert all(min(t.x) > 0 for t in traces)  # warmup not drawn
    assert fig.data[0].line.color == BASELINE_COLOUR or any(
        t.line.color == BASELINE_COLOUR for t in fig.data if t.xaxis == "x")
    # One shared scale, and the window shaded once per panel.
    ranges = {tuple(fig.layout[f"yaxis{'' if i == 0 else i + 1}"].range) for i in range(8)}
    assert len(ranges) == 1
    shaded = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(shaded) == 8 and {s.x0 for s in shaded} == {window.start / 60}


def test_median_run_is_the_middle_window_mean(study: tuple) -> None:
    _, intervals = study
    medians = median_runs(intervals)
    window = intervals[intervals["in_window"]]
    for cell_id, run_id in medians.items():
        means = window[window["cell_id"] == cell_id].groupby("run_id")["primary_count"].mean()
        ordered = means.sort_values().index.tolist()
        assert ordered[(len(ordered) - 1) // 2] == run_id


def test_checkpoint_grid_draws_the_median_run_with_its_limits(study: tuple,
                                                              recorded_study: Path) -> None:
    fr, intervals = study
    samples = frames.samples(recorded_study, "stability-2011")
    window = fr.experiment["window"]
    medians = median_runs(intervals)
    fig = checkpoint_grid(samples, fr.cell_summary, medians, window=(window.start, window.end))
    assert len(fig.data) == 2 * 8
    baseline = samples[(samples["run_id"] == medians[int(fr.cell_summary.sort_values(
        "position").iloc[0]["cell_id"])]) & (samples["t"] > 0) & ~samples["missed"]]
    red = fig.data[0]
    assert list(red.y) == pytest.approx(list(baseline["checkpoint_age_pct"]), nan_ok=True)
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    # Per panel: max age, 7/8 and max_dirty_pages_pct.
    assert len(lines) == 3 * 8
    assert {s.y0 for s in lines} >= {100.0, 87.5, 75.0, 50.0, 15.0}


def test_long_labels_wrap_inside_their_panel_with_room_above(study: tuple) -> None:
    """The flash study's labels run to 130 characters: on one line a panel title ran across
    the panel beside it. Wrapped at spaces to what a panel holds, the row's own name first;
    each row of panels gets the extra lines' room above it."""
    import re

    from analysis.figures.small_multiples import (
        BOTTOM_PX,
        PANEL_PX,
        TITLE_CHARS,
        TITLE_LINE_PX,
        TOP_PX,
        X_TICKS_PX,
        throughput_grid_spec,
    )

    fr, intervals = study
    window = fr.experiment["window"]
    cells = fr.cell_summary.copy()
    cells["cell_label"] = ("server=xtradb-5.5 adaptive_flushing=on doublewrite=on "
                           "max_dirty_pages_pct=75 io_capacity=20000 log_file_size=320M "
                           "flush_neighbor_pages=none adaptive_checkpoint=none #"
                           + cells["cell_id"].astype(str))
    cells["row_name"] = "ps-bigredo-" + cells["cell_id"].astype(str)
    spec = throughput_grid_spec(intervals, cells, window=(window.start, window.end))
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    n = max(len(t.split("<br>")) for t in titles)
    assert n >= 3
    for title in titles:
        lines = title.split("<br>")
        assert all(len(re.sub(r"<[^>]+>", "", line)) <= TITLE_CHARS for line in lines), lines
        assert lines[0].startswith("<b>ps-bigredo-")
        assert " ".join(lines).endswith(cells["cell_label"].iloc[0][:-2] + lines[-1][-2:])
    rows = 4
    assert spec["layout"]["margin"]["t"] == TOP_PX + n * TITLE_LINE_PX
    # The gap between two rows of panels holds the upper row's tick labels and every title
    # line of the lower row; the panels keep their height.
    height = spec["layout"]["height"] - spec["layout"]["margin"]["t"] - BOTTOM_PX
    first, second = (spec["layout"][k]["domain"] for k in ("yaxis", "yaxis3"))
    assert (first[0] - second[1]) * height >= X_TICKS_PX + n * TITLE_LINE_PX
    assert (first[1] - first[0]) * height == pytest.approx(PANEL_PX, abs=0.01)
    assert height > rows * PANEL_PX + (rows - 1) * (X_TICKS_PX + n * TITLE_LINE_PX)
