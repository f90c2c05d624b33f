"""The run queue on both results backends (SQLite, PostgreSQL): claims, placement, leases,
takeovers, the heartbeat, the buffered recorder and the workers view."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import pytest
from sqlalchemy import select, update

from core.errors import StoreError
from runner.fleet.lease import Heartbeat
from runner.fleet.workers import worker_rows
from runner.host.identity import local_identity
from store import ledger
from store.db import ResultsDB
from store.ledger.recorder import RunRecorder
from store.models import Experiment, Interval, Run, RunEvent
from tests.support.queueing import enqueue_plain

#: This test process's host id: ``unpin`` takes over the runs of this host's dead workers.
HERE = local_identity().host_id


@pytest.fixture
def db(results_url: str):  # noqa: ANN201 - a ResultsDB
    """A migrated results database on the parametrized backend."""
    handle = ResultsDB(results_url)
    yield handle
    handle.dispose()


def statuses(db: ResultsDB) -> list[tuple[int, int, str]]:
    with db.session() as s:
        return [(r.order_index, r.attempt, r.status)
                for r in s.scalars(select(Run).order_by(Run.order_index, Run.attempt))]


def expire(db: ResultsDB, run_id: int) -> None:
    """Move a lease into the past (what a dead worker's lease becomes, minus the wait)."""
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    with db.session() as s, s.begin():
        s.execute(update(Run).where(Run.id == run_id).values(lease_expires_at=past))


def test_claims_in_order_then_none(db: ResultsDB) -> None:
    enqueue_plain(db, "order", 4)
    me = local_identity("host-a")
    claimed = [ledger.claim_next(db, identity=me) for _ in range(5)]
    assert claimed[-1] is None and len(set(claimed[:4])) == 4
    with db.session() as s:
        rows = {r.id: r for r in s.scalars(select(Run))}
    assert [rows[i].order_index for i in claimed[:4]] == [0, 1, 2, 3]
    assert all(rows[i].lease_owner == me.owner and rows[i].host_id == "host-a"
               for i in claimed[:4])


def test_cancel_only_the_named_queued_runs(db: ResultsDB) -> None:
    enqueue_plain(db, "cancelling", 4)
    claimed = ledger.claim_next(db, identity=local_identity("host-a"))
    with db.session() as s:
        ids = [r.id for r in s.scalars(select(Run).order_by(Run.order_index))]
    # The claimed (running) run is not queued: named, it is left alone and not counted.
    assert ledger.cancel(db, "cancelling", run_ids=[ids[2], claimed]) == 1
    assert [st for _, _, st in statuses(db)] == ["running", "queued", "cancelled", "queued"]
    assert ledger.cancel(db, "cancelling") == 2  # without ids: every queued run
    assert [st for _, _, st in statuses(db)] == ["running", "cancelled", "cancelled",
                                                 "cancelled"]


def test_placement_one_pins_the_first_host_class(db: ResultsDB) -> None:
    exp_id = enqueue_plain(db, "pinned", 4)
    a, b = local_identity("a1", "fast"), local_identity("b1", "slow")
    assert ledger.claim_next(db, exp_id, identity=a) is not None
    assert ledger.claim_next(db, exp_id, identity=b) is None  # pinned to "fast"
    assert ledger.claimable_experiments(db, b) == []
    assert ledger.claim_next(db, exp_id, identity=local_identity("a2", "fast")) is not None
    with db.session() as s:
        assert s.get(Experiment, exp_id).host_class == "fast"


def test_unpin_hands_a_pinned_experiment_to_another_class(db: ResultsDB) -> None:
    exp_id = enqueue_plain(db, "stranded", 4)
    a, b = local_identity("a1", "fast"), local_identity("b1", "slow")
    first = ledger.claim_next(db, exp_id, identity=a)
    assert first is not None and ledger.claim_next(db, exp_id, identity=b) is None
    # A run still under a live lease: refused, nothing changes.
    with pytest.raises(StoreError, match="1 run\\(s\\) still running under a live lease"):
        ledger.unpin(db, "stranded", host_id=HERE)
    assert ledger.finish(db, first, "done", owner=a.owner)
    assert ledger.unpin(db, "stranded", host_id=HERE) == ["fast"]
    second = ledger.claim_next(db, exp_id, identity=b)  # the other class takes over, and pins
    assert second is not None
    with db.session() as s:
        assert s.get(Experiment, exp_id).host_class == "slow"
    assert ledger.claim_next(db, exp_id, identity=a) is None
    assert ledger.finish(db, second, "done", owner=b.owner)
    assert ledger.unpin(db, "stranded", host_id=HERE) == ["slow"]
    assert ledger.unpin(db, "stranded", host_id=HERE) == []  # already free
    with pytest.raises(StoreError, match="no experiment 'strandd'.*stranded"):
        ledger.unpin(db, "strandd", host_id=HERE)


def test_unpin_takes_over_a_dead_workers_run_first(db: ResultsDB) -> None:
    exp_id = enqueue_plain(db, "deadpin", 2)
    dead = local_identity("gone", "fast")
    run_id = ledger.claim_next(db, exp_id, identity=dead)
    assert run_id is not None
    expire(db, run_id)
    assert ledger.unpin(db, "deadpin", host_id=HERE) == ["fast"]
    assert ledger.claim_next(db, exp_id, identity=local_identity("b1", "slow")) is not None


def test_placement_spread_and_hosts_list(db: ResultsDB) -> None:
    spread = enqueue_plain(db, "spread", 2, placement="spread")
    only = enqueue_plain(db, "only-big", 2, hosts=["big"])
    a, b = local_identity("a1", "fast"), local_identity("b1", "slow")
    assert ledger.claim_next(db, spread, identity=a) is not None
    assert ledger.claim_next(db, spread, identity=b) is not None  # spread: both classes
    assert ledger.claim_next(db, only, identity=a) is None  # not in hosts:
    assert ledger.claimable_experiments(db, local_identity("c1", "big")) == [only]


def test_expired_lease_is_taken_over_as_a_new_attempt(db: ResultsDB) -> None:
    enqueue_plain(db, "takeover", 2)
    dead = local_identity("gone-host")
    run_id = ledger.claim_next(db, identity=dead)
    assert run_id is not None
    with db.session() as s, s.begin():  # a live lease of another host: left alone
        assert ledger.requeue_abandoned(s, host_id="other") == []
    expire(db, run_id)
    with db.session() as s, s.begin():
        ((old, new),) = ledger.requeue_abandoned(s, host_id="other")
    assert old == run_id
    assert statuses(db) == [(0, 1, "interrupted"), (0, 2, "queued"), (1, 1, "queued")]
    with db.session() as s, s.begin():  # a second pass finds nothing more to take over
        assert ledger.requeue_abandoned(s, host_id="other") == []
    # the dead worker, back from the dead, can neither renew nor finish the run it lost
    assert not ledger.renew_lease(db, run_id, dead.owner)
    assert not ledger.finish(db, run_id, "done", owner=dead.owner)
    assert statuses(db)[0] == (0, 1, "interrupted")


def test_dead_pid_on_this_host_is_taken_over_without_waiting(db: ResultsDB) -> None:
    enqueue_plain(db, "deadpid", 2)
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    gone = local_identity("here")
    owner = f"here:{int(child.stdout)}"  # that process has exited
    run_id = ledger.claim_next(db, owner=owner, identity=gone)
    assert run_id is not None
    worker = ledger.register_worker(db, gone, lease_s=60)
    with db.session() as s, s.begin():
        ledger.record_heartbeat(s, worker, dt.datetime.now(dt.UTC), state="running",
                                phase="measuring", run_id=run_id, experiment_id=None)
    with db.session() as s, s.begin():
        ((old, new),) = ledger.requeue_abandoned(s, host_id="here")
    # status no longer lists the dead worker as running the run it lost
    (row,) = [w for w in worker_rows(db) if w.host_id == "here"]
    assert (row.state, row.run_id) == ("lost", old)
    assert row.phase == f"run {old} taken over as run {new}"


def test_heartbeat_renews_and_detects_a_takeover(db: ResultsDB) -> None:
    enqueue_plain(db, "beat", 2)
    me = local_identity("hb-host")
    run_id = ledger.claim_next(db, identity=me, lease_s=60)
    assert run_id is not None
    hb = Heartbeat(db, me, lease_s=60)
    # Held before the thread starts: a first beat in flight with the idle state would
    # otherwise race the test's own beat and leave the worker row without its run.
    hb.hold(run_id)
    hb.start()
    try:
        with db.session() as s:
            before = s.get(Run, run_id).lease_expires_at
        hb.beat()
        with db.session() as s:
            assert s.get(Run, run_id).lease_expires_at >= before
        assert not hb.lost.is_set()
        assert [w.run_id for w in worker_rows(db) if w.pid == os.getpid()] == [run_id]
        expire(db, run_id)
        with db.session() as s, s.begin():
            ledger.requeue_abandoned(s, host_id="someone-else")
        hb.beat()
        assert hb.lost.is_set() and "interrupted" in (hb.lost_reason or "")
    finally:
        hb.stop()
    assert all(w.pid != os.getpid() for w in worker_rows(db))  # stopped workers not listed


def test_recorder_writes_in_order_and_buffers_nothing_when_up(db: ResultsDB) -> None:
    from runner.workloads.base import IntervalRecord

    enqueue_plain(db, "rec", 2)
    run_id = ledger.claim_next(db, identity=local_identity("r"))
    rec = RunRecorder(db, run_id)
    now = dt.datetime.now(dt.UTC)
    for seq in range(1, 4):
        rec.interval(IntervalRecord(seq=seq, ts=now, elapsed_s=seq * 2.0, interval_s=2.0,
                                    phase="measure", primary_count=10.0 * seq))
    rec.event("info", "note", "hello")
    assert rec.pending == 0 and rec.buffered_total == 0
    with db.session() as s:
        counts = list(s.scalars(select(Interval.primary_count).where(Interval.run_id == run_id)
                                .order_by(Interval.seq)))
        kinds = list(s.scalars(select(RunEvent.kind).where(RunEvent.run_id == run_id)))
    assert counts == [10.0, 20.0, 30.0] and kinds == ["note"]
