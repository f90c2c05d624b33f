"""Facts about the machine a run ran on (the checked metadata of comparisons)."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any

import psutil


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
