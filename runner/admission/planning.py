"""What an experiment will do, in which order, for how long, and with how much disk.

:func:`plan` runs :func:`~runner.admission.preflight.preflight` (so a plan is only printed for an
experiment that can run) and estimates the wall time of every run from the experiment's own
durations plus fixed costs measured on the reference machine (2 cores, virtio disk):

* dataset load, once: the loader's own estimate (``Workload.load_seconds``), plus creating the
  datadir and copying the snapshot;
* per run: restore (a disk copy at ~300 MB/s), server start ~5 s, warmup, duration, draining
  dirty pages, stop ~10 s.

The command prints a plan (``flushbench plan``, :func:`flushbench.cli.tables.print_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.experiment.cells import expand, run_order
from core.experiment.spec import CellSpec, ExperimentSpec, start_jitter
from runner.admission.preflight import PreflightReport, preflight
from runner.workloads.registry import adapter_class

COPY_BYTES_PER_S = 300 * 1024**2
SERVER_START_S = 5.0
SERVER_STOP_S = 10.0
INSTALL_DB_S = 5.0
#: Rate at which a drained buffer pool writes out its dirty pages (bytes/s), for the estimate.
DRAIN_BYTES_PER_S = 50 * 1024**2
DIRTY_FRACTION = 0.5
DROP_CACHES_S = 2.0


@dataclass
class PlannedRun:
    """One (cell, repetition) in run order, with its estimated duration and start offset."""

    index: int
    cell: CellSpec
    repetition: int
    seconds: float
    starts_at: float


@dataclass
class Plan:
    """The whole plan: preflight report, runs in order, time and disk estimates."""

    experiment: ExperimentSpec
    source: str
    report: PreflightReport
    runs: list[PlannedRun]
    load_seconds: float
    total_seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def cells(self) -> list[CellSpec]:
        """The expanded cells."""
        return self.report.cells


def load_seconds(exp: ExperimentSpec, dataset_bytes: int) -> float:
    """Estimated time to build the dataset once (datadir, load, clean stop, snapshot)."""
    load = adapter_class(exp.dataset.effective_loader).load_seconds(exp.dataset)
    return INSTALL_DB_S + SERVER_START_S + load + SERVER_STOP_S + dataset_bytes / COPY_BYTES_PER_S


def run_seconds(exp: ExperimentSpec, report: PreflightReport, cell: CellSpec) -> float:
    """Estimated wall time of one run of ``cell``."""
    seconds = report.dataset_bytes / COPY_BYTES_PER_S + SERVER_START_S + SERVER_STOP_S
    seconds += adapter_class(exp.workload.driver).workload_seconds(exp.workload)
    # The start offset (pre_run.start_jitter) is drawn per run: half its bound on average.
    seconds += start_jitter(exp) / 2
    if exp.pre_run.drop_caches:
        seconds += DROP_CACHES_S
    if exp.pre_run.drain_dirty_pages:
        opts = report.server_options(cell)
        try:
            pool = int(opts.get("innodb_buffer_pool_size") or
                       report.options_of(cell).get("innodb_buffer_pool_size") or 128 * 1024**2)
        except ValueError:
            pool = 128 * 1024**2
        seconds += min(exp.pre_run.drain_timeout, pool * DIRTY_FRACTION / DRAIN_BYTES_PER_S)
    return seconds


def plan(exp: ExperimentSpec, source: str) -> Plan:
    """Expand, preflight and estimate an experiment.

    Raises
    ------
    ConfigError, PreflightError
        As :func:`core.experiment.cells.expand` and :func:`runner.admission.preflight.preflight`.
    """
    cells = expand(exp, source)
    report = preflight(exp, source, cells)
    # One dataset per server: a datadir only opens on the server that wrote it.
    load = load_seconds(exp, report.dataset_bytes) * max(1, len(report.servers))
    runs = []
    clock = load
    for i, (cell, rep) in enumerate(run_order(exp, cells), 1):
        seconds = run_seconds(exp, report, cell)
        runs.append(PlannedRun(i, cell, rep, seconds, clock))
        clock += seconds
    notes = list(report.notes)
    if exp.workload.driver_choice:  # which TPC-C client `driver: auto` picked, and why
        notes.insert(0, exp.workload.driver_choice)
    if (jitter := start_jitter(exp)) > 0:
        how = ("pre_run.start_jitter" if exp.pre_run.start_jitter is not None
               else "the default when a cell repeats; pre_run: {start_jitter: 0} turns it off")
        notes.append(f"start offsets ({how}): each run warms up 0–{jitter:.0f} s longer,"
                     f" whole seconds drawn from order.seed {exp.order.seed} and its run id"
                     " (recorded with the run, shown by `show`), so repetitions meet a flush"
                     " cycle at different phases")
    if exp.order.mode == "blocks" and exp.repetitions < MIN_BLOCKS:
        # The blocked rule's guard leaves out one block at a time: it needs a noise estimate
        # from the blocks that remain (docs/statistics.md, "Blocked designs").
        notes.append(f"order: blocks with {exp.repetitions} repetitions gives {exp.repetitions}"
                     f" blocks; a blocked verdict needs {MIN_BLOCKS} (it must hold with any one"
                     f" block left out) — set repetitions: {MIN_BLOCKS} or more")
    return Plan(exp, source, report, runs, load, clock, notes)


#: Blocks a blocked verdict needs: with one left out, two remain to estimate the noise.
MIN_BLOCKS = 3
