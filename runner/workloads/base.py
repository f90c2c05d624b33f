"""The one interface every workload driver sits behind, and the machinery they share.

An adapter knows its driver's command line and output format; everything else (starting the
child so it is always reaped, teeing raw output to evidence files, the reader threads, the
watchdog that notices a silent driver) lives here once.

Output parsing is a pure, stateful :class:`OutputParser` per driver (``feed(line, read_ts)``),
kept in its own module so it is unit-tested on recorded real output without a server.
"""

from __future__ import annotations

import abc
import collections
import contextlib
import datetime as dt
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from core.clock import utcnow
from core.errors import WorkloadError
from core.experiment.drivers import NOTPM, Metric
from runner import proc
from runner.connection import ConnectionInfo

if TYPE_CHECKING:  # the spec validates driver names through the registry: no import cycle
    from core.experiment.sections import DatasetSpec, WorkloadSpec

Phase = Literal["warmup", "measure"]

#: The longest driver output line read whole (the Go driver's longest, an interval with every
#: bucket of its layout filled, is ~160 KB); a longer one is read in pieces of this size.
MAX_LINE_BYTES = 4 * 1024 * 1024
#: How many stderr lines an outcome keeps as evidence.
STDERR_TAIL_LINES = 40


@dataclass(frozen=True)
class IntervalRecord:
    """One report interval of a driver: exactly the columns of the store's ``intervals`` table.

    ``ts`` is an aware UTC datetime: the driver's own timestamp when it prints one, else the
    moment the line was read. ``elapsed_s`` counts from the workload start, warmup included.
    """

    seq: int
    ts: dt.datetime
    elapsed_s: float
    interval_s: float
    phase: Phase
    primary_count: float
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    errors: float = 0.0
    retries: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)
    #: Every type's latency histogram of the interval (:mod:`store.latency_codec`), where the
    #: driver prints one (the Go driver); None otherwise.
    latency_z: bytes | None = None

    def __post_init__(self) -> None:
        if self.ts.tzinfo is None or self.ts.utcoffset() != dt.timedelta(0):
            raise ValueError(f"IntervalRecord.ts must be an aware UTC datetime, got {self.ts!r}")
        if self.phase not in ("warmup", "measure"):
            raise ValueError(f"IntervalRecord.phase must be warmup|measure, got {self.phase!r}")


@dataclass(frozen=True)
class WorkloadOutcome:
    """How a driver run ended.

    ``summary`` is what the driver reported at the end (TpmC, totals...) or ``None`` when it
    printed none (killed, crashed). ``stderr_tail`` holds the last stderr lines (on a failure
    with an empty stderr, the last stdout lines: sysbench prints FATAL there). ``interrupted``
    is true when :meth:`RunningWorkload.stop` ended the run or the driver says it was
    interrupted. ``notes`` are what the output parser found worth a run warning without
    failing the run (:meth:`OutputParser.notes`).
    """

    exit_code: int | None
    summary: dict[str, Any] | None
    stderr_tail: str
    interrupted: bool
    notes: tuple[str, ...] = ()


class OutputParser(abc.ABC):
    """Turns a driver's stdout, one line at a time, into interval records and a summary."""

    @abc.abstractmethod
    def feed(self, line: str, read_ts: dt.datetime) -> IntervalRecord | None:
        """Consume one stdout line (without newline); return a record if the line is one.

        Raises
        ------
        WorkloadError
            When a line that must parse does not (the message quotes the line).
        """

    @abc.abstractmethod
    def summary(self) -> dict[str, Any] | None:
        """The driver's final figures, once its summary was read (``None`` before)."""

    def interrupted(self) -> bool:
        """Whether the driver's own output says it was interrupted."""
        return False

    def notes(self) -> tuple[str, ...]:
        """What the output lacked that the run is kept without (each a run warning)."""
        return ()


def log_files(log_path: Path) -> tuple[Path, Path]:
    """The evidence files for ``log_path``: ``NAME.stdout.log`` and ``NAME.stderr.log``.

    ``log_path`` ``run/driver.log`` gives ``run/driver.stdout.log`` and ``run/driver.stderr.log``.
    """
    log_path = Path(log_path)
    stem = log_path.name.removesuffix(".log")
    return (
        log_path.with_name(f"{stem}.stdout.log"),
        log_path.with_name(f"{stem}.stderr.log"),
    )


