"""``python -m tests.support.slow_restore SECONDS flushbench-args...``: the real CLI, with every
datadir restore held SECONDS longer first — a stand-in for restoring a 50 GB datadir.

Only the restore's duration is played; the worker loop, heartbeat, claims, mysqld and the
driver around it are the real ones. With ``GATE_ENV`` set to a path, the restore first waits
until that file exists, then SECONDS: a test opens the gate once the other workers it wants
to watch the restore are up (on a loaded host a Python process can take half a minute).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import runner.run.execute as execute

#: Environment variable naming the file whose existence starts the restore's SECONDS.
GATE_ENV = "FLUSHBENCH_TEST_RESTORE_GATE"
#: Bound on waiting for the gate (never an assertion on time: the test fails on its own wait).
GATE_PATIENCE_S = 600


def main() -> None:
    """Patch the restore the worker calls, then run the flushbench CLI with the rest of argv."""
    delay = float(sys.argv[1])
    real_restore = execute.restore

    def slow_restore(*args: Any, **kwargs: Any) -> Any:
        gate = os.environ.get(GATE_ENV)
        deadline = time.monotonic() + GATE_PATIENCE_S
        while gate and not Path(gate).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(delay)
        return real_restore(*args, **kwargs)

    execute.restore = slow_restore
    sys.argv = ["flushbench", *sys.argv[2:]]
    from flushbench.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
