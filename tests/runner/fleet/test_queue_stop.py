"""``flushbench queue stop``: this machine's workers finish the run in progress and stop; the
queued runs stay queued; workers elsewhere and dead pids are named, never signalled."""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from flushbench.cli import run_verbs
from store.db import ResultsDB
from store.ledger import db_now
from store.models import Run, Worker
from tests.runner.fleet.test_claim_race import start_workers, wait_registered
from tests.support.cli_runner import run_cli
from tests.support.queueing import enqueue_plain


def _statuses(db: ResultsDB) -> list[str]:
    with db.session() as s:
        return sorted(s.scalars(select(Run.status)).all())


def _worker_run(db: ResultsDB) -> int | None:
    """The run the (only) worker's row says it is on, if any."""
    with db.session() as s:
        return s.scalar(select(Worker.run_id))


@pytest.mark.slow  # a real worker process runs a run and waits for the stop
def test_a_worker_stops_after_its_run_and_the_queue_waits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    db = ResultsDB(url)
    enqueue_plain(db, "stoppable", 4)
    (proc,) = start_workers(url, tmp_path, 1, hold_s=3.0)
    try:
        wait_registered(db, 1, [proc])
        deadline = time.monotonic() + 60
        # Claimed, and the worker's own row names the run: the row lags the claim by up to a
        # heartbeat (on a loaded machine `queue stop` read "preparing" in between).
        while "running" not in _statuses(db) or not _worker_run(db):
            assert time.monotonic() < deadline, "the worker never claimed a run"
            time.sleep(0.1)
        code, out, _ = run_cli(["queue", "stop", "--db", url], capsys)
        assert code == 0
        assert f"worker pid {proc.pid} (run " in out and "after the run in progress" in out
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The run in progress finished and was recorded; nothing else was claimed.
    assert _statuses(db) == ["done", "queued", "queued", "queued"]
    log = (tmp_path / "worker-0.log").read_text()
    assert "stopped as asked, between runs" in log
    code, out, _ = run_cli(["queue", "stop", "--db", url], capsys)
    assert "no live worker uses this database" in out


def test_workers_elsewhere_and_gone_are_named_not_signalled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'w.sqlite'}"
    db = ResultsDB(url)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with db.session() as s, s.begin():
        now = db_now(s)
        for host, pid in (("another-host.example", os.getpid()),
                          (socket.gethostname(), dead.pid)):
            s.add(Worker(host_id=host, host_class=host, hostname=host, pid=pid, lease_s=60.0,
                         started_at=now, heartbeat_at=now, state="running"))
    code, out, _ = run_cli(["queue", "stop", "--db", url], capsys)
    assert code == 0
    assert "on another-host.example" in out and "run `flushbench queue stop` there" in out
    assert f"worker pid {dead.pid} (running): its process is gone" in out


def test_a_reused_pid_is_not_signalled(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A row naming this very process, registered long before it started: the pid was reused."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    db = ResultsDB(url)
    with db.session() as s, s.begin():
        now = db_now(s)
        s.add(Worker(host_id="h", host_class="h", hostname=socket.gethostname(),
                     pid=os.getpid(), lease_s=60.0, started_at=now - dt.timedelta(days=2),
                     heartbeat_at=now, state="idle"))
    hits: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: hits.append(1))
    try:
        _, out, _ = run_cli(["queue", "stop", "--db", url], capsys)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert not hits and "its process is gone" in out


def test_sigusr1_sets_the_stop_between_runs() -> None:
    previous = signal.getsignal(signal.SIGUSR1)
    try:
        stop = run_verbs._stop_between_runs_on_sigusr1()
        assert not stop.is_set()
        os.kill(os.getpid(), signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while not stop.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stop.is_set()
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_run_stopped_with_runs_left_says_so_and_exits_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``run`` stopped by ``queue stop`` (its stop event set) with runs still queued: it names
    them and how to resume, and exits 3, so ``run && report`` does not report half a study.
    The worker loop's own stop is the test above; here the queue is one the loop left."""
    from runner.admission import run_context
    from runner.fleet import worker

    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    spec = tmp_path / "stoppable.yaml"
    spec.write_text("version: 1\nname: stoppable\n")

    def stopped_after_one_run(ctx, db, *, stop, **_):  # noqa: ANN001, ANN202 - run_experiment's
        experiment_id = enqueue_plain(db, "stoppable", 4)
        with db.session() as s, s.begin():
            s.scalars(select(Run).order_by(Run.id)).first().status = "done"
        stop.set()  # what SIGUSR1 does
        return worker.ExperimentOutcome(experiment_id, done=1)

    monkeypatch.setattr(run_context, "prepare", lambda *a, **k: SimpleNamespace(
        exp=SimpleNamespace(name="stoppable")))
    monkeypatch.setattr(worker, "run_experiment", stopped_after_one_run)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGUSR1, signal.SIGTERM)}
    try:
        code, out, err = run_cli(["run", str(spec), "--db", url], capsys)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert code == run_verbs.STOPPED_WITH_RUNS_LEFT == 3, err
    flat = " ".join(out.split())
    assert f"stopped as asked: 3 run(s) of stoppable still queued; `flushbench run {spec}`" \
        " resumes them" in flat
