"""What this host is, read once per check run: memory, huge pages, free disk, capabilities.

:class:`HostFacts` reads each fact the first time a check asks and keeps it, so preflight and
``flushbench doctor`` probe the host once however many checks read the same figure (the I/O
throttle probe creates a real cgroup: not something to do twice).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from runner.host.capabilities import Capability, can_pin_cpus, can_set_thp, can_throttle

#: Huge-page and memory figures come from here (tests point it at a recorded copy).
MEMINFO = Path("/proc/meminfo")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def human_size(n_bytes: float) -> str:
    """``1.3G``-style size for estimates (format_size is exact and would print raw bytes)."""
    n = float(n_bytes)
    for unit, factor in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= factor:
            return f"{n / factor:.1f}{unit}".replace(".0" + unit, unit)
    return f"{int(n)}B"


def read_meminfo(path: Path | None = None) -> dict[str, int]:
    """``/proc/meminfo`` as name → number (kB figures stay in kB, page counts as counts)."""
    out: dict[str, int] = {}
    try:
        text = (path or MEMINFO).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[name.strip()] = int(parts[0])
    return out


def existing_parent(directory: Path) -> Path:
    """``directory``, or its nearest ancestor that exists (what a new folder would live on)."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def free_disk(directory: Path) -> int | None:
    """Free bytes on the filesystem that holds (or would hold) ``directory``."""
    try:
        return shutil.disk_usage(existing_parent(directory)).free
    except OSError:
        return None


def writable(directory: Path) -> bool:
    """Whether this user can create ``directory`` (or write into it when it exists)."""
    return os.access(existing_parent(directory), os.W_OK)


@dataclass
class HostFacts:
    """The host as the checks see it; every fact is read on first use and kept."""

    work_dir: Path
    #: Facts already read, by name (``meminfo``, ``disk_free``, ``drop_caches``, ``thp``,
    #: ``throttle``, ``pinning METHOD``). A caller that knows one may state it here.
    known: dict[str, object] = field(default_factory=dict, repr=False)

    def _once(self, key: str, read):  # noqa: ANN001, ANN202 - a private memo helper
        if key not in self.known:
            self.known[key] = read()
        return self.known[key]

    @property
    def meminfo(self) -> dict[str, int]:
        """``/proc/meminfo`` (:data:`MEMINFO`) as name → number."""
        return self._once("meminfo", read_meminfo)

    @property
    def disk_free(self) -> int | None:
        """Free bytes where the work directory is (or would be)."""
        return self._once("disk_free", lambda: free_disk(self.work_dir))

    @property
    def can_drop_caches(self) -> bool:
        """Whether :data:`DROP_CACHES` is writable (``pre_run.drop_caches`` needs it)."""
        return self._once("drop_caches", lambda: os.access(DROP_CACHES, os.W_OK))

    @property
    def thp(self) -> Capability:
        """Whether transparent huge pages can be set per run."""
        return self._once("thp", lambda: can_set_thp())

    @property
    def throttle(self) -> Capability:
        """Whether the work directory's device can be throttled (a real probe group)."""
        return self._once("throttle", lambda: can_throttle(self.work_dir))

    def pinning(self, method: str) -> Capability:
        """Whether processes can be pinned to CPUs with ``method``."""
        return self._once(f"pinning {method}", lambda: can_pin_cpus(method))
