"""The workers sharing a results database, as ``flushbench status`` shows them.

A worker is *live* while its heartbeat is younger than its lease, *stale* once it is older
(the process died, the host is down, or it is cut off from the database): its run will be
taken over when the run's lease expires, and its row's state is ``lost`` from then. Workers
that stopped cleanly are not listed; stale ones are listed for a day.
"""

from __future__ import annotations

import datetime as dt
import re
import signal
import socket
from dataclasses import dataclass
from pathlib import Path

import psutil

from core.clock import as_utc
from store.db import ResultsDB
from store.ledger.clock import db_now
from store.ledger.workers import workers_heard_since

#: Stale workers older than this are no longer listed (their runs were taken over long ago).
STALE_LISTED_FOR = dt.timedelta(days=1)


@dataclass(frozen=True)
class WorkerView:
    """One worker as ``status`` lists it."""

    host_id: str
    host_class: str
    hostname: str
    pid: int
    state: str
    phase: str
    experiment: str | None
    run_id: int | None
    heartbeat_age_s: float
    #: Seconds since the held run's lease was last renewed (None: no run held).
    lease_age_s: float | None
    live: bool
    #: When the worker registered (the database's clock).
    started_at: dt.datetime | None = None


def worker_rows(db: ResultsDB) -> list[WorkerView]:
    """Live workers first, then stale ones (host, pid, experiment, run, phase, ages)."""
    with db.session() as s:
        now = db_now(s)
        rows = workers_heard_since(s, now - STALE_LISTED_FOR)
    out = []
    for worker, exp_name, lease_expires in rows:
        age = (now - as_utc(worker.heartbeat_at)).total_seconds()
        lease_age = None
        if worker.run_id is not None and lease_expires is not None:
            renewed = as_utc(lease_expires) - dt.timedelta(seconds=worker.lease_s)
            lease_age = max(0.0, (now - renewed).total_seconds())
        out.append(WorkerView(
            host_id=worker.host_id, host_class=worker.host_class, hostname=worker.hostname,
            pid=worker.pid, state=worker.state, phase=worker.phase, experiment=exp_name,
            run_id=worker.run_id, heartbeat_age_s=age, lease_age_s=lease_age,
            live=age <= worker.lease_s, started_at=as_utc(worker.started_at),
        ))
    return sorted(out, key=lambda w: (not w.live, w.host_id, *_pid_order(w.pid)))


def _pid_order(pid: object) -> tuple[int, float | str]:
    """Numbers first, in order; a damaged row's text or blob pid after them (SQLite keeps
    whatever a row was given, and text cannot be compared with numbers)."""
    if isinstance(pid, int | float) and not isinstance(pid, bool):
        return (0, pid)
    return (1, str(pid))


#: How ``flushbench queue stop`` asks a worker to stop: between runs, or now.
STOP_BETWEEN_RUNS = signal.SIGUSR1
STOP_NOW = signal.SIGTERM
#: A worker's process may have started this long after its row's clock said it registered
#: (two clocks: the database's and this host's).
CLOCK_SLACK = dt.timedelta(seconds=120)
#: The verbs of the ``flushbench`` command that run the worker loop (and register a row).
WORKER_VERBS = frozenset({"run", "worker"})
#: Modules that run the real worker loop when started with ``python -m`` and no verb: the
#: server-less worker of the claim tests and ``bench/claims_bench.py``.
WORKER_MODULES = frozenset({"tests.support.null_worker"})
#: Interpreter options that take a value (``python -X dev -m …``).
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-X", "-W", "-Q"})


@dataclass(frozen=True)
class StopRequest:
    """What ``flushbench queue stop`` did about one live worker."""

    worker: WorkerView
    #: ``asked`` (signalled), ``elsewhere`` (another host: stop it there), ``gone`` (no such
    #: process here any more, or the number now belongs to a process younger than the row),
    #: ``other`` (the pid is a live process that is not a flushbench worker) or ``bad-pid``
    #: (the row's pid is no process id at all). Only ``asked`` sent a signal.
    outcome: str
    #: For ``other``: the program the pid now runs (its name); for ``bad-pid``: the valid range.
    detail: str = ""


