"""A worker process that executes claimed runs without a server (see ``NullExecutor``).

``python -m tests.support.null_worker URL HOST_ID [HOLD_S] [LEASE_S] [IDLE_S] [CLASS]``: the real
worker loop (:func:`runner.fleet.worker.serve`) — heartbeat, host lock, atomic claims, takeovers —
around a run that starts nothing. Used by the claim race test and ``bench/claims_bench.py``.
"""

from __future__ import annotations

import signal
import sys

from runner.fleet.worker import WorkerOptions, serve
from runner.host.identity import local_identity
from store.db import ResultsDB
from tests.support.queueing import NullExecutor


def main(argv: list[str]) -> int:
    """Serve until the queue stays empty ``IDLE_S`` seconds; print the outcome."""
    # SIGTERM (the test's "stop") ends the loop after the current run: heartbeat stopped,
    # worker row marked stopped, outcome printed.
    options = WorkerOptions(poll_s=0.2)
    signal.signal(signal.SIGTERM, lambda *_: options.stop.set())
    # SIGUSR1 is what `flushbench queue stop` sends; `run` and `worker` stop between runs on it.
    signal.signal(signal.SIGUSR1, lambda *_: options.stop.set())
    url, host_id = argv[0], argv[1]
    hold_s = float(argv[2]) if len(argv) > 2 else 0.0
    lease_s = float(argv[3]) if len(argv) > 3 else 30.0
    idle_s = float(argv[4]) if len(argv) > 4 else 0.0
    host_class = argv[5] if len(argv) > 5 else None
    db = ResultsDB(url, create=False)
    options.lease_s, options.idle_timeout = lease_s, idle_s
    outcome = serve(db, local_identity(host_id, host_class), NullExecutor(db, hold_s),
                    lambda line: print(line, flush=True), options)
    print(f"outcome {dict(outcome.by_status)}", flush=True)
    db.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
