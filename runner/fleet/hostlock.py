"""One measurement at a time per host: a host-wide lock file held for a whole run.

Two workers on one host (by mistake, or one per experiment) would disturb each other's
numbers. Each run is executed under an exclusive ``flock`` on ``<lock dir>/<host id>.lock``;
a second worker waits (and says so, naming the holder). The kernel drops the lock when its
holder dies, even by SIGKILL, so a crashed worker never blocks the host.

The lock directory is ``$FLUSHBENCH_LOCK_DIR``, else ``/run/lock/flushbench`` when it can be
created, else ``flushbench-locks`` in the temp dir. It must be local to the host (not NFS).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.errors import ConfigError

#: How often a waiting worker tries the lock again (it keeps its heartbeat meanwhile).
POLL_S = 0.5


def lock_dir() -> Path:
    """Where host lock files live (see the module docstring)."""
    configured = os.environ.get("FLUSHBENCH_LOCK_DIR")
    candidates = [Path(configured)] if configured else [
        Path("/run/lock/flushbench"), Path(tempfile.gettempdir()) / "flushbench-locks"]
    for path in candidates:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            return path
    raise ConfigError(
        "no writable directory for the host lock",
        where=", ".join(str(c) for c in candidates),
        fix="set FLUSHBENCH_LOCK_DIR to a local writable directory",
    )


class HostLock:
    """The exclusive lock serializing runs on one host id.

    Parameters
    ----------
    host_id:
        The host the lock stands for (``worker --host-id``): one lock file per host id.
    owner:
        Written into the lock file while held, so a waiting worker can name the holder.
    """

    def __init__(self, host_id: str, owner: str, directory: Path | None = None) -> None:
        self.path = (directory or lock_dir()) / f"{host_id}.lock"
        self.owner = owner
        self._fd: int | None = None

    def holder(self) -> str:
        """Who holds the lock, as its holder wrote it (best effort)."""
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another worker"
        return f"worker {info.get('owner', '?')} (run {info.get('run', '?')})"

    def acquire(
        self,
        run_label: str = "",
        on_wait: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
    ) -> bool:
        """Take the lock, waiting as long as needed; return False if ``stop`` was set first.

        ``on_wait`` is called once, with a sentence naming the holder, when the lock is busy.
        """
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and on_wait is not None:
                    on_wait(f"waiting for the host lock {self.path}: held by {self.holder()}")
                    told = True
                if stop is not None and stop.wait(POLL_S):
                    os.close(fd)
                    return False
                if stop is None:
                    time.sleep(POLL_S)
        self._fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"owner": self.owner, "pid": os.getpid(),
                                  "run": run_label}).encode(), 0)
        return True

    def release(self) -> None:
        """Drop the lock (closing the file releases the flock)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)
        self._fd = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None