def client_env(conn: ConnectionInfo, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a client child: the password only ever in ``MYSQL_PWD``, never argv."""
    env = dict(os.environ)
    env.pop("MYSQL_PWD", None)  # never inherit someone else's password
    env.update(conn.client_env())
    if extra:
        env.update(extra)
    return env


def whole_seconds(value: float, what: str, tool: str) -> int:
    """Seconds for a driver that only takes whole seconds: refuse a fraction, never round.

    Raises
    ------
    WorkloadError
        When ``value`` has a fractional part.
    """
    if not float(value).is_integer():
        raise WorkloadError(
            f"{tool} needs whole seconds for {what}, got {value:g}",
            where=f"workload.{what}",
            fix=f"use a whole number of seconds for {what}",
        )
    return int(value)


def _tail(lines: Sequence[str]) -> str:
    return "\n".join(lines)


def redact(data: bytes, secrets: Sequence[str]) -> bytes:
    """``data`` with every secret replaced by ``***`` (tools that echo their own -p value)."""
    for secret in secrets:
        if secret:
            data = data.replace(secret.encode(), b"***")
    return data


def _pump(
    stream: Any,
    path: Path,
    secrets: Sequence[str],
    on_line: Callable[[bytes], None] | None = None,
) -> None:
    """Copy a child's pipe to an evidence file line by line (redacted), calling ``on_line``.

    The pipe is always drained to its end, even when the evidence file cannot be written
    (disk full): a driver blocked on a full pipe would look like a hung server. A line longer
    than :data:`MAX_LINE_BYTES` comes in pieces of that size (a driver printing without a
    newline costs no more memory than that; its parser refuses the pieces).
    """
    log = None
    with contextlib.suppress(OSError):
        log = open(path, "ab")  # noqa: SIM115 - closed in finally
    try:
        for raw in iter(lambda: stream.readline(MAX_LINE_BYTES), b""):
            raw = redact(raw, secrets)
            if log is not None:
                try:
                    log.write(raw)
                    log.flush()
                except OSError:
                    log.close()
                    log = None
            if on_line is not None:
                on_line(raw)
    except (OSError, ValueError):
        pass  # the pipe was closed under us while stopping
    finally:
        if log is not None:
            log.close()


def run_to_completion(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str],
    log_path: Path,
    timeout_s: float,
    what: str,
    fix: str,
    secrets: Sequence[str] = (),
) -> None:
    """Run a loader-style command to the end, its output appended to the evidence files.

    Raises
    ------
    WorkloadError
        When it exits non-zero or runs longer than ``timeout_s`` (it is killed and reaped);
        the message carries the stderr tail.
    """
    out_path, err_path = log_files(log_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with proc.child(argv, env=env, text=False) as child:
        pumps = [
            threading.Thread(target=_pump, args=(child.stdout, out_path, secrets), daemon=True),
            threading.Thread(target=_pump, args=(child.stderr, err_path, secrets), daemon=True),
        ]
        for t in pumps:
            t.start()
        try:
            code = child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise WorkloadError(
                f"{what} still running after {timeout_s:.0f} s (killed)",
                where=str(argv[0]),
                fix=f"see {err_path}; {fix}",
            ) from None
        # What the command left in its group (a background job holding its output) goes now,
        # so the pumps reach the end of the pipes; one that left the group gets 10 s in all.
        proc.terminate(child)
        deadline = time.monotonic() + 10
        for t in pumps:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
    if code != 0:
        tail = _read_tail(err_path) or _read_tail(out_path)
        raise WorkloadError(
            f"{what} exited with code {code}: {tail.strip()[-2000:]}",
            where=str(argv[0]),
            fix=f"see {out_path} and {err_path}; {fix}",
        )


def _read_tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


_EOF = object()


class RunningWorkload(contextlib.AbstractContextManager):
    """A driver process in flight. Use as a context manager; the child is always reaped.

    ``intervals()`` yields :class:`IntervalRecord` as the driver prints them; once it ends,
    ``outcome()`` says how the driver ended. ``stop()`` (from any thread) ends the run early:
    the driver gets SIGTERM (SIGKILL after a grace period) and the iterator ends cleanly.

    Two reader threads drain stdout and stderr into the evidence files, so neither pipe can
    fill up and block the driver, and a silent driver cannot block the caller: the iterator
    waits on a queue with a timeout (the watchdog).
    """

    def __init__(
        self,
        argv: Sequence[str | os.PathLike[str]],
        *,
        env: Mapping[str, str],
        log_path: Path,
        parser: OutputParser,
        name: str,
        grace_s: float = 10.0,
        secrets: Sequence[str] = (),
    ) -> None:
        self._argv = [str(a) for a in argv]
        self._secrets = [x for x in secrets if x]
        self._env = dict(env)
        self._out_path, self._err_path = log_files(log_path)
        self._parser = parser
        self._name = name
        self._grace_s = grace_s
        self._stack = contextlib.ExitStack()
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stdout_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()
        self._stdout_done = False

    # -- lifecycle ----------------------------------------------------------------------------
    def wrapped(self, wrapper: Callable[[list[str]], list[str]]) -> RunningWorkload:
        """Prefix the command line before the driver starts (CPU pinning); returns self."""
        self._argv = [str(a) for a in wrapper(self._argv)]
        return self

    def __enter__(self) -> RunningWorkload:
        self._out_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._proc = self._stack.enter_context(
                proc.child(self._argv, env=self._env, text=False, grace_s=self._grace_s)
            )
            self._threads = [
                threading.Thread(target=target, name=f"{self._name}-{what}", daemon=True)
                for target, what in ((self._pump_stdout, "stdout"), (self._pump_stderr, "stderr"))
            ]
            for t in self._threads:
                t.start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._stack.close()  # terminates (if still running) and reaps the child
        finally:
            for t in self._threads:
                t.join(timeout=5)

    @property
    def pid(self) -> int:
        """The driver's process id (for the sampler's CPU accounting)."""
        if self._proc is None:
            raise RuntimeError("the workload is not started (use it as a context manager)")
        return self._proc.pid

    @property
    def argv(self) -> list[str]:
        """The command line that was started, secrets replaced by ``***`` (safe to log)."""
        return [redact(a.encode(), self._secrets).decode() for a in self._argv]

    def stop(self) -> None:
        """End the run early: SIGTERM to the driver's process group, SIGKILL after the grace."""
        self._stopped.set()
        if self._proc is not None:
            proc.terminate(self._proc, self._grace_s)

    # -- reader threads ------------------------------------------------------------------------
    def _pump_stdout(self) -> None:
        assert self._proc is not None

        def on_line(raw: bytes) -> None:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._stdout_tail.append(line)
            self._lines.put((line, utcnow()))

        try:
            _pump(self._proc.stdout, self._out_path, self._secrets, on_line)
        finally:
            self._lines.put(_EOF)

    def _pump_stderr(self) -> None:
        assert self._proc is not None

        def on_line(raw: bytes) -> None:
            self._stderr_tail.append(raw.decode("utf-8", "replace").rstrip("\r\n"))

        _pump(self._proc.stderr, self._err_path, self._secrets, on_line)

    # -- data ----------------------------------------------------------------------------------
    def intervals(self, timeout_s: float | None = None) -> Iterator[IntervalRecord]:
        """Yield interval records as the driver prints them, until its stdout closes.

        Parameters
        ----------
        timeout_s:
            Watchdog: if the driver prints nothing for this many seconds, raise. The runner
            passes 3 × report interval + warmup slack. ``None`` waits forever.

        Raises
        ------
        WorkloadError
            On a silent driver (``no interval for N s``) or a line that does not parse.
        """
        while not self._stdout_done:
            try:
                item = self._lines.get(timeout=timeout_s)
            except queue.Empty:
                raise WorkloadError(
                    f"no interval for {timeout_s:g} s from {self._name} (it printed nothing)",
                    where=" ".join(self.argv[:2]),
                    fix=f"see {self._out_path} and {self._err_path}; the server may be stuck"
                    " or the driver hung",
                ) from None
            if item is _EOF:
                self._stdout_done = True
                return
            line, read_ts = item  # type: ignore[misc]
            record = self._parser.feed(line, read_ts)
            if record is not None:
                yield record

    def outcome(self, timeout_s: float | None = None) -> WorkloadOutcome:
        """How the driver ended; call after :meth:`intervals` ended.

        Waits for the driver to exit (``timeout_s``; default: the stop grace period), then
        reads any stdout the iterator did not consume so the summary is not lost.
        """
        assert self._proc is not None
        wait = self._grace_s if timeout_s is None else timeout_s
        try:
            code: int | None = self._proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            code = None
        for t in self._threads:
            t.join(timeout=5)
        while not self._stdout_done:
            try:
                item = self._lines.get_nowait()
            except queue.Empty:
                break
            if item is _EOF:
                self._stdout_done = True
                break
            line, read_ts = item  # type: ignore[misc]
            with contextlib.suppress(WorkloadError):
                self._parser.feed(line, read_ts)
        stderr_tail = _tail(list(self._stderr_tail))
        if not stderr_tail.strip() and code != 0:
            # Some drivers (sysbench) print their FATAL errors on stdout: keep that instead.
            stderr_tail = "(stderr was empty; last stdout lines)\n" + _tail(list(self._stdout_tail))
        return WorkloadOutcome(
            exit_code=code,
            summary=self._parser.summary(),
            stderr_tail=stderr_tail,
            interrupted=self._stopped.is_set() or self._parser.interrupted(),
            notes=self._parser.notes(),
        )


