"""The host controls of one run, entered together around mysqld's life.

A run may emulate a storage class (an I/O throttle group on the datadir's device) and pin
mysqld and the driver to CPUs. :class:`RunHostControls` enters what the cell asks for, wraps
the two command lines so the controls apply from their first instruction, reads the throttle's
own counters for the proof, and leaves everything behind it (the group is removed after mysqld
exited; a SIGKILLed flushbench's group is removed by :func:`runner.host.cgroups.reap_stale_groups`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.cpu_list import parse_cpu_list
from core.errors import PreflightError
from core.experiment.storage import StorageSpec
from runner.host.cgroups import ThrottleGroup, find_hierarchy
from runner.host.cpus import CpuPin
from runner.host.devices import resolve_device
from runner.host.proof import IoCounters, Verdict, judge


class RunHostControls(contextlib.AbstractContextManager["RunHostControls"]):
    """Storage throttle and CPU pinning for one run (each only when asked for).

    Parameters
    ----------
    storage:
        The cell's storage limits (``StorageSpec`` as a dict), or None for the machine's disk.
    datadir:
        Where mysqld's data lives (its block device is throttled).
    mysqld_cpus, driver_cpus:
        CPU lists (``0``, ``0-1``), or None for no pinning.
    cpu_method:
        ``affinity`` or ``cpuset``.
    """

    def __init__(self, storage: Mapping[str, Any] | None, datadir: Path, *,
                 mysqld_cpus: str | None = None, driver_cpus: str | None = None,
                 cpu_method: str = "affinity") -> None:
        self.spec = StorageSpec.model_validate(dict(storage)) if storage else None
        self.datadir = datadir
        self.throttle: ThrottleGroup | None = None
        self._pins = {"mysqld": mysqld_cpus, "driver": driver_cpus}
        self.pins: dict[str, CpuPin] = {}
        self._method = cpu_method
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> RunHostControls:
        try:
            if self.spec is not None and self.spec.limited:
                hierarchy = find_hierarchy("io")
                resolution = resolve_device(self.datadir)
                if hierarchy is None or resolution.device is None:
                    raise PreflightError(
                        "cannot throttle the datadir's I/O here: "
                        + (resolution.reason or "no cgroup I/O controller is mounted"),
                        str(self.datadir),
                        "run `flushbench doctor`; drop the storage knob on this host",
                    )
                self.throttle = self._stack.enter_context(
                    ThrottleGroup(hierarchy, resolution.device, self.spec))
            for who, cpus in self._pins.items():
                if cpus is not None:
                    self.pins[who] = self._stack.enter_context(
                        CpuPin(parse_cpu_list(cpus), self._method))  # type: ignore[arg-type]
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def wrap_mysqld(self, argv: Sequence[str]) -> list[str]:
        """mysqld's command line, placed in the throttle group and pinned before it execs."""
        out = list(argv)
        if "mysqld" in self.pins:
            out = self.pins["mysqld"].wrap(out)
        if self.throttle is not None:
            out = self.throttle.wrap(out)
        return out

    def wrap_driver(self, argv: Sequence[str]) -> list[str]:
        """The driver's command line, pinned (never throttled: it is the client)."""
        return self.pins["driver"].wrap(argv) if "driver" in self.pins else list(argv)

    def counters(self) -> IoCounters | None:
        """The throttle group's own I/O counters for the device (None: no throttle)."""
        return self.throttle.counters() if self.throttle is not None else None

    def judge(self, before: IoCounters, after: IoCounters, seconds: float) -> Verdict | None:
        """Whether the limits held over a measured window (None: nothing to judge)."""
        if self.spec is None or self.throttle is None:
            return None
        return judge(self.spec, before, after, seconds)

    def record(self, mysqld_pid: int | None = None, driver_pid: int | None = None
               ) -> dict[str, Any]:
        """What the run keeps: the limits asked for and in force, the CPUs and what the kernel
        shows for each pinned process."""
        out: dict[str, Any] = {}
        if self.spec is not None:
            out.update(self.spec.as_record())
        if self.throttle is not None:
            out.update({f"throttle_{k}": v for k, v in self.throttle.record().items()})
        for who, pid in (("mysqld", mysqld_pid), ("driver", driver_pid)):
            if who in self.pins:
                out.update({f"{who}_{k}": v for k, v in self.pins[who].record(pid).items()})
        return out
