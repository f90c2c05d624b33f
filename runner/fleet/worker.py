"""Orchestration: the worker loop shared by ``flushbench worker`` and ``flushbench run``.

Each turn of :func:`serve`: reap mysqld servers this host's dead workers left behind, take
over runs whose worker is gone (a new attempt), pick an experiment this worker may run
(``hosts:``, placement), take the host lock (one measurement per host at a time), claim one
run atomically, and execute it while the heartbeat renews its lease. What "execute" means is
the caller's :class:`Executor`: the real one, :class:`ContextExecutor`, prepares each
experiment's context (:mod:`runner.admission.run_context`) and hands each claimed run to
:func:`runner.run.execute.execute_run`; the claim, lease, lock and takeover path is the same for
every caller. :func:`run_experiment` (``flushbench run``) is enqueue, reap, then this loop
limited to one experiment (:func:`work_queue`).

Calls go one way: CLI → worker → execute (one run's life) → measure.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from runner.admission.queue_record import enqueue
from runner.admission.run_context import (
    ExperimentContext,
    NullReporter,
    Reporter,
    ensure_experiment_dataset,
    prepare,
    prepare_stored,
)
from runner.fleet.hostlock import HostLock
from runner.fleet.lease import Heartbeat
from runner.fleet.rate_search import SearchAdvancer, StepJudge
from runner.host.identity import Identity, local_identity
from runner.run.execute import execute_run
from store import ledger
from store.db import ResultsDB
from store.ledger.runs import (
    run_dirs_without_result_of_experiment,
    run_dirs_without_result_on_host,
    run_place,
)
from store.models import Experiment, RunStatus

#: Seconds between looks at an empty queue while waiting for work (``--idle-timeout``).
POLL_S = 2.0


class Executor(Protocol):
    """What the loop asks of whoever knows how to run a claimed run."""

    def prepare(self, experiment_id: int) -> None:
        """Once per experiment, before its first run here (under the host lock)."""

    def execute(self, run_id: int, heartbeat: Heartbeat) -> str:
        """Execute one claimed run; return its final status (``done``, ``failed``...)."""


@dataclass
class WorkerOptions:
    """How a worker behaves.

    Parameters
    ----------
    lease_s:
        Lease length (the heartbeat renews it every quarter of this).
    experiment_id:
        Only this experiment (``run``); None: every experiment this worker may run.
    idle_timeout:
        Keep looking at an empty queue this many seconds before exiting (``math.inf``:
        forever, a service); 0 exits as soon as nothing is claimable.
    max_runs:
        Stop after this many runs (None: no limit).
    stop:
        When set, the loop returns before claiming another run.
    judge:
        Judges a rate search's finished steps, so the loop queues each search's next step
        (:mod:`runner.fleet.rate_search`); None: searches do not move on.
    """

    lease_s: float = ledger.LEASE_S
    experiment_id: int | None = None
    idle_timeout: float = 0.0
    max_runs: int | None = None
    poll_s: float = POLL_S
    stop: threading.Event = field(default_factory=threading.Event)
    judge: StepJudge | None = None


@dataclass
class WorkerOutcome:
    """Runs this worker executed, by final status."""

    by_status: dict[str, int] = field(default_factory=dict)

    def count(self, status: str) -> int:
        """How many runs ended with ``status``."""
        return self.by_status.get(status, 0)


def reap_host(db: ResultsDB, host_id: str) -> list[int]:
    """Kill mysqld servers left behind by this host's workers that died (SIGKILL, power cut).

    A killed worker cannot stop its sandbox; its run is taken over (``interrupted``) and its
    mysqld keeps running. Only a process whose command line names that run's own my.cnf is
    killed, and only runs claimed under this host id are looked at. Returns the pids killed.
    """
    return kill_leftover_servers(run_dirs_without_result_on_host(db, host_id))


def kill_leftover_servers(run_dirs: list[str | None]) -> list[int]:
    """SIGKILL the mysqld of each run dir whose pid file names a live server of that dir."""
    killed = []
    for run_dir in run_dirs:
        if not run_dir:
            continue
        try:
            pid = int((Path(run_dir) / "mysqld.pid").read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        cnf = str(Path(run_dir) / "my.cnf").encode()
        if any(arg.endswith(cnf) for arg in cmdline):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


def serve(
    db: ResultsDB,
    identity: Identity,
    executor: Executor,
    log: Callable[[str], None],
    options: WorkerOptions | None = None,
) -> WorkerOutcome:
    """Claim and execute runs until nothing is claimable for ``idle_timeout`` seconds.

    Parameters
    ----------
    log:
        Receives one line per event worth a researcher's morning read (waiting for the host
        lock, a takeover, a reaped server, the database blinking).
    """
    opts = options or WorkerOptions()
    outcome = WorkerOutcome()
    lock = HostLock(identity.host_id, identity.owner)
    prepared: set[int] = set()
    idle_since: float | None = None
    told_pinned = False
    searches = SearchAdvancer(db, opts.judge) if opts.judge is not None else None
    with Heartbeat(db, identity, opts.lease_s, notify=log) as heartbeat:
        while not opts.stop.is_set() and (
            opts.max_runs is None or sum(outcome.by_status.values()) < opts.max_runs
        ):
            for pid in reap_host(db, identity.host_id):
                log(f"killed mysqld pid {pid} left behind by a dead worker of host"
                    f" {identity.host_id}")
            with db.session() as s, s.begin():
                taken = ledger.requeue_abandoned(s, opts.experiment_id,
                                                  host_id=identity.host_id)
            for old, new in taken:
                log(f"run {old} was abandoned by its worker (lease expired or process gone):"
                    f" queued again as run {new}")
            if searches is not None:  # each rate search's next step, from its stored steps
                for line in searches.advance(opts.experiment_id):
                    log(line)
            candidates = ledger.claimable_experiments(db, identity)
            if opts.experiment_id is not None:
                if opts.experiment_id not in candidates and not told_pinned:
                    why = _why_not_claimable(db, opts.experiment_id, identity)
                    if why:
                        log(why)
                        told_pinned = True
                candidates = [e for e in candidates if e == opts.experiment_id]
            if not candidates:
                now = time.monotonic()
                idle_since = idle_since if idle_since is not None else now
                if now - idle_since >= opts.idle_timeout:
                    break
                heartbeat.set_state("idle")
                opts.stop.wait(min(opts.poll_s, max(0.05, opts.idle_timeout)))
                continue
            idle_since = None
            exp_id = candidates[0]
            status = _one_run(db, identity, executor, log, opts, heartbeat, lock, exp_id,
                              prepared)
            if status is not None:
                outcome.by_status[status] = outcome.by_status.get(status, 0) + 1
        if opts.stop.is_set():
            log("stopped as asked, between runs: the queued runs stay queued (start the same"
                " command again to resume)")
    return outcome


def _one_run(
    db: ResultsDB,
    identity: Identity,
    executor: Executor,
    log: Callable[[str], None],
    opts: WorkerOptions,
    heartbeat: Heartbeat,
    lock: HostLock,
    exp_id: int,
    prepared: set[int],
) -> str | None:
    def waiting(message: str) -> None:
        heartbeat.set_state("waiting", "host lock")
        log(message)

    lock.acquire(f"experiment {exp_id}", on_wait=waiting)
    try:
        if exp_id not in prepared:
            heartbeat.set_state("preparing", f"experiment {exp_id}")
            executor.prepare(exp_id)
            prepared.add(exp_id)
        run_id = ledger.claim_next(db, exp_id, identity=identity, lease_s=opts.lease_s)
        if run_id is None:
            heartbeat.set_state("idle")
            return None  # another worker took the last one meanwhile
        heartbeat.hold(run_id, exp_id)
        try:
            return executor.execute(run_id, heartbeat)
        finally:
            heartbeat.release()
    finally:
        lock.release()


def _why_not_claimable(db: ResultsDB, experiment_id: int, identity: Identity) -> str | None:
    with db.session() as s:
        row = s.get(Experiment, experiment_id)
        if row is None or ledger.queued_run_count(s, experiment_id) == 0:
            return None
        if row.hosts and identity.host_class not in row.hosts:
            return (f"experiment {row.name} runs on host classes {', '.join(row.hosts)};"
                    f" this worker is {identity.host_class} (--host-class)")
        if row.placement == "one" and row.host_class not in (None, identity.host_class):
            return (f"experiment {row.name} is pinned to host class {row.host_class} (its first"
                    f" run ran there); this worker is {identity.host_class}. Run it there,"
                    " or set `placement: spread` in the experiment")
    return None


def forever(value: float) -> float:
    """``idle_timeout`` for a service: a negative value means forever."""
    return math.inf if value < 0 else value


@dataclass
class ExperimentOutcome:
    """What ``run_experiment`` did."""

    experiment_id: int
    done: int = 0
    failed: int = 0
    interrupted: int = 0


def run_experiment(
    experiment: str | Path | ExperimentContext,
    db: ResultsDB,
    *,
    fresh: bool = False,
    retry_failed: bool = False,
    reporter: Reporter | None = None,
    work: Path | None = None,
    on_prepared: Callable[[ExperimentContext, ledger.EnqueueResult], None] | None = None,
    identity: Identity | None = None,
    lease_s: float = ledger.LEASE_S,
    stop: threading.Event | None = None,
    judge: StepJudge | None = None,
) -> ExperimentOutcome:
    """Preflight (unless given a prepared context), enqueue, then execute the queued runs.

    Rerunning resumes: finished runs are kept, interrupted ones are redone (see
    :mod:`store.ledger.enqueue`). Failed runs do not stop the queue; setting ``stop`` does, between
    runs (the run in progress finishes).
    """
    reporter = reporter or NullReporter()
    ctx = experiment if isinstance(experiment, ExperimentContext) else prepare(experiment, work)
    enq = enqueue(db, ctx.queued(), fresh=fresh, retry_failed=retry_failed)
    reap_leftover_servers(db, enq.experiment_id)
    if on_prepared is not None:
        on_prepared(ctx, enq)
    return work_queue(db, ctx, enq.experiment_id, reporter, identity=identity, lease_s=lease_s,
                      stop=stop, judge=judge)


class ContextExecutor:
    """Executes claimed runs of one prepared experiment (``run``, or a stored one: ``worker``).

    Parameters
    ----------
    ctx:
        A prepared context, or None to prepare each experiment from what the queue stored
        (:func:`runner.admission.run_context.prepare_stored`) — what ``flushbench worker`` does.
    """

    def __init__(
        self,
        db: ResultsDB,
        reporter: Reporter,
        ctx: ExperimentContext | None = None,
        work: Path | None = None,
        keep_datadirs: bool = False,
    ) -> None:
        self.db = db
        self.reporter = reporter
        self.work = work
        self.keep_datadirs = keep_datadirs
        self.contexts: dict[int, ExperimentContext] = {}
        self._given = ctx
        self.index = 0

    def prepare(self, experiment_id: int) -> None:
        """Preflight on this host (stored experiments) and make sure the dataset exists."""
        ctx = self._given or prepare_stored(self.db, experiment_id, self.work,
                                            keep_datadirs=self.keep_datadirs)
        ensure_experiment_dataset(ctx, self.reporter)
        self.contexts[experiment_id] = ctx

    def execute(self, run_id: int, heartbeat: Heartbeat) -> str:
        """Execute one claimed run of a prepared experiment."""
        exp_id, cell_key, repetition = run_place(self.db, run_id)
        total = _count_queued(self.db, exp_id) + 1
        ctx = self.contexts[exp_id]
        cell = ctx.cells_by_key[cell_key]
        self.index += 1
        self.reporter.run_started(self.index, self.index - 1 + total, cell, repetition, run_id)
        return execute_run(self.db, ctx, run_id, cell, self.reporter, heartbeat=heartbeat)


def reporter_log(reporter: Reporter) -> Callable[[str], None]:
    """Where a worker's one-line notes go: the reporter's ``note`` if it has one."""
    note = getattr(reporter, "note", None)
    return note if callable(note) else reporter.phase


def work_queue(
    db: ResultsDB,
    ctx: ExperimentContext,
    experiment_id: int,
    reporter: Reporter,
    *,
    identity: Identity | None = None,
    lease_s: float = ledger.LEASE_S,
    stop: threading.Event | None = None,
    judge: StepJudge | None = None,
) -> ExperimentOutcome:
    """Claim and execute the experiment's queued runs until none is left (the worker loop,
    :func:`serve`, limited to this experiment: host lock, heartbeat, takeovers) or until
    ``stop`` is set (checked between runs). ``judge``: a rate search's steps move on."""
    outcome = ExperimentOutcome(experiment_id=experiment_id)
    if judge is not None:  # a search resumed between steps has nothing queued yet
        for line in SearchAdvancer(db, judge).advance(experiment_id):
            reporter_log(reporter)(line)
    if _count_queued(db, experiment_id) == 0:
        return outcome
    executor = ContextExecutor(db, reporter, ctx)
    done = serve(db, identity or local_identity(), executor, reporter_log(reporter),
                 WorkerOptions(lease_s=lease_s, experiment_id=experiment_id,
                               stop=stop if stop is not None else threading.Event(),
                               judge=judge))
    outcome.done = done.count(RunStatus.DONE)
    outcome.failed = done.count(RunStatus.FAILED)
    outcome.interrupted = done.count(RunStatus.INTERRUPTED)
    return outcome


def reap_leftover_servers(db: ResultsDB, experiment_id: int) -> list[int]:
    """Kill mysqld processes left behind by runs whose flushbench died (SIGKILL, power cut).

    A killed flushbench cannot stop its sandbox; the next ``run`` finds the run marked
    interrupted and its mysqld still alive. Only a process whose command line names that run's
    own my.cnf is killed. Returns the pids killed.
    """
    return kill_leftover_servers(run_dirs_without_result_of_experiment(db, experiment_id))


def _count_queued(db: ResultsDB, experiment_id: int) -> int:
    with db.session() as s:
        return ledger.queued_run_count(s, experiment_id)

