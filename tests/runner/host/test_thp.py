"""Transparent huge pages set around a real child process, restored, and restored after a
SIGKILL of the process that changed them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.errors import PreflightError
from runner.host.thp import (
    THP_MODES,
    ThpState,
    parse_selected,
    read_thp,
    restore_leftover_thp,
    thp_setting,
)

REPO = Path(__file__).resolve().parents[3]


def test_parse_selected() -> None:
    assert parse_selected("always [madvise] never\n") == "madvise"
    assert parse_selected("always defer defer+madvise [madvise] never") == "madvise"
    with pytest.raises(ValueError):
        parse_selected("always madvise never")


def test_read_thp_of_a_missing_dir(tmp_path: Path) -> None:
    assert read_thp(tmp_path) == ThpState(None, None)


def test_invalid_modes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="THP mode"), thp_setting("sometimes",
                                                                  state_file=tmp_path / "s"):
        pass
    with pytest.raises(ValueError, match="defrag"), thp_setting(defrag="hard",
                                                                state_file=tmp_path / "s"):
        pass


def _other_mode(current: str | None) -> str:
    return next(m for m in THP_MODES if m != current)


@pytest.mark.host_control("thp")
def test_set_around_a_real_child_and_restored(tmp_path: Path) -> None:
    state_file = tmp_path / "thp.json"
    original = read_thp()
    wanted = _other_mode(original.enabled)
    with thp_setting(wanted, "never", state_file=state_file) as inside:
        assert inside == ThpState(wanted, "never")
        saved = json.loads(state_file.read_text())
        assert (saved["enabled"], saved["defrag"]) == (original.enabled, original.defrag)
        seen = subprocess.run(["cat", "/sys/kernel/mm/transparent_hugepage/enabled"],
                              capture_output=True, text=True, check=True).stdout
        assert parse_selected(seen) == wanted
    assert read_thp() == original
    assert not state_file.exists()


@pytest.mark.host_control("thp")
def test_restored_when_the_block_raises(tmp_path: Path) -> None:
    original = read_thp()
    with pytest.raises(RuntimeError), thp_setting(_other_mode(original.enabled),
                                                  state_file=tmp_path / "s"):
        raise RuntimeError("mysqld crashed")
    assert read_thp() == original


CHANGER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from runner.host.thp import thp_setting
    with thp_setting(sys.argv[1], state_file=Path(sys.argv[2])):
        print("set", flush=True)
        sys.stdin.read()  # killed here, before it can restore
    """
)


@pytest.mark.host_control("thp")
def test_leftover_restored_after_sigkill(tmp_path: Path) -> None:
    state_file = tmp_path / "thp.json"
    original = read_thp()
    wanted = _other_mode(original.enabled)
    proc = subprocess.Popen(
        [sys.executable, "-c", CHANGER, wanted, str(state_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "set"
        assert read_thp().enabled == wanted
        # While its owner lives, nobody restores it, and a second run cannot take it.
        assert restore_leftover_thp(state_file) is None
        with pytest.raises(PreflightError, match=f"held by flushbench pid {proc.pid}"):
            with thp_setting(original.enabled, state_file=state_file):
                pass
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert read_thp().enabled == wanted  # the SIGKILL left the host changed
        assert restore_leftover_thp(state_file) == original
        assert read_thp() == original
        assert not state_file.exists()
        assert restore_leftover_thp(state_file) is None  # nothing left to do
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        if read_thp() != original:  # never leave the shared host changed
            with thp_setting(original.enabled, original.defrag, state_file=tmp_path / "x"):
                pass


def test_state_from_an_earlier_boot_is_discarded(tmp_path: Path) -> None:
    state_file = tmp_path / "thp.json"
    state_file.write_text(json.dumps({"owner_pid": 1, "owner_start": 0, "boot_id": "old-boot",
                                      "enabled": "always", "defrag": "always"}))
    fake_sysfs = tmp_path / "sys"
    fake_sysfs.mkdir()  # would be written to if the stale file were trusted
    assert restore_leftover_thp(state_file, thp_dir=fake_sysfs) is None
    assert not state_file.exists()
    assert list(fake_sysfs.iterdir()) == []
