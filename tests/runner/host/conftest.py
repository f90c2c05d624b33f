"""Fixtures for the host-control tests: real kernel, real cgroups, a scratch dir on the real disk.

A test that changes the host is marked ``@pytest.mark.host_control("io" | "cpuset" | "thp" |
"mount" | "dm")``; when the host cannot do that (not root, controller missing, no THP), the test is
skipped with the capability's own reason and fix — and only then.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.paths import work_dir
from runner.host import capabilities
from tests.support import system_tools


@functools.cache
def _capability(what: str) -> tuple[bool, str]:
    if what == "io":
        work = work_dir()
        work.mkdir(parents=True, exist_ok=True)
        cap = capabilities.can_throttle(work)
    elif what == "cpuset":
        cap = capabilities.can_pin_cpus("cpuset")
    elif what == "thp":
        cap = capabilities.can_set_thp()
    elif what == "mount":
        tools = ("losetup", "addpart", "mkfs.ext4", "mount")
        ok = os.geteuid() == 0 and not system_tools.missing(*tools)
        return ok, "needs root and " + ", ".join(tools) + " to build test filesystems"
    elif what == "dm":
        ok = Path("/sys/class/misc/device-mapper").exists() and system_tools.which("dmsetup")
        return bool(ok), (
            "the kernel has no device-mapper driver (/sys/class/misc/device-mapper) or "
            "dmsetup is missing — a kernel with CONFIG_BLK_DEV_DM and `apt-get install dmsetup`"
        )
    else:
        raise ValueError(f"unknown host_control capability {what!r}")
    return cap.ok, f"{cap.name}: {cap.detail}" + (f" — {cap.fix}" if cap.fix else "")


@pytest.fixture(autouse=True)
def _host_control_gate(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("host_control")
    if marker is None:
        return
    for what in marker.args or ("io",):
        ok, reason = _capability(what)
        if not ok:
            pytest.skip(f"host_control({what}) unavailable: {reason}")


@pytest.fixture
def disk_dir() -> Iterator[Path]:
    """A scratch directory under flushbench's work directory (the real disk, not tmpfs)."""
    root = work_dir()
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="host-test-", dir=root))
    yield path
    shutil.rmtree(path, ignore_errors=True)
