"""Several workers, one results database — real worker processes, real MariaDB sandboxes, the
real Go driver, and a real PostgreSQL cluster started by the tests.

- a run held in a slow restore for longer than the lease is not taken by another worker;
- a worker killed with SIGKILL: its lease expires, a worker of another host takes the run over
  as a new attempt, ``status`` shows the dead worker as stale, and the next worker on the dead
  worker's host reaps its mysqld;
- the results database restarting mid-run loses nothing: rows are buffered and written back;
- two workers on one host (one SQLite file) never measure at the same time, and their logs
  have one line per phase and per finished run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from core.paths import REPO_ROOT
from runner.admission import queue_record
from runner.admission.run_context import prepare
from store.db import ResultsDB
from store.models import Interval, Run, RunEvent, Sample, Worker
from tests.support.pgcluster import PgCluster
from tests.support.slow_restore import GATE_ENV
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

FLUSHBENCH = str(Path(sys.executable).with_name("flushbench"))
#: Short leases keep the tests short; four heartbeats per lease leave room for a loaded machine.
#: A test whose results database is down on purpose for a few seconds needs this one: the
#: outage must stay well inside the lease.
LEASE_S = 12
#: Tests that wait for leases to run out (a slow restore, a dead worker, a long outage) wait
#: out this one: 6 s still leaves three heartbeats of 1.5 s that may fail before it expires.
SHORT_LEASE_S = 6


@pytest.fixture
def env(work: Path, tmp_path: Path) -> dict[str, str]:
    """Environment of the worker processes: shared work dir, a private host-lock dir."""
    return {**os.environ, "FLUSHBENCH_WORK": str(work),
            "FLUSHBENCH_LOCK_DIR": str(tmp_path / "locks"), "COLUMNS": "160"}


@pytest.fixture
def open_db() -> Iterator[Callable[[str | Path], ResultsDB]]:
    """Open results databases that are all disposed after the test (no leaked connection)."""
    opened: list[ResultsDB] = []

    def opener(where: str | Path) -> ResultsDB:
        opened.append(ResultsDB(where))
        return opened[-1]

    yield opener
    for db in opened:
        db.dispose()


def queue_experiment(db: ResultsDB, tmp_path: Path, work: Path, name: str, *,
                     repetitions: int = 1, duration: str = "6s", sampling: str = "2s") -> int:
    """Preflight and queue a tiny tpcc experiment (what ``queue add`` does)."""
    path = tiny_tpcc_experiment(tmp_path, name, "matrix: {doublewrite: [on]}\n",
                                duration=duration, sampling=sampling, repetitions=repetitions)
    ctx = prepare(path, work)
    return queue_record.enqueue(db, ctx.queued()).experiment_id


def worker(db_url: str, host_id: str, env: dict[str, str], log: Path, *extra: str,
           slow_restore_s: float | None = None, lease_s: float = LEASE_S) -> subprocess.Popen:
    """Start ``flushbench worker`` (through the slow-restore wrapper when asked)."""
    args = ["worker", "--db", db_url, "--host-id", host_id, "--host-class", "farm",
            "--lease-seconds", str(lease_s), *extra]
    argv = ([sys.executable, "-m", "tests.support.slow_restore", str(slow_restore_s), *args]
            if slow_restore_s is not None else [FLUSHBENCH, *args])
    with log.open("w") as out:
        return subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)


def wait_for(what: str, check: Callable[[], bool], procs: list[subprocess.Popen],
             timeout: float = 600) -> None:
    """Bounded wait for ``check()``; fails early when a watched process exits."""
    deadline = time.monotonic() + timeout
    while not check():
        if any(p.poll() is not None for p in procs):
            pytest.fail(f"a worker exited while waiting for: {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for: {what}")
        time.sleep(0.5)


def runs(db: ResultsDB) -> list[Run]:
    with db.session() as s:
        return list(s.scalars(select(Run).order_by(Run.order_index, Run.attempt)))


def stop(*procs: subprocess.Popen) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_slow_restore_keeps_its_lease(
    pg_cluster: PgCluster, tmp_path: Path, work: Path, env: dict[str, str], open_db: Callable
) -> None:
    url = pg_cluster.create_database()
    db = open_db(url)
    queue_experiment(db, tmp_path, work, "slowrestore")
    lease = SHORT_LEASE_S
    # The run sits in "restoring datadir" until the competitor is up, then two leases more:
    # without heartbeats its lease would run out a whole lease before the restore ends, with
    # the competitor looking for work all along (eight 1.5 s beats).
    restore_s = 2 * lease
    gate = tmp_path / "competitor-is-up"
    holder = worker(url, "h1", {**env, GATE_ENV: str(gate)}, tmp_path / "holder.log",
                    slow_restore_s=restore_s, lease_s=lease)
    competitor = None
    try:
        def restoring() -> bool:
            with db.session() as s:
                return s.scalar(select(Worker.id).where(
                    Worker.host_id == "h1", Worker.phase == "restoring datadir")) is not None

        wait_for("the holder to claim and start restoring", restoring, [holder])
        # The competitor looks for work through the rest of the restore and a lease beyond it.
        competitor = worker(url, "h2", env, tmp_path / "competitor.log",
                            "--idle-timeout", str(restore_s + lease), lease_s=lease)

        def competing() -> bool:
            with db.session() as s:
                return s.scalar(select(Worker.id).where(Worker.host_id == "h2")) is not None

        wait_for("the competitor to look for work", competing, [holder, competitor])
        gate.touch()
        holder.wait(timeout=900)
        competitor.wait(timeout=900)
    finally:
        stop(*(p for p in (holder, competitor) if p is not None))
    log = (tmp_path / "competitor.log").read_text()
    both = f"holder:\n{(tmp_path / 'holder.log').read_text()}\ncompetitor:\n{log}"
    assert holder.returncode == 0, both
    rows = [(r.attempt, r.status, r.host_id, r.error) for r in runs(db)]
    assert [r[:3] for r in rows] == [(1, "done", "h1")], f"{rows}\n{both}"
    assert "abandoned" not in log and "queue empty (no run)" in log, log


def test_sigkilled_worker_is_taken_over_and_its_mysqld_reaped(
    pg_cluster: PgCluster, tmp_path: Path, work: Path, env: dict[str, str], open_db: Callable
) -> None:
    url = pg_cluster.create_database()
    db = open_db(url)
    # The victim is killed as soon as its run measures: the default 6 s run is long enough.
    queue_experiment(db, tmp_path, work, "takeover")
    victim = worker(url, "h1", env, tmp_path / "victim.log", lease_s=SHORT_LEASE_S)
    other = None
    try:
        def measuring() -> bool:
            return any(r.measure_started_at is not None for r in runs(db))

        wait_for("the victim's run to measure", measuring, [victim])
        (first,) = runs(db)
        mysqld_pid = int((Path(first.run_dir) / "mysqld.pid").read_text())
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        assert Path(f"/proc/{mysqld_pid}").exists()  # orphaned, still running

        other = worker(url, "h2", env, tmp_path / "other.log", "--idle-timeout", "600",
                       lease_s=SHORT_LEASE_S)

        def redone() -> bool:
            return [(r.attempt, r.status) for r in runs(db)] == [(1, "interrupted"), (2, "done")]

        wait_for("another host's worker to redo the run", redone, [other])
        status = subprocess.run([FLUSHBENCH, "status", "--db", url], env=env,
                                capture_output=True, text=True, timeout=120)
    finally:
        stop(*(p for p in (victim, other) if p is not None))
    assert status.returncode == 0, status.stderr
    assert "STALE" in status.stdout and f"{victim.pid}" in status.stdout, status.stdout
    old, new = runs(db)
    assert "lease expired" in (old.error or "") and new.host_id == "h2"
    with db.session() as s:
        assert s.scalars(select(Interval).where(Interval.run_id == new.id)).first() is not None
        taken = s.scalar(select(RunEvent.message).where(RunEvent.run_id == old.id,
                                                        RunEvent.kind == "interrupted"))
    assert f"run {new.id}" in (taken or "")
    # the worker of the other host left h1's orphan alone; the next worker of h1 reaps it
    assert Path(f"/proc/{mysqld_pid}").exists()
    reaper = subprocess.run(
        [FLUSHBENCH, "worker", "--db", url, "--host-id", "h1", "--host-class", "farm"],
        env=env, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert reaper.returncode == 0, reaper.stdout + reaper.stderr
    assert f"killed mysqld pid {mysqld_pid}" in reaper.stdout
    deadline = time.monotonic() + 30
    while Path(f"/proc/{mysqld_pid}").exists() and time.monotonic() < deadline:
        cmdline = Path(f"/proc/{mysqld_pid}/cmdline").read_bytes()
        if b"my.cnf" not in cmdline:
            break  # gone (a zombie, or the pid reused by something else)
        time.sleep(0.2)
    else:
        assert not Path(f"/proc/{mysqld_pid}").exists()


def test_database_restart_mid_run_loses_nothing(
    tmp_path: Path, work: Path, env: dict[str, str], open_db: Callable
) -> None:
    cluster = PgCluster().init().start()
    try:
        url = cluster.create_database()
        db = open_db(url)
        queue_experiment(db, tmp_path, work, "blink", duration="12s", sampling="1s")
        proc = worker(url, "h1", env, tmp_path / "blink.log")
        try:
            def measuring() -> bool:
                with db.session() as s:
                    return s.scalar(select(Interval.seq).where(
                        Interval.phase == "measure")) is not None

            wait_for("the first measured interval", measuring, [proc])
            db.dispose()
            cluster.restart(down_for=4.0)  # samples (1 s) and intervals (2 s) come meanwhile
            proc.wait(timeout=600)
        finally:
            stop(proc)
        log = (tmp_path / "blink.log").read_text()
        assert proc.returncode == 0, log
        assert "results database unreachable" in log and "reachable again" in log, log
        (run,) = runs(db)
        assert run.status == "done", log
        with db.session() as s:
            seqs = list(s.scalars(select(Interval.seq).where(Interval.run_id == run.id)
                                  .order_by(Interval.seq)))
            samples = list(s.scalars(select(Sample.seq).where(Sample.run_id == run.id)
                                     .order_by(Sample.seq)))
        # 2 s warmup + 12 s measured at 2 s intervals; samples every second, none lost
        assert seqs == list(range(1, 8)), seqs
        assert samples == list(range(samples[0], samples[0] + len(samples)))
        assert len(samples) >= 12
    finally:
        cluster.destroy()  # open_db disposes the engine afterwards


def test_one_host_one_measurement_at_a_time_and_readable_logs(
    tmp_path: Path, work: Path, env: dict[str, str], open_db: Callable
) -> None:
    db_path = tmp_path / "shared.sqlite"
    db = open_db(db_path)
    queue_experiment(db, tmp_path, work, "onehost", repetitions=2)
    url = f"sqlite:///{db_path}"
    logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
    procs = [worker(url, "same-host", env, tmp_path / f"out{i}.log", "--log-file", str(log))
             for i, log in enumerate(logs)]
    try:
        for proc in procs:
            proc.wait(timeout=900)
    finally:
        stop(*procs)
    outs = [(tmp_path / f"out{i}.log").read_text() for i in range(2)]
    assert all(p.returncode == 0 for p in procs), outs
    assert not any("database is locked" in o for o in outs)
    done = runs(db)
    assert [r.status for r in done] == ["done", "done"]
    first, second = sorted(done, key=lambda r: r.started_at)
    assert first.finished_at <= second.started_at  # never measuring at the same time
    text = "\n".join(log.read_text() for log in logs)
    assert "waiting for the host lock" in text, text
    for run in done:
        assert f"run {run.id}: restoring datadir" in text
        assert f"run {run.id}: measuring" in text
        line = next(x for x in text.splitlines() if f"run {run.id} done:" in x)
        assert "cell doublewrite=on" in line and "NOTPM" in line and "stability" in line, line
        assert line[:4].isdigit() and "T" in line.split()[0]  # ISO timestamp first


def test_worker_cut_off_past_its_lease_stops_and_says_why(
    tmp_path: Path, work: Path, env: dict[str, str], open_db: Callable
) -> None:
    """The database is down longer than the lease: the worker cannot know whether someone took
    its run, so it stops the run, records why, gives it back as a new attempt and redoes it."""
    cluster = PgCluster().init().start()
    try:
        url = cluster.create_database()
        db = open_db(url)
        # The lease runs out about 1.5 leases after the outage starts (9 s; 5 s seen at load
        # 18): a 16 s measured window is still measuring then, on a loaded machine too.
        queue_experiment(db, tmp_path, work, "cutoff", duration="16s")
        log_path = tmp_path / "cutoff.log"
        proc = worker(url, "h1", env, log_path, lease_s=SHORT_LEASE_S)
        try:
            def measuring() -> bool:
                with db.session() as s:
                    return s.scalar(select(Interval.seq).where(
                        Interval.phase == "measure")) is not None

            wait_for("the first measured interval", measuring, [proc])
            db.dispose()
            cluster.stop()
            # Down past the lease, until the heartbeat has given up the run (its log says so).
            wait_for("the worker to give up its lease",
                     lambda: "lost the lease on run" in log_path.read_text(), [proc])
            cluster.start()
            proc.wait(timeout=900)
        finally:
            stop(proc)
        log = log_path.read_text()
        assert proc.returncode == 0, log
        assert "lost the lease on run" in log, log
        first, second = runs(db)
        assert (first.attempt, first.status) == (1, "interrupted")
        assert "lease lost" in (first.error or "") and "unreachable" in first.error
        assert (second.attempt, second.status) == (2, "done")
        with db.session() as s:
            kinds = set(s.scalars(select(RunEvent.kind).where(RunEvent.run_id == first.id)))
        assert "lease-lost" in kinds
    finally:
        cluster.destroy()
