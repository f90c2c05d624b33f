"""Per-server cgroups: an I/O throttle group (and a cpuset group) that lives as long as mysqld.

Every group flushbench makes lives under ``<hierarchy>/flushbench/`` and is named
``fb-<owner pid>-<owner start time>-<n>``: the owner is the flushbench process that made it, so
:func:`reap_stale_groups` can tell a group whose owner died (SIGKILL, power cut) from one in
use, even if the pid has since been reused (the start time then differs).

The I/O group uses cgroup v2 ``io.max`` when the host's cgroup2 mount offers the ``io``
controller, else cgroup v1 ``blkio.throttle.{read,write}_{iops,bps}_device`` (this is the case
when ``blkio`` is mounted as a v1 hierarchy, which keeps ``io`` off the v2 tree).

How a process joins a group: :meth:`CgroupGroup.wrap` prefixes the command with a tiny
``/bin/sh`` script that writes its own pid into the group's ``cgroup.procs`` and then ``exec``\\ s
the real program. Why a wrapper and not ``preexec_fn``: Python code between fork and exec is
unsafe when the parent has threads (flushbench's sampler runs in one), the wrapper needs no
change to how :func:`runner.proc.child` starts processes, the pid (and process group) stays the
same because ``exec`` replaces the shell, and the program is in the group before its first
instruction: the reads that load mysqld's binary are already charged to the group.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import PreflightError
from core.experiment.storage import StorageSpec
from runner.host.devices import BlockDevice, parse_mountinfo
from runner.host.proof import IoCounters, parse_io_stat, parse_v1_counters

#: Directory under each hierarchy's root holding flushbench's groups.
PARENT = "flushbench"
_GROUP_RE = re.compile(r"^fb-(\d+)-(\d+)-(\d+)$")
_counter = itertools.count(1)

#: Runs ``exec "$@"`` after writing its pid into every file named before ``--``.
_ENTER_SCRIPT = (
    'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do '
    'printf "%s\\n" "$$" > "$1" || { echo "flushbench: cannot join cgroup $1" >&2; exit 125; }; '
    "shift; done; shift; exec \"$@\""
)
_V1_NAMES = {"io": "blkio", "cpuset": "cpuset"}


@dataclass(frozen=True)
class Hierarchy:
    """One mounted cgroup hierarchy that carries ``controller``.

    Attributes
    ----------
    version:
        1 or 2.
    root:
        Its mount point (``/sys/fs/cgroup/blkio``, ``/sys/fs/cgroup``...).
    controller:
        ``io`` or ``cpuset`` (the v2 names; v1's ``blkio`` is ``io`` here).
    """

    version: int
    root: Path
    controller: str

    @property
    def parent(self) -> Path:
        """``<root>/flushbench``: where flushbench's groups live."""
        return self.root / PARENT

    def describe(self) -> str:
        """``cgroup v1 blkio at /sys/fs/cgroup/blkio``."""
        name = _V1_NAMES[self.controller] if self.version == 1 else self.controller
        return f"cgroup v{self.version} {name} at {self.root}"


def find_hierarchy(controller: str, mountinfo_text: str | None = None) -> Hierarchy | None:
    """The hierarchy to use for ``controller`` (``io`` or ``cpuset``), or None if not mounted.

    cgroup v2 is preferred when its root lists the controller in ``cgroup.controllers``; a
    controller bound to a v1 hierarchy never appears there, so there is no ambiguity.
    """
    if controller not in _V1_NAMES:
        raise ValueError(f"unknown controller {controller!r}")
    if mountinfo_text is None:
        mountinfo_text = Path("/proc/self/mountinfo").read_text()
    v1: Hierarchy | None = None
    for entry in parse_mountinfo(mountinfo_text):
        if entry.fs_type == "cgroup2" and entry.root == "/":
            try:
                available = (Path(entry.mount_point) / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if controller in available:
                return Hierarchy(2, Path(entry.mount_point), controller)
        elif (
            entry.fs_type == "cgroup"
            and entry.root == "/"
            and _V1_NAMES[controller] in entry.super_options
            and v1 is None
        ):
            v1 = Hierarchy(1, Path(entry.mount_point), controller)
    return v1


def write_cgroup_file(path: Path, value: str) -> None:
    """Write ``value`` to a cgroup control file in one ``write()`` call."""
    # One write() per value: cgroup files parse each write as one command.
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def proc_start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot), or None if the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[19])


