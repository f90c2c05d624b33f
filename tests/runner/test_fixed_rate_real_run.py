"""Real Go-driver runs at a fixed rate on a MariaDB sandbox (``workload.rate``): far below the
server's capacity the driver holds the target in every window interval (a correctness check of
the schedule, not a timing assertion); and a server blocked for 20 s (``FLUSH TABLES WITH READ
LOCK``) during a fixed-rate run is a queue of scheduled starts — the backlog — and hundreds of
transactions whose response times, counted from their scheduled starts, hold the wait. A closed
loop of two connections has at most two such transactions per stall: that is why latency runs
from the scheduled start (docs/tpcc.md, "Fixed rate")."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from analysis.report.build import build_report_model
from analysis.report.model import Bullets
from analysis.response import latency
from analysis.tables.frames import load
from runner.fleet.worker import run_experiment
from store.db import ResultsDB
from store.latency_codec import decode
from store.models import Interval, Run
from tests.support.blocked_server import server_blocked
from tests.support.cli_runner import CliRun
from tests.support.rich_words import words
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

#: 600 New-Orders a minute: 23 transactions a second, a small share of what one warehouse
#: answers on this machine even with the other test workers beside it.
RATE = 600


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))


def test_a_rate_far_below_capacity_is_held_in_every_window_interval(
        tmp_path: Path, work: Path) -> None:
    path = tiny_tpcc_experiment(tmp_path, "rate-held", "window: {start: 0s, end: 30s}\n",
                                duration="30s", report_interval="10s", sampling="10s",
                                connections=2, workload=f"rate: {RATE}, arrivals: poisson")
    db = ResultsDB(tmp_path / "r.sqlite")
    assert run_experiment(path, db, work=work).done == 1
    with db.session() as s:
        run = s.scalars(select(Run)).one()
        summary = run.driver_summary
    fr = load(db, detail=True)
    window = fr.intervals[fr.intervals["in_window"]]
    assert len(window) == 3
    assert (window["rate_target_notpm"] == RATE).all()
    # 100 New-Orders an interval; the deck deals them 10 in 23, so an interval's count moves by
    # a few with where its rounds fall, and Poisson arrivals by ±10 % (one standard deviation).
    assert ((window["notpm"] - RATE).abs() <= 0.35 * RATE).all(), window["notpm"].tolist()
    assert abs(window["primary_count"].sum() * 60 / window["interval_s"].sum() / RATE - 1) \
        <= 0.2
    # Nothing queues at a rate the server answers with ease.
    assert (window["rate_backlog"] <= 23).all(), window["rate_backlog"].tolist()
    rate = summary["rate"]
    assert rate["target_notpm"] == RATE and rate["arrivals"] == "poisson"
    assert rate["intervals"] == 3 and 0 <= rate["intervals_below"] <= 3
    assert rate["notpm"] == summary["tpmc"]


def _slow_new_orders(blobs: list[bytes | None], at_least_ms: float) -> int:
    """New-Orders completed with a response time of at least ``at_least_ms``."""
    n = 0
    for blob in blobs:
        if blob is None:
            continue
        layout, types = decode(blob)
        buckets, _ = types["new_order"]
        n += sum(count for index, count in buckets
                 if layout.bounds_us(index)[0] >= at_least_ms * 1000)
    return n


def test_a_server_blocked_for_20_s_at_a_fixed_rate_queues_and_every_wait_is_counted(
        tmp_path: Path, work: Path, cli: CliRun) -> None:
    path = tiny_tpcc_experiment(tmp_path, "rate-blocked", "window: {start: 0s, end: 40s}\n",
                                duration="40s", report_interval="5s", sampling="5s",
                                connections=2, workload=f"rate: {RATE}")
    db = ResultsDB(tmp_path / "r.sqlite")
    # 20.5 s: the first transaction the lock holds up is a write scheduled after the lock
    # began (a few 43 ms gaps later, reads pass it): its wait is the lock's length less that.
    with server_blocked(20.5):
        assert run_experiment(path, db, work=work).done == 1
    with db.session() as s:
        run = s.scalars(select(Run)).one()
        summary = run.driver_summary
        blobs = list(s.scalars(select(Interval.latency_z).where(Interval.run_id == run.id)
                               .order_by(Interval.seq)).all())
    fr = load(db, detail=True)
    window = fr.intervals[fr.intervals["in_window"]]
    # The queue: in the block, the starts fall due unclaimed — hundreds of them, the oldest
    # waiting most of the 20 s — and the intervals fall below 95 % of the target.
    assert window["rate_backlog"].max() >= 200, window["rate_backlog"].tolist()
    assert window["rate_backlog_oldest_ms"].max() >= 15_000
    assert summary["rate"]["intervals_below"] >= 3
    assert summary["rate"]["backlog_max"] == window["rate_backlog"].max()
    # At 600 NOTPM far below capacity, the queue drains once the lock is gone.
    assert window["rate_backlog"].iloc[-1] <= 23, window["rate_backlog"].tolist()
    # Every New-Order scheduled in the block waited for its end: timed from its scheduled start
    # each holds its wait (≥ 10 s for the first half of the block's ~200), where a closed loop
    # of two connections has two waiting transactions at most.
    assert _slow_new_orders(blobs, 10_000) >= 50
    # The waits measured, none added for the stall (the run's are all timed from their
    # scheduled starts): the longest is a completed transaction's, ≥ 20 s.
    lat = latency.load(db, fr)
    mine = lat.runs.loc[run.id]
    assert mine["window_max_ms"] >= 20_000, mine.to_dict()
    assert max(top for b in blobs if b for name, (_, top) in decode(b)[1].items()
               if not name.startswith("open_")) >= 20_000
    # Half the window blocked: well over 1 % of its New-Orders waited 5 s or more.
    assert mine["window_ms"] >= 5_000, mine.to_dict()
    # show: the run caught up (held over its window), its intervals below 95 % and its queue.
    code, out, err = cli(["show", str(run.id), "--db", str(tmp_path / "r.sqlite")])
    assert code == 0, err
    said = " ".join(out.replace("│", " ").split())  # the table's value folds across lines
    assert f"target {RATE} NOTPM, achieved" in said and "(held)" in said, said
    below = summary["rate"]["intervals_below"]
    assert f"{below} of 8 window intervals below" in said, said


def test_compare_never_compares_a_row_that_missed_its_rate(tmp_path: Path, work: Path,
                                                           cli: CliRun) -> None:
    """`rate` as a matrix axis: 600 NOTPM, held, and a rate no server answers with one
    connection, missed — compare flags that row instead of giving it a verdict.

    20 s, not the tiny runs' 6 s: a window's New-Orders move by a few with where the mix's
    rounds of 23 fall, ±8 % of 60 but ±3 % of 200, and the rule's line is at 95 %. One
    connection: the missed row runs flat out for all of it, and two took both cores from the
    test workers beside it."""
    path = tiny_tpcc_experiment(tmp_path, "rate-missed", "matrix: {rate: [600, 1000000]}\n",
                                duration="20s", report_interval="5s", sampling="5s")
    db = tmp_path / "r.sqlite"
    assert run_experiment(path, ResultsDB(db), work=work).done == 2
    with ResultsDB(db).session() as s:
        targets = sorted(r.driver_summary["rate"]["target_notpm"]
                         for r in s.scalars(select(Run)))
    assert targets == [600, 1_000_000]  # each cell's knob reached the driver
    code, out, err = cli(["compare", "rate-missed", "--db", str(db)])
    assert code == 0, err
    said = " ".join(out.replace("│", " ").split())
    assert "missed rate" in said
    assert "C2 missed its fixed rate in 1 of 1 runs" in said, said
    assert "C1 missed" not in said
    assert "faster" not in said and "slower" not in said

    # The report's first screen answers at equal work: the rates, who missed its rate (left
    # out of the response-time verdicts), the fastest responses — no "most throughput".
    model = build_report_model(db, "rate-missed")
    verdict = model.sections[0][1]
    assert isinstance(verdict, Bullets)
    lines = [" ".join(words(item).split()) for item in verdict.items]
    assert lines[0].startswith("At fixed rates of 600–1,000,000 NOTPM (2 rates; uniform"), lines
    assert any(line.startswith("rate=1000000 missed its rate in 1 of 1 runs") for line in lines)
    fastest = next(line for line in lines if line.startswith("Fastest responses: "))
    assert "rate=600" in fastest, lines
    assert not any(line.startswith("Most throughput") for line in lines), lines
    # The ranking and response-time tables read the missed row's verdict as compare does.
    cells = model.comparison.cells.set_index("cell_label")
    assert cells.loc["rate=1000000", "verdict"] == "missed rate"
    assert "missed its fixed rate in 1 of 1 runs" in cells.loc["rate=1000000", "verdict_reason"]
