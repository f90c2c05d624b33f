"""CLI verbs that run things: ``run``, ``queue add|list|cancel``, ``worker``, ``status``."""

from __future__ import annotations

import math
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from flushbench.cli import app, tables
from flushbench.cli.console import para, say
from flushbench.cli.options import DbOption, WorkOption, stdout_console

console = stdout_console()
KeepDatadirsOption = Annotated[
    bool,
    typer.Option("--keep-datadirs", help="Keep every run's datadir (by default a run's datadir"
                 " is removed once recorded; failed runs keep theirs, at most 3)."),
]
queue_app = typer.Typer(help="The run queue in the results database.", no_args_is_help=True)
app.add_typer(queue_app, name="queue")

HostIdOption = Annotated[
    str | None,
    typer.Option("--host-id", envvar="FLUSHBENCH_HOST_ID",
                 help="This host's id for locking and placement (default: /etc/machine-id)."),
]
HostClassOption = Annotated[
    str | None,
    typer.Option("--host-class", envvar="FLUSHBENCH_HOST_CLASS",
                 help="The class of interchangeable hosts this one belongs to (default: its"
                 " host id). See docs/hosts.md."),
]
LogFileOption = Annotated[
    Path | None,
    typer.Option("--log-file", help="Also append timestamped log lines to this file."),
]
LeaseOption = Annotated[
    float,
    typer.Option("--lease-seconds", min=1.0,
                 help="How long a claim holds without a heartbeat before another worker may"
                 " take the run over."),
]


#: A lease longer than a day would keep a dead worker's run locked for that long.
MAX_LEASE_S = 86400.0
#: --idle-timeout above a week is a typo; "forever" is spelled as a negative number.
MAX_IDLE_S = 7 * 86400.0


def _check_seconds(option: str, value: float, *, allow_negative: bool = False) -> None:
    """Refuse nan, infinities and absurd values for a seconds option (a clear usage error)."""
    from core.errors import ConfigError

    limit = MAX_IDLE_S if allow_negative else MAX_LEASE_S
    if not math.isfinite(value):
        raise ConfigError(f"{option} {value} is not a finite number of seconds", where=option,
                          fix=("give seconds, or a negative number to wait forever"
                               if allow_negative else f"give seconds between 1 and {limit:.0f}"))
    if value > limit:
        raise ConfigError(f"{option} {value:g} is more than {limit:.0f} seconds", where=option,
                          fix=f"give at most {limit:.0f} seconds"
                          + (" (a negative number waits forever)" if allow_negative else ""))


def _check_work(work: Path | None) -> None:
    """The work folder (``--work`` or ``$FLUSHBENCH_WORK``) must be a writable folder."""
    from core.filecheck import check_output_dir
    from core.paths import work_dir

    check_output_dir(work if work is not None else work_dir(),
                     "the work folder (--work / $FLUSHBENCH_WORK)")


def _sigterm_as_interrupt() -> None:
    # A service manager stops us with SIGTERM: treat it like Ctrl-C so the current run is
    # marked interrupted (and redone on resume) instead of being left "running".
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _stop_between_runs_on_sigusr1() -> threading.Event:
    """An event SIGUSR1 sets (``flushbench queue stop`` sends it): the worker loop finishes
    and records the run in progress, then stops before claiming another."""
    stop = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if not stop.is_set():
            stop.set()
            console.print("stop asked (SIGUSR1): the run in progress finishes, then this"
                          " worker stops; the queued runs stay queued")

    signal.signal(signal.SIGUSR1, handler)
    return stop


