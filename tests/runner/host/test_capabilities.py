"""What this host can do, asked of the real host (and of a user that is not root)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import PreflightError
from runner.host.capabilities import (
    Capability,
    can_pin_cpus,
    can_set_thp,
    can_throttle,
    host_capabilities,
)
from runner.host.cgroups import find_hierarchy
from runner.proc import is_root
from tests.support import system_tools

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.host_control("io")
def test_can_throttle_the_work_dir(disk_dir: Path) -> None:
    cap = can_throttle(disk_dir)
    assert cap.ok, cap.detail
    hierarchy = find_hierarchy("io")
    assert hierarchy is not None and hierarchy.describe() in cap.detail
    cap.require()  # does not raise
    assert not list(hierarchy.parent.glob("fb-*")) or all(
        str(os.getpid()) not in p.name for p in hierarchy.parent.glob("fb-*")
    )  # the probe group is gone


@pytest.mark.host_control("io")
def test_cannot_throttle_tmpfs_and_says_why() -> None:
    shm = Path("/dev/shm")
    cap = can_throttle(shm)
    if cap.ok:
        pytest.skip("/dev/shm is disk-backed on this host")
    assert "tmpfs keeps files in RAM" in cap.detail
    assert "FLUSHBENCH_WORK" in cap.fix
    with pytest.raises(PreflightError) as err:
        cap.require()
    assert err.value.where == str(shm)


def test_require_raises_what_where_fix() -> None:
    cap = Capability("thing", False, "is missing", "install it", "/x")
    with pytest.raises(PreflightError) as err:
        cap.require()
    assert err.value.render() == "/x: thing: is missing — install it"


@pytest.mark.host_control("thp", "cpuset")
def test_thp_and_pinning_available_as_root() -> None:
    assert can_set_thp().ok
    assert can_pin_cpus("affinity").ok
    assert can_pin_cpus("cpuset").ok
    names = [c.name for c in host_capabilities(REPO / "work")]
    assert names == ["I/O throttle", "transparent huge pages", "CPU pinning (affinity)",
                     "CPU pinning (cpuset)"]


NOT_ROOT = """
from pathlib import Path
from runner.host.capabilities import can_throttle, can_set_thp, can_pin_cpus
for cap in (can_throttle(Path('/')), can_set_thp(), can_pin_cpus('cpuset')):
    print(cap.ok, cap.detail, cap.fix, sep='\\t')
"""


@pytest.mark.optional_host
def test_a_user_that_is_not_root_is_told_to_run_as_root() -> None:
    setpriv = system_tools.which("setpriv")
    if not is_root() or setpriv is None:
        pytest.skip("needs root and setpriv to run a check as an unprivileged user")
    proc = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
         NOT_ROOT],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    if proc.returncode != 0 and "Permission denied" in proc.stderr:
        pytest.skip(f"the checkout is not readable by nobody: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert len(lines) == 3
    for ok, detail, fix in lines:
        assert ok == "False"
        assert "root" in detail + fix
