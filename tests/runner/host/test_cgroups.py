"""The I/O throttle group against the real kernel: limits enforced, counters, removal, reaper.

Each I/O test moves a few hundred 4 KiB operations (a few seconds at the limits used): the
check is that the *kernel* held the limit and charged every operation to the group, read from
the group's own counters — not how fast our code is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from core.errors import PreflightError
from core.experiment.storage import StorageSpec
from runner.host.cgroups import (
    ThrottleGroup,
    find_hierarchy,
    proc_start_time,
    reap_stale_groups,
    stale_groups,
    wrap_argv,
)
from runner.host.devices import BlockDevice, resolve_device
from runner.host.proof import IoCounters, judge
from runner.proc import child

pytestmark = pytest.mark.host_control("io")


def _group(directory: Path, spec: StorageSpec) -> ThrottleGroup:
    hierarchy = find_hierarchy("io")
    assert hierarchy is not None
    device = resolve_device(directory).device
    assert device is not None
    return ThrottleGroup(hierarchy, device, spec)


def _run_in(group: ThrottleGroup, argv: list[str]) -> tuple[float, IoCounters, IoCounters]:
    """Run ``argv`` inside the group; return (elapsed s, counters before, counters after)."""
    before = group.counters()
    start = time.monotonic()
    with child(group.wrap(argv)) as proc:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    elapsed = time.monotonic() - start
    return elapsed, before, group.counters()


def test_direct_writes_are_throttled_and_counted(disk_dir: Path) -> None:
    n = 600  # 3 s at 200 IOPS
    spec = StorageSpec(write_iops=200)
    with _group(disk_dir, spec) as group:
        assert group.limits_in_force() == {"wiops": 200}
        elapsed, before, after = _run_in(
            group,
            ["dd", "if=/dev/zero", f"of={disk_dir / 'f'}", "bs=4k", f"count={n}",
             "oflag=direct"],
        )
    delta = after - before
    # Every O_DIRECT write of dd was charged to the group, in full.
    assert delta.write_ios >= n
    assert delta.write_bytes >= n * 4096
    verdict = judge(spec, before, after, elapsed)
    assert verdict.status == "held", verdict.reason
    assert verdict.checks[0].judged


def test_direct_reads_are_throttled_and_counted(disk_dir: Path) -> None:
    n = 1500  # 3 s at 500 IOPS
    data = disk_dir / "r"
    subprocess.run(["dd", "if=/dev/zero", f"of={data}", "bs=4k", f"count={n}", "oflag=direct"],
                   check=True, capture_output=True)
    spec = StorageSpec(read_iops=500)
    with _group(disk_dir, spec) as group:
        elapsed, before, after = _run_in(
            group, ["dd", f"if={data}", "of=/dev/null", "bs=4k", f"count={n}", "iflag=direct"]
        )
    delta = after - before
    assert delta.read_ios >= n
    assert delta.read_bytes >= n * 4096
    verdict = judge(spec, before, after, elapsed)
    assert verdict.status == "held", verdict.reason


def test_bandwidth_limit_holds(disk_dir: Path) -> None:
    spec = StorageSpec(write_bandwidth="2M")  # 6 MiB of 64 KiB writes: 3 s
    with _group(disk_dir, spec) as group:
        assert group.limits_in_force() == {"wbps": 2 * 1024 * 1024}
        elapsed, before, after = _run_in(
            group,
            ["dd", "if=/dev/zero", f"of={disk_dir / 'b'}", "bs=64k", "count=96", "oflag=direct"],
        )
    assert (after - before).write_bytes >= 96 * 65536
    verdict = judge(spec, before, after, elapsed)
    assert verdict.status == "held", verdict.reason


def test_group_is_removed_on_exit_and_on_error(disk_dir: Path) -> None:
    group = _group(disk_dir, StorageSpec(write_iops=1000))
    with group:
        path = group.path
        assert path.is_dir()
        assert str(os.getpid()) in path.name
    assert not path.exists()

    group = _group(disk_dir, StorageSpec(write_iops=1000))
    with pytest.raises(RuntimeError), group:
        path = group.path
        raise RuntimeError("boom")
    assert not path.exists()


def test_leftover_process_is_moved_out_before_rmdir(disk_dir: Path) -> None:
    group = _group(disk_dir, StorageSpec(write_iops=1000))
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        with group:
            group.add(sleeper.pid)
            assert group.pids() == [sleeper.pid]
            path = group.path
        assert not path.exists()
        assert sleeper.poll() is None  # moved out, still running
        cgroup_line = Path(f"/proc/{sleeper.pid}/cgroup").read_text()
        assert path.name not in cgroup_line
    finally:
        sleeper.kill()
        sleeper.wait()


def test_wrapped_process_is_in_the_group_from_its_start(disk_dir: Path) -> None:
    with _group(disk_dir, StorageSpec(write_iops=1000)) as group:
        with child(group.wrap(["cat", "/proc/self/cgroup"])) as proc:
            out, _ = proc.communicate(timeout=30)
        assert f"{group.path.parent.name}/{group.path.name}" in out


def test_wrapper_refuses_to_start_the_program_outside_its_group(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = wrap_argv(["touch", str(marker)], [tmp_path / "no-such-group" / "cgroup.procs"])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 125
    assert "cannot join cgroup" in proc.stderr
    assert not marker.exists()


def test_kernel_refuses_a_device_that_does_not_exist(disk_dir: Path) -> None:
    hierarchy = find_hierarchy("io")
    assert hierarchy is not None
    bogus = BlockDevice(254, 4095, "bogus")
    group = ThrottleGroup(hierarchy, bogus, StorageSpec(write_iops=100))
    with pytest.raises(PreflightError, match="refused"):
        group.create()
    assert not group.path.exists()


OWNER_SCRIPT = textwrap.dedent(
    """
    import sys, subprocess
    from pathlib import Path
    from runner.host.cgroups import ThrottleGroup, find_hierarchy
    from runner.host.devices import resolve_device
    from core.experiment.storage import StorageSpec

    group = ThrottleGroup(find_hierarchy("io"), resolve_device(Path(sys.argv[1])).device,
                          StorageSpec(write_iops=500))
    group.create()
    sleeper = subprocess.Popen(group.wrap(["sleep", "60"]), start_new_session=True)
    print(group.path, sleeper.pid, flush=True)
    sys.stdin.read()  # wait to be killed
    """
)


def test_reaper_removes_groups_of_a_sigkilled_owner(disk_dir: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, str(disk_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    sleeper_pid = None
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline().split()
        path, sleeper_pid = Path(line[0]), int(line[1])
        hierarchy = find_hierarchy("io")
        assert hierarchy is not None
        assert (path, owner.pid) not in stale_groups(hierarchy)  # owner alive: not stale
        with _group(disk_dir, StorageSpec(write_iops=1000)) as mine:
            owner.send_signal(signal.SIGKILL)
            owner.wait(timeout=30)
            assert path.is_dir()  # nobody removed it: the owner died
            reaped = reap_stale_groups([hierarchy])
            assert mine.path.is_dir()  # a live owner's group is left alone
        ours = [r for r in reaped if r.path == path]
        assert len(ours) == 1
        assert ours[0].owner_pid == owner.pid
        assert ours[0].moved_pids == (sleeper_pid,)
        assert not path.exists()
        # Under pytest-xdist another test may have SIGKILLed a worker whose group was still
        # there (CI saw fb-9274-…): the reaper rightly takes it too. Whatever else it took
        # must have had a dead owner (the group's name holds the owner's pid and start time),
        # and never this test's own live group.
        for other in reaped:
            assert other.path != mine.path
            _, pid, start, _n = other.path.name.split("-")
            assert proc_start_time(int(pid)) != int(start), f"{other.path}: its owner lives"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for stream in (owner.stdin, owner.stdout):
            if stream is not None:
                stream.close()
        if sleeper_pid is not None:
            try:
                os.kill(sleeper_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