def _run_seconds(exp) -> float:  # noqa: ANN001 - a core.experiment.spec.ExperimentSpec
    # restore + start + stop overhead on top of warmup + duration (plan shows the detailed ETA)
    return exp.workload.warmup + exp.workload.duration + 30.0


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="Experiment file (YAML).")],
    db: DbOption = None,
    work: WorkOption = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Queue every run again, even finished ones.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Queue failed runs again.")
    ] = False,
    log_file: LogFileOption = None,
    host_id: HostIdOption = None,
    host_class: HostClassOption = None,
    keep_datadirs: KeepDatadirsOption = False,
) -> None:
    """Preflight, queue and run an experiment; rerunning resumes where it stopped.

    Exit status: 0 when every queued run is done, 1 when a run failed, 2 on bad input, 3 when
    `flushbench queue stop` stopped it with runs still queued.

    On a terminal a live panel shows progress; without one (nohup, systemd, cron) or with
    --log-file it writes one timestamped line per phase and per finished run.
    """
    from flushbench.cli.logs import check_log_file
    from flushbench.cli.summary import print_cell_summary
    from runner.admission.run_context import prepare
    from runner.fleet.worker import run_experiment
    from store.db import ResultsDB, refuse_read_only, resolve_url

    refuse_read_only(db)  # a study bundle: refused before preflight starts anything
    _sigterm_as_interrupt()
    stop = _stop_between_runs_on_sigusr1()
    if log_file is not None:
        check_log_file(log_file, resolve_url(db))
    _check_work(work)
    ctx = prepare(file, work, keep_datadirs=keep_datadirs)  # once, before anything is written
    results = ResultsDB(db)
    holder: dict = {}

    def on_prepared(ctx, enq) -> None:  # noqa: ANN001
        holder["ctx"] = ctx
        console.print(
            f"[bold]{ctx.exp.name}[/]: {len(ctx.cells)} cells × {ctx.exp.repetitions_label()}"
            " — "
            f"{enq.queued + enq.requeued} to run, {enq.kept_done} done already"
            + (
                f", {enq.kept_failed} failed kept (--retry-failed to redo)"
                if enq.kept_failed
                else ""
            )
        )

    from analysis.response.rate_search import judge_step
    from flushbench.cli.logs import LogReporter
    from flushbench.cli.progress import LiveReporter
    from runner.host.identity import local_identity

    identity = local_identity(host_id, host_class)
    if sys.stdout.isatty() and log_file is None:
        reporter_cm = LiveReporter(console, _run_seconds(ctx.exp))
    else:
        reporter_cm = LogReporter(results, log_file)
    with reporter_cm as reporter:
        outcome = run_experiment(
            ctx,
            results,
            fresh=fresh,
            retry_failed=retry_failed,
            reporter=reporter,
            work=work,
            on_prepared=on_prepared,
            identity=identity,
            stop=stop,
            judge=judge_step,
        )
    print_cell_summary(console, results, outcome.experiment_id)
    left = _left_queued(results, outcome.experiment_id) if stop.is_set() else 0
    if left:
        say(console, f"stopped as asked: {left} run(s) of {ctx.exp.name} still queued;"
                     f" `flushbench run {file}` resumes them")
    if outcome.failed:
        console.print(
            f"[red]{outcome.failed} run(s) failed[/] — `flushbench show RUN` prints the evidence"
        )
        raise typer.Exit(1)
    if left:
        # Not 0: a script that reports after `run` must not read a stopped study as whole.
        raise typer.Exit(STOPPED_WITH_RUNS_LEFT)


#: ``run``'s exit status when ``queue stop`` stopped it with runs still queued.
STOPPED_WITH_RUNS_LEFT = 3


def _left_queued(results, experiment_id: int) -> int:  # noqa: ANN001 - a store.db.ResultsDB
    """How many runs of the experiment are still queued."""
    from store import ledger

    with results.session() as s:
        return ledger.queued_run_count(s, experiment_id)


