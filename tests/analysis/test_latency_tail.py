"""The window's tail counts the waits no completion measured (analysis/response/latency_tail.py and
the merge in analysis/response/latency_histograms.py): a stall's intervals are waits of at least its
length, the Go driver's transactions in flight at the window's end count at their age, nothing is
counted twice — and on copies of the committed studies the stalling rows' figures say so."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from analysis.reading.baselines import baseline_of
from analysis.response import latency
from analysis.response.latency_histograms import WindowHistograms, merge_runs, percentiles
from analysis.response.latency_tail import stall_bound_ms, stall_waits_ms, stalls_s
from analysis.tables.frames import load
from core.latency import HistogramLayout, dense_percentile_ms
from tests.support.recorded import recorded_copy

LAYOUT = HistogramLayout.of(128, 64, 2304)


def test_consecutive_empty_intervals_are_one_stall() -> None:
    count = np.array([5, 0, 0, 0, 0, 7, 0, 3, 0, 0])
    length = np.full(count.size, 10.0)
    assert stalls_s(count, length).tolist() == [40.0, 10.0, 20.0]
    assert stalls_s(np.array([1, 2]), np.array([10.0, 10.0])).size == 0


def test_a_stall_stands_for_the_transactions_the_run_completes_in_as_long() -> None:
    # 300 completions in 30 s outside the stall: 10/s, so a 40 s stall is 400 waits of
    # 0.1 s … 40 s, the longest the whole stall.
    count = np.array([100, 0, 0, 0, 0, 100, 100])
    waits = stall_waits_ms(count, np.full(count.size, 10.0))
    assert waits.size == 400
    assert waits.max() == 40_000 and waits.min() == pytest.approx(100)
    assert np.allclose(np.diff(np.sort(waits)), 100)
    # Nothing completed at all: each stall counts once, at its length.
    assert stall_waits_ms(np.zeros(3), np.full(3, 10.0)).tolist() == [30_000.0]
    assert stall_waits_ms(np.array([3, 4]), np.array([10.0, 10.0])).size == 0


def test_the_stall_bound_is_a_lower_bound_of_the_windows_percentile() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        completed = rng.lognormal(0, 1.5, rng.integers(1, 2000)) * 100
        count = np.r_[rng.integers(0, 3, 6) * rng.integers(1, 400, 6), 0]
        waits = stall_waits_ms(count, np.full(count.size, 10.0))
        for p in (95, 99, 99.9):
            everything = np.sort(np.r_[completed, waits])
            truth = everything[max(1, math.ceil(p / 100 * everything.size)) - 1]
            bound = stall_bound_ms(waits, completed.size, p)
            assert bound <= truth
            # Exact when every completion is shorter than every wait.
            tiny = np.full(completed.size, 1e-3)
            low = np.sort(np.r_[tiny, waits])
            exact = low[max(1, math.ceil(p / 100 * low.size)) - 1]
            assert stall_bound_ms(waits, completed.size, p) == exact or exact == 1e-3


def _run(completed_ms: list[float], open_ms: list[float], oldest_open_ms: float
         ) -> WindowHistograms:
    """One run's merged window: its completed response times and the ages of those in flight
    at its end (the oldest in flight at any of its interval ends given apart)."""
    def sparse(values: list[float]) -> tuple[np.ndarray, np.ndarray]:
        dense = np.bincount(LAYOUT.index_of(np.round(np.array(values) * 1000).astype(int)),
                            minlength=LAYOUT.buckets)
        index = np.flatnonzero(dense)
        return index, dense[index]

    index, count = sparse(completed_ms)
    types = {"new_order": (index, count, round(max(completed_ms) * 1000))}
    opened = {}
    if open_ms:
        oi, oc = sparse(open_ms)
        opened["new_order"] = (oi, oc, round(max(open_ms) * 1000), round(oldest_open_ms * 1000))
    return WindowHistograms(LAYOUT, 3, 3, None, types, opened)


def test_in_flight_at_the_windows_end_counts_at_its_age_and_the_oldest_anywhere_is_the_max(
        ) -> None:
    completed = [5.0] * 97
    run = _run(completed, open_ms=[20_000.0, 19_000.0, 18_000.0], oldest_open_ms=25_000.0)
    without = percentiles([run], with_open=False)
    assert without["p99_ms"] == pytest.approx(5.0, rel=1 / 128) and without["max_ms"] == 5.0
    got = percentiles([run])
    # 100 entries, 3 of them waits of 18–20 s: the p99 (rank 99) is the 19 s one.
    assert got["p99_ms"] == pytest.approx(19_000, rel=1 / 128)
    # The transaction that waited 25 s at an earlier interval's end and then failed: the max.
    assert got["max_ms"] == 25_000
    # The stall waits add on top, counted once per run.
    waits = [np.array([40_000.0])]
    assert percentiles([run], waits_ms=waits)["max_ms"] == 40_000


def test_a_cell_adds_its_runs_waits() -> None:
    quiet = _run([5.0] * 200, [], 0)
    stalled = _run([5.0] * 200, [30_000.0], 30_000.0)
    waits = [np.zeros(0), stall_waits_ms(np.array([100, 0, 100]), np.full(3, 10.0))]
    layout, dense, top = merge_runs([quiet, stalled], "new_order", waits_ms=waits)
    assert dense.sum() == 400 + 1 + 100 and top == 30_000
    # 501 entries: the top 1 % (6) are the in-flight one and the five longest stall waits.
    assert dense_percentile_ms(layout, dense, top, 99) >= 9_000


def _cells(path: Path, experiment: str) -> tuple[latency.Latency, dict[int, int]]:
    fr = load(path, experiment)
    return latency.load(path, fr), baseline_of(fr.cell_summary)


#: How good a p99 verdict is, against the row's own baseline (the baseline itself: level).
RANK = {latency.LOWER: 2, "no clear difference": 1, "baseline": 1, latency.HIGHER: 0}


def test_flash_no_stalling_row_gets_a_better_p99_verdict_than_a_steady_one(
        recorded_flash: Path) -> None:
    lat, base = _cells(recorded_flash, "stability-2011-flash")
    cells = lat.cells
    assert (cells["stall_s_median"] > 0).any() and (cells["stall_s_median"] == 0).any()
    for group in set(base.values()):
        mine = cells[cells.index.map(base) == group]
        stalling = mine[mine["stall_s_median"] > 0]
        steady = mine[mine["stall_s_median"] == 0]
        for a, row in stalling.iterrows():
            for b, other in steady.iterrows():
                assert RANK[row["verdict"]] <= RANK[other["verdict"]], (a, b)
    # The baseline stops dead for about a minute a run: it no longer has the best tail.
    assert cells.loc[1, "stall_s_median"] > 0 and cells.loc[2, "verdict"] == latency.LOWER


def test_generations_mysql55_defaults_tail_holds_its_stalls(
        tmp_path_factory: pytest.TempPathFactory, cli) -> None:  # noqa: ANN001
    path = recorded_copy("generations", tmp_path_factory)
    lat, _ = _cells(path, "generations")
    first = lat.cells.loc[1]  # mysql-5.5 defaults: 20–40 s without a New-Order
    assert first["value_ms"] >= 10_000 and first["max_ms"] >= 40_000
    code, out, err = cli(["compare", "generations", "--db", str(path)])
    assert code == 0, err
    lines = out[out.index("Response time:"):].splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("│ C1 "))
    row = lines[at:next(i for i in range(at + 1, len(lines)) if lines[i].startswith("│ C2 "))]
    # The row may wrap: its p99 and p99.9 / max columns, every line of them.
    figures = [float(x.replace(",", "")) for line in row for cell in line.split("│")[2:4]
               for x in cell.replace("/", " ").split() if x != "–"]
    assert figures[0] >= 10_000 and max(figures) >= 40_000


def test_the_median_is_the_middle_wait_and_a_queue_of_waits_moves_it() -> None:
    """p50 from the merged histogram: the middle completion; when waits outnumber the
    completions, the median is a wait (a fixed-rate run that queued half its load)."""
    run = _run([2.0] * 50 + [8.0] * 51, [], 0)
    assert percentiles([run])["p50_ms"] == pytest.approx(8.0, rel=1 / 128)
    run = _run([2.0] * 51 + [8.0] * 50, [], 0)
    assert percentiles([run])["p50_ms"] == pytest.approx(2.0, rel=1 / 128)
    queued = _run([2.0] * 40, [3_000.0] * 41, 3_000.0)
    assert percentiles([queued], with_open=False)["p50_ms"] == pytest.approx(2.0, rel=1 / 128)
    assert percentiles([queued])["p50_ms"] == pytest.approx(3_000, rel=1 / 128)
