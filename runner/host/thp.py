"""Transparent huge pages as a per-run host setting, restored afterwards even after a SIGKILL.

THP is one host-wide switch (``/sys/kernel/mm/transparent_hugepage/enabled``, plus ``defrag``
for how hard the kernel tries to find huge pages at fault time). A run that asks for a mode
sets it before mysqld starts and puts the original back when mysqld has stopped.

Crash safety: the original values are written to a state file (fsynced, atomically renamed)
*before* the first change. If flushbench dies before restoring, the file is still there and
names its owner (pid, start time, boot id); :func:`restore_leftover_thp` — called by the next
flushbench at start-up — puts the original values back when that owner is gone. After a
reboot the kernel has already reset THP to its boot default, so a state file from an earlier
boot is discarded without writing anything.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.errors import PreflightError
from runner.host.cgroups import proc_start_time

THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
#: Host-wide, survives flushbench but not a reboot on most systems (/run is a tmpfs).
DEFAULT_STATE_FILE = Path("/run/flushbench/thp-saved.json")

ThpMode = Literal["always", "madvise", "never"]
THP_MODES: tuple[str, ...] = ("always", "madvise", "never")
DEFRAG_MODES: tuple[str, ...] = ("always", "defer", "defer+madvise", "madvise", "never")


@dataclass(frozen=True)
class ThpState:
    """The THP settings in force: ``enabled`` and ``defrag`` (None if the file is absent)."""

    enabled: str | None
    defrag: str | None

    def as_record(self) -> dict[str, str | None]:
        """For run metadata: ``thp_enabled``, ``thp_defrag``."""
        return {"thp_enabled": self.enabled, "thp_defrag": self.defrag}


def parse_selected(text: str) -> str:
    """The bracketed choice of a sysfs selector: ``always [madvise] never`` -> ``madvise``."""
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    raise ValueError(f"no [selected] value in {text!r}")


def read_thp(thp_dir: Path = THP_DIR) -> ThpState:
    """The current THP mode and defrag setting (None where the kernel has no THP)."""

    def one(name: str) -> str | None:
        try:
            return parse_selected((thp_dir / name).read_text())
        except (OSError, ValueError):
            return None

    return ThpState(one("enabled"), one("defrag"))


def _write_selector(thp_dir: Path, name: str, value: str) -> None:
    try:
        (thp_dir / name).write_text(value)
    except OSError as exc:
        raise PreflightError(
            f"cannot set transparent huge pages {name} to {value}: {exc.strerror}",
            str(thp_dir / name),
            "run flushbench as root, or drop the `transparent_hugepages` knob from the experiment",
        ) from None


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _owner_alive(state: dict) -> bool:
    pid = int(state.get("owner_pid", -1))
    return pid > 0 and proc_start_time(pid) == state.get("owner_start")


def _save_state(state_file: Path, original: ThpState) -> None:
    state_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = state_file.with_name(state_file.name + f".{os.getpid()}.tmp")
    payload = {
        "owner_pid": os.getpid(),
        "owner_start": proc_start_time(os.getpid()),
        "boot_id": _boot_id(),
        "enabled": original.enabled,
        "defrag": original.defrag,
    }
    with open(tmp, "w") as f:
        json.dump(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, state_file)  # atomic: a reader sees the old file or the whole new one


def restore_leftover_thp(
    state_file: Path = DEFAULT_STATE_FILE, thp_dir: Path = THP_DIR
) -> ThpState | None:
    """Put back THP settings a dead flushbench changed and never restored.

    Returns
    -------
    ThpState | None
        The settings restored, or None when there was nothing to do (no state file, its owner
        is still running, or it is from an earlier boot — then it is only deleted).
    """
    try:
        state = json.loads(state_file.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        state_file.unlink(missing_ok=True)  # unreadable: nothing trustworthy to restore
        return None
    if state.get("boot_id") != _boot_id():
        state_file.unlink(missing_ok=True)
        return None
    if _owner_alive(state):
        return None
    original = ThpState(state.get("enabled"), state.get("defrag"))
    _restore(original, thp_dir)
    state_file.unlink(missing_ok=True)
    return original


def _restore(original: ThpState, thp_dir: Path) -> None:
    if original.enabled is not None:
        _write_selector(thp_dir, "enabled", original.enabled)
    if original.defrag is not None:
        _write_selector(thp_dir, "defrag", original.defrag)


@contextlib.contextmanager
def thp_setting(
    enabled: str | None = None,
    defrag: str | None = None,
    *,
    state_file: Path = DEFAULT_STATE_FILE,
    thp_dir: Path = THP_DIR,
) -> Iterator[ThpState]:
    """Set THP ``enabled``/``defrag`` for the block's duration; restore the originals after.

    Enter it before mysqld starts and leave it after mysqld has exited. Yields the state in
    force inside the block (read back from sysfs).

    Raises
    ------
    ValueError
        On a mode the kernel does not offer.
    PreflightError
        If THP is not available, the files are not writable (not root), or another live
        flushbench holds the setting (two runs must not fight over a host-wide switch).
    """
    if enabled is not None and enabled not in THP_MODES:
        raise ValueError(f"THP mode must be one of {', '.join(THP_MODES)}, got {enabled!r}")
    if defrag is not None and defrag not in DEFRAG_MODES:
        raise ValueError(f"THP defrag must be one of {', '.join(DEFRAG_MODES)}, got {defrag!r}")
    original = read_thp(thp_dir)
    if enabled is None and defrag is None:
        yield original
        return
    if original.enabled is None:
        raise PreflightError("this kernel has no transparent huge pages", str(thp_dir),
                             "drop the `transparent_hugepages` knob"
                             " (CONFIG_TRANSPARENT_HUGEPAGE is off)")
    restore_leftover_thp(state_file, thp_dir)
    try:
        held = json.loads(state_file.read_text())
    except (OSError, ValueError):
        held = None
    if held is not None:
        raise PreflightError(
            f"transparent huge pages are held by flushbench pid {held.get('owner_pid')}",
            str(state_file),
            "wait for that run to finish; runs that set THP cannot share a host",
        )
    original = read_thp(thp_dir)  # the leftover restore may have changed it
    try:
        _save_state(state_file, original)
    except OSError as exc:
        raise PreflightError(
            f"cannot save the THP settings before changing them: {exc.strerror}",
            str(state_file),
            "run flushbench as root (the state file lets a later run restore THP after a crash)",
        ) from None
    try:
        if enabled is not None:
            _write_selector(thp_dir, "enabled", enabled)
        if defrag is not None:
            _write_selector(thp_dir, "defrag", defrag)
        yield read_thp(thp_dir)
    finally:
        # The state file goes only once the originals are back: if restoring fails, the next
        # flushbench (restore_leftover_thp) tries again.
        _restore(original, thp_dir)
        state_file.unlink(missing_ok=True)
