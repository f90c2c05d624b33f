"""The measurement of one run: the driver runs while the sampler records, then the run is judged.

:func:`measure` is step "measure" of a run's life (:mod:`runner.run.execute`): start the sampler,
run the workload adapter's driver and record each interval it reports (the driver's warm-up,
then its measured window), stop the sampler, then judge what was measured — the steady start
and disturbances (:mod:`runner.run.run_checks`), the storage limits (:func:`storage_proof`), the
server's liveness (:func:`check_alive`) and the driver's own outcome.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.clock import as_utc
from core.errors import ServerError, WorkloadError
from core.experiment.sections import WorkloadSpec
from core.experiment.spec import CellSpec, start_offset
from runner.admission.run_context import ExperimentContext, Reporter
from runner.host.clock import ClockWatch, pause_warning
from runner.host.controls import RunHostControls
from runner.host.proof import IoCounters
from runner.run.run_checks import record_checks
from runner.run.run_lease import RunLease
from runner.run.sampler import Sampler
from runner.server import MysqldSandbox, SandboxLayout
from runner.workloads import get_workload
from store.ledger.recorder import RunRecorder

if TYPE_CHECKING:
    from runner.workloads.base import RunningWorkload, Workload, WorkloadOutcome

#: A driver silent for 3 report intervals (plus slack for connecting) is called hung.
WATCHDOG_INTERVALS = 3
WATCHDOG_SLACK_S = 30.0


@dataclass
class _Kept:
    """What the measurement keeps in memory for the checks after the run."""

    samples: list[Any] = field(default_factory=list)
    intervals: list[Any] = field(default_factory=list)
    #: When the driver's measured window began (its first ``measure`` interval's start).
    start: dt.datetime | None = None
    driver_pid: int | None = None
    #: The CPU placement recorded once the driver runs (empty: no pinning).
    pinned: dict[str, Any] = field(default_factory=dict)
    #: The throttle group's I/O counters at the window's start and at the driver's end.
    io_before: IoCounters | None = None
    io_after: IoCounters | None = None
    measure_from: float = 0.0
    measured_s: float = 0.0


@dataclass
class _Measurement:
    """One run's measurement: the server it measures and where everything it sees goes."""

    ctx: ExperimentContext
    sandbox: MysqldSandbox
    layout: SandboxLayout
    rec: RunRecorder
    reporter: Reporter
    run_dir: Path
    stop_event: threading.Event | None
    controls: RunHostControls
    heartbeat: RunLease
    kept: _Kept = field(default_factory=_Kept)

    def on_sample(self, sample: Any) -> None:
        """Keep, record and show one sampler tick."""
        self.kept.samples.append(sample)
        self.rec.sample(sample)
        self.reporter.sample(sample)

    def start_sampler(self) -> Sampler | None:
        """The sampler on its absolute ticks (None when the experiment turned sampling off)."""
        sampling = self.ctx.exp.sampling
        if not sampling.enabled:
            return None
        sampler = Sampler(
            connect=self.sandbox.connect,
            mysqld_pid=self.sandbox.pid,
            driver_pid=lambda: self.kept.driver_pid,
            datadir=self.layout.datadir,
            interval=sampling.interval,
            engine_status=sampling.engine_status,
            on_sample=self.on_sample,
            group_counters=self.controls.counters,
        )
        sampler.start()
        return sampler

    def drive(self, workload: Workload, connections: int, spec: WorkloadSpec) -> WorkloadOutcome:
        """Run the driver to its end (or a stop) as ``spec`` says (the experiment's workload,
        with the cell's rate and the run's start offset), recording every interval it reports."""
        exp = self.ctx.exp
        conn = self.sandbox.connection_info(database=workload.database)
        self.reporter.phase("warmup")
        watchdog = WATCHDOG_INTERVALS * spec.report_interval + WATCHDOG_SLACK_S
        with workload.run(
            conn, spec, connections, exp.dataset, self.run_dir / "driver"
        ).wrapped(self.controls.wrap_driver) as running:
            self.kept.driver_pid = running.pid
            for record in running.intervals(timeout_s=watchdog):
                self.on_interval(record, running)
            outcome = running.outcome()
            self.kept.io_after = self.controls.counters()
            self.kept.measured_s = time.monotonic() - self.kept.measure_from
        return outcome

    def on_interval(self, record: Any, running: RunningWorkload) -> None:
        """Record one driver interval; the first measured one opens the window."""
        kept = self.kept
        self.rec.interval(record)
        kept.intervals.append(record)
        if self.controls.pins and not kept.pinned:  # the driver runs (and was placed) by now
            kept.pinned = self.controls.record(driver_pid=running.pid)
        if record.phase == "measure" and kept.start is None:
            self.reporter.phase("measuring")
            kept.start = as_utc(record.ts) - dt.timedelta(seconds=record.interval_s)
            self.rec.set_run_fields(measure_started_at=kept.start)
            kept.io_before, kept.measure_from = self.controls.counters(), time.monotonic()
        self.reporter.interval(record)
        check_alive(self.sandbox, self.layout)
        if (self.stop_event is not None and self.stop_event.is_set()) \
                or self.heartbeat.lost.is_set():
            running.stop()

    def stop_sampler(self, sampler: Sampler | None, clock: ClockWatch) -> None:
        """Stop the sampler; missed ticks and a host pause become run warnings."""
        if sampler is not None:
            sampler.stop()
            if (missed := sampler.missed_warning()) is not None:
                self.rec.event("warning", "samples-missed", missed)
        if (paused := pause_warning(clock.jump_s())) is not None:
            # Like every warning event it reaches the run's "done" line through run_summary.
            self.rec.event("warning", "host-paused", paused)


