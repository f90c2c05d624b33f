"""The session-start cleanup kills only orphaned servers under pytest's temporary root."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.support.leftovers import kill_orphaned_test_servers, orphaned_test_servers


def _orphan(binary: Path) -> psutil.Process:
    """Start ``binary 120`` from a shell that exits at once: the child is re-parented.

    The shell prints the child's pid, so the wait is for that one process to have
    exec'd the binary; the deadline is generous because a loaded CI machine can
    take seconds to schedule a fork (a 5 s scan of every process once ran out).
    """
    done = subprocess.run(
        ["sh", "-c", f"'{binary}' 120 >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )
    proc = psutil.Process(int(done.stdout))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if proc.exe() == str(binary):
                return proc
        except (psutil.ZombieProcess, psutil.AccessDenied):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{binary} did not start: pid {proc.pid} never exec'd it")


def _session(root: Path, name: str, lock_pid: int | None) -> Path:
    """A pytest session directory ``root/name``, locked by ``lock_pid`` (None: no lock)."""
    session = root / name
    session.mkdir()
    if lock_pid is not None:
        (session / ".lock").write_text(str(lock_pid))
    return session


def _dead_pid() -> int:
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.slow  # waits for the orphan to be killed and reaped
def test_orphaned_server_under_the_root_is_killed(tmp_path: Path) -> None:
    session = _session(tmp_path, "pytest-1", lock_pid=_dead_pid())  # a SIGKILLed session
    fake = session / "mysqld"  # a copy of sleep(1) under a server's name
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


def test_an_orphan_of_a_session_still_running_is_left_alone(tmp_path: Path) -> None:
    """A session beside this one orphans a mysqld on purpose (test_farm): not a leftover."""
    session = _session(tmp_path, "pytest-2", lock_pid=os.getpid())
    fake = session / "mariadbd"
    shutil.copy("/bin/sleep", fake)
    proc = _orphan(fake)
    try:
        assert proc.ppid() == 1, "expected the shell's child to be re-parented to init"
        assert orphaned_test_servers(tmp_path) == []
        (session / ".lock").unlink()  # that session ends (pytest removes its lock)
        assert [p.pid for p in orphaned_test_servers(tmp_path)] == [proc.pid]
    finally:
        proc.kill()


def test_a_server_with_a_live_parent_is_not_an_orphan(tmp_path: Path) -> None:
    fake = tmp_path / "mariadbd"
    shutil.copy("/bin/sleep", fake)
    with subprocess.Popen([str(fake), "120"]) as child:
        try:
            assert orphaned_test_servers(tmp_path) == []  # its parent (this test) is alive
        finally:
            child.kill()
