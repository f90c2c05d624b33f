"""Response time per run and cell: window p99 merged from the stored histograms (checked
against an independent merge of each interval's blob), stalls where the throughput fell,
verdicts with lower = better, the cache, and runs without histograms named, never failed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.response import latency, latency_histograms
from analysis.tables.frames import load
from core.latency import TypeHistogram, merge, percentile_ms
from store.latency_codec import decode
from tests.support.synthetic_store import SynthCell, build_store


@pytest.fixture(scope="module")
def slow_cell_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three cells, five runs each: the baseline; one with responses 1.6 × slower; one whose
    throughput drops to a fifth every 300 s (its latency then rises fivefold: a stall)."""
    path = tmp_path_factory.mktemp("latency") / "results.sqlite"
    build_store(path, [SynthCell(knobs={"doublewrite": True}, notpm=30000),
                       SynthCell(knobs={"doublewrite": False}, notpm=30000, latency_scale=1.6),
                       SynthCell(knobs={"doublewrite": False, "io_capacity": 400},
                                 notpm=30000, hole_every_s=300.0)],
                name="latency", repetitions=5, warmup=30, duration=600, n_counters=40,
                seed=3)
    return path


@pytest.fixture()
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _independent(db: Path, window: pd.DataFrame, run_ids: list[int], name: str = "new_order"
                 ) -> dict[str, float | None]:
    """The merged window percentiles of these runs, decoding every blob on its own and merging
    with the driver's dict rules (no numpy path of the analysis)."""
    con = sqlite3.connect(db)
    hists, layout = [], None
    for run_id in run_ids:
        for seq in window.loc[window["run_id"] == run_id, "seq"]:
            (blob,) = con.execute("SELECT latency_z FROM intervals WHERE run_id = ? AND seq = ?",
                                  (int(run_id), int(seq))).fetchone()
            layout, types = decode(blob)
            buckets, top = types[name]
            hists.append(TypeHistogram(buckets, top))
    counts, top = merge(hists)
    return {f"p{q}_ms": percentile_ms(layout, counts, top, q) for q in (50, 95, 99)} | {
        "max_ms": top}


def test_window_and_cell_p99_are_the_merge_of_the_stored_histograms(
        slow_cell_db: Path, own_cache: Path) -> None:
    fr = load(slow_cell_db)
    lat = latency.load(slow_cell_db, fr)
    assert lat.view.exact and lat.view.percentile == 99 and not lat.missing
    window = fr.intervals[fr.intervals["in_window"]]
    for run_id in lat.runs.index[:4]:
        want = _independent(slow_cell_db, window, [run_id])
        got = lat.runs.loc[run_id]
        assert (got["window_ms"], got["window_p50_ms"], got["window_p95_ms"],
                got["window_max_ms"]) == (want["p99_ms"], want["p50_ms"], want["p95_ms"],
                                          want["max_ms"])
        # The driver's per-interval figures are another thing: their median is not the merge.
        assert got["median_ms"] != got["window_ms"]
    rs = fr.run_summary
    first = int(fr.cell_summary["cell_id"].iloc[0])
    runs = [int(r) for r in rs.loc[rs["cell_id"] == first, "run_id"]]
    assert lat.cells.loc[first, "value_ms"] == _independent(slow_cell_db, window, runs)[
        "p99_ms"]
    payment = lat.types[(lat.types["cell_id"] == first) & (lat.types["type"] == "payment")]
    assert payment["p99_ms"].iloc[0] == _independent(slow_cell_db, window, runs,
                                                     "payment")["p99_ms"]
    assert payment["exact"].iloc[0]


