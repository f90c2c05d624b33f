"""Child processes that are always reaped: started in a context manager, killed on any exit.

Process control is kept apart from data handling (pyperf's ``_manager`` vs ``_bench``): the code
that reads a driver's output never decides how the driver is stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def terminate(proc: subprocess.Popen, grace_s: float = 10.0) -> int | None:
    """SIGTERM the child's process group, wait ``grace_s``, then SIGKILL; return the exit code."""
    if proc.poll() is not None:
        return proc.returncode
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
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        stream.close()
            for f in files:
                f.close()


def run_checked(
    argv: Sequence[str | os.PathLike[str]],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short command to completion with a timeout (killed and reaped on timeout)."""
    return subprocess.run(
        [str(a) for a in argv],
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def is_root() -> bool:
    """Whether flushbench runs as root (mysqld then needs ``--user``; host controls work)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0
