"""Servers a killed test session left behind.

A pytest killed with SIGKILL (a CI timeout, a Ctrl-C twice) cannot stop the mysqld sandboxes
and PostgreSQL clusters its fixtures started: they are re-parented to init and keep their
memory, ports and sockets. The next session removes them before it starts its own.

Only servers of sessions that are gone: pytest keeps ``<root>/pytest-N/.lock`` (its pid) while
session N runs, so a session running beside this one (a second terminal, another checkout)
keeps the servers it orphaned on purpose — test_farm SIGKILLs a worker and expects its mysqld
to live on until the next worker of that host reaps it.
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import psutil

#: Server programs the fixtures start.
SERVER_NAMES = frozenset({"mysqld", "mariadbd", "postgres"})


def pytest_temp_root() -> Path:
    """Where pytest keeps its temporary directories for this user."""
    user = psutil.Process().username()
    return Path(tempfile.gettempdir()) / f"pytest-of-{user}"


def _session_alive(session_dir: Path) -> bool:
    """Whether the pytest session that made ``session_dir`` (``pytest-N``) still runs."""
    try:
        pid = int((session_dir / ".lock").read_text().strip())
    except (OSError, ValueError):
        return False  # no lock: the session ended (or never locked it)
    return psutil.pid_exists(pid)


def _session_dirs(args: list[str], root: Path) -> set[Path]:
    """The ``root/<session>`` directories the arguments name a path under."""
    prefix = f"{root}/"
    found = set()
    for arg in args:
        at = arg.find(prefix)
        if at >= 0:
            found.add(root / arg[at + len(prefix):].split("/", 1)[0])
    return found


def orphaned_test_servers(root: Path | None = None) -> list[psutil.Process]:
    """Server processes whose parent is gone (re-parented to pid 1), whose command line names a
    path under pytest's temporary root, and whose session is gone: only what a dead test
    session left."""
    root = root or pytest_temp_root()
    found = []
    for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline"]):
        info = proc.info
        if info["name"] not in SERVER_NAMES or info["ppid"] != 1:
            continue
        sessions = _session_dirs(info["cmdline"] or [], root)
        if sessions and not any(_session_alive(s) for s in sessions):
            found.append(proc)
    return found


def kill_orphaned_test_servers(root: Path | None = None) -> list[int]:
    """SIGKILL :func:`orphaned_test_servers` and wait for them; return their pids."""
    procs = orphaned_test_servers(root)
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    psutil.wait_procs(procs, timeout=10)
    return [p.pid for p in procs]
