"""Facts about the machine a run ran on (the checked metadata of comparisons), and about the
flushbench code that recorded it."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

import psutil

from core.paths import REPO_ROOT
from core.version import VERSION

#: The parts of the checkout whose changes change what a run measures or records (the docs'
#: and tests' do not): a run says "modified" only when one of these differs from its commit.
CODE_PATHS = ("core", "flushbench", "runner", "store", "analysis", "tpcc", "configs", "scripts")


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or the platform's guess)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mount_of(path: Path) -> tuple[str, str]:
    """(device, fstype) of the filesystem holding ``path`` (the longest matching mount point)."""
    path = path.resolve()
    best: tuple[int, str, str] = (-1, "unknown", "unknown")
    for part in psutil.disk_partitions(all=True):
        mount = Path(part.mountpoint)
        if path == mount or mount in path.parents:
            depth = len(mount.parts)
            if depth > best[0]:
                best = (depth, part.device, part.fstype)
    return best[1], best[2]


def host_facts(datadir: Path) -> dict[str, Any]:
    """Host, kernel, CPU, memory and datadir filesystem, keyed as ``run_metadata`` columns."""
    device, fstype = mount_of(datadir)
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count() or 0,
        "mem_total_bytes": psutil.virtual_memory().total,
        "datadir_device": device,
        "datadir_fstype": fstype,
    }


@functools.cache
def code_version() -> dict[str, Any]:
    """Which flushbench recorded the run: ``{"version", "commit", "modified"}``.

    ``commit`` is the checkout's HEAD and ``modified`` whether its code (:data:`CODE_PATHS`)
    differs from it; both None when flushbench does not run from a git checkout or git cannot
    read it. Read once per process: the code a worker runs is the code it loaded, and a checkout
    moved under a live worker (which ``scripts/pinned.sh`` exists to avoid) would otherwise be
    recorded as code that never ran.
    """
    commit = _git("rev-parse", "--verify", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS) \
        if commit else None
    return {"version": VERSION, "commit": commit,
            "modified": None if status is None else bool(status)}


def _git(*args: str) -> str | None:
    """A git command's output in the checkout, or None when git is missing or refuses."""
    try:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