@queue_app.command("add")
def queue_add(
    file: Annotated[Path, typer.Argument(help="Experiment file (YAML).")],
    db: DbOption = None,
    work: WorkOption = None,
    fresh: Annotated[bool, typer.Option("--fresh")] = False,
) -> None:
    """Preflight an experiment and queue its runs for `flushbench worker` (nothing starts)."""
    from runner.admission.queue_record import enqueue
    from runner.admission.run_context import prepare
    from store.db import ResultsDB, refuse_read_only

    refuse_read_only(db)  # a study bundle: refused before preflight starts anything
    _check_work(work)
    ctx = prepare(file, work)
    enq = enqueue(ResultsDB(db), ctx.queued(), fresh=fresh)
    console.print(
        f"queued {enq.queued + enq.requeued} run(s) of {ctx.exp.name}"
        f" ({enq.kept_done} done already)"
    )


@queue_app.command("list")
def queue_list(db: DbOption = None) -> None:
    """Runs per experiment by status (latest attempt of each run)."""
    status(db)


@queue_app.command("cancel")
def queue_cancel(
    experiment: Annotated[str, typer.Argument(help="Experiment name.")], db: DbOption = None,
    run: Annotated[list[int] | None, typer.Option(
        "--run", min=1, help="Only this queued run (repeatable), e.g. a rerun not wanted.")] = None,
) -> None:
    """Cancel the queued runs of an experiment (finished runs are kept).

    A cancelled rerun leaves the run it was to replace standing in the analysis.
    """
    from flushbench.cli.options import check_run_id
    from store import ledger
    from store.db import ResultsDB

    for run_id in run or ():
        check_run_id(run_id, where="--run", fix="name a queued run of the experiment")
    n = ledger.cancel(ResultsDB(db, create=False), experiment, run_ids=run)
    missed = len(set(run)) - n if run else 0
    say(console, f"cancelled {n} queued run(s) of {experiment}" + (
        f"; {missed} of the runs named are not queued runs of it (`flushbench queue list`)"
        if missed else ""))


@queue_app.command("stop")
def queue_stop(
    db: DbOption = None,
    now: Annotated[bool, typer.Option(
        "--now", help="Stop at once: the run in progress is marked interrupted and redone on"
                      " resume (default: it finishes and is recorded first).")] = False,
) -> None:
    """Stop this machine's workers (`run` or `worker`) after the run in progress.

    The queued runs stay queued; start the same command again to resume. Workers on other
    hosts are listed, not signalled: run this there.
    """
    from runner.fleet.workers import ask_workers_to_stop
    from store.db import ResultsDB

    asked = ask_workers_to_stop(ResultsDB(db, create=False), now=now)
    if not asked:
        say(console, "no live worker uses this database")
        return
    for req in asked:
        say(console, _stop_line(req, now=now))


def _stop_line(req, *, now: bool) -> str:  # noqa: ANN001 - a runner.fleet.workers.StopRequest
    """One sentence per live worker: what ``queue stop`` did about it, and why."""
    from core.errors import bounded

    w = req.worker
    doing = f"run {w.run_id}" if w.run_id else w.state
    pid = bounded(str(w.pid), 30)  # a damaged row may hold any text
    head = f"worker pid {pid} ({doing})"
    if req.outcome == "asked":
        return f"{head}: asked to stop " + ("now (its run is redone on resume)" if now else
                                            "after the run in progress")
    if req.outcome == "elsewhere":
        return (f"worker pid {pid} on {w.hostname} ({doing}): another machine — run"
                " `flushbench queue stop` there")
    if req.outcome == "bad-pid":
        return (f"{head}: not signalled — {pid} is not a process id a worker can have (a pid"
                f" is {req.detail}): the workers row is damaged")
    if req.outcome == "other":
        return (f"{head}: not signalled — pid {pid} is now {req.detail}, not a flushbench"
                " worker; its run is taken over when its lease expires")
    return f"{head}: its process is gone; its run is taken over when its lease expires"


