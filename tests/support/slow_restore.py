"""``python -m tests.support.slow_restore SECONDS flushbench-args...``: the real CLI, with every
datadir restore held SECONDS longer first — a stand-in for restoring a 50 GB datadir.

Only the restore's duration is played; the worker loop, heartbeat, claims, mysqld and the
driver around it are the real ones.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import runner.execute as execute


def main() -> None:
    """Patch the restore the worker calls, then run the flushbench CLI with the rest of argv."""
    delay = float(sys.argv[1])
    real_restore = execute.restore

    def slow_restore(*args: Any, **kwargs: Any) -> Any:
        time.sleep(delay)
        return real_restore(*args, **kwargs)

    execute.restore = slow_restore
    sys.argv = ["flushbench", *sys.argv[2:]]
    from flushbench.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
