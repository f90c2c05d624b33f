"""The disk policy of an overnight queue: what a queue needs, and which datadirs are kept.

A run restores a full copy of the dataset; at study scale keeping every run's datadir fills
any disk (24 runs × 10 warehouses is ~30 GB). So:

- a run's datadir is removed as soon as the run is recorded (its logs, my.cnf and evidence
  stay in the run directory);
- a failed run keeps its datadir for a post-mortem, but only the newest
  :data:`MAX_KEPT_FAILED` failed datadirs per experiment, and only while the disk keeps room
  for the next run's live copy;
- ``--keep-datadirs`` keeps every datadir (preflight then counts them all).

:func:`disk_needed` is what preflight and ``plan`` check against the free space, before any
server starts.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from store.models import RunStatus

#: Failed runs' datadirs kept per experiment (newest first); older ones are removed.
MAX_KEPT_FAILED = 3
#: Logs, my.cnf and evidence a run directory keeps after its datadir is gone.
LOG_BYTES_PER_RUN = 16 * 1024**2


@dataclass(frozen=True)
class DiskNeed:
    """What a queue needs on the work directory's filesystem, in bytes, by part."""

    snapshot: int
    live_datadir: int
    logs: int
    kept: int

    @property
    def total(self) -> int:
        """Everything together: the figure checked against the free space."""
        return self.snapshot + self.live_datadir + self.logs + self.kept

    def describe(self) -> str:
        """``snapshot 434M + live datadir 434M + logs 48M + kept datadirs 868M``."""
        from core.units import format_size

        def size(n: int) -> str:
            return format_size(round(n / 1024**2) * 1024**2) if n >= 1024**2 else f"{n}B"

        parts = [f"snapshot {size(self.snapshot)}", f"live datadir {size(self.live_datadir)}",
                 f"logs {size(self.logs)}"]
        if self.kept:
            parts.append(f"kept datadirs {size(self.kept)}")
        return " + ".join(parts)


def disk_needed(datadir_bytes: int, runs: int, *, keep_datadirs: bool) -> DiskNeed:
    """The disk a queue of ``runs`` needs when each datadir is ``datadir_bytes`` large.

    The snapshot and one live copy always; the logs of every run; with ``keep_datadirs``, the
    datadirs of all runs but the live one too.
    """
    kept = max(0, runs - 1) * datadir_bytes if keep_datadirs else 0
    return DiskNeed(snapshot=datadir_bytes, live_datadir=datadir_bytes,
                    logs=runs * LOG_BYTES_PER_RUN, kept=kept)


def _datadir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def dispose_datadir(datadir: Path, status: str, *, keep_datadirs: bool,
                    runs_dir: Path) -> str | None:
    """Apply the policy to a finished run's datadir; say what was done (None: nothing).

    Parameters
    ----------
    datadir:
        The run's datadir.
    status:
        ``done``, ``failed`` or ``interrupted``.
    keep_datadirs:
        Keep it whatever the status (``--keep-datadirs``).
    runs_dir:
        The experiment's run directories (``work/runs/NAME``), to cap the failed ones kept.
    """
    if keep_datadirs or not datadir.exists():
        return None
    if status != RunStatus.FAILED:
        shutil.rmtree(datadir, ignore_errors=True)
        return None
    size = _datadir_bytes(datadir)
    free = shutil.disk_usage(datadir).free
    if free < size:  # the next run's copy would not fit beside it
        shutil.rmtree(datadir, ignore_errors=True)
        return "datadir removed: keeping it would leave no room for the next run's copy"
    kept = sorted((p for p in runs_dir.glob("run-*/data") if p.is_dir() and p != datadir),
                  key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[MAX_KEPT_FAILED - 1:]:
        shutil.rmtree(old, ignore_errors=True)
    return f"datadir kept for a post-mortem (at most {MAX_KEPT_FAILED} per experiment)"
