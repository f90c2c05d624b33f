"""The run ledger: every statement that reads or changes the state of a run or a worker.

One job per module, all on the results database and nothing else (no host, no process, no
experiment model: what a statement needs of those, its caller passes in):

- :mod:`store.ledger.clock` — the database's clock, the one leases are written and read on;
- :mod:`store.ledger.enqueue` — putting an experiment's runs in the queue (the resume rules)
  and reading a queued experiment back;
- :mod:`store.ledger.claim` — claiming the next queued run under a lease (placement, hosts);
- :mod:`store.ledger.lease` — the lease's length, renewing it, who holds a run now;
- :mod:`store.ledger.takeover` — runs whose worker is gone: ``interrupted`` and queued again;
- :mod:`store.ledger.finish` — a run's final status, written after its last rows;
- :mod:`store.ledger.queue_edits` — cancelling queued runs, unpinning an experiment;
- :mod:`store.ledger.progress` — runs by status, what is left, how long a run takes;
- :mod:`store.ledger.workers` — the ``workers`` rows (register, heartbeat, stop, list);
- :mod:`store.ledger.runs` — attempts, a run's columns, its warnings, the run dirs a dead
  worker left;
- :mod:`store.ledger.rate_steps` — a rate search's steps: the steps stored, the next one
  queued;
- :mod:`store.ledger.recorder` — a run's rows as it produces them (intervals, samples,
  events, variables, metadata), buffered while the database blinks, one transaction per
  write.

The names below are the ledger's public face: ``from store import ledger`` then
``ledger.claim_next(…)``. The runner's orchestration (the worker's loop, the heartbeat thread,
the host lock) is ``runner.fleet``; ``tests/test_sql_home.py`` keeps these statements here.
"""

from store.ledger.claim import CLAIM_RETRIES, claim_next, claimable_experiments
from store.ledger.clock import db_now
from store.ledger.enqueue import (
    CellEntry,
    EnqueueResult,
    ExperimentEntry,
    Resume,
    StoredExperiment,
    enqueue,
    resume_decision,
    stored_experiment,
)
from store.ledger.finish import finish
from store.ledger.lease import LEASE_S, extend_lease, renew_lease, run_holder
from store.ledger.progress import queued_run_count, run_seconds, status_counts
from store.ledger.queue_edits import cancel, unpin
from store.ledger.rate_steps import (
    StepRow,
    queue_step,
    search_steps,
    searching_experiments,
    step_rate_of,
)
from store.ledger.takeover import mark_abandoned, queue_new_attempt, requeue_abandoned
from store.ledger.workers import (
    WorkerIdentity,
    mark_worker_stopped,
    record_heartbeat,
    register_worker,
    workers_heard_since,
)

__all__ = [
    "CLAIM_RETRIES",
    "LEASE_S",
    "CellEntry",
    "EnqueueResult",
    "ExperimentEntry",
    "Resume",
    "StoredExperiment",
    "StepRow",
    "WorkerIdentity",
    "cancel",
    "claim_next",
    "claimable_experiments",
    "db_now",
    "enqueue",
    "extend_lease",
    "finish",
    "mark_abandoned",
    "mark_worker_stopped",
    "queue_new_attempt",
    "queue_step",
    "queued_run_count",
    "record_heartbeat",
    "register_worker",
    "renew_lease",
    "requeue_abandoned",
    "resume_decision",
    "run_holder",
    "run_seconds",
    "search_steps",
    "searching_experiments",
    "status_counts",
    "step_rate_of",
    "stored_experiment",
    "unpin",
    "workers_heard_since",
]
