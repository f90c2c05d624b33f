"""A real server held still in the middle of a Go-driver run: ``FLUSH TABLES WITH READ LOCK``
from a second connection, for a stated time, while the runner measures.

Shared by the real-run tests that check what a stall becomes (tests/runner/
test_latency_real_run.py: a wait in the window's tail; test_fixed_rate_real_run.py: a queue
of starts falling due).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pymysql

from core.paths import tpcc_binary


def _driver_socket(deadline: float) -> str | None:
    """The socket this test's own ``tpcc run`` connects to, once it is running: a process of
    this test's tree (other tests beside it in parallel run drivers of their own)."""
    me = psutil.Process(os.getpid())
    while time.monotonic() < deadline:
        for proc in me.children(recursive=True):
            try:
                argv = proc.cmdline()
            except psutil.Error:  # gone, or a zombie: not the running driver
                continue
            if len(argv) > 3 and argv[0] == str(tpcc_binary()) and argv[1] == "run" \
                    and "-S" in argv:
                return argv[argv.index("-S") + 1]
        time.sleep(0.2)
    return None


def _block_the_server(hold_s: float, log: dict[str, float]) -> None:
    """Once the driver runs, wait for its measurement, then hold the global read lock."""
    socket = _driver_socket(time.monotonic() + 600)
    if socket is None:
        return
    time.sleep(4)  # its 2 s warmup and a few seconds of measurement
    conn = pymysql.connect(unix_socket=socket, user="root")
    try:
        with conn.cursor() as cur:
            cur.execute("FLUSH TABLES WITH READ LOCK")
            log["locked"] = time.monotonic()
            time.sleep(hold_s)
            cur.execute("UNLOCK TABLES")
            log["unlocked"] = time.monotonic()
    finally:
        conn.close()


@contextmanager
def server_blocked(hold_s: float) -> Iterator[dict[str, float]]:
    """Hold the server the next ``tpcc run`` drives for ``hold_s`` seconds, from a thread,
    while the body runs the experiment; then check the lock was held that long.

    Yields the lock's log (``locked``/``unlocked``, monotonic seconds).
    """
    held: dict[str, float] = {}
    blocker = threading.Thread(target=_block_the_server, args=(hold_s, held), daemon=True)
    blocker.start()
    yield held
    blocker.join(timeout=60)
    assert held.get("unlocked", 0) - held.get("locked", 0) >= hold_s, held
