"""Which device the throttle must name: the parsers on hand-made text, then real filesystems
built for the test (a partition on a loop disk, a device-mapper volume, overlays, tmpfs) —
and the kernel's own answer on each (it refuses partitions, throttles dm volumes).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import PreflightError
from core.experiment.storage import StorageSpec
from runner.host.cgroups import ThrottleGroup, find_hierarchy
from runner.host.devices import (
    BlockDevice,
    mount_for,
    parse_mountinfo,
    resolve_device,
    whole_device,
)
from runner.host.proof import judge
from runner.proc import child

MOUNTINFO = r"""22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
31 27 8:2 / /data rw,relatime shared:5 - xfs /dev/sda2 rw,attr2
40 31 0:50 / /data/with\040space rw - tmpfs tmpfs rw,size=1024k
41 27 0:51 / /ov/merged rw - overlay overlay rw,lowerdir=/l1:/l2,upperdir=/ov/diff,workdir=/ov/work
42 31 8:3 / /data rw - ext4 /dev/sda3 rw
"""


def test_parse_mountinfo_fields_escapes_and_options() -> None:
    entries = parse_mountinfo(MOUNTINFO + "garbage line\n")
    assert len(entries) == 6
    xfs = entries[2]
    assert (xfs.dev, xfs.mount_point, xfs.fs_type, xfs.source) == (
        "8:2", "/data", "xfs", "/dev/sda2")  # optional field "shared:5" skipped
    assert entries[3].mount_point == "/data/with space"
    overlay = entries[4]
    assert overlay.super_options["upperdir"] == "/ov/diff"
    assert overlay.super_options["lowerdir"] == "/l1:/l2"


def test_mount_for_picks_longest_and_latest_mount() -> None:
    entries = parse_mountinfo(MOUNTINFO)
    assert mount_for(Path("/home/x"), entries).fs_type == "ext4"
    # /data was mounted twice: the later mount (sda3) hides the first.
    assert mount_for(Path("/data/mysql"), entries).source == "/dev/sda3"
    assert mount_for(Path("/data/with space/f"), entries).fs_type == "tmpfs"
    assert mount_for(Path("/database"), entries).mount_point == "/"


def test_work_dir_on_this_machine_resolves_to_its_disk(disk_dir: Path) -> None:
    res = resolve_device(disk_dir)
    st = os.stat(disk_dir).st_dev
    assert res.device is not None
    assert res.fs_type not in ("tmpfs", "overlay")
    sysfs = Path(f"/sys/dev/block/{os.major(st)}:{os.minor(st)}").resolve()
    if (sysfs / "partition").exists():
        assert res.kind == "partition"
        assert res.device.name == sysfs.parent.name
    else:
        assert res.device.dev == f"{os.major(st)}:{os.minor(st)}"
        assert res.device.name == sysfs.name
    assert res.throttleable
    assert res.device.name in res.describe()


def test_a_directory_not_yet_created_resolves_through_its_parent(disk_dir: Path) -> None:
    assert resolve_device(disk_dir / "not" / "yet").device == resolve_device(disk_dir).device


@pytest.mark.optional_host
def test_tmpfs_has_no_throttleable_device() -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or resolve_device(shm).fs_type != "tmpfs":
        pytest.skip("/dev/shm is not a tmpfs on this host")
    res = resolve_device(shm)
    assert res.device is None
    assert res.kind == "memory"
    assert "RAM" in res.reason


@pytest.mark.optional_host
def test_zram_is_reported_as_ram_backed() -> None:
    node = Path("/sys/block/zram0/dev")
    if not node.exists():
        pytest.skip("no zram0 on this host")
    major, minor = (int(x) for x in node.read_text().split(":"))
    device, kind, steps = whole_device(major, minor)
    assert device == BlockDevice(major, minor, "zram0")
    assert kind == "ram-disk"
    assert "RAM-backed" in steps[0]


def test_unknown_device_number() -> None:
    device, kind, _ = whole_device(254, 4095)
    assert device is None and kind == "unknown"


# --- real filesystems built for the test ------------------------------------------------------


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120).stdout


@contextlib.contextmanager
def _loop(image: Path, partscan: bool = False) -> Iterator[str]:
    """Attach ``image`` to a free loop device for the block; always detached afterwards."""
    args = ["losetup", "--find", "--show"] + (["--partscan"] if partscan else [])
    dev = _run(*args, str(image)).strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=60)


@contextlib.contextmanager
def _mounted(source: str, target: Path, *opts: str) -> Iterator[Path]:
    target.mkdir(parents=True, exist_ok=True)
    _run("mount", *opts, source, str(target))
    try:
        yield target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True, timeout=60)


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 10
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear")
        time.sleep(0.05)


def _throttled_direct_writes(directory: Path, device: BlockDevice, n: int, iops: int) -> None:
    """dd ``n`` O_DIRECT 4 KiB writes in ``directory`` under a ``iops`` limit on ``device``."""
    hierarchy = find_hierarchy("io")
    assert hierarchy is not None
    spec = StorageSpec(write_iops=iops)
    with ThrottleGroup(hierarchy, device, spec) as group:
        before = group.counters()
        start = time.monotonic()
        argv = ["dd", "if=/dev/zero", f"of={directory / 'f'}", "bs=4k", f"count={n}",
                "oflag=direct"]
        with child(group.wrap(argv)) as proc:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        elapsed = time.monotonic() - start
        after = group.counters()
    assert (after - before).write_ios >= n
    verdict = judge(spec, before, after, elapsed)
    assert verdict.status == "held", verdict.reason


@pytest.mark.host_control("io", "mount")
def test_partition_resolves_to_its_disk_and_kernel_refuses_the_partition(
    disk_dir: Path,
) -> None:
    image = disk_dir / "disk.img"
    with open(image, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    with _loop(image, partscan=True) as loopdev:
        # BLKPG (addpart) rather than a partition table: works whatever table formats the
        # kernel was built to parse.
        _run("addpart", loopdev, "1", "2048", str(64 * 2048 - 2048))
        part = Path(f"{loopdev}p1")
        _wait_for(part)
        _run("mkfs.ext4", "-q", str(part))
        with _mounted(str(part), disk_dir / "mnt") as mnt:
            res = resolve_device(mnt)
            disk = Path(loopdev).name
            assert res.kind == "partition"
            assert res.device is not None and res.device.name == disk
            assert res.device.dev == Path(f"/sys/block/{disk}/dev").read_text().strip()
            assert "partition 1 of" in res.steps[0]

            # The kernel itself refuses to throttle the partition's own number...
            st = os.stat(part).st_rdev
            hierarchy = find_hierarchy("io")
            assert hierarchy is not None
            part_dev = BlockDevice(os.major(st), os.minor(st), part.name)
            with pytest.raises(PreflightError, match="whole disks only"):
                ThrottleGroup(hierarchy, part_dev, StorageSpec(write_iops=100)).create()
            # ...and throttles I/O into the partition when the disk is named.
            _throttled_direct_writes(mnt, res.device, n=450, iops=150)


@pytest.mark.host_control("io", "mount", "dm")
def test_device_mapper_volume_is_named_and_throttled(disk_dir: Path) -> None:
    image = disk_dir / "dm.img"
    with open(image, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    name = f"fbtest-{os.getpid()}"
    with _loop(image) as loopdev:
        _run("dmsetup", "create", name, "--table", f"0 {64 * 2048} linear {loopdev} 0")
        try:
            mapper = Path(f"/dev/mapper/{name}")
            _wait_for(mapper)
            _run("mkfs.ext4", "-q", str(mapper))
            with _mounted(str(mapper), disk_dir / "mnt") as mnt:
                res = resolve_device(mnt)
                assert res.kind == "device-mapper"
                assert res.device is not None and res.device.name.startswith("dm-")
                assert name in res.steps[0] and Path(loopdev).name in res.steps[0]
                _throttled_direct_writes(mnt, res.device, n=450, iops=150)
        finally:
            subprocess.run(["dmsetup", "remove", name], capture_output=True, timeout=60)


@pytest.mark.host_control("mount")
def test_overlay_resolves_to_its_upper_layer(disk_dir: Path) -> None:
    lower, upper, work = (disk_dir / d for d in ("lower", "upper", "work"))
    for d in (lower, upper, work):
        d.mkdir()
    opts = f"lowerdir={lower},upperdir={upper},workdir={work}"
    with _mounted("overlay", disk_dir / "merged", "-t", "overlay", "-o", opts) as merged:
        res = resolve_device(merged)
        assert res.kind == "overlay"
        assert res.fs_type == "overlay"
        assert res.device == resolve_device(upper).device
        assert res.device is not None
        assert str(upper) in res.steps[0]


@pytest.mark.host_control("mount")
def test_overlay_with_upper_layer_in_memory_has_no_device(disk_dir: Path) -> None:
    with _mounted("tmpfs", disk_dir / "t", "-t", "tmpfs") as tmp:
        lower, upper, work = (tmp / d for d in ("lower", "upper", "work"))
        for d in (lower, upper, work):
            d.mkdir()
        opts = f"lowerdir={lower},upperdir={upper},workdir={work}"
        with _mounted("overlay", disk_dir / "merged", "-t", "overlay", "-o", opts) as merged:
            res = resolve_device(merged)
            assert res.device is None
            assert res.kind == "overlay"
            assert "tmpfs" in res.reason
