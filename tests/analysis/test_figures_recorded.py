"""Every figure kind of the report, drawn from a database recorded by real runs (the 2011
study on MySQL 5.5, the allocator sweep on MariaDB), checked for its data: the traces drawn,
their order, the window, the labels and units, the baseline's style."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.comparisons import row_compare
from analysis.comparisons.compare import Comparison, compare
from analysis.figures import distributions, plots
from analysis.reading.memory import load_memory, memory_matters
from analysis.reading.metric import metric_view
from analysis.tables import frames, io_breakdown
from core.errors import AnalysisError

STUDY = "stability-2011"


def _unwrapped(labels: Iterable[object]) -> list[str]:
    """Axis labels as the cells name them: long ones are wrapped at spaces into <br> lines."""
    return [str(label).replace("<br>", " ") for label in labels]


@pytest.fixture(scope="module")
def study(recorded_study: Path) -> Comparison:
    return compare(recorded_study, STUDY)


@pytest.fixture(scope="module")
def alloc(recorded_allocators: Path) -> Comparison:
    return compare(recorded_allocators, "allocators-example")


def _cell_intervals(cmp: Comparison) -> pd.DataFrame:
    rs = cmp.frames.run_summary
    return cmp.frames.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")


def _window(cmp: Comparison) -> tuple[float, float]:
    win = cmp.experiment["window"]
    return win.start, win.end


def _row_labels(cmp: Comparison) -> list[str]:
    cells = cmp.cells.sort_values("position")
    return [f"{lbl} (baseline)" if b else lbl
            for lbl, b in zip(cells["cell_label"], cells["is_baseline"], strict=True)]


def test_bars_are_ranked_means_with_the_baseline_in_its_colour(study: Comparison) -> None:
    fig = plots.notpm_bars(study.cells)
    bar = fig.data[0]
    ranked = study.cells.sort_values("notpm_mean")
    assert _unwrapped(bar.y) == list(ranked["cell_label"])
    assert list(bar.x) == pytest.approx(list(ranked["notpm_mean"]))
    base = list(ranked["is_baseline"]).index(True)
    assert bar.marker.color[base] == plots.BASELINE_COLOUR
    assert bar.text[base] == "baseline"


def test_interval_boxes_hold_the_window_intervals_and_every_run_mean(study: Comparison) -> None:
    ivl = _cell_intervals(study)
    fig = distributions.interval_boxes(ivl, study.cells)
    names = _row_labels(study)
    assert _unwrapped(fig.layout.yaxis.categoryarray) == names  # row order, baseline named
    assert fig.layout.yaxis.autorange == "reversed"  # the first row on top
    boxes = [t for t in fig.data if t.type == "box"]
    dots = [t for t in fig.data if t.type == "scatter"]
    assert _unwrapped(b.y[0] for b in boxes) == names
    cells = study.cells.sort_values("position")
    win = ivl[ivl["in_window"]]
    for box, dot, (_, cell) in zip(boxes, dots, cells.iterrows(), strict=True):
        values = win.loc[win["cell_id"] == cell["cell_id"], "notpm"].to_numpy()
        assert box.q1[0] == pytest.approx(np.percentile(values, 25))
        assert box.median[0] == pytest.approx(np.median(values))
        assert box.upperfence[0] == pytest.approx(np.percentile(values, 95))
        means = win[win["cell_id"] == cell["cell_id"]].groupby("run_id")["notpm"].mean()
        assert sorted(dot.x) == pytest.approx(sorted(means))  # one dot per run
        assert len(dot.x) == cell["n_done"]
        assert box.marker.color == dot.marker.color
    assert boxes[0].marker.color == plots.BASELINE_COLOUR


def test_stability_shows_every_run_score_including_the_zero(study: Comparison) -> None:
    rs = study.frames.run_summary
    fig = distributions.stability_runs(rs, study.cells)
    scores = sorted(float(x) for t in fig.data for x in t.x)
    done = rs[(rs["status"] == "done") & rs["score"].notna()]
    assert scores == pytest.approx(sorted(done["score"]))
    assert 0.0 in scores  # the run a median bar hid (run 25 of doublewrite=on/60)
    zero = next(t for t in fig.data if 0.0 in list(t.x))
    assert 25 in list(zero.customdata)
    # One trace per cell, in row order, placed on its own row.
    assert _unwrapped(fig.layout.yaxis.ticktext) == _row_labels(study)
    for i, t in enumerate(fig.data):
        assert all(abs(y - i) < 0.5 for y in t.y)
    assert fig.layout.xaxis.range[0] < 0  # a score of 0 is not on the axis line


def test_two_cells_draw_every_run_the_median_bold_and_the_window(
    recorded_study: Path, study: Comparison
) -> None:
    fig = row_compare.compare_cells(recorded_study, STUDY, "C1", "doublewrite=off "
                                  "max_dirty_pages_pct=50")
    rs = study.frames.run_summary
    cells = study.cells.sort_values("position")
    c1, c3 = (int(cells.iloc[i]["cell_id"]) for i in (0, 2))
    done = rs[rs["status"] == "done"]
    expected = set(done.loc[done["cell_id"].isin([c1, c3]), "run_id"].astype(int))
    drawn = {int(t.hovertemplate.split("run ")[1].split("<")[0]) for t in fig.data}
    assert drawn == expected
    bold = [t for t in fig.data if t.showlegend]
    assert len(bold) == 2 and all(t.line.width > 2 for t in bold)
    # Unnamed rows: the baseline by its label, the other by what differs from the baseline.
    base, other = ("doublewrite=on max_dirty_pages_pct=75 io_capacity=200",
                   "doublewrite=off max_dirty_pages_pct=50 io_capacity=20000")
    assert bold[0].name.startswith(f"{base} (baseline)")
    assert bold[0].line.color == plots.BASELINE_COLOUR
    assert bold[1].name.startswith(f"{other} — median run")
    assert fig.data[-1].showlegend  # the bold lines are drawn on top
    ivl = _cell_intervals(study)
    medians = row_compare.median_runs(ivl[ivl["cell_id"].isin([c1, c3])])
    assert bold[0].name.endswith(f"median run {medians[c1]}")
    g = ivl[ivl["run_id"] == medians[c1]]
    assert list(bold[0].y) == list(g.loc[g["t"] > 0, "primary_count"])
    rect = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rect) == 1 and (rect[0].x0, rect[0].x1) == tuple(x / 60 for x in _window(study))
    assert fig.layout.title.text.replace("<br>", " ").startswith(
        f"{base} vs {other}: New-Order transactions per 10 s")


def test_two_cells_checkpoint_age_comes_from_the_samples(recorded_study: Path) -> None:
    fig = row_compare.compare_cells(recorded_study, STUDY, "1", "3", metric="checkpoint-age")
    assert fig.layout.yaxis.title.text == "checkpoint age (% of its maximum)"
    assert max(max(t.y) for t in fig.data) > 95  # the baseline pressed against its maximum


def test_two_cells_name_cells_clearly(study: Comparison) -> None:
    cells = study.cells
    assert row_compare.resolve_cell(cells, "c2")["position"] == 1
    assert row_compare.resolve_cell(cells, "io_capacity=200")["is_baseline"]
    with pytest.raises(AnalysisError, match="matches several cells"):
        row_compare.resolve_cell(cells, "doublewrite=off")
    with pytest.raises(AnalysisError, match="names no cell.*C8 = "):
        row_compare.resolve_cell(cells, "C9")


def test_checkpoint_figure_in_mib_with_its_limits_and_window(
    recorded_study: Path, study: Comparison
) -> None:
    reps = frames.representative_runs(study.frames.run_summary)
    run = next(iter(reps.values()))
    smp = frames.samples(recorded_study, STUDY, run_ids=[run])
    fig = plots.checkpoint_dirty(smp, window=_window(study))
    good = smp[~smp["missed"] & (smp["t"] > 0)]
    assert [t.name for t in fig.data] == ["checkpoint age (MiB)", "dirty pages (%)"]
    assert list(fig.data[0].y) == pytest.approx(list(good["checkpoint_age_mb"]), nan_ok=True)
    assert fig.layout.yaxis.title.text == "checkpoint age (MiB)"
    texts = [a.text for a in fig.layout.annotations]
    assert any(t.startswith("max checkpoint age") and t.endswith("MiB") for t in texts)
    assert "measurement window" in texts
    assert not any(" MB" in (t or "") for t in texts)


def test_flushing_figure_is_shaded_and_in_binary_units(
    recorded_study: Path, study: Comparison
) -> None:
    run = next(iter(frames.representative_runs(study.frames.run_summary).values()))
    smp = frames.samples(recorded_study, STUDY, run_ids=[run])
    fig = plots.flushing(smp, window=_window(study))
    assert fig.data[0].name == "pages flushed/s"
    assert fig.data[-1].name == "redo written (MiB/s)" and fig.data[-1].yaxis == "y2"
    rect = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rect) == 1 and rect[0].x0 == _window(study)[0] / 60


def test_threads_sweep_dodges_series_and_promises_only_what_it_draws(alloc: Comparison) -> None:
    m = metric_view(alloc.experiment)
    fig = plots.threads_sweep(alloc.cells, unit=m.name, scale=m.scale)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["glibc", "jemalloc", "tcmalloc"]
    tested = [4, 16, 64]
    assert list(fig.layout.xaxis.tickvals) == tested
    for t in lines:
        assert list(t.customdata) == tested  # hover says the real thread count
    # At each thread count the three points sit apart, in legend order, around the tick.
    for k, threads in enumerate(tested):
        xs = [t.x[k] for t in lines]
        assert xs == sorted(xs) and len(set(xs)) == 3
        assert xs[0] < threads < xs[2] and xs[1] == pytest.approx(threads)
    cells = alloc.cells.set_index(["allocator", "connections"])
    glibc = lines[0]
    assert list(glibc.y) == pytest.approx(
        [cells.loc[("glibc", n), "notpm_mean"] / 60 for n in tested])
    assert "no data" not in fig.layout.title.text  # every cell has data: no such marker
    assert not [t for t in fig.data if t.name == "no data"]


def test_heatmap_only_for_a_factorial_design_and_centred_on_the_baseline(
    study: Comparison, alloc: Comparison
) -> None:
    assert not plots.is_factorial(study.cells, frames.varying_knobs(study.frames.run_summary))
    knobs = frames.varying_knobs(alloc.frames.run_summary)
    assert sorted(knobs) == ["allocator", "connections"] and plots.is_factorial(alloc.cells,
                                                                                knobs)
    fig = plots.stability_heatmap(alloc.cells, "connections", "allocator",
                                  value="notpm_mean", label="TPS")
    hm = fig.data[0]
    assert hm.colorscale[0][1] != hm.colorscale[-1][1] and hm.zmid == 0
    assert hm.zmin == -hm.zmax
    assert list(hm.x) == ["4", "16", "64"] and list(hm.y) == ["glibc", "jemalloc", "tcmalloc"]
    z = np.array(hm.z, dtype=float)
    assert z[0][0] == 0.0 and hm.text[0][0].startswith("baseline")
    cells = alloc.cells.set_index(["allocator", "connections"])
    r = cells.loc[("tcmalloc", 64)]
    assert z[2][2] == pytest.approx(100 * (r["ratio"] - 1))
    assert hm.text[2][2] == f"{r['ratio']:.2f}×<br>{r['verdict']}"
    assert np.isfinite(z).all()  # factorial: no empty tile


def test_memory_figures_only_when_memory_tells_something(
    recorded_study: Path, recorded_allocators: Path, study: Comparison, alloc: Comparison
) -> None:
    _, study_mem = load_memory(recorded_study, study.frames.run_summary)
    draw, why = memory_matters(study_mem, frames.varying_knobs(study.frames.run_summary))
    assert not draw and "no memory knob varies" in why
    _, alloc_mem = load_memory(recorded_allocators, alloc.frames.run_summary)
    draw, why = memory_matters(alloc_mem, frames.varying_knobs(alloc.frames.run_summary))
    assert draw and "allocator" in why


def test_rss_over_time_in_mib_one_line_per_configuration_in_row_order(
    recorded_allocators: Path, alloc: Comparison
) -> None:
    reps = frames.representative_runs(alloc.frames.run_summary)
    cells = alloc.cells.set_index("cell_id").sort_values("position")
    labels = {reps[c]: cells.loc[c, "cell_label"] for c in cells.index if c in reps}
    smp = frames.samples(recorded_allocators, "allocators-example", run_ids=list(labels),
                         counters=None)
    fig = plots.rss_over_time(smp, labels=labels, window=_window(alloc))
    assert [t.name for t in fig.data] == list(labels.values())
    assert fig.layout.yaxis.title.text == "mysqld RSS (MiB)"
    first = smp[smp["run_id"] == next(iter(labels))].sort_values("t")
    assert list(fig.data[0].y) == pytest.approx(list(first["mysqld_rss_bytes"] / 2**20),
                                                nan_ok=True)
    mem = plots.memory(first, window=_window(alloc))
    assert mem.data[0].name == "RSS" and mem.layout.yaxis.title.text == "resident memory (MiB)"


def test_io_breakdown_figure_from_the_recorded_study(
    recorded_study: Path, study: Comparison
) -> None:
    table = io_breakdown.per_cell(recorded_study, study.frames)
    fig = io_breakdown.figure(table)
    assert list(table.index) == list(study.cells.sort_values("position")["cell_label"])
    parts = [p[0] for p in io_breakdown.PARTS]
    ops = [t for t in fig.data if t.xaxis == "x"]
    assert [t.name for t in ops] == parts  # legend in the order the bars stack
    for t in fig.data:
        assert _unwrapped(t.y) == list(table.index)  # cells in row order
        col = f"{t.name} ops" if t.xaxis == "x" else f"{t.name} KiB"
        assert list(t.x) == pytest.approx(list(table[col]), nan_ok=True)
    assert fig.layout.xaxis2.title.text == "KiB written per New-Order"
