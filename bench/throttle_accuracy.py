"""How exactly the kernel's I/O throttle holds a storage profile's limits, per kind of I/O.

For each kind of I/O a workload runs inside a real throttle group (:mod:`runner.host.cgroups`)
on the work directory's disk, at three IOPS limits and one bandwidth limit, and the achieved
rate is read from the group's own counters:

- ``direct write``: ``dd bs=4k oflag=direct`` (InnoDB page writes with O_DIRECT);
- ``buffered+fsync``: random 4 KiB ``pwrite``\\ s to a preallocated file, ``fsync`` every 16
  (InnoDB page writes with ``innodb_flush_method=fsync``; the writeback is issued by the
  fsync caller, so it is charged to its group);
- ``buffered, flusher``: the same writes without fsync: the kernel's flusher threads write the
  pages back later, outside the group (cgroup v1 has no writeback attribution);
- ``direct read``: ``dd bs=4k iflag=direct``.

Each cell moves about ``--seconds`` worth of I/O at its limit. The table shows the limit, the
measured rate, their ratio, and what share of the bytes the workload wrote was charged to the
group. Requires root and an io/blkio cgroup controller.

Usage: ``.venv/bin/python bench/throttle_accuracy.py [--seconds 4] [--dir DIR]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.experiment.storage import StorageSpec  # noqa: E402
from core.paths import work_dir  # noqa: E402
from core.units import format_size  # noqa: E402
from runner.host.cgroups import ThrottleGroup, find_hierarchy  # noqa: E402
from runner.host.devices import resolve_device  # noqa: E402
from runner.host.proof import IoCounters  # noqa: E402
from runner.proc import child  # noqa: E402

#: Random ``bs``-byte writes into a preallocated file, fsync every ``sync_every`` (0: never).
WRITER = """
import os, random, sys
path, n, sync_every, bs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
blocks = os.path.getsize(path) // bs
buf = os.urandom(bs)
rng = random.Random(42)
fd = os.open(path, os.O_WRONLY)
for i in range(1, n + 1):
    os.pwrite(fd, buf, rng.randrange(blocks) * bs)
    if sync_every and i % sync_every == 0:
        os.fsync(fd)
if sync_every:
    os.fsync(fd)
os.close(fd)
"""
FILE_MIB = 256


@dataclass
class Cell:
    mode: str
    limit: str
    ops: int
    seconds: float
    measured: str
    ratio: float | None
    charged: float  # share of the workload's bytes charged to the group


def _argv(mode: str, path: Path, n: int, bs: int = 4096) -> list[str]:
    if mode == "direct write":
        return ["dd", "if=/dev/zero", f"of={path}", f"bs={bs}", f"count={n}", "oflag=direct",
                "conv=notrunc"]
    if mode == "direct read":
        return ["dd", f"if={path}", "of=/dev/null", f"bs={bs}", f"count={n}", "iflag=direct"]
    sync_every = 16 if mode == "buffered+fsync" else 0
    return [sys.executable, "-c", WRITER, str(path), str(n), str(sync_every), str(bs)]


def _measure(directory: Path, mode: str, spec: StorageSpec, n: int, bs: int = 4096
             ) -> tuple[float, IoCounters]:
    hierarchy = find_hierarchy("io")
    device = resolve_device(directory).device
    assert hierarchy is not None and device is not None
    data = directory / "data"
    with ThrottleGroup(hierarchy, device, spec) as group:
        before = group.counters()
        start = time.monotonic()
        with child(group.wrap(_argv(mode, data, n, bs))) as proc:
            _, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                sys.exit(f"{mode}: workload failed: {err}")
        elapsed = time.monotonic() - start
        if mode == "buffered, flusher":
            # Let the flusher write the pages back, then see whom it charged.
            subprocess.run(["sync"], check=True)
        delta = group.counters() - before
    return elapsed, delta


def run(directory: Path, seconds: float) -> list[Cell]:
    data = directory / "data"
    subprocess.run(["dd", "if=/dev/zero", f"of={data}", "bs=1M", f"count={FILE_MIB}",
                    "oflag=direct"], check=True, capture_output=True)
    cells: list[Cell] = []
    plan: list[tuple[str, str, int | None, int | None]] = []
    for mode in ("direct write", "buffered+fsync", "direct read"):
        plan += [(mode, "iops", None, None)]  # unthrottled baseline (device's own rate)
        plan += [(mode, "iops", limit, None) for limit in (200, 1000, 3000)]
        plan += [(mode, "bw", None, 8 * 1024 * 1024)]
    plan += [("buffered, flusher", "iops", 200, None)]
    for mode, _, iops, bw in plan:
        read = mode == "direct read"
        if bw is not None:
            bs = 65536
            spec = StorageSpec(**{("read_bandwidth" if read else "write_bandwidth"): bw})
            n = int(bw * seconds / bs)
            limit = f"{format_size(bw)}/s"
        else:
            bs = 4096
            key = "read_iops" if read else "write_iops"
            # Baseline: no limit, but the kernel counts only on a throttled queue, so set a
            # limit no device here reaches.
            spec = StorageSpec(**{key: iops or 10_000_000})
            n = int((iops or 3000) * seconds)
            limit = str(iops) if iops else "none"
        elapsed, delta = _measure(directory, mode, spec, n, bs)
        ios = delta.read_ios if read else delta.write_ios
        nbytes = delta.read_bytes if read else delta.write_bytes
        if bw is not None:
            rate = nbytes / elapsed
            measured = f"{format_size(int(rate) // 1024 * 1024)}/s"
            ratio = rate / bw
        else:
            rate = ios / elapsed
            measured = f"{rate:,.0f} IOPS"
            ratio = rate / iops if iops else None
        cells.append(Cell(mode, limit, ios, elapsed, measured, ratio, nbytes / (n * bs)))
        print(f"  {mode:18} limit {limit:8} {measured:>14} in {elapsed:5.1f} s", flush=True)
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="I/O per cell, in seconds")
    parser.add_argument("--dir", type=Path, default=None, help="scratch dir (default: work/)")
    args = parser.parse_args()
    root = args.dir or work_dir()
    root.mkdir(parents=True, exist_ok=True)
    res = resolve_device(root)
    hierarchy = find_hierarchy("io")
    if os.geteuid() != 0 or hierarchy is None or res.device is None:
        sys.exit(f"needs root, an io controller and a block device: {res.describe()}")
    print(f"{dt.date.today()} {platform.node()} Linux {platform.release()}, "
          f"{hierarchy.describe()}, {res.describe()}")
    with tempfile.TemporaryDirectory(prefix="throttle-bench-", dir=root) as tmp:
        cells = run(Path(tmp), args.seconds)
    print()
    print("| I/O | limit | ops charged | seconds | measured | measured / limit | "
          "bytes charged to group |")
    print("|---|---|---|---|---|---|---|")
    for c in cells:
        ratio = f"{c.ratio:.3f}" if c.ratio is not None else "—"
        print(f"| {c.mode} | {c.limit} | {c.ops:,} | {c.seconds:.1f} | {c.measured} | "
              f"{ratio} | {c.charged:.0%} |")


if __name__ == "__main__":
    main()
