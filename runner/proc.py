"""Child processes that are always reaped: started in a context manager, killed on any exit.

Process control is kept apart from data handling (pyperf's ``_manager`` vs ``_bench``): the code
that reads a driver's output never decides how the driver is stopped.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def terminate(proc: subprocess.Popen, grace_s: float = 10.0) -> int | None:
    """SIGTERM the child's process group, wait ``grace_s``, then SIGKILL; return the exit code.

    A child that has already exited may have left processes in its group (a script's
    background job holding its output pipe): they are SIGKILLed, so no reader waits on them.
    While any of them lives, the group id cannot be given to another process.
    """
    if proc.returncode is not None or _has_exited(proc.pid):
        _kill_group(proc, signal.SIGKILL)
        return proc.wait()
    _kill_group(proc, signal.SIGTERM)
    try:
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        return proc.wait(timeout=30)


@contextlib.contextmanager
def child(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
    stdout_path: Path | None = None,
    stderr_path: Path | None = None,
    text: bool = True,
    grace_s: float = 10.0,
) -> Iterator[subprocess.Popen]:
    """Start ``argv`` in its own process group; on leaving the block, stop and reap it.

    The child gets its own session so a Ctrl-C at the terminal reaches flushbench first and
    flushbench decides how to stop it. Whatever happens in the block (an exception, a
    KeyboardInterrupt), the child is terminated (SIGTERM, then SIGKILL after ``grace_s``)
    and waited for, so no zombie or orphan survives a run.
    """
    files: list = []
    try:
        if stdout_path is not None:
            files.append(open(stdout_path, "ab"))  # noqa: SIM115 - closed in finally
            stdout = files[-1]
        if stderr_path is not None:
            files.append(open(stderr_path, "ab"))  # noqa: SIM115
            stderr = files[-1]
        proc = subprocess.Popen(
            [str(a) for a in argv],
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            text=text,
            start_new_session=True,
        )
    except BaseException:
        for f in files:
            f.close()
        raise
    try:
        yield proc
    finally:
        try:
            terminate(proc, grace_s)
        finally:
            close_pipes(proc)
            for f in files:
                f.close()


#: How long :func:`close_pipes` waits for a reader thread to let go of a child's pipe.
CLOSE_WAIT_S = 5.0


def _close_quietly(stream: IO) -> None:
    with contextlib.suppress(Exception):
        stream.close()


def close_pipes(proc: subprocess.Popen) -> None:
    """Close the child's stdout and stderr pipes, waiting at most :data:`CLOSE_WAIT_S`.

    A thread reading a buffered pipe holds its lock until the read returns, and it does not
    return while a process that left the child's group (``setsid``) keeps the other end open:
    a plain ``close()`` would wait for that process. The closes run in daemon threads instead;
    one that cannot finish in time completes whenever that process lets go.
    """
    closers = [threading.Thread(target=_close_quietly, args=(stream,), daemon=True,
                                name=f"close-pipe-{proc.pid}")
               for stream in (proc.stdout, proc.stderr) if stream is not None]
    for closer in closers:
        closer.start()
    deadline = time.monotonic() + CLOSE_WAIT_S
    for closer in closers:
        closer.join(max(0.0, deadline - time.monotonic()))


#: How much of each stream :func:`run_checked` keeps: ``mysqld --verbose --help`` prints about
#: 200 KB; a binary that prints without end must not fill memory while its timeout runs.
OUTPUT_LIMIT = 16 * 1024 * 1024
#: How long :func:`run_checked` waits, once the command has exited, for a process it left
#: behind to close the output it inherited before that process is killed.
PIPE_GRACE_S = 2.0


def _has_exited(pid: int) -> bool:
    """Whether the child ``pid`` has exited, without reaping it.

    An unreaped child keeps its pid, and so its process group id, from being reused: the
    group can still be signalled safely after this says True.
    """
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _collect(popen: subprocess.Popen, timeout: float) -> tuple[bytes, bytes, bool]:
    """Read the child's stdout and stderr until both close and it exits, or a bound is reached.

    Returns (stdout, stderr, timed_out): ``timed_out`` is true when ``timeout`` passed before
    the child exited. Reading also stops when the child has exited but something it started
    still holds a pipe after :data:`PIPE_GRACE_S`, and when a stream passes
    :data:`OUTPUT_LIMIT`; the caller kills the process group in every case.
    """
    assert popen.stdout is not None and popen.stderr is not None
    chunks = {popen.stdout.fileno(): bytearray(), popen.stderr.fileno(): bytearray()}
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    overflow = False
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and not overflow:
            now = time.monotonic()
            if exited_at is None and _has_exited(popen.pid):
                exited_at = now
            until = deadline if exited_at is None else min(deadline, exited_at + PIPE_GRACE_S)
            if now >= until:
                break
            # Short waits: the child's exit is noticed even while a grandchild holds a pipe.
            for key, _ in selector.select(timeout=min(until - now, 0.1)):
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fd)
                kept = chunks[key.fd]
                kept += data[: OUTPUT_LIMIT - len(kept)]
                overflow = overflow or len(kept) >= OUTPUT_LIMIT
    # Both pipes closed: the kernel closes an exiting process's files before it becomes a
    # zombie, so the exit itself may still be on its way (or the child closed them and runs on).
    while exited_at is None and not overflow and time.monotonic() < deadline:
        if _has_exited(popen.pid):
            exited_at = time.monotonic()
        else:
            time.sleep(0.01)
    timed_out = exited_at is None and not overflow and not _has_exited(popen.pid)
    return bytes(chunks[popen.stdout.fileno()]), bytes(chunks[popen.stderr.fileno()]), timed_out


#: The monotonic time by which every probe in the current :func:`probe_deadline` block must end.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("probe_deadline",
                                                                        default=None)


class DeadlinePassed(subprocess.TimeoutExpired):
    """A probe cut short, or not started, because its :func:`probe_deadline` had passed."""


@contextlib.contextmanager
def probe_deadline(seconds: float) -> Iterator[None]:
    """One time bound for every :func:`run_checked` probe inside the block, together.

    A binary whose every probe takes a little less than the probe's own timeout would
    otherwise keep a command waiting for the sum: within the block each probe's timeout is
    cut to what is left, and a probe asked for after the deadline raises
    :class:`DeadlinePassed` at once. Nested blocks keep the earlier deadline.
    """
    end = time.monotonic() + seconds
    current = _DEADLINE.get()
    token = _DEADLINE.set(end if current is None else min(current, end))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left(timeout: float) -> float:
    """``timeout``, cut to what is left of the current :func:`probe_deadline` (never below 0)."""
    end = _DEADLINE.get()
    return timeout if end is None else max(0.0, min(timeout, end - time.monotonic()))


def deadline_passed() -> bool:
    """Whether the current :func:`probe_deadline` has passed (False outside one)."""
    end = _DEADLINE.get()
    return end is not None and time.monotonic() >= end


def run_checked(
    argv: Sequence[str | os.PathLike[str]],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """Run a short command (a probe of a binary the user named) with bounded time and output.

    The command runs in its own process group, with stdin closed. When it has not exited
    after ``timeout`` seconds, or has exited but left a process holding its output open for
    :data:`PIPE_GRACE_S`, or prints more than :data:`OUTPUT_LIMIT` bytes on one stream, the
    whole group is SIGKILLed and no pipe is waited for. Whatever it left in its group is killed
    when it ends, too, so a probe leaves no process behind. ``text`` decodes the output as
    UTF-8 (undecodable bytes replaced); otherwise stdout and stderr are bytes.

    Raises
    ------
    subprocess.TimeoutExpired
        The command had not exited after ``timeout`` seconds (it is killed and reaped; the
        exception's ``stdout``/``stderr`` hold what it printed); :class:`DeadlinePassed`
        when the enclosing :func:`probe_deadline` cut it short or had already passed.
    OSError
        The command cannot be started (missing, not executable, not a binary).
    """
    args = [str(a) for a in argv]
    limit = time_left(timeout)
    if limit <= 0:
        raise DeadlinePassed(args, 0)
    popen = subprocess.Popen(args, env=dict(env) if env is not None else None, cwd=cwd,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err, timed_out = _collect(popen, limit)
    finally:
        # The leader is not reaped yet, so its group id still names this group only.
        _kill_group(popen, signal.SIGKILL)
        for stream in (popen.stdout, popen.stderr):
            if stream is not None:
                stream.close()
        returncode = popen.wait()
    if text:
        out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    if timed_out:
        kind = DeadlinePassed if limit < timeout else subprocess.TimeoutExpired
        raise kind(args, limit, output=out, stderr=err)
    return subprocess.CompletedProcess(args, returncode, out, err)


def is_root() -> bool:
    """Whether flushbench runs as root (mysqld then needs ``--user``; host controls work)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0