class Workload(abc.ABC):
    """A workload driver behind the common interface, declaring everything it needs.

    Preflight, planning, doctor, the run loop and the report ask the adapter, never a table
    of their own: a new driver is one module in this package.
    """

    #: The driver name as written in experiment files (``workload.driver``).
    name: ClassVar[str] = ""
    #: The dataset it runs on and can load (``dataset.workload``).
    dataset_kind: ClassVar[Literal["tpcc", "sysbench"]] = "tpcc"
    #: The database its dataset lives in.
    database: ClassVar[str] = "tpcc"
    #: What the loader writes, when it changes (a new schema): part of the dataset key, so a
    #: snapshot loaded by an older loader is never reused.
    dataset_format: ClassVar[str] = ""
    #: Whether the driver prints intervals during its warmup (tpcc_start prints none).
    reports_warmup: ClassVar[bool] = True
    #: Executable names a user may point at in ``workload.binaries``.
    binary_names: ClassVar[tuple[str, ...]] = ()
    #: The primary throughput figure (as the driver table, core/experiment/drivers.py, has it).
    metric: ClassVar[Metric] = NOTPM

    def __init__(self, binaries: Mapping[str, str] | None = None) -> None:
        self.binaries = dict(binaries or {})

    def failure(self, outcome: WorkloadOutcome) -> str | None:
        """Why a finished run failed (``exited with code 2``), or None when it did not.

        Drivers that exit 0 after failing (tpcc_start when no connection succeeds) override it.
        """
        return None if outcome.exit_code == 0 else f"exited with code {outcome.exit_code}"

    @abc.abstractmethod
    def found_binaries(self) -> list[Path]:
        """The executables this adapter will run, where they were found (for ``doctor``)."""

    @classmethod
    @abc.abstractmethod
    def dataset_bytes(cls, dataset: DatasetSpec) -> int:
        """Estimated on-disk size of ``dataset`` once loaded (planning, disk checks)."""

    @classmethod
    @abc.abstractmethod
    def load_seconds(cls, dataset: DatasetSpec) -> float:
        """Estimated time to load ``dataset`` with this driver's loader (planning)."""

    @classmethod
    def workload_seconds(cls, spec: WorkloadSpec) -> float:
        """How long the driver runs (planning): warmup + duration, plus any slack it asks for."""
        return spec.warmup + spec.duration

    @abc.abstractmethod
    def problems(self) -> list[str]:
        """Preflight: what is missing to run this driver; each message says how to fix it."""

    def load_problems(self) -> list[str]:
        """Preflight for :meth:`load` (a driver may need more to load than to run)."""
        return self.problems()

    @classmethod
    def connection_limit(cls) -> tuple[int | None, str]:
        """The most connections the driver opens on this host (None: no bound of its own) and
        the sentence saying why; preflight refuses a cell asking for more."""
        return None, ""

    def setting_problems(self, spec: WorkloadSpec) -> list[str]:
        """Preflight of the experiment's ``workload:`` settings against the binary itself
        (asked once :meth:`problems` found nothing): what the driver, as built, cannot run."""
        return []

    @abc.abstractmethod
    def load(self, conn: ConnectionInfo, dataset: DatasetSpec, log_path: Path) -> None:
        """Create the database and load ``dataset`` into it (output to the evidence files).

        Raises
        ------
        WorkloadError
            When the loader fails (the message carries its stderr tail).
        """

    @abc.abstractmethod
    def run(
        self,
        conn: ConnectionInfo,
        spec: WorkloadSpec,
        connections: int,
        dataset: DatasetSpec,
        log_path: Path,
    ) -> RunningWorkload:
        """Prepare the driver run; enter the returned context manager to start it."""