def measure(
    ctx: ExperimentContext,
    cell: CellSpec,
    translation: Any,
    sandbox: MysqldSandbox,
    layout: SandboxLayout,
    rec: RunRecorder,
    reporter: Reporter,
    run_dir: Path,
    stop_event: threading.Event | None,
    controls: RunHostControls,
    heartbeat: RunLease,
) -> None:
    """Measure one run on a started, verified server; raise when the run cannot count.

    Raises
    ------
    ServerError
        mysqld died, or the storage limits were not in force.
    WorkloadError
        The driver failed, or reported no interval.
    LeaseLost
        The run's lease was lost while it measured (the driver was stopped).
    """
    exp = ctx.exp
    workload = get_workload(exp.workload.driver, exp.workload.binaries)
    run = _Measurement(ctx, sandbox, layout, rec, reporter, run_dir, stop_event, controls,
                       heartbeat)
    clock = ClockWatch()  # a host pause during the run becomes a run warning (runner.host.clock)
    # The run's start offset (pre_run.start_jitter): the workload runs that much longer before
    # its window, so repetitions meet the flush cycle at different phases.
    offset = start_offset(exp, rec.run_id)
    sampler = run.start_sampler()
    try:
        # A cell's `rate` knob is the workload's rate for its runs (as `connections` is); the
        # start offset lengthens its warm-up.
        update: dict[str, Any] = {}
        if translation.rate is not None:
            update["rate"] = translation.rate
        if offset:
            update["warmup"] = exp.workload.warmup + offset
        spec = exp.workload.model_copy(update=update) if update else exp.workload
        outcome = run.drive(workload, translation.connections or exp.workload.connections, spec)
    finally:
        run.stop_sampler(sampler, clock)
    kept = run.kept
    limits = controls.spec.model_dump() if controls.throttle is not None else None
    record_checks(exp, rec, kept.intervals, kept.samples, kept.start, limits, offset_s=offset)
    storage_proof(controls, kept.io_before, kept.io_after, kept.measured_s, kept.pinned, rec)
    heartbeat.check()  # a lease lost mid-measure: the driver was stopped, say why
    rec.set_run_fields(driver_summary=outcome.summary)
    for note in outcome.notes:  # kept without some output the parser found missing: say why
        rec.event("warning", "driver-output", note)
    check_alive(sandbox, layout)
    _judge_driver(workload, outcome, exp.workload.driver, run_dir, rec)


def check_alive(sandbox: MysqldSandbox, layout: SandboxLayout) -> None:
    """The one liveness check: raise when mysqld has died (after each interval, and once the
    driver has ended)."""
    if not sandbox.alive():
        raise ServerError(
            f"mysqld died during the run (exit code {sandbox.exit_code})",
            where=str(layout.error_log),
            fix="see the error log tail in the run's evidence",
        )


def _judge_driver(workload: Workload, outcome: WorkloadOutcome, driver: str, run_dir: Path,
                  rec: RunRecorder) -> None:
    """Fail the run when the driver says it failed, or reported nothing."""
    failure = workload.failure(outcome)
    if failure is not None:
        raise WorkloadError(
            f"the {driver} driver {failure}",
            where=str(run_dir / "driver"),
            fix="see the driver's stderr in the run's evidence",
            evidence=f"driver exit code: {outcome.exit_code}\n"
            f"driver stderr (tail):\n{outcome.stderr_tail}",
        )
    if rec.intervals_written == 0:
        raise WorkloadError("the driver reported no interval", where=str(run_dir / "driver"))


def storage_proof(controls: RunHostControls, before: IoCounters | None,
                  after: IoCounters | None, seconds: float, pinned: dict[str, Any],
                  rec: RunRecorder) -> None:
    """Record the limits and the I/O the throttle group really did; fail if a limit slipped."""
    if pinned:
        rec.event("info", "cpu-placement", "CPU placement", json.dumps(pinned, default=str))
    if before is None or after is None:
        return
    verdict = controls.judge(before, after, seconds)
    if verdict is None:
        return
    evidence = json.dumps({**verdict.as_record(), **(after - before).as_record()}, default=str)
    rec.event("info", "storage", f"storage limits {verdict.status}: {verdict.reason}", evidence)
    if not verdict.ok:
        raise ServerError(
            f"the storage limits were not in force: {verdict.reason}",
            where="storage",
            fix="check `flushbench doctor` (I/O throttle) and the run's storage event",
            evidence=evidence,
        )
