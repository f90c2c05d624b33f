"""The session-start cleanup kills only orphaned servers under pytest's temporary root."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import psutil

from tests.support.leftovers import kill_orphaned_test_servers, orphaned_test_servers


def _orphan(binary: Path) -> psutil.Process:
    """Start ``binary 120`` from a shell that exits at once: the child is re-parented."""
    subprocess.run(["sh", "-c", f"'{binary}' 120 >/dev/null 2>&1 &"], check=True)
    for _ in range(100):
        for proc in psutil.process_iter(["exe", "ppid"]):
            if proc.info["exe"] == str(binary):
                return proc
        time.sleep(0.05)
    raise AssertionError(f"{binary} did not start")


def test_orphaned_server_under_the_root_is_killed(tmp_path: Path) -> None:
    fake = tmp_path / "mysqld"  # a copy of sleep(1) under a server's name
    shutil.copy("/bin/sleep", fake)
    proc = _orphan(fake)
    try:
        assert proc.ppid() == 1, "expected the shell's child to be re-parented to init"
        other_root = tmp_path / "elsewhere"
        assert orphaned_test_servers(other_root) == []  # not under that root: left alone
        assert kill_orphaned_test_servers(tmp_path) == [proc.pid]
        assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    finally:
        if proc.is_running():
            proc.kill()


def test_a_server_with_a_live_parent_is_not_an_orphan(tmp_path: Path) -> None:
    fake = tmp_path / "mariadbd"
    shutil.copy("/bin/sleep", fake)
    with subprocess.Popen([str(fake), "120"]) as child:
        try:
            assert orphaned_test_servers(tmp_path) == []  # its parent (this test) is alive
        finally:
            child.kill()
