"""The block device that holds a directory, as the kernel's I/O throttle must name it.

The cgroup I/O throttle (v1 ``blkio.throttle.*``, v2 ``io.max``) takes ``major:minor`` of a
*whole* block device: the kernel refuses a partition (``ENODEV``; it throttles bios where they
enter the disk's queue, and a partition has none). So a datadir on ``/dev/sda2`` must be
throttled as ``sda``; on LVM or dm-crypt as the ``dm-N`` device the filesystem sits on
(device-mapper devices are bio-based and throttled where bios enter them); on an overlay as the
device of its upper directory, where every write lands. tmpfs and network filesystems have no
block device at all: a storage profile cannot be applied there. Found by ``os.stat`` and
``/proc/self/mountinfo`` and ``/sys/dev/block`` (no external tool).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

#: Filesystems whose files live in memory: no block I/O happens, nothing can be throttled.
MEMORY_FS = frozenset({"tmpfs", "ramfs", "devtmpfs", "hugetlbfs", "shm"})
#: Filesystems whose I/O goes over the network or a user-space daemon, not a local disk.
NETWORK_FS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "fuse", "fuse.sshfs", "9p", "ceph", "glusterfs", "virtiofs"}
)
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class MountEntry:
    """One line of ``/proc/self/mountinfo`` (the fields flushbench needs)."""

    dev: str  # "major:minor" of the filesystem (st_dev of its files)
    root: str
    mount_point: str
    fs_type: str
    source: str
    super_options: dict[str, str]


def _unescape(text: str) -> str:
    # mountinfo writes space, tab, newline and backslash as \040, \011, \012, \134.
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text: str) -> list[MountEntry]:
    """Parse ``/proc/PID/mountinfo`` text (see proc(5)); malformed lines are skipped."""
    entries = []
    for line in text.splitlines():
        parts = line.split()
        try:
            sep = parts.index("-", 6)
        except ValueError:
            continue
        if len(parts) < sep + 3:
            continue
        opts: dict[str, str] = {}
        for item in parts[sep + 3].split(",") if len(parts) > sep + 3 else []:
            key, _, value = item.partition("=")
            opts[key] = _unescape(value)
        entries.append(
            MountEntry(
                dev=parts[2],
                root=_unescape(parts[3]),
                mount_point=_unescape(parts[4]),
                fs_type=parts[sep + 1],
                source=_unescape(parts[sep + 2]),
                super_options=opts,
            )
        )
    return entries


def mount_for(path: Path, entries: list[MountEntry]) -> MountEntry | None:
    """The mount holding ``path``: the last-mounted entry with the longest matching mount point.

    ``path`` must be absolute and resolved (symlinks followed), as mountinfo's paths are.
    """
    best: MountEntry | None = None
    best_len = -1
    for entry in entries:
        mp = entry.mount_point
        if str(path) == mp or str(path).startswith(mp.rstrip("/") + "/"):
            # ">=": a later mount on the same point hides the earlier one.
            if len(mp) >= best_len:
                best, best_len = entry, len(mp)
    return best


@dataclass(frozen=True)
class BlockDevice:
    """A whole block device as ``/sys/dev/block`` names it."""

    major: int
    minor: int
    name: str

    @property
    def dev(self) -> str:
        """``major:minor``, the form the throttle files take."""
        return f"{self.major}:{self.minor}"


@dataclass(frozen=True)
class DeviceResolution:
    """Which device a directory's I/O reaches, and how that was found.

    Attributes
    ----------
    path:
        The directory asked about (resolved).
    fs_type, mount_point, source:
        The filesystem holding it, from mountinfo (``unknown`` if not found).
    device:
        The device the throttle must name, or None when there is none.
    kind:
        ``disk``, ``partition``, ``device-mapper``, ``md``, ``loop``, ``ram-disk``,
        ``overlay``, ``memory``, ``network`` or ``unknown``.
    steps:
        How the device was found, one human sentence per step (for doctor and metadata).
    reason:
        Why there is no throttleable device (None when there is one).
    """

    path: Path
    fs_type: str
    mount_point: str
    source: str
    device: BlockDevice | None
    kind: str
    steps: tuple[str, ...] = field(default=())
    reason: str | None = None

    @property
    def throttleable(self) -> bool:
        """True when a device was found that the throttle can name."""
        return self.device is not None

    def describe(self) -> str:
        """One line: ``/work on ext4 /dev/vda -> vda (254:0), disk``."""
        head = f"{self.path} on {self.fs_type} {self.source}"
        if self.device is None:
            return f"{head}: no throttleable device ({self.reason})"
        return f"{head} -> {self.device.name} ({self.device.dev}), {self.kind}"


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _dev_numbers(text: str) -> tuple[int, int]:
    major, minor = text.split(":")
    return int(major), int(minor)


def whole_device(major: int, minor: int, sys_root: Path = Path("/sys")) -> tuple[
    BlockDevice | None, str, list[str]
]:
    """Map a block device number to the whole device the throttle accepts.

    Returns
    -------
    (device, kind, steps):
        ``device`` is None when ``/sys/dev/block/MAJ:MIN`` does not exist.
    """
    node = sys_root / "dev" / "block" / f"{major}:{minor}"
    if not node.exists():
        return None, "unknown", [f"{major}:{minor} is not in {node.parent}"]
    real = node.resolve()
    name = real.name
    steps: list[str] = []
    kind = "disk"
    if (real / "partition").exists():
        parent = real.parent
        pmajor, pminor = _dev_numbers(_read(parent / "dev"))
        steps.append(
            f"{name} ({major}:{minor}) is partition {_read(real / 'partition')} of "
            f"{parent.name} ({pmajor}:{pminor}); the kernel throttles whole disks only"
        )
        return BlockDevice(pmajor, pminor, parent.name), "partition", steps
    if name.startswith("dm-"):
        kind = "device-mapper"
        slaves = sorted(p.name for p in (real / "slaves").iterdir()) if (
            real / "slaves").is_dir() else []
        steps.append(
            f"{name} is device-mapper volume '{_read(real / 'dm' / 'name')}' over "
            f"{', '.join(slaves) or 'no device'}; throttled at the dm device, where bios enter"
        )
    elif name.startswith("md"):
        kind = "md"
        steps.append(f"{name} is an md RAID array; throttled at the array")
    elif name.startswith("loop"):
        kind = "loop"
        backing = _read(real / "loop" / "backing_file")
        steps.append(f"{name} is a loop device over {backing or 'an unknown file'}")
    elif name.startswith(("zram", "ram", "pmem")):
        kind = "ram-disk"
        steps.append(
            f"{name} is a RAM-backed block device: throttling works, but its latency is "
            "not a disk's"
        )
    return BlockDevice(major, minor, name), kind, steps


def _existing(path: Path) -> Path:
    # The datadir may not exist yet (preflight runs before initialization): ask its parent.
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path.resolve()


def resolve_device(
    path: Path,
    *,
    mountinfo_text: str | None = None,
    sys_root: Path = Path("/sys"),
    _depth: int = 0,
) -> DeviceResolution:
    """Find the block device the I/O throttle must name for files under ``path``.

    Parameters
    ----------
    path:
        A directory (the datadir, or the work directory it will be created in); when it does
        not exist yet its nearest existing parent is used.
    mountinfo_text:
        ``/proc/self/mountinfo`` content (read when None).
    sys_root:
        Where sysfs is mounted.

    Returns
    -------
    DeviceResolution
        With ``device`` None and a ``reason`` when the filesystem has no throttleable device
        (tmpfs, network filesystems, an overlay whose upper layer is in memory...).
    """
    real = _existing(path)
    if mountinfo_text is None:
        mountinfo_text = Path("/proc/self/mountinfo").read_text()
    entries = parse_mountinfo(mountinfo_text)
    mount = mount_for(real, entries)
    st_dev = os.stat(real).st_dev
    major, minor = os.major(st_dev), os.minor(st_dev)
    fs_type = mount.fs_type if mount else "unknown"
    source = mount.source if mount else "unknown"
    mount_point = mount.mount_point if mount else "unknown"

    def result(device: BlockDevice | None, kind: str, steps: list[str],
               reason: str | None = None) -> DeviceResolution:
        return DeviceResolution(real, fs_type, mount_point, source, device, kind,
                                tuple(steps), reason)

    if major != 0:
        device, kind, steps = whole_device(major, minor, sys_root)
        if device is None:
            return result(None, "unknown", steps, f"block device {major}:{minor} not in sysfs")
        return result(device, kind, steps)

    # Anonymous device (major 0): overlay, tmpfs, btrfs, network filesystems.
    if fs_type == "overlay" and mount is not None:
        upper = mount.super_options.get("upperdir")
        if not upper:
            return result(None, "overlay", [], "read-only overlay without an upperdir")
        if _depth > 4:
            return result(None, "overlay", [], "overlays nested too deep to follow")
        inner = resolve_device(Path(upper), mountinfo_text=mountinfo_text, sys_root=sys_root,
                               _depth=_depth + 1)
        steps = [f"overlay at {mount_point}: writes land in upperdir {upper}", *inner.steps]
        return result(inner.device, "overlay", steps,
                      None if inner.device else f"upperdir {upper}: {inner.reason}")
    if fs_type in MEMORY_FS:
        return result(None, "memory", [],
                      f"{fs_type} keeps files in RAM: there is no block I/O to throttle")
    if fs_type in NETWORK_FS or fs_type.startswith("fuse"):
        return result(None, "network", [],
                      f"{fs_type} does not go through a local block device")
    # btrfs and similar report an anonymous st_dev but are mounted from a /dev node.
    if source.startswith("/dev/"):
        try:
            st = os.stat(source)
        except OSError:
            st = None
        if st is not None and stat.S_ISBLK(st.st_mode):
            device, kind, steps = whole_device(os.major(st.st_rdev), os.minor(st.st_rdev),
                                               sys_root)
            steps = [f"{fs_type} reports an anonymous device; its mount source is {source}",
                     *steps]
            if device is not None:
                return result(device, kind, steps)
    return result(None, "unknown", [],
                  f"{fs_type} on {source} has no block device flushbench can find")
