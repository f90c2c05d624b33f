"""Memory series, per-run and per-cell memory figures, and the memory figures, on hand-made
samples: RSS in MiB on its own axis, VSZ never on an RSS axis."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.figures import plots
from analysis.reading.memory import cell_memory, memory_series, run_memory

MiB = 1024 * 1024
#: What mysqld really reserves: ~8 TB of address space against a few hundred MB resident.
VSZ = 8 * 1024**4


def _samples(run_id: int, rss_mb: list[float], *, step_s: float = 10.0, warmup_ticks: int = 2,
             missed: tuple[int, ...] = (), anon_huge_mb: float = 0.0) -> pd.DataFrame:
    """Samples of one run: the first ``warmup_ticks`` before the measurement, all in window."""
    n = len(rss_mb)
    t = (np.arange(n) - warmup_ticks + 1) * step_s
    rss = np.asarray(rss_mb) * MiB
    return pd.DataFrame({
        "run_id": run_id,
        "seq": np.arange(n),
        "t": t,
        "missed": [i in missed for i in range(n)],
        "in_window": t > 0,
        "mysqld_rss_bytes": rss,
        "mysqld_rss_anon_bytes": rss * 0.9,
        "mysqld_rss_file_bytes": rss * 0.1,
        "mysqld_rss_shmem_bytes": 0.0,
        "mysqld_anon_hugepages_bytes": anon_huge_mb * MiB,
        "mysqld_hugetlb_bytes": 0.0,
        "mysqld_vsz_bytes": float(VSZ),
    })


def test_memory_series_is_in_mb_and_drops_missed_ticks() -> None:
    df = _samples(1, [100, 200, 300, 400], missed=(2,), anon_huge_mb=64)
    mem = memory_series(df)
    assert mem["rss_mb"].tolist() == [100, 200, 400]
    assert mem["rss_anon_mb"].tolist() == pytest.approx([90, 180, 360])
    assert mem["anon_huge_mb"].tolist() == [64, 64, 64]
    assert mem["vsz_mb"].iloc[0] == VSZ / MiB


def test_memory_series_of_samples_without_the_split_columns() -> None:
    """Samples stored before the split existed: the split is NaN, RSS still there."""
    df = _samples(1, [100, 110]).drop(columns=["mysqld_rss_anon_bytes", "mysqld_hugetlb_bytes"])
    mem = memory_series(df)
    assert mem["rss_mb"].tolist() == [100, 110]
    assert mem["rss_anon_mb"].isna().all() and mem["hugetlb_mb"].isna().all()


def test_run_memory_peak_end_and_steady_growth() -> None:
    # Warmup peak 900 MB, then 500 MB growing 3 MB per 10 s sample = 18 MB/min.
    growing = [300, 900] + [500 + 3 * i for i in range(12)]
    flat = [300, 400] + [500 + (1 if i % 2 else -1) for i in range(12)]
    per_run = run_memory(pd.concat([_samples(1, growing), _samples(2, flat)])).set_index(
        "run_id")
    grow = per_run.loc[1]
    assert grow["rss_peak_mb"] == 900  # warmup included: a peak is a peak
    assert grow["rss_end_mb"] == 500 + 3 * 11
    assert grow["n_window_samples"] == 12
    assert grow["rss_growth_mb_per_min"] == pytest.approx(18.0)
    assert grow["memory_warning"].startswith("RSS grows steadily: +18.0 MiB/min")
    still = per_run.loc[2]
    assert abs(still["rss_growth_mb_per_min"]) < 1
    assert still["memory_warning"] == ""
    assert still["vsz_peak_mb"] == VSZ / MiB


def test_small_steady_growth_is_not_a_warning() -> None:
    """Growth under 1 % of RSS over the window is a real slope but not worth a warning."""
    slow = [1000, 1000] + [1000 + 0.05 * i for i in range(12)]
    row = run_memory(_samples(1, slow)).iloc[0]
    assert row["rss_growth_mb_per_min"] == pytest.approx(0.3)
    assert row["memory_warning"] == ""


def test_cell_memory_has_cis_and_keeps_cells_without_data() -> None:
    smp = pd.concat([_samples(1, [0, 0] + [500] * 6), _samples(2, [0, 0] + [520] * 6),
                     _samples(3, [0, 0] + [510] * 6)])
    rs = pd.DataFrame({"run_id": [1, 2, 3, 4], "cell_id": [10, 10, 10, 20],
                       "position": [0, 0, 0, 1], "cell_label": ["a", "a", "a", "b"],
                       "status": ["done", "done", "done", "failed"]})
    cells = cell_memory(run_memory(smp), rs).set_index("cell_id")
    a = cells.loc[10]
    assert a["n_runs"] == 3
    assert a["rss_end_mb"] == pytest.approx(510)
    assert a["rss_end_ci_low"] < 510 < a["rss_end_ci_high"]
    b = cells.loc[20]  # missing, not skipped
    assert b["n_runs"] == 0 and math.isnan(b["rss_peak_mb"])


def _all_y(fig: object) -> np.ndarray:
    return np.concatenate([np.asarray(tr.y, dtype=float) for tr in fig.data])


def test_memory_figure_has_rss_in_mb_on_its_own_axis_and_no_vsz() -> None:
    fig = plots.memory(_samples(1, [100, 200, 300, 400], anon_huge_mb=32))
    names = [tr.name for tr in fig.data]
    assert {tr.yaxis for tr in fig.data} <= {None, "y"}
    assert names[0] == "RSS" and "anonymous huge pages (THP)" in names
    assert not any("VSZ" in n for n in names)
    assert fig.layout.yaxis.title.text == "resident memory (MiB)"
    y = _all_y(fig)
    assert np.nanmax(y) == 400  # MB, not bytes
    assert np.nanmax(y) < VSZ / MiB / 1000  # the 8 TB VSZ is nowhere on this axis
    assert not any("hugetlb" in n for n in names)  # a part the run does not have: no line


def test_rss_over_time_overlays_one_line_per_run_in_mb() -> None:
    smp = pd.concat([_samples(1, [100, 150, 200]), _samples(2, [300, 310, 320]),
                     _samples(3, [999, 999, 999])])
    fig = plots.rss_over_time(smp, labels={1: "glibc", 2: "jemalloc"},
                              colors={1: "#111111", 2: "#222222"}, dashes={2: "dash"})
    assert [tr.name for tr in fig.data] == ["glibc", "jemalloc"]
    assert list(fig.data[1].y) == [300, 310, 320]
    assert fig.data[1].line.dash == "dash" and fig.data[0].line.color == "#111111"
    assert "MiB" in fig.layout.yaxis.title.text and "VSZ" not in fig.layout.yaxis.title.text
    assert np.nanmax(_all_y(fig)) == 320  # run 3 has no label: not drawn
    assert {tr.yaxis for tr in fig.data} <= {None, "y"}  # a single y axis


def _cells(rows: list[tuple[str, int, float]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["allocator", "connections", "notpm_mean"])
    df["notpm_ci_low"] = df["notpm_mean"] * 0.9
    df["notpm_ci_high"] = df["notpm_mean"] * 1.1
    return df


def test_threads_sweep_ticks_at_tested_counts_and_shows_missing_cells() -> None:
    cells = _cells([("glibc", 8, 6000.0), ("glibc", 64, 12000.0),
                    ("jemalloc", 8, 6600.0), ("jemalloc", 64, math.nan)])
    fig = plots.threads_sweep(cells, unit="TPS", scale=1 / 60)
    assert list(fig.layout.xaxis.tickvals) == [8, 64]
    assert list(fig.layout.xaxis.ticktext) == ["8", "64"]
    lines = {tr.name: tr for tr in fig.data if tr.mode == "lines+markers"}
    assert set(lines) == {"glibc", "jemalloc"}
    assert list(lines["glibc"].y) == pytest.approx([100, 200])  # NOTPM/60 = TPS
    assert list(lines["glibc"].error_y.array) == pytest.approx([10, 20])
    assert math.isnan(lines["jemalloc"].y[1])  # a gap in the line...
    missing = [tr for tr in fig.data if tr.name == "no data"]
    # ...and a visible marker at 64 threads (dodged beside the tick like its line's points).
    assert len(missing) == 1 and list(missing[0].customdata) == [64]
    assert missing[0].x[0] == pytest.approx(lines["jemalloc"].x[1])
    assert "x on the axis: no data" in fig.layout.title.text
    assert fig.layout.yaxis.title.text == "TPS"


def test_threads_sweep_keeps_an_allocator_that_lacks_a_count_as_a_gap() -> None:
    cells = _cells([("glibc", 4, 60.0), ("glibc", 16, 120.0), ("tcmalloc", 16, 130.0)])
    fig = plots.threads_sweep(cells)
    tc = next(tr for tr in fig.data if tr.name == "tcmalloc")
    assert list(tc.customdata) == [4, 16] and math.isnan(tc.y[0]) and tc.y[1] == 130
