"""What this host can do around one mysqld: throttle its I/O, set THP, pin CPUs.

Each answer is a :class:`Capability` with a one-line reason and, when it is missing, the fix.
The checks of :mod:`runner.admission.checks_host` read them (through
:class:`~runner.host.facts.HostFacts`, once per run of the checks): ``doctor`` prints them,
preflight names the experiment's key that needs a missing one.

The I/O check does not trust appearances: it creates a real throttle group, writes a limit for
the device and reads it back (then removes the group), because only the kernel knows whether it
accepts a device (partitions are refused, for instance).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from core.cpu_list import format_cpu_list
from core.errors import FlushbenchError, PreflightError
from core.experiment.storage import StorageSpec
from runner.host.cgroups import ThrottleGroup, find_hierarchy
from runner.host.cpus import online_cpus
from runner.host.devices import DeviceResolution, resolve_device
from runner.host.thp import THP_DIR, read_thp
from runner.proc import is_root

#: A limit far above any real device: the probe changes nothing for the probing process.
_PROBE_SPEC = StorageSpec(name="probe", write_iops=10_000_000)


@dataclass(frozen=True)
class Capability:
    """Whether the host can do one thing, why (or why not), and how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    where: str | None = None

    def require(self) -> None:
        """Raise :class:`PreflightError` (what / where / fix) unless ``ok``."""
        if not self.ok:
            raise PreflightError(f"{self.name}: {self.detail}", self.where, self.fix)


def can_throttle(directory: Path, probe: bool = True) -> Capability:
    """Can mysqld's I/O to files under ``directory`` be throttled on this host?

    Checks, in order: a cgroup hierarchy with the io (v2) or blkio (v1) controller is mounted;
    flushbench runs as root; ``directory``'s filesystem sits on a block device the throttle
    can name (partition -> its disk, LVM -> the dm device, overlay -> its upper layer; tmpfs and
    network filesystems have none); and, when ``probe``, that the kernel accepts a limit for
    that device in a real throwaway group.
    """
    name = "I/O throttle"
    hierarchy = find_hierarchy("io")
    if hierarchy is None:
        return Capability(name, False, "no cgroup io (v2) or blkio (v1) controller is mounted",
                          "mount cgroup2 with the io controller (or cgroup v1 blkio)",
                          "/proc/self/mountinfo")
    if not is_root():
        return Capability(name, False, f"{hierarchy.describe()} needs root to create groups",
                          "run flushbench as root to use storage profiles", str(hierarchy.root))
    try:
        res: DeviceResolution = resolve_device(Path(directory))
    except OSError as exc:
        return Capability(name, False, f"cannot find the device of {directory}: {exc}",
                          "create the work directory first", str(directory))
    if res.device is None:
        return Capability(name, False, res.describe(),
                          "put FLUSHBENCH_WORK on a disk-backed filesystem (ext4/xfs on a "
                          "block device)", str(directory))
    if probe:
        try:
            with ThrottleGroup(hierarchy, res.device, _PROBE_SPEC):
                pass
        except FlushbenchError as exc:
            return Capability(name, False, exc.what, exc.fix, exc.where)
    how = "; ".join(res.steps)
    return Capability(name, True,
                      f"{res.describe()} via {hierarchy.describe()}" + (f" ({how})" if how else ""),
                      where=str(directory))


def can_set_thp(thp_dir: Path = THP_DIR) -> Capability:
    """Can flushbench set transparent huge pages for a run (present and writable)?"""
    name = "transparent huge pages"
    state = read_thp(thp_dir)
    if state.enabled is None:
        return Capability(name, False, "this kernel has no THP",
                          "drop the `transparent_hugepages` knob from experiments",
                          str(thp_dir))
    if not os.access(thp_dir / "enabled", os.W_OK):
        return Capability(name, False, f"enabled={state.enabled}, not writable by this user",
                          "run flushbench as root to set `transparent_hugepages` per run",
                          str(thp_dir))
    return Capability(name, True, f"enabled={state.enabled} defrag={state.defrag}, writable",
                      where=str(thp_dir))


def can_pin_cpus(method: str = "affinity") -> Capability:
    """Can flushbench pin processes to CPUs with ``method`` (``affinity`` or ``cpuset``)?"""
    name = f"CPU pinning ({method})"
    usable = online_cpus() & frozenset(os.sched_getaffinity(0))
    cpus = format_cpu_list(usable)
    if method == "affinity":
        if shutil.which("taskset") is None:
            return Capability(name, False, "taskset is not installed", "apt-get install util-linux")
        return Capability(name, True, f"taskset available; CPUs {cpus} usable")
    hierarchy = find_hierarchy("cpuset")
    if hierarchy is None:
        return Capability(name, False, "no cgroup cpuset controller is mounted",
                          "use method `affinity`", "/proc/self/mountinfo")
    if not is_root():
        return Capability(name, False, f"{hierarchy.describe()} needs root",
                          "run as root or use method `affinity`", str(hierarchy.root))
    return Capability(name, True, f"{hierarchy.describe()}; CPUs {cpus} usable")


def host_capabilities(work_dir: Path) -> list[Capability]:
    """Every host-control capability, for ``flushbench doctor`` (the I/O probe included)."""
    return [can_throttle(work_dir), can_set_thp(), can_pin_cpus("affinity"),
            can_pin_cpus("cpuset")]
