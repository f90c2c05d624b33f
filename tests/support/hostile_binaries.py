"""Hostile shell scripts standing in for binaries a user names, and a guard to run commands on them.

The scripts misbehave the ways a wrong binary can: never end, leave a background child holding
stdout, close their output and run on, leave their process group, print without end or print
garbage. :func:`guarded` runs a command under a 30 s bound with its output in a file (so the
guard itself waits on no pipe a child holds); :func:`left_alive` says which processes the
scripts started are still running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

#: No command of this kind may run longer than this against a hostile binary.
GUARD_S = 30
FLUSHBENCH = str(Path(sys.executable).with_name("flushbench"))

#: Hostile "binaries": the shell body after ``#!/bin/sh``. ``$PIDS`` collects the pid of
#: every process a script leaves behind, so a test can check none survived.
SCRIPTS = {
    "sleeps": "sleep 1000 &\necho $! >> \"$PIDS\"\nwait\n",
    "forks-holding-stdout": "(sleep 1000) &\necho $! >> \"$PIDS\"\necho answered\n",
    "closes-output-and-runs-on": "exec >&- 2>&-\necho $$ >> \"$PIDS\"\nexec sleep 1000\n",
    "leaves-its-group": "setsid sleep 1000 &\necho $! >> \"$PIDS\"\necho answered\n",
    "prints-without-end": "exec yes garbage\n",
    "prints-garbage": "head -c 200000 /dev/urandom\necho\n",
}


def hostile(folder: Path, kind: str, name: str | None = None, *, prefix: str = "") -> Path:
    """Write the hostile script ``kind`` as ``folder/name`` (default: the kind), executable.

    ``prefix`` is shell run first (e.g. answering ``--version`` like a real server).
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or kind)
    pids = folder / "pids"
    body = SCRIPTS[kind].replace('"$PIDS"', f"'{pids}'")
    path.write_text(f"#!/bin/sh\n{prefix}{body}")
    path.chmod(0o755)
    return path


def _alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return fields[0] not in ("Z", "X")  # a zombie has ended; its reaper is not ours


def left_alive(folder: Path, *, escaped_ok: bool = False) -> list[int]:
    """Pids the hostile scripts in ``folder`` recorded that still run (escaped ones killed)."""
    pids_file = folder / "pids"
    pids = [int(x) for x in pids_file.read_text().split()] if pids_file.exists() else []
    alive = [pid for pid in pids if _alive(pid)]
    if escaped_ok:
        for pid in alive:  # left its process group on purpose: nothing can kill it but us
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return []
    return alive


def guarded(argv: list[str], log: Path, *, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> tuple[int, str]:
    """Run ``argv`` under the :data:`GUARD_S` guard: (exit code, stdout and stderr).

    The output goes to ``log``, not a pipe, so the guard waits on nothing a child holds; the
    command's process group is killed afterwards either way.
    """
    with open(log, "wb") as out:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 env={**os.environ, **(env or {})}, cwd=cwd)
        try:
            code = child.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    text = log.read_text(errors="replace")
    if code is None:
        pytest.fail(f"{argv[:3]} still running after {GUARD_S} s:\n{text[-3000:]}")
    return code, text
