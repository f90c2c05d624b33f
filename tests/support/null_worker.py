"""A worker process that executes claimed runs without a server (see ``NullExecutor``).

``python -m tests.support.null_worker URL HOST_ID [HOLD_S] [LEASE_S] [IDLE_S]``: the real
worker loop (:func:`runner.worker.serve`) — heartbeat, host lock, atomic claims, takeovers —
around a run that starts nothing. Used by the claim race test and ``bench/claims_bench.py``.
"""

from __future__ import annotations

import sys

from runner.identity import local_identity
from runner.worker import WorkerOptions, serve
from store.db import ResultsDB
from tests.support.queueing import NullExecutor


def main(argv: list[str]) -> int:
    """Serve until the queue stays empty ``IDLE_S`` seconds; print the outcome."""
    url, host_id = argv[0], argv[1]
    hold_s = float(argv[2]) if len(argv) > 2 else 0.0
    lease_s = float(argv[3]) if len(argv) > 3 else 30.0
    idle_s = float(argv[4]) if len(argv) > 4 else 0.0
    db = ResultsDB(url, create=False)
    outcome = serve(db, local_identity(host_id), NullExecutor(db, hold_s),
                    lambda line: print(line, flush=True),
                    WorkerOptions(lease_s=lease_s, idle_timeout=idle_s, poll_s=0.2))
    print(f"outcome {dict(outcome.by_status)}", flush=True)
    db.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
