"""The results file under a real run: readers alongside, a worker SIGKILLed while recording,
a disk that fills up (issue 19, item 5).

Real parts only: ``flushbench run`` as a subprocess on a real MariaDB sandbox with the real Go
driver (1 warehouse, seconds of workload), a reader process holding long read transactions
like a notebook, ``flushbench report`` in a third process, a real SIGKILL at a point the
recorder's test hook (``store.ledger.recorder.STALL_ENV``) holds still, and a real tmpfs that fills.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from analysis.comparisons.compare import compare
from analysis.tables import frames
from core.errors import AnalysisError
from core.paths import REPO_ROOT
from store.db import ResultsDB
from store.ledger.recorder import STALL_ENV
from store.models import Interval, Run, RunEvent, Sample
from tests.support.tiny_experiment import tiny_tpcc_experiment
from tests.support.tmpfs import mounted_tmpfs

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

FLUSHBENCH = Path(sys.executable).with_name("flushbench")
#: Bound on waiting for a subprocess to reach a state (never an assertion on time).
PATIENCE_S = 300
#: Least pause between the reports the readers test runs beside the worker: each report is a
#: fresh process of a few CPU-seconds, taken from the run and the suite's other workers; one
#: every 5 s still overlaps every phase of the two runs' recording.
REPORT_PAUSE_S = 5.0


def report_pause(took_s: float) -> float:
    """The pause after a report that took ``took_s``: at least as long as the report, so that
    reports take at most half of the test's time however slow the machine is (on a loaded
    machine a report took 34 s and a fixed 5 s pause let them run nearly back to back, taking
    CPU from the very run they read beside)."""
    return max(REPORT_PAUSE_S, took_s)


def experiment(tmp_path: Path, name: str, repetitions: int = 1, duration: str = "6s") -> Path:
    """A tiny tpcc experiment: 1 warehouse, 2 s warmup, 2 s intervals, 1 s samples."""
    return tiny_tpcc_experiment(tmp_path, name, "matrix: {doublewrite: [on]}\n",
                                duration=duration, sampling="1s", repetitions=repetitions)


def run_argv(path: Path, db: Path, work: Path) -> list[str]:
    return [str(FLUSHBENCH), "run", str(path), "--db", str(db), "--work", str(work)]


def statuses(db: Path) -> list[tuple[int, str]]:
    rdb = ResultsDB(db, create=False)
    try:
        with rdb.session() as s:
            return [(r.attempt, r.status) for r in s.scalars(select(Run).order_by(Run.id))]
    finally:
        rdb.dispose()


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def test_readers_and_report_while_a_worker_records(tmp_path: Path, work: Path) -> None:
    """A worker records two runs while a reader holds long read transactions (all samples
    into pandas, repeated) and `flushbench report` runs in a loop: nothing is locked out,
    nothing is lost, and every snapshot is consistent — a done run is always whole."""
    # Two runs: the reader sees the first one done while the second is recorded.
    path = experiment(tmp_path, "readers", repetitions=2)
    db = tmp_path / "r.sqlite"
    ResultsDB(db).dispose()  # created first so that the reader can open it at once
    stop, seen = tmp_path / "stop", tmp_path / "reader.json"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "120"}
    reader = subprocess.Popen(
        [sys.executable, "-m", "tests.support.long_reader", str(db), str(stop), str(seen)],
        cwd=REPO_ROOT, env=env)
    worker_err = tmp_path / "worker.stderr"
    with worker_err.open("wb") as err:
        worker = subprocess.Popen(run_argv(path, db, work), cwd=REPO_ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=err)
    reports: list[subprocess.CompletedProcess[str]] = []
    try:
        while worker.poll() is None:
            began = time.monotonic()
            reports.append(subprocess.run(
                [str(FLUSHBENCH), "report", "readers", "-o", str(tmp_path / "rep"),
                 "--no-png", "--db", str(db)],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=PATIENCE_S))
            # A breath between reports: back to back they took a core from the run and from
            # the suite's other workers; spaced, they still overlap the recording throughout.
            try:
                worker.wait(timeout=report_pause(time.monotonic() - began))
            except subprocess.TimeoutExpired:
                pass
        worker.wait(timeout=PATIENCE_S)
    finally:
        stop.touch()
        for proc in (worker, reader):
            if proc.poll() is None:
                proc.wait(timeout=PATIENCE_S)
    assert worker.returncode == 0, worker_err.read_text()
    assert reader.returncode == 0
    assert "locked" not in worker_err.read_text()

    report = json.loads(seen.read_text())
    assert report["errors"] == [], report["errors"][:3]
    assert report["iterations"] >= 2 and report["running_seen"] >= 1, report

    assert statuses(db) == [(1, "done"), (1, "done")]  # no run lost
    rdb = ResultsDB(db, create=False)
    with rdb.session() as s:
        final = {str(r): [s.scalar(select(func.count()).select_from(Interval)
                                   .where(Interval.run_id == r)),
                          s.scalar(select(func.count()).select_from(Sample)
                                   .where(Sample.run_id == r))]
                 for r in s.scalars(select(Run.id))}
    rdb.dispose()
    for run_id, snapshots in report["done"].items():  # a done run is never seen half-written
        assert all(counts == final[run_id] for counts in snapshots), (run_id, final, snapshots)

    assert reports, "report never ran alongside the worker"
    for r in reports:
        text = r.stdout + r.stderr
        assert "locked" not in text and "internal error" not in text, text
        # Refusals a report may meet while the worker records: before the worker has queued
        # the experiment (a fast report can start first), and before its first run is done.
        assert r.returncode == 0 or (r.returncode == 2 and (
            "no finished run" in r.stderr
            or "no experiment 'readers' in the results database" in r.stderr)), text
    final_report = subprocess.run(
        [str(FLUSHBENCH), "report", "readers", "-o", str(tmp_path / "rep"), "--no-png",
         "--db", str(db)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=PATIENCE_S)
    assert final_report.returncode == 0, final_report.stderr


def test_sigkill_while_recording_leaves_no_half_run_and_resumes(tmp_path: Path,
                                                               work: Path) -> None:
    """SIGKILL with the first measured interval sent but not committed (the recorder's stall
    hook) and the samples of that tick not yet written: the database keeps none of the
    uncommitted rows, the run is not done (analysis does not count it), and the rerun takes
    it over as a new attempt that ends done with all its rows."""
    path = experiment(tmp_path, "killed-recording")
    db = tmp_path / "r.sqlite"
    stall = tmp_path / "stall"
    stall.mkdir()
    env = {**os.environ, "COLUMNS": "120", STALL_ENV: str(stall)}
    first_err = tmp_path / "first.stderr"
    with first_err.open("wb") as err:
        proc = subprocess.Popen(run_argv(path, db, work), cwd=REPO_ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not (stall / f"stalled-{proc.pid}").exists():
            if proc.poll() is not None:
                pytest.fail(f"flushbench ended before the stall point: {first_err.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail("the recorder never reached its stall point")
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert integrity(db) == "ok"
    assert statuses(db) == [(1, "running")]
    rdb = ResultsDB(db, create=False)
    with rdb.session() as s:
        (run_id,) = s.scalars(select(Run.id)).all()
        phases = list(s.scalars(select(Interval.phase).where(Interval.run_id == run_id)))
    rdb.dispose()
    assert phases and "measure" not in phases  # warmup committed, the open transaction gone
    fr = frames.load(db, "killed-recording")
    assert not (fr.run_summary["status"] == "done").any()
    with pytest.raises(AnalysisError, match=r"1 running"):
        compare(db, "killed-recording")

    rerun = subprocess.run(run_argv(path, db, work), cwd=REPO_ROOT,
                           env={k: v for k, v in env.items() if k != STALL_ENV},
                           capture_output=True, text=True, timeout=PATIENCE_S)
    assert rerun.returncode == 0, rerun.stderr
    assert statuses(db) == [(1, "interrupted"), (2, "done")]
    assert not list(tmp_path.glob("r.sqlite-reserve-*"))  # the killed worker's one too
    cmp = compare(db, "killed-recording")
    assert cmp.cells["n_done"].tolist() == [1]
    done = cmp.frames.run_summary
    assert done["attempt"].tolist() == [2] and done["n_intervals"].iloc[0] > 0
    assert len(frames.samples(db, "killed-recording")) > 0


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only), unmounted afterwards whatever the test did."""
    with mounted_tmpfs(tmp_path / "small", "4m") as mnt:
        yield mnt


