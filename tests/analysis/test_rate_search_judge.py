"""A rate search's step judged from its stored window (``analysis/response/rate_search.py``,
``judge_step``): what holds a target and what does not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from analysis.response import latency
from analysis.response.rate_search import judge_step
from analysis.tables import frames
from tests.support.synthetic_store import fixed_rate_store


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
