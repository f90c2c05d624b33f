"""CPU placement: pin mysqld (or the driver) to chosen CPUs, so they do not share by chance.

Two methods:

``affinity`` (default)
    The child is started through ``taskset --cpu-list LIST`` (util-linux), which calls
    ``sched_setaffinity`` on itself and execs the program: every thread mysqld creates inherits
    the mask. Needs no privilege; the program could widen its own mask again (mysqld does not).
``cpuset``
    The child joins a cgroup cpuset (root only): the kernel enforces the CPUs for the group and
    no thread can escape it.

Both are applied before the program execs (an argv wrapper, see
:mod:`runner.host.cgroups`), so no thread ever runs elsewhere. What a run records: the CPU list
asked for, the method, and the ``Cpus_allowed_list`` the kernel reports for the process.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from core.cpu_list import format_cpu_list, parse_cpu_list
from core.errors import ConfigError, PreflightError
from runner.host.cgroups import CgroupGroup, Hierarchy, find_hierarchy, write_cgroup_file

PinMethod = Literal["affinity", "cpuset"]


def online_cpus() -> frozenset[int]:
    """CPUs the kernel has online (``/sys/devices/system/cpu/online``)."""
    return parse_cpu_list(Path("/sys/devices/system/cpu/online").read_text())


def validate_cpus(value: str | int, where: str = "cpus") -> frozenset[int]:
    """Parse ``value`` and check every CPU is online and allowed to this process.

    Raises
    ------
    ConfigError
        If the list is malformed or names a CPU that is offline or outside flushbench's own
        allowed set (a container's cpuset), with the CPUs that can be used.
    """
    try:
        cpus = parse_cpu_list(value)
    except ValueError as exc:
        raise ConfigError(str(exc), where, "write CPUs as the kernel does: 0, 0-1 or 1,3") from None
    usable = online_cpus() & frozenset(os.sched_getaffinity(0))
    missing = cpus - usable
    if missing:
        raise ConfigError(
            f"CPU {format_cpu_list(missing)} is not online or not allowed to flushbench",
            where,
            f"this host can use CPUs {format_cpu_list(usable)}",
        )
    return cpus


def cpus_allowed(pid: int) -> frozenset[int]:
    """The CPUs the kernel lets ``pid`` run on (``Cpus_allowed_list`` of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return parse_cpu_list(line.split(":", 1)[1])
    raise ValueError(f"/proc/{pid}/status has no Cpus_allowed_list")


def affinity_argv(argv: Sequence[str | os.PathLike[str]], cpus: Iterable[int]) -> list[str]:
    """``argv`` started through ``taskset --cpu-list`` so it and all its threads use ``cpus``.

    Raises
    ------
    PreflightError
        If ``taskset`` is not installed.
    """
    taskset = shutil.which("taskset")
    if taskset is None:
        raise PreflightError("taskset not found", "PATH", "apt-get install util-linux")
    return [taskset, "--cpu-list", format_cpu_list(cpus), *[str(a) for a in argv]]


class CpusetGroup(CgroupGroup):
    """A cpuset cgroup limited to ``cpus`` (memory nodes copied from the parent)."""

    def __init__(self, hierarchy: Hierarchy, cpus: Iterable[int],
                 owner_pid: int | None = None) -> None:
        if hierarchy.controller != "cpuset":
            raise ValueError(f"{hierarchy.describe()} is not a cpuset hierarchy")
        super().__init__(hierarchy, owner_pid)
        self.cpus = frozenset(cpus)

    def _configure(self) -> None:
        mems_file = "cpuset.mems.effective" if self.hierarchy.version == 2 else "cpuset.mems"
        mems = (self.hierarchy.parent / mems_file).read_text().strip() or "0"
        try:
            write_cgroup_file(self.path / "cpuset.cpus", format_cpu_list(self.cpus))
            write_cgroup_file(self.path / "cpuset.mems", mems)
        except OSError as exc:
            raise PreflightError(
                f"the kernel refused cpuset {format_cpu_list(self.cpus)}: {exc.strerror}",
                str(self.path),
                "pick CPUs from the host's online list",
            ) from None


class CpuPin:
    """Pin started processes to ``cpus``; a context manager (the cpuset method owns a group).

    Usage::

        with CpuPin(cpus, "affinity") as pin:
            with child(pin.wrap(argv)) as proc:
                record = pin.record(proc.pid)
    """

    def __init__(self, cpus: Iterable[int], method: PinMethod = "affinity") -> None:
        self.cpus = frozenset(cpus)
        if not self.cpus:
            raise ValueError("no CPUs to pin to")
        self.method = method
        self.group: CpusetGroup | None = None

    def __enter__(self) -> CpuPin:
        if self.method == "cpuset":
            hierarchy = find_hierarchy("cpuset")
            if hierarchy is None:
                raise PreflightError(
                    "no cgroup cpuset controller is mounted",
                    "/proc/self/mountinfo",
                    "use cpu pinning method `affinity`, or mount the cpuset controller",
                )
            self.group = CpusetGroup(hierarchy, self.cpus)
            self.group.create()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.group is not None:
            self.group.remove()
            self.group = None

    def wrap(self, argv: Sequence[str | os.PathLike[str]]) -> list[str]:
        """``argv`` prefixed so the process is placed before it execs."""
        if self.method == "cpuset":
            if self.group is None:
                raise RuntimeError("enter the CpuPin context before wrapping a command")
            return self.group.wrap(argv)
        return affinity_argv(argv, self.cpus)

    def record(self, pid: int | None = None) -> dict[str, str]:
        """What to store with the run: the CPUs asked for, the method, and what the kernel shows.

        ``pid`` is the placed process; its ``Cpus_allowed_list`` is the evidence.
        """
        out = {"cpus_requested": format_cpu_list(self.cpus), "cpu_pin_method": self.method}
        if pid is not None:
            try:
                out["cpus_allowed"] = format_cpu_list(cpus_allowed(pid))
            except OSError:
                out["cpus_allowed"] = "(process ended)"
        return out