@queue_app.command("unpin")
def queue_unpin(
    experiment: Annotated[str, typer.Argument(help="Experiment name.")], db: DbOption = None
) -> None:
    """Release the host class a `placement: one` experiment is pinned to (its hosts are gone).

    The next worker of any allowed class takes the remaining runs; finished runs stay.
    """
    from runner.host.identity import local_identity
    from store import ledger
    from store.db import ResultsDB

    pinned = ledger.unpin(ResultsDB(db, create=False), experiment,
                          host_id=local_identity().host_id)
    if not pinned:
        say(console, f"{experiment} was not pinned to a host class")
        return
    say(console, f"{experiment}: unpinned from host class {', '.join(pinned)}; the next"
                  " worker of an allowed class takes its queued runs (runs already done stay"
                  " where they ran: `compare` compares runs of different hosts only with"
                  " --force)")


@app.command()
def status(db: DbOption = None) -> None:
    """What is queued, running, done and failed, per experiment; live and stale workers."""
    from runner.fleet.workers import worker_rows
    from runner.host.identity import local_identity
    from store import ledger
    from store.db import ResultsDB

    # A mistyped path must not create a database; a study bundle is read (never written).
    results = ResultsDB(db, create=False, write=False)
    if results.bundle is None:  # a bundle's runs have no worker left to take over
        with results.session() as s, s.begin():
            ledger.mark_abandoned(s, host_id=local_identity().host_id)
    rows = ledger.status_counts(results)
    per_run = ledger.run_seconds(results)
    console.print(tables.queue_table(rows, per_run, width=console.width))
    if any(row.get("queued") or row.get("running") for row in rows):
        para(console, "left (est.): queued and running runs × the median wall time of the"
              " experiment's finished runs on this database")
    workers = worker_rows(results)
    if not workers:
        console.print("no worker has registered")
        return
    console.print(tables.workers_table(workers))


@app.command()
def worker(
    db: DbOption = None,
    work: WorkOption = None,
    host_id: HostIdOption = None,
    host_class: HostClassOption = None,
    log_file: LogFileOption = None,
    idle_timeout: Annotated[
        float, typer.Option("--idle-timeout",
                            help="Keep polling an empty queue this many seconds before exiting"
                            " (negative: forever, for a service).")
    ] = 0.0,
    lease_seconds: LeaseOption = 120.0,
    keep_datadirs: KeepDatadirsOption = False,
) -> None:
    """Run queued runs of every experiment this host may run until the queue is empty.

    Several workers (one per host) share one database: claims are atomic, a heartbeat keeps
    each claim's lease, a dead worker's run is taken over as a new attempt, and a host lock
    keeps two workers on one host from measuring at the same time (docs/hosts.md).
    """
    from analysis.response.rate_search import judge_step
    from flushbench.cli.logs import LogReporter, check_log_file
    from runner.fleet.worker import ContextExecutor, WorkerOptions, serve
    from runner.host.identity import local_identity
    from store.db import ResultsDB, redacted, resolve_url

    _sigterm_as_interrupt()
    stop = _stop_between_runs_on_sigusr1()
    _check_seconds("--idle-timeout", idle_timeout, allow_negative=True)
    _check_seconds("--lease-seconds", lease_seconds)
    _check_work(work)
    if log_file is not None:
        check_log_file(log_file, resolve_url(db))
    results = ResultsDB(db, create=False)  # nothing is queued in a database that does not exist
    identity = local_identity(host_id, host_class)
    with LogReporter(results, log_file) as reporter:
        reporter.note(f"worker {identity.owner} (class {identity.host_class}) on"
                      f" {redacted(results.url)}")
        executor = ContextExecutor(results, reporter, work=work, keep_datadirs=keep_datadirs)
        outcome = serve(results, identity, executor, reporter.note,
                        WorkerOptions(lease_s=lease_seconds,
                                      idle_timeout=math.inf if idle_timeout < 0 else idle_timeout,
                                      stop=stop, judge=judge_step))
        summary = ", ".join(f"{n} {k}" for k, n in sorted(outcome.by_status.items())) or "no run"
        reporter.note(f"queue empty ({summary})")
