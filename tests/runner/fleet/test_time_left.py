"""`flushbench status` says how long the queue has left: queued and running runs × the median
wall time of the experiment's finished runs (``?`` before the first one)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import select

from store import ledger
from store.db import ResultsDB
from store.models import Run
from tests.support.cli_runner import run_cli
from tests.support.queueing import enqueue_plain

T0 = dt.datetime(2026, 11, 24, 6, 0, tzinfo=dt.UTC)


def _finish(db: ResultsDB, run_id: int, status: str, minutes: float) -> None:
    with db.session() as s, s.begin():
        run = s.get(Run, run_id)
        run.status, run.started_at = status, T0
        run.finished_at = T0 + dt.timedelta(minutes=minutes)


def test_time_left_from_the_finished_runs(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 't.sqlite'}"
    db = ResultsDB(url)
    exp_id = enqueue_plain(db, "night", 6)
    _, out, _ = run_cli(["status", "--db", url], capsys)
    row = next(line for line in out.splitlines() if " night " in line)
    assert row.rstrip().endswith("? │")  # nothing finished yet: no estimate
    with db.session() as s:
        ids = list(s.scalars(select(Run.id).order_by(Run.id)))
    _finish(db, ids[0], "done", 10)
    _finish(db, ids[1], "failed", 14)   # a failed run took machine time too
    _finish(db, ids[2], "done", 12)
    assert ledger.run_seconds(db) == {exp_id: 12 * 60}
    _, out, _ = run_cli(["status", "--db", url], capsys)
    assert "≈ 36m" in out  # 3 queued × 12 min
    assert "median wall time" in out
    for run_id in ids[3:]:
        _finish(db, run_id, "done", 11)
    _, out, _ = run_cli(["status", "--db", url], capsys)
    assert "≈" not in out and "median wall time" not in out  # nothing left