def test_slower_responses_get_a_higher_verdict_and_stalls_are_counted(
        slow_cell_db: Path, own_cache: Path) -> None:
    fr = load(slow_cell_db)
    lat = latency.load(slow_cell_db, fr)
    cells = lat.cells.join(fr.cell_summary.set_index("cell_id")[["position"]]).sort_values(
        "position")
    base, slow, holes = cells.index
    assert cells.loc[base, "verdict"] == "baseline"
    assert cells.loc[slow, "verdict"] == latency.HIGHER
    assert 1.4 < cells.loc[slow, "ratio"] < 1.8
    # The held-throughput cell: no stall; the cell whose throughput falls every 300 s: one
    # 10 s stall each time in the window (its p99 then far above 4 × the median).
    assert cells.loc[base, "stall_s_max"] == 0
    window_s = fr.experiment["window"].length
    assert cells.loc[holes, "stall_s_median"] == pytest.approx(10 * window_s // 300, abs=10)
    assert cells.loc[holes, "jitter_pct_median"] > 3 * cells.loc[base, "jitter_pct_median"]


def test_the_cache_gives_the_same_figures_without_reading_a_blob(
        slow_cell_db: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fr = load(slow_cell_db)
    first = latency.load(slow_cell_db, fr)

    def no_reading(*_: Any) -> None:
        raise AssertionError("read the blobs again")

    monkeypatch.setattr(latency_histograms, "_merge_from_store", no_reading)
    second = latency.load(slow_cell_db, fr)
    pd.testing.assert_frame_equal(first.runs, second.runs)
    pd.testing.assert_frame_equal(first.cells, second.cells)
    pd.testing.assert_frame_equal(first.types, second.types)


def _copy(src: Path, dst: Path) -> Path:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


def test_runs_without_histograms_are_named_and_use_the_drivers_figures(
        slow_cell_db: Path, own_cache: Path, tmp_path: Path) -> None:
    db = _copy(slow_cell_db, tmp_path / "some-without.sqlite")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE intervals SET latency_z = NULL WHERE run_id = 2")
        con.execute("UPDATE intervals SET latency_z = X'00' WHERE run_id = 3 AND seq = 50")
    fr = load(db)
    lat = latency.load(db, fr)
    assert not lat.view.exact  # not every counted run has its window's histograms
    assert set(lat.missing) == {2, 3}
    assert "older than them" in lat.missing[2]
    assert "interval 50's latency histogram could not be read" in lat.missing[3]
    assert "cut short" in lat.missing[3]  # one byte of a zlib stream
    assert lat.runs.loc[2, "histograms"] == "none" and lat.runs.loc[3, "histograms"] == \
        "partial"
    assert np.isnan(lat.runs.loc[2, "window_ms"]) and np.isnan(lat.runs.loc[3, "window_ms"])
    # Every run is then judged by the driver's own figure, the same kind for all of them.
    pd.testing.assert_series_equal(lat.runs["value_ms"], lat.runs["median_ms"],
                                   check_names=False)
    assert lat.runs.loc[1, "window_ms"] > 0  # a complete run keeps its exact figure


def test_a_store_of_an_older_driver_reads_as_the_drivers_figures(
        tmp_path: Path, own_cache: Path) -> None:
    db = tmp_path / "old.sqlite"
    build_store(db, [SynthCell(knobs={"doublewrite": True}),
                     SynthCell(knobs={"doublewrite": False})], name="old", repetitions=2,
                duration=120, n_counters=30, latency_histograms=False)
    fr = load(db)
    lat = latency.load(db, fr)
    assert not lat.view.exact and len(lat.missing) == len(lat.runs) == 4
    assert (lat.runs["value_ms"] == 20.0).all()  # the fixed per-interval p99 of that store
    assert not lat.types["exact"].any()


def test_stalls_and_jitter_at_the_threshold() -> None:
    """Per-interval p99 of one run (median 10 ms): 40 ms is 4 × the median, not above it; 40.1
    is a stall; an interval without New-Orders is a stall and has no p99 (the Go driver prints
    0 there), so it neither moves the median nor the jitter."""
    p99 = [10.0, 10.0, 9.0, 11.0, 40.0, 40.1, 0.0, 10.0, 10.0]
    count = [100, 100, 100, 100, 100, 100, 0, 100, 100]
    df = pd.DataFrame({"run_id": 7, "seq": range(1, 10), "in_window": True, "t": range(10, 100,
                                                                                      10),
                       "interval_s": 10.0, "primary_count": count, "p99_ms": p99,
                       "max_ms": [x * 2 for x in p99]})
    fig = latency.run_figures(df, "p99_ms").loc[7]
    assert fig["median_ms"] == 10.0
    assert (fig["stall_intervals"], fig["stall_s"]) == (2, 20.0)
    kept = np.array([10.0, 10.0, 9.0, 11.0, 40.0, 40.1, 10.0, 10.0])
    assert fig["jitter_pct"] == pytest.approx(100 * kept.std(ddof=1) / kept.mean())
    assert fig["window_max_ms"] == 80.2
    assert latency.stall_spans(df, "p99_ms", [7]) == {7: [(50.0, 60.0), (60.0, 70.0)]}


def test_runs_whose_window_seqs_and_blob_sizes_coincide_keep_their_own_histograms(
        tmp_path: Path, own_cache: Path) -> None:
    """Two databases of the same design, recorded apart: their run 1 has the same window seqs,
    and here the same blob sizes too (as a coincidence would give). The second's merge is its
    own, not the first's from the cache."""
    dbs = []
    for seed, scale in ((1, 1.0), (2, 3.0)):
        db = tmp_path / f"seed{seed}.sqlite"
        build_store(db, [SynthCell(knobs={"doublewrite": True}, latency_scale=scale)],
                    name="twins", repetitions=1, duration=120, n_counters=30, seed=seed)
        dbs.append(db)
    first_fr, second_fr = load(dbs[0]), load(dbs[1])
    first = latency_histograms.window_histograms(dbs[0], first_fr.intervals, [1])[1]
    twin = second_fr.intervals.copy()
    twin["latency_bytes"] = first_fr.intervals["latency_bytes"].to_numpy()
    assert (twin["seq"].to_numpy() == first_fr.intervals["seq"].to_numpy()).all()
    second = latency_histograms.window_histograms(dbs[1], twin, [1])[1]
    window = second_fr.intervals[second_fr.intervals["in_window"]]
    want = _independent(dbs[1], window, [1])
    assert second.types["new_order"][2] == round(want["max_ms"] * 1000)
    assert second.types["new_order"][2] != first.types["new_order"][2]