def find_binary(explicit: str | os.PathLike[str] | None, name: str) -> Path | None:
    """An explicit path if given (even if missing, so the error names it), else PATH lookup."""
    import shutil

    if explicit:
        return Path(explicit)
    found = shutil.which(name)
    return Path(found) if found else None


#: An identity probe (``sysbench --version``, ``tpcc_start -?``) answers at once; a binary
#: silent for this long is not the driver.
IDENTIFY_TIMEOUT_S = 10
#: What each identity probe said, per (path, size, mtime, arguments): validation, preflight
#: and doctor ask about the same binaries, and a hostile one costs its timeout only once.
_IDENTITY_CACHE: dict[tuple[str, int, int, tuple[str, ...]], str] = {}


def binary_problem(path: Path | None, name: str, fix: str,
                   identify: tuple[Sequence[str], bytes] | None = None) -> list[str]:
    """A preflight message when ``path`` is absent, not executable or not ``name``, else nothing.

    ``identify`` is (arguments, marker): run with those arguments, the program must print the
    marker (``sysbench --version`` prints ``sysbench``), so ``/bin/sh`` named as a driver in
    ``workload.binaries`` is refused before a run instead of failing (or hanging) in it. The
    probe runs through :func:`runner.proc.run_checked` (its own process group, killed as a
    group after :data:`IDENTIFY_TIMEOUT_S`, output bounded); its answer is kept per binary.
    """
    if path is None:
        return [f"{name} not found on PATH — {fix}"]
    if not path.is_file():
        return [f"{name} not found at {path} — {fix}"]
    if not os.access(path, os.X_OK):
        return [f"{name}: {path} is not executable — chmod +x {path}"]
    if identify is None:
        return []
    args, marker = identify
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, tuple(args))
    if key not in _IDENTITY_CACHE:
        _IDENTITY_CACHE[key] = _identity_problem(path, name, fix, args, marker)
    problem = _IDENTITY_CACHE[key]
    return [problem] if problem else []


