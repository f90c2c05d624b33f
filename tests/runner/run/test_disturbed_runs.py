"""Disturbed-run detection on real runs: a CPU burner and an O_DIRECT writer on the datadir's
device beside a real MariaDB run are caught and attributed; a quiet run is not flagged; the
rerun policy goes through the real queue; a steady window records its start.

No timing assertions: the burner and the writer report their own CPU and bytes (read from
/proc by a watcher thread), and the test checks that the run's recorded figures contain what
they did inside the judged window. The quiet-run test needs the machine to itself, as the
suite runs it (serially); other work on the host during it is, correctly, a disturbance.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from flushbench.cli import build_app
from runner.admission.run_context import NullReporter
from runner.fleet.worker import run_experiment
from runner.run.sampler import block_device_of, host_cpu, parse_diskstats, proc_cpu, proc_io_bytes
from store.db import ResultsDB
from store.models import Cell, Experiment, Run, RunEvent, Sample
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

BURNER = "while True: pass\n"
#: Writes 1 MiB O_DIRECT blocks over a 128 MiB file at about 32 MiB/s.
WRITER = textwrap.dedent("""\
    import mmap, os, sys, time
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
    buf = mmap.mmap(-1, 1 << 20)
    buf.write(b"x" * (1 << 20))
    n, t0 = 0, time.monotonic()
    while True:
        os.pwrite(fd, buf, (n % 128) << 20)
        n += 1
        ahead = n / 32 - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    """)


def experiment(tmp_path: Path, name: str, extra: str = "", duration: str = "10s") -> Path:
    """One cell, 2 s warmup, 10 s measured from its start, 1 s intervals and ticks."""
    return tiny_tpcc_experiment(tmp_path, name, extra, duration=duration,
                                report_interval="1s", sampling="1s")


class Watch(threading.Thread):
    """Polls one figure of a process (its CPU seconds, its bytes written) with wall times."""

    def __init__(self, read: Callable[[], float | None]) -> None:
        super().__init__(daemon=True)
        self.read = read
        self.points: list[tuple[float, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            value = self.read()
            if value is not None:
                self.points.append((time.time(), value))
            time.sleep(0.05)

    def between(self, start: dt.datetime, end: dt.datetime) -> float:
        """How much the figure grew between two wall-clock times (linear between polls)."""
        return self._at(end.timestamp()) - self._at(start.timestamp())

    def _at(self, t: float) -> float:
        pts = self.points
        assert pts and pts[0][0] <= t <= pts[-1][0], "the watch did not cover the window"
        for (t0, v0), (t1, v1) in zip(pts, pts[1:], strict=False):
            if t0 <= t <= t1:
                return v0 + (v1 - v0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)
        return pts[-1][1]


@contextmanager
def process(argv: list[str], figure: Callable[[int], float | None]) -> Iterator[Any]:
    """Start a disturbing process and watch one of its figures until it is killed."""
    proc = subprocess.Popen(argv)
    watch = Watch(lambda: figure(proc.pid))
    watch.start()
    holder: dict[str, Any] = {"proc": proc, "watch": watch}
    try:
        yield holder
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        watch.done.set()
        watch.join()


def cpu_seconds(pid: int) -> float | None:
    user, system = proc_cpu(pid)
    return None if user is None or system is None else user + system


def written_bytes(pid: int) -> float | None:
    io = proc_io_bytes(pid)
    return None if io is None else float(io[1])


def runs_of(db: ResultsDB, name: str) -> list[Run]:
    with db.session() as s:
        return list(s.scalars(select(Run).join(Cell).join(Experiment)
                              .where(Experiment.name == name).order_by(Run.attempt)))


def warnings_of(db: ResultsDB, run_id: int) -> dict[str, RunEvent]:
    with db.session() as s:
        return {e.kind: e for e in s.scalars(select(RunEvent).where(
            RunEvent.run_id == run_id, RunEvent.level == "warning"))}


def figures_of(event: RunEvent) -> dict[str, Any]:
    return json.loads(event.evidence or "{}")


def span(figures: dict[str, Any]) -> tuple[dt.datetime, dt.datetime]:
    return dt.datetime.fromisoformat(figures["from"]), dt.datetime.fromisoformat(figures["to"])


def test_a_cpu_burner_and_a_writer_are_caught_and_attributed(tmp_path: Path, work: Path
                                                               ) -> None:
    path = experiment(tmp_path, "disturbed")
    db = ResultsDB(tmp_path / "r.sqlite")
    # The writer's file lies beside the run's datadir: the same device.
    target = work / "disturbing-writes.bin"
    with process([sys.executable, "-c", BURNER], cpu_seconds) as burner, \
            process([sys.executable, "-c", WRITER, str(target)], written_bytes) as writer:
        outcome = run_experiment(path, db, work=work)
    target.unlink(missing_ok=True)
    assert (outcome.done, outcome.failed) == (1, 0)
    (run,) = runs_of(db, "disturbed")
    found = warnings_of(db, run.id)
    assert {"disturbed-cpu", "disturbed-io"} <= set(found), sorted(found)

    cpu = figures_of(found["disturbed-cpu"])
    burned = burner["watch"].between(*span(cpu))
    assert burned > 0
    # Everything the burner did inside the judged span is counted as others' CPU.
    assert cpu["others_cpu_s"] >= 0.9 * burned, (cpu, burned)
    assert cpu["others_share"] >= 0.10
    assert cpu["own_cpu_s"] > 0  # mysqld, the driver and flushbench are ours, not others'

    io = figures_of(found["disturbed-io"])
    wrote = writer["watch"].between(*span(io))
    assert wrote > 1 << 20
    assert io["others_bytes"] >= 0.8 * wrote, (io, wrote)
    assert io["own_bytes"] > 0

    result = CliRunner().invoke(build_app(), ["disturbed", "disturbed", "--db",
                                              str(tmp_path / "r.sqlite")])
    assert result.exit_code == 0, result.output
    assert "disturbed-cpu" in result.output and "disturbed-io" in result.output
    assert "yes (keep)" in result.output  # the default policy keeps it in the verdicts


def others_now(work: Path, seconds: float = 2.0) -> tuple[float, float]:
    """(share of the machine's CPU others use, bytes per second on work's device) right now.

    Nothing of the run exists yet: everything busy but this test process is someone else.
    """
    device = block_device_of(work)

    def read() -> tuple[tuple[float, float, float], float, float]:
        cpu = host_cpu()
        assert cpu is not None and device is not None
        disk = parse_diskstats(Path("/proc/diskstats").read_text(), *device) or (0, 0, 0, 0)
        return cpu, cpu_seconds(os.getpid()) or 0.0, (disk[2] + disk[3]) * 512.0

    (b0, i0, s0), own0, d0 = read()
    time.sleep(seconds)
    (b1, i1, s1), own1, d1 = read()
    capacity = (b1 - b0) + (i1 - i0) + (s1 - s0)
    return max(b1 - b0 - (own1 - own0), 0.0) / capacity, (d1 - d0) / seconds


@pytest.mark.alone  # other tests running beside it would make the machine busy: run it alone
def test_a_quiet_run_is_not_flagged(tmp_path: Path, work: Path) -> None:
    # 6 s: it runs alone, after the parallel pass, on the suite's critical path.
    path = experiment(tmp_path, "quiet", duration="6s")
    busy, io = others_now(work)
    if busy > 0.05 or io > 1 << 20:
        pytest.skip(f"the machine is not quiet before the run: others use {busy:.0%} of its CPU"
                    f" and move {io / (1 << 20):.1f} MiB/s on the work dir's device")
    db = ResultsDB(tmp_path / "r.sqlite")
    before = host_cpu()
    outcome = run_experiment(path, db, work=work)
    after = host_cpu()
    assert (outcome.done, outcome.failed) == (1, 0)
    assert before is not None and after is not None
    stolen = (after[2] - before[2]) / max(sum(after) - sum(before), 1e-9)
    (run,) = runs_of(db, "quiet")
    with db.session() as s:
        taken = [x for x in s.scalars(select(Sample).where(Sample.run_id == run.id))
                 if not x.missed]
    assert len(taken) >= 3
    assert all(x.host_cpu_busy_s and x.tool_cpu_s and x.own_io_write_bytes is not None
               for x in taken)
    assert all(x.group_write_ios is None for x in taken)  # no storage profile: no group
    found = warnings_of(db, run.id)
    assert not {"disturbed-cpu", "disturbed-io"} & set(found), {
        k: e.message for k, e in found.items()}
    # The hypervisor can take this VM's CPUs whatever the test does (a CI check saw 11.5 % of
    # a short window's CPU time stolen). A steal warning is then true, not a false alarm:
    # with steal read from /proc/stat beside the run (independently of the code under test),
    # the premise "a quiet machine" failed and the test says so instead of judging.
    if "disturbed-steal" in found and stolen >= 0.005:
        said = found["disturbed-steal"].message
        pytest.skip(f"the machine was not quiet during the run: the hypervisor stole"
                    f" {stolen:.1%} of its CPU time, and the run says {said!r}")
    assert "disturbed-steal" not in found, found["disturbed-steal"].message


class KillAfterFirstRun(NullReporter):
    """Stops the disturbance once the first run has finished (its rerun runs quiet)."""

    def __init__(self, stop: Callable[[], None]) -> None:
        self.stop = stop
        self.finished: list[tuple[int, str]] = []

    def run_finished(self, run_id: int, status: str, error: str | None) -> None:
        self.finished.append((run_id, status))
        self.stop()


def test_rerun_policy_queues_a_replacement_through_the_real_queue(tmp_path: Path, work: Path
                                                                  ) -> None:
    path = experiment(tmp_path, "policy", """\
        window: {start: steady, max_start: 4s}
        disturbed: {action: rerun, max_reruns: 1}
        """)
    db = ResultsDB(tmp_path / "r.sqlite")
    with process([sys.executable, "-c", BURNER], cpu_seconds) as burner:
        reporter = KillAfterFirstRun(burner["proc"].kill)
        outcome = run_experiment(path, db, work=work, reporter=reporter)
    runs = runs_of(db, "policy")
    first = runs[0]
    assert first.status == "done" and "disturbed-cpu" in warnings_of(db, first.id)
    # The disturbed run stays, with its evidence; a second attempt replaced it, and was run.
    assert len(runs) == 2, [(r.id, r.attempt, r.status) for r in runs]
    second = runs[1]
    assert (second.repetition, second.attempt, second.status) == (1, 2, "done")
    assert outcome.done == 2
    with db.session() as s:
        notes = [e.message for e in s.scalars(select(RunEvent).where(
            RunEvent.run_id == first.id, RunEvent.kind == "rerun"))]
    assert notes and f"run {second.id}" in notes[0]
    # A steady window: each run's start was chosen and recorded (10 one-second intervals
    # are 2 batches, too few for MSER-5: the start is the cap, and the run says so).
    for r in runs:
        assert r.window_start_s == 4.0
        assert "no-steady-state" in warnings_of(db, r.id)

    from analysis import frames

    every = frames.run_summary(db, runs_df=frames.runs(db, "policy", all_attempts=True))
    row = every.set_index("run_id").loc[first.id]
    assert bool(row["excluded"]) and "policy rerun" in row["excluded_reason"]
    latest = frames.runs(db, "policy")
    assert list(latest["run_id"]) == [second.id]  # the replacement supersedes it


@pytest.mark.host_control("io")
def test_a_throttled_run_records_its_group_counters_per_sample(tmp_path: Path, work: Path
                                                                ) -> None:
    from runner.host.cgroups import find_hierarchy

    if os.geteuid() != 0 or find_hierarchy("io") is None:
        pytest.skip("host_control(io) unavailable: needs root and a cgroup I/O controller")
    path = experiment(tmp_path, "throttled", "fixed: {storage: {write_iops: 400}}\n")
    db = ResultsDB(tmp_path / "r.sqlite")
    outcome = run_experiment(path, db, work=work)
    assert (outcome.done, outcome.failed) == (1, 0)
    (run,) = runs_of(db, "throttled")
    with db.session() as s:
        taken = [x for x in s.scalars(select(Sample).where(Sample.run_id == run.id)
                                      .order_by(Sample.seq)) if not x.missed]
    writes = [x.group_write_ios for x in taken]
    assert None not in writes and writes == sorted(writes) and writes[-1] > writes[0]
    from runner.run.disturbance import io_figures, limit_figures

    io = io_figures(taken)
    group = (taken[-1].group_write_bytes - taken[0].group_write_bytes
             + taken[-1].group_read_bytes - taken[0].group_read_bytes)
    assert io is not None and io["own_bytes"] >= group  # the group's bytes are ours
    limit = limit_figures(taken, {"write_iops": 400})["write_iops"]
    assert limit["share"] <= 1.25  # the throttle held (its own accuracy, and the first slice)
