"""Servers a killed test session left behind.

A pytest killed with SIGKILL (a CI timeout, a Ctrl-C twice) cannot stop the mysqld sandboxes
and PostgreSQL clusters its fixtures started: they are re-parented to init and keep their
memory, ports and sockets. The next session removes them before it starts its own.
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


def orphaned_test_servers(root: Path | None = None) -> list[psutil.Process]:
    """Server processes whose parent is gone (re-parented to pid 1) and whose command line
    names a path under pytest's temporary root: only what a dead test session left."""
    root = root or pytest_temp_root()
    found = []
    for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline"]):
        info = proc.info
        if info["name"] not in SERVER_NAMES or info["ppid"] != 1:
            continue
        if any(str(root) in arg for arg in info["cmdline"] or ()):
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
