"""Queue experiments without a server (no preflight): the claim path's tests and benchmark.

The runs are real queue rows, exactly as ``queue add`` writes them; only the per-cell
translation (what a real worker would run) is left empty, since these runs are executed by
:class:`NullExecutor`, which starts no mysqld.
"""

from __future__ import annotations

import os
import time
from typing import Any

from core.experiment.cells import expand
from core.experiment.queued import QueuedExperiment
from core.experiment.spec import ExperimentSpec
from runner.admission import queue_record
from runner.fleet.lease import Heartbeat
from store import ledger
from store.db import ResultsDB
from store.models import RunEvent


def enqueue_plain(
    db: ResultsDB, name: str, runs: int, *, placement: str = "one",
    hosts: list[str] | None = None, cells: int = 2,
) -> int:
    """Queue ``runs`` runs (``cells`` cells × repetitions) of a tiny tpcc experiment."""
    assert runs % cells == 0
    spec: dict[str, Any] = {
        "version": 1, "name": name, "dataset": {"workload": "tpcc", "warehouses": 1},
        "repetitions": runs // cells, "placement": placement, "hosts": hosts or [],
        "matrix": {"max_dirty_pages_pct": [50 + i for i in range(cells)]},
    }
    exp = ExperimentSpec.model_validate(spec)
    queued = QueuedExperiment(exp, f"{name}.yaml", expand(exp, f"{name}.yaml"))
    return queue_record.enqueue(db, queued).experiment_id


class NullExecutor:
    """Executes a claimed run without a server: records who ran it, then finishes it ``done``.

    The claim, lease, host lock and takeover path around it is the real one
    (:func:`runner.fleet.worker.serve`). ``hold_s`` keeps each run for a while (the heartbeat
    keeps its lease meanwhile).
    """

    def __init__(self, db: ResultsDB, hold_s: float = 0.0) -> None:
        self.db = db
        self.hold_s = hold_s
        self.prepared: list[int] = []

    def prepare(self, experiment_id: int) -> None:
        """Nothing to build: no dataset."""
        self.prepared.append(experiment_id)

    def execute(self, run_id: int, heartbeat: Heartbeat) -> str:
        """Record a ``ran`` event naming this worker, hold, finish while still the owner."""
        owner = heartbeat.identity.owner
        with self.db.session() as s, s.begin():
            s.add(RunEvent(run_id=run_id, level="info", kind="ran",
                           message=f"{owner} pid {os.getpid()}"))
        deadline = time.monotonic() + self.hold_s
        while time.monotonic() < deadline:
            heartbeat.check()
            time.sleep(min(0.1, self.hold_s))
        heartbeat.release()
        if not ledger.finish(self.db, run_id, "done", owner=owner):
            return "interrupted"
        return "done"


def one_running_run(db: ResultsDB, name: str) -> int:
    """A bare experiment → cell → run (status ``running``) for what writes to a run row.

    No spec, no translation: for tests of the recorder, the log and redaction, which need a
    run id in a real database and nothing else.
    """
    from store.models import Cell, Experiment, Run

    with db.session() as s, s.begin():
        e = Experiment(name=name, measurement_hash="x", spec={}, window={}, metric={})
        s.add(e)
        s.flush()
        c = Cell(experiment_id=e.id, cell_key="k", position=0, label="default", knobs={},
                 variables={}, is_baseline=True)
        s.add(c)
        s.flush()
        r = Run(cell_id=c.id, repetition=1, order_index=0, status="running")
        s.add(r)
        s.flush()
        return r.id