def _identity_problem(path: Path, name: str, fix: str, args: Sequence[str],
                      marker: bytes) -> str:
    """Run ``path args``: the sentence saying it is not ``name``, or "" if it prints ``marker``."""
    shown = " ".join([str(path), *args])
    try:
        answer = proc.run_checked([path, *args], timeout=IDENTIFY_TIMEOUT_S, text=False)
    except OSError as exc:
        return f"{path} is not {name}: it cannot be run ({exc.strerror}) — {fix}"
    except subprocess.TimeoutExpired:
        return (f"{path} is not {name}: `{shown}` did not answer within {IDENTIFY_TIMEOUT_S} s"
                f" (killed) — {fix}")
    if marker not in answer.stdout + answer.stderr:
        return (f"{path} is not {name}: `{shown}` does not print"
                f" `{marker.decode(errors='replace')}` — {fix}")
    return ""


def create_database(conn: ConnectionInfo, database: str, *, drop: bool = False) -> None:
    """``CREATE DATABASE IF NOT EXISTS database`` (``DROP`` it first when ``drop``).

    Raises
    ------
    WorkloadError
        When the server cannot be reached or refuses.
    """
    import pymysql

    if "`" in database:
        raise WorkloadError(f"database name {database!r} contains a backquote", fix="rename it")
    kwargs = conn.with_database(None).pymysql_kwargs()
    try:
        link = pymysql.connect(connect_timeout=10, **kwargs)
        try:
            with link.cursor() as cur:
                if drop:
                    cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        finally:
            link.close()
    except pymysql.MySQLError as exc:
        raise WorkloadError(
            f"cannot create database {database}: {exc}",
            where=str(conn.socket) if conn.socket else f"{conn.host}:{conn.port}",
            fix="is the server running and the account allowed to create databases?",
        ) from None
