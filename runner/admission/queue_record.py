"""An experiment as the run ledger keeps it: what is written when it is queued
(:func:`ledger_entry`, :func:`enqueue`), and what a worker reads back (:func:`load_queued`).

The statements are the ledger's (:mod:`store.ledger.enqueue`); this module only translates
between a :class:`~core.experiment.queued.QueuedExperiment` and the plain values the ledger
stores, and fills in this host's id where the ledger takes over a dead worker's runs.
"""

from __future__ import annotations

from core.experiment.cells import run_order
from core.experiment.hashes import measurement_hash
from core.experiment.queued import QueuedExperiment
from runner.host.identity import local_identity
from store import ledger
from store.db import ResultsDB


def ledger_entry(queued: QueuedExperiment) -> ledger.ExperimentEntry:
    """The values the ledger stores of ``queued``: the experiment row, its cells (with the
    translations preflight checked), and its runs in queue order."""
    exp, files = queued.exp, queued.files
    return ledger.ExperimentEntry(
        name=exp.name,
        measurement_hash=measurement_hash(exp, files),
        spec=exp.model_dump(mode="json"),
        files=files,
        placement=exp.placement,
        hosts=list(exp.hosts or []) or None,
        window=exp.resolved_window(),
        metric=exp.metric(),
        description=exp.description,
        source=queued.source,
        cells=[ledger.CellEntry(key=c.key, position=c.position, label=c.label,
                                is_baseline=c.is_baseline, knobs=c.knobs,
                                translation=queued.translations.get(c.key, {}))
               for c in queued.cells],
        runs=[(cell.key, repetition) for cell, repetition in run_order(exp, queued.cells)],
        # A rate search's first step (its later steps are queued as it goes).
        step_rates=({c.key: search.max_under.first_rate for c in queued.cells}
                    if (search := exp.workload.rate_search) is not None else {}),
    )


def enqueue(
    db: ResultsDB,
    queued: QueuedExperiment,
    *,
    fresh: bool = False,
    retry_failed: bool = False,
    host_id: str | None = None,
) -> ledger.EnqueueResult:
    """Put an experiment's runs in the queue, reusing finished runs of the same cells (the
    resume rules: :mod:`store.ledger.enqueue`). ``host_id``: default this host's."""
    return ledger.enqueue(db, ledger_entry(queued), fresh=fresh, retry_failed=retry_failed,
                          host_id=host_id or local_identity().host_id)


def load_queued(db: ResultsDB, experiment_id: int) -> QueuedExperiment:
    """Read a queued experiment back (:meth:`QueuedExperiment.from_stored`).

    Raises
    ------
    StoreError
        No such experiment, or one queued without its base config and server profile.
    """
    return QueuedExperiment.from_stored(*ledger.stored_experiment(db, experiment_id))
