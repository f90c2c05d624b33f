"""Claims never collide: four worker processes race on one queue of 200 runs, on SQLite and on
PostgreSQL, and every run runs exactly once.

The workers are real processes running the real worker loop (heartbeat, host lock, atomic
claim, takeover pass); only the run itself starts no server (``NullExecutor`` records who ran
it and finishes it) — 200 mysqld runs would take an hour and test nothing more about claims.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from core.paths import REPO_ROOT
from runner.fleet.workers import worker_rows
from store.db import ResultsDB
from store.models import Run, RunEvent
from tests.support.queueing import enqueue_plain

pytestmark = pytest.mark.slow

WORKERS = 4
RUNS = 200


def start_workers(url: str, tmp_path: Path, n: int, *, hold_s: float = 0.0,
                  lease_s: float = 30.0, idle_s: float = 600.0,
                  host_ids: list[str] | None = None,
                  host_class: str = "farm") -> list[subprocess.Popen]:
    """``n`` null workers (each its own host id unless given, one host class: a farm of
    identical hosts), logs in ``tmp_path``."""
    env = {**os.environ, "FLUSHBENCH_LOCK_DIR": str(tmp_path / "locks")}
    procs = []
    for i in range(n):
        host = (host_ids or [f"host-{j}" for j in range(n)])[i]
        with (tmp_path / f"worker-{i}.log").open("w") as log:  # the child keeps its own fd
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "tests.support.null_worker", url, host, str(hold_s),
                 str(lease_s), str(idle_s), host_class],
                cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs


def wait_registered(db: ResultsDB, n: int, procs: list[subprocess.Popen]) -> None:
    """Bounded wait until ``n`` workers are live in the workers table."""
    deadline = time.monotonic() + 120
    while sum(w.live for w in worker_rows(db)) < n:
        if any(p.poll() is not None for p in procs):
            pytest.fail("a worker exited before the queue was filled")
        if time.monotonic() > deadline:
            pytest.fail("the workers did not register in time")
        time.sleep(0.2)


def wait_done(db: ResultsDB, runs: int, procs: list[subprocess.Popen]) -> None:
    """Bounded wait until ``runs`` runs are done."""
    deadline = time.monotonic() + 600
    while True:
        with db.session() as s:
            done = len(s.scalars(select(Run.id).where(Run.status == "done")).all())
        if done >= runs:
            return
        if all(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            pytest.fail(f"only {done} of {runs} runs done")
        time.sleep(0.5)


def stop_workers(procs: list[subprocess.Popen]) -> None:
    """SIGTERM (the null worker stops after its current run), then wait; SIGKILL only what
    does not stop."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_four_workers_run_every_run_exactly_once(results_url: str, tmp_path: Path) -> None:
    db = ResultsDB(results_url)
    procs = start_workers(results_url, tmp_path, WORKERS, hold_s=0.01)
    try:
        _race(db, procs, tmp_path)
    finally:
        db.dispose()


def _race(db: ResultsDB, procs: list[subprocess.Popen], tmp_path: Path) -> None:
    try:
        wait_registered(db, WORKERS, procs)  # all four poll before the runs appear
        enqueue_plain(db, "race", RUNS, cells=4)
        wait_done(db, RUNS, procs)
    finally:
        stop_workers(procs)
    logs = "\n".join(p.read_text() for p in sorted(tmp_path.glob("worker-*.log")))
    assert all(p.returncode == 0 for p in procs), logs  # stopped cleanly by SIGTERM
    assert "database is locked" not in logs

    with db.session() as s:
        runs = list(s.scalars(select(Run)))
        ran = Counter(s.scalars(select(RunEvent.run_id).where(RunEvent.kind == "ran")))
        owners = {r.id: r.lease_owner for r in runs}
        who = dict(s.execute(select(RunEvent.run_id, RunEvent.message)
                             .where(RunEvent.kind == "ran")).all())
    assert len(runs) == RUNS
    assert all(r.status == "done" and r.attempt == 1 for r in runs)
    assert sorted(ran) == sorted(r.id for r in runs) and set(ran.values()) == {1}
    # the worker that ran each run is the one whose claim holds it
    assert all(who[i].split()[0] == owners[i] for i in who)
    # it was a race, not one worker draining the queue alone
    assert len({owners[i].split(":")[0] for i in owners}) >= 2, logs
