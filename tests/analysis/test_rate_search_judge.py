"""A rate search's step judged from its stored window (``analysis/response/rate_search.py``,
``judge_step``): what holds a target and what does not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from analysis.comparisons.compare import compare
from analysis.response import latency
from analysis.response.rate_search import judge_step
from analysis.tables import frames
from tests.support.cli_runner import CliRun
from tests.support.synthetic_store import (
    SynthCell,
    build_store,
    fixed_rate_store,
    rate_search_store,
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))


def test_a_search_step_stalls_only_where_an_interval_completed_nothing(
        tmp_path: Path) -> None:
    """A rate search's stall seconds are the window's intervals that completed no New-Order
    (the target's ``stall_s``): an interval whose p99 is far above the run's median is the
    tail the p99 judges, not a stall; an empty one is."""
    path = fixed_rate_store(tmp_path / "steps.sqlite")
    window = frames.intervals(path, run_ids=[1])
    window = window[window["in_window"]]
    slow, empty = (int(s) for s in window["seq"].iloc[[2, 5]])
    with sqlite3.connect(path) as con:
        con.execute("UPDATE intervals SET p99_ms = p99_ms * 50 WHERE run_id = 1 AND seq = ?",
                    (slow,))
    step = judge_step(path, 1, 2400)
    assert step.stall_s == 0 and latency.run_figures(
        frames.intervals(path, run_ids=[1]), "p99_ms").at[1, "stall_s"] > 0
    with sqlite3.connect(path) as con:
        con.execute("UPDATE intervals SET primary_count = 0 WHERE run_id = 1 AND seq = ?",
                    (empty,))
    assert judge_step(path, 1, 2400).stall_s == float(window["interval_s"].iloc[5])


def test_a_search_is_never_warned_about_pooled_verdicts(tmp_path: Path, cli: CliRun,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A search's runs are steps at different rates, never pooled: `compare` warns about its
    runs (a failed or disturbed step) but not that a row has no verdict or one that moves with
    the window — a one-run-a-cell experiment that pools its runs is warned so."""
    path = rate_search_store(tmp_path / "search.sqlite")
    assert not [w for w in compare(path, "search").warnings if "verdict" in w]
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = cli(["compare", "search", "--db", str(path)])
    assert code == 0, err
    assert "rate search" in out and "no verdict" not in out, out
    assert "search not finished (1 step so far)" in out, out
    pooled = tmp_path / "pooled.sqlite"
    build_store(pooled, [SynthCell(knobs={"doublewrite": True}, notpm=2400),
                         SynthCell(knobs={"doublewrite": False}, notpm=2400)],
                name="pooled", repetitions=1, warmup=30, duration=600, n_counters=40, seed=11)
    assert [w for w in compare(pooled, "pooled").warnings if "no verdict" in w]