def ask_workers_to_stop(db: ResultsDB, *, now: bool = False) -> list[StopRequest]:
    """Signal every live worker of this machine to stop: between runs (``SIGUSR1``: the run
    in progress finishes and is recorded) or, with ``now``, at once (``SIGTERM``: the run in
    progress is marked interrupted and redone on resume).

    A row's pid is signalled only when it is a flushbench worker of this host: a valid pid
    whose process runs ``flushbench run``/``flushbench worker`` and did not start after the
    row registered. A worker on another machine cannot be signalled from here and is reported
    as such; a pid that is no process id, whose process is gone, was reused, or runs another
    program is left alone and reported.
    """
    here = socket.gethostname()
    out = []
    for w in worker_rows(db):
        if not w.live:
            continue
        if w.hostname != here:
            out.append(StopRequest(w, "elsewhere"))
            continue
        out.append(_signal_worker(w, STOP_NOW if now else STOP_BETWEEN_RUNS))
    return out


def _signal_worker(w: WorkerView, signum: int) -> StopRequest:
    """Send ``signum`` to the row's process if it is that worker; say what was done."""
    pid = valid_pid(w.pid)
    if pid is None:
        return StopRequest(w, "bad-pid", f"2–{pid_max()}")
    try:
        proc = psutil.Process(pid)
        created = dt.datetime.fromtimestamp(proc.create_time(), dt.UTC)
        if w.started_at is not None and created > w.started_at + CLOCK_SLACK:
            return StopRequest(w, "gone")  # the number was reused after the row registered
        if not is_worker_command(proc.cmdline()):
            return StopRequest(w, "other", proc.name())
        # psutil checks the process is still the one looked at (pid and start time) first.
        proc.send_signal(signum)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return StopRequest(w, "gone")
    except psutil.AccessDenied:
        return StopRequest(w, "other", "a process of another user")
    return StopRequest(w, "asked")


def pid_max() -> int:
    """The largest process id this kernel hands out (``/proc/sys/kernel/pid_max``)."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text().strip())
    except (OSError, ValueError):
        return 4_194_304  # the kernel's upper limit on 64-bit machines


def valid_pid(value: object) -> int | None:
    """``value`` as a pid a worker may have (2 … pid_max), or None.

    0 and negative numbers address process groups, 1 is init: a workers row naming one is
    damaged or forged, and signalling it would hit processes that are no worker.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (ValueError, OverflowError):
        return None
    if number is None or not 2 <= number <= pid_max():
        return None
    return number


def is_worker_command(cmdline: list[str]) -> bool:
    """Whether a command line runs flushbench's worker loop: ``flushbench run|worker …``
    (the console script, directly or through its Python), or ``python -m`` one of
    :data:`WORKER_MODULES`."""
    args = list(cmdline)
    if args and _is_python(args[0]):
        args = args[1:]
        while args and args[0].startswith("-") and args[0] not in ("-m", "-c", "-"):
            option = args.pop(0)
            if option in _PYTHON_OPTIONS_WITH_VALUE and args:
                args.pop(0)
        if args[:1] == ["-m"]:
            return len(args) > 1 and args[1] in WORKER_MODULES
        if not args or args[0] in ("-c", "-"):
            return False
    if not args or Path(args[0]).name != "flushbench":
        return False
    verb = next((a for a in args[1:] if not a.startswith("-")), None)
    return verb in WORKER_VERBS


def _is_python(program: str) -> bool:
    """``python``, ``python3``, ``python3.12`` (any folder)."""
    return re.fullmatch(r"python(\d+(\.\d+)*)?", Path(program).name) is not None