def _fill(fs: Path, leave: int) -> None:
    """Fill ``fs`` until only ``leave`` bytes are free."""
    st = os.statvfs(fs)
    free = st.f_bavail * st.f_frsize
    with (fs / "filler").open("wb") as f:
        f.write(b"\0" * max(0, free - leave))


def _intervals_recorded(db: Path) -> bool:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM intervals").fetchone()[0] > 0
    finally:
        conn.close()


def test_disk_full_while_recording_fails_the_run_and_keeps_the_database(
    tmp_path: Path, work: Path, small_fs: Path
) -> None:
    """The results file's disk fills up mid-run: the run ends failed with the reason (not
    buffered for hours, not left running), and the database stays valid."""
    path = experiment(tmp_path, "full", duration="10s")
    db = small_fs / "r.sqlite"
    ResultsDB(db).dispose()
    conn = sqlite3.connect(db)  # the migrations' WAL back into the file: free space is real
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    out = tmp_path / "worker.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(run_argv(path, db, work), cwd=REPO_ROOT,
                                env={**os.environ, "COLUMNS": "120"}, stdout=sink,
                                stderr=subprocess.STDOUT)
    try:
        # Once the run has recorded its first driver interval, another process fills the disk.
        deadline = time.monotonic() + PATIENCE_S
        while not _intervals_recorded(db):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the run never recorded an interval: {out.read_text()}")
            time.sleep(0.2)
        _fill(small_fs, leave=16 * 1024)
        proc.wait(timeout=PATIENCE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out.read_text()
    assert proc.returncode == 1 and "1 run(s) failed" in text, text
    assert "internal error" not in text and "Traceback" not in text, text
    (small_fs / "filler").unlink()
    assert integrity(db) == "ok"
    rdb = ResultsDB(db, create=False)
    with rdb.session() as s:
        (run,) = s.scalars(select(Run)).all()
        events = list(s.scalars(select(RunEvent).where(RunEvent.run_id == run.id)))
    rdb.dispose()
    assert run.status == "failed", (run.status, text, [e.message for e in events])
    assert "disk is full" in (run.error or ""), run.error
    assert any("disk is full" in e.message for e in events if e.level == "error")
    assert not list(small_fs.glob("r.sqlite-reserve-*"))  # the reserve was given back