def _read_pids(group: Path) -> list[int]:
    try:
        return [int(x) for x in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _prepare_parent(h: Hierarchy) -> None:
    """Create ``<root>/flushbench`` and make it able to hold groups of this controller."""
    h.parent.mkdir(exist_ok=True)
    if h.version == 2:
        # A v2 child only gets io.max / cpuset.* once its parent delegates the controller.
        for level in (h.root, h.parent):
            control = level / "cgroup.subtree_control"
            if h.controller not in control.read_text().split():
                write_cgroup_file(control, f"+{h.controller}")
    elif h.controller == "cpuset":
        # A v1 cpuset starts empty and refuses tasks until it has CPUs and memory nodes.
        for name in ("cpuset.cpus", "cpuset.mems"):
            if not (h.parent / name).read_text().strip():
                write_cgroup_file(h.parent / name, (h.root / name).read_text().strip())


class CgroupGroup:
    """One uniquely named cgroup in one hierarchy, removed when the ``with`` block ends.

    Subclasses decide what to write into it (:meth:`_configure`). On leaving the block, any
    process still in the group is moved to the hierarchy's root and the directory removed,
    whatever happened inside the block.
    """

    def __init__(self, hierarchy: Hierarchy, owner_pid: int | None = None) -> None:
        self.hierarchy = hierarchy
        self.owner_pid = owner_pid if owner_pid is not None else os.getpid()
        start = proc_start_time(self.owner_pid)
        if start is None:
            raise ValueError(f"owner pid {self.owner_pid} is not running")
        self.name = f"fb-{self.owner_pid}-{start}-{next(_counter)}"
        self.path = hierarchy.parent / self.name
        self.created = False

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> CgroupGroup:
        self.create()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def create(self) -> CgroupGroup:
        """Make the directory and configure it.

        Raises
        ------
        PreflightError
            If the hierarchy is not writable (not root) or the kernel refuses a setting; the
            half-made group is removed first.
        """
        where = str(self.path)
        for attempt in range(3):
            try:
                _prepare_parent(self.hierarchy)
                self.path.mkdir()
                break
            except FileNotFoundError:
                # Another flushbench removed the empty parent between our mkdirs: retry.
                if attempt == 2:
                    raise
            except PermissionError:
                raise PreflightError(
                    f"cannot create a cgroup in {self.hierarchy.describe()}",
                    where,
                    "run flushbench as root (or delegate the cgroup subtree to this user)",
                ) from None
        self.created = True
        try:
            self._configure()
        except BaseException:
            self.remove()
            raise
        return self

    def _configure(self) -> None:
        """Write the group's settings (subclasses)."""

    def remove(self) -> list[int]:
        """Move any process left in the group to the root, remove it; return the pids moved.

        Idempotent. Retries ``rmdir`` briefly: a process that was just killed leaves its
        cgroup only once the kernel has finished its exit.
        """
        if not self.created:
            return []
        moved = remove_group(self.hierarchy, self.path)
        self.created = False
        return moved

    # --- membership ------------------------------------------------------------------------

    @property
    def procs_file(self) -> Path:
        """The group's ``cgroup.procs`` (write a pid to move that whole process in)."""
        return self.path / "cgroup.procs"

    def wrap(self, argv: Sequence[str | os.PathLike[str]]) -> list[str]:
        """``argv`` prefixed so the started process joins this group before it execs.

        Pass the result to :func:`runner.proc.child` instead of ``argv``.
        """
        return wrap_argv(argv, [self.procs_file])

    def add(self, pid: int) -> None:
        """Move a running process (all its threads) into the group."""
        write_cgroup_file(self.procs_file, str(pid))

    def pids(self) -> list[int]:
        """The processes in the group now."""
        return _read_pids(self.path)


def wrap_argv(argv: Sequence[str | os.PathLike[str]], procs_files: Iterable[Path]) -> list[str]:
    """``argv`` run through ``/bin/sh`` that first joins every cgroup in ``procs_files``.

    The shell ``exec``\\ s the program, so the pid stays the same and nothing of the shell
    remains; if joining fails the shell exits with code 125 and a message on stderr before the
    program starts (so a throttle is never silently missing).
    """
    return ["/bin/sh", "-c", _ENTER_SCRIPT, "flushbench-cgroup-enter",
            *[str(p) for p in procs_files], "--", *[str(a) for a in argv]]


def remove_group(h: Hierarchy, path: Path, timeout_s: float = 5.0) -> list[int]:
    """Move every process in ``path`` to ``h.root`` and ``rmdir`` it; return the pids moved."""
    moved: list[int] = []
    deadline = time.monotonic() + timeout_s
    while True:
        for pid in _read_pids(path):
            with contextlib.suppress(ProcessLookupError, OSError):
                write_cgroup_file(h.root / "cgroup.procs", str(pid))
                moved.append(pid)
        try:
            path.rmdir()
            break
        except FileNotFoundError:
            break
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with contextlib.suppress(OSError):
        h.parent.rmdir()  # only succeeds when no other group is in use
    return moved


class ThrottleGroup(CgroupGroup):
    """An I/O throttle group applying ``spec``'s limits on ``device``.

    Use as a context manager around the server's whole life::

        with ThrottleGroup(hierarchy, device, spec) as group:
            with child(group.wrap(argv)) as proc:
                ...
            counters = group.counters()

    Raises
    ------
    PreflightError
        On entering, if the kernel refuses the device (a partition, an unknown device) or a
        limit, or the settings read back differ from those written.
    """

    def __init__(
        self,
        hierarchy: Hierarchy,
        device: BlockDevice,
        spec: StorageSpec,
        owner_pid: int | None = None,
    ) -> None:
        if hierarchy.controller != "io":
            raise ValueError(f"{hierarchy.describe()} is not an io hierarchy")
        super().__init__(hierarchy, owner_pid)
        self.device = device
        self.spec = spec

    def __enter__(self) -> ThrottleGroup:
        self.create()
        return self

    def _limit_values(self) -> dict[str, int | None]:
        s = self.spec
        return {"riops": s.read_iops, "wiops": s.write_iops,
                "rbps": s.read_bandwidth, "wbps": s.write_bandwidth}

    def _configure(self) -> None:
        dev = self.device.dev
        try:
            if self.hierarchy.version == 2:
                values = " ".join(
                    f"{k}={'max' if v is None else v}" for k, v in self._limit_values().items()
                )
                write_cgroup_file(self.path / "io.max", f"{dev} {values}")
            else:
                for key, value in self._limit_values().items():
                    if value is not None:
                        write_cgroup_file(
                            self.path / f"blkio.throttle.{_V1_FILES[key]}", f"{dev} {value}"
                        )
        except OSError as exc:
            hint = (
                "the kernel throttles whole disks only: name the disk, not a partition"
                if exc.errno == errno.ENODEV
                else "check that the device exists and the limit is a positive number"
            )
            raise PreflightError(
                f"the kernel refused the I/O limit for device {self.device.name} ({dev}): "
                f"{exc.strerror}",
                str(self.path),
                hint,
            ) from None
        applied = self.limits_in_force()
        wanted = {k: v for k, v in self._limit_values().items() if v is not None}
        if applied != wanted:
            raise PreflightError(
                f"I/O limits read back as {applied}, expected {wanted}",
                str(self.path),
                "another tool may be managing this cgroup hierarchy",
            )

    def limits_in_force(self) -> dict[str, int]:
        """The limits the kernel holds for the device now (``{"wiops": 1000, ...}``)."""
        dev = self.device.dev
        found: dict[str, int] = {}
        if self.hierarchy.version == 2:
            for line in (self.path / "io.max").read_text().splitlines():
                parts = line.split()
                if parts and parts[0] == dev:
                    for item in parts[1:]:
                        key, _, value = item.partition("=")
                        if value != "max":
                            found[key] = int(value)
        else:
            for key, fname in _V1_FILES.items():
                for line in (self.path / f"blkio.throttle.{fname}").read_text().splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[0] == dev:
                        found[key] = int(parts[1])
        return found

    def counters(self) -> IoCounters:
        """I/O charged to this group on the device so far (bios, bytes; reads and writes)."""
        dev = self.device.dev
        if self.hierarchy.version == 2:
            return parse_io_stat((self.path / "io.stat").read_text(), dev)
        return parse_v1_counters(
            (self.path / "blkio.throttle.io_serviced").read_text(),
            (self.path / "blkio.throttle.io_service_bytes").read_text(),
            dev,
        )

    def record(self) -> dict[str, object]:
        """What to store with the run about the group (path, device, cgroup version, limits)."""
        return {
            "io_cgroup": str(self.path),
            "io_cgroup_version": self.hierarchy.version,
            "io_device": f"{self.device.name} ({self.device.dev})",
            "io_limits_in_force": self.limits_in_force() if self.created else {},
        }


_V1_FILES = {
    "riops": "read_iops_device",
    "wiops": "write_iops_device",
    "rbps": "read_bps_device",
    "wbps": "write_bps_device",
}


@dataclass(frozen=True)
class ReapedGroup:
    """A stale group :func:`reap_stale_groups` removed."""

    path: Path
    owner_pid: int
    moved_pids: tuple[int, ...]


def stale_groups(h: Hierarchy) -> list[tuple[Path, int]]:
    """flushbench groups in ``h`` whose owner process is gone: ``(path, owner pid)``."""
    stale = []
    try:
        children = sorted(h.parent.iterdir())
    except OSError:
        return []
    for path in children:
        m = _GROUP_RE.match(path.name)
        if not m or not path.is_dir():
            continue
        pid, start = int(m.group(1)), int(m.group(2))
        if proc_start_time(pid) != start:
            stale.append((path, pid))
    return stale


def reap_stale_groups(hierarchies: Iterable[Hierarchy] | None = None) -> list[ReapedGroup]:
    """Remove every flushbench group whose owner died; return what was removed.

    Processes still in such a group (a mysqld orphaned by a SIGKILLed flushbench) are moved to
    the hierarchy's root — they keep running, unthrottled; stopping them is the job of the run
    reaper (``runner.fleet.worker.reap_leftover_servers``). Safe to call at any time: groups of
    live flushbench processes are left alone.
    """
    if hierarchies is None:
        hierarchies = [h for h in (find_hierarchy("io"), find_hierarchy("cpuset")) if h]
    reaped = []
    for h in hierarchies:
        for path, pid in stale_groups(h):
            try:
                moved = remove_group(h, path)
            except OSError:
                continue  # still busy or removed meanwhile by another reaper
            reaped.append(ReapedGroup(path, pid, tuple(moved)))
    return reaped
