"""Moving rate searches on (``workload.rate: {max_under: …}``; docs/tpcc.md, "The highest
rate under a target").

After each run, and before a worker looks for work, every search whose cell has no step queued
or running is given its next step: its finished steps are judged (a ``StepJudge``: the
analysis's window p99, achieved rate and stalls, handed down by the command, since the runner
does not import the analysis), the experiment model picks the next rate
(:func:`core.experiment.rate_search.next_rate`) and the ledger queues it
(:func:`store.ledger.rate_steps.queue_step`). Everything is decided from the stored steps, so
a search a killed worker left resumes where it stood; a step that failed (the server refused,
the driver died) stops its cell's search, which ``show`` and ``compare`` say.
"""

from __future__ import annotations

from collections.abc import Callable

from core.errors import FlushbenchError
from core.experiment.rate_search import StepResult, next_rate
from core.experiment.stored import StoredExperiment
from store import ledger
from store.db import ResultsDB
from store.models import RunStatus

#: Judges one done step: (results database, run id, the step's rate) → its figures.
StepJudge = Callable[[ResultsDB, int, float], StepResult]


class SearchAdvancer:
    """Queues the next step of each rate search that has none queued; judged steps are kept
    (a step's figures do not change once it is done)."""

    def __init__(self, db: ResultsDB, judge: StepJudge) -> None:
        self.db = db
        self.judge = judge
        self._judged: dict[int, StepResult] = {}
        self._stuck: set[int] = set()

    def advance(self, experiment_id: int | None = None) -> list[str]:
        """Queue the next steps (of one experiment, or of every one with steps); return one
        line per step queued or search finished, for the worker's log."""
        ids = [experiment_id] if experiment_id is not None else \
            ledger.searching_experiments(self.db)
        lines: list[str] = []
        for exp_id in ids:
            try:
                lines += self._advance_experiment(exp_id)
            except FlushbenchError as exc:
                # A spec this flushbench no longer reads, a step the analysis cannot judge:
                # that search waits (said once), the worker serves the rest of the queue.
                if exp_id not in self._stuck:
                    self._stuck.add(exp_id)
                    lines.append(f"rate search of experiment {exp_id} not moved on:"
                                 f" {exc.render()}")
        return lines

    def _advance_experiment(self, experiment_id: int) -> list[str]:
        stored = ledger.stored_experiment(self.db, experiment_id)
        search = StoredExperiment(experiment_id, stored.name, stored.spec).spec \
            .workload.rate_search
        if search is None:
            return []
        target = search.max_under
        lines = []
        for cell_key, steps in ledger.search_steps(self.db, experiment_id).items():
            if any(s.status != RunStatus.DONE for s in steps):
                continue  # a step queued or running, or one that failed: nothing to decide
            judged = [self._judge(s) for s in steps if s.rate is not None]
            rate = next_rate(target, judged)
            last = judged[-1] if judged else None
            said = (f"{last.rate:,.0f} NOTPM {'held' if last.held(target) else 'failed'}"
                    if last is not None else "")
            if rate is None:
                continue
            run_id = ledger.queue_step(self.db, experiment_id, cell_key, rate,
                                       after=max((s.step for s in steps), default=0))
            if run_id is not None:
                lines.append(f"rate search of {stored.name} cell {cell_key}: {said};"
                             f" next step at {rate:,.0f} NOTPM (run {run_id})")
        return lines

    def _judge(self, step: ledger.StepRow) -> StepResult:
        if step.run_id not in self._judged:
            assert step.rate is not None
            self._judged[step.run_id] = self.judge(self.db, step.run_id, step.rate)
        return self._judged[step.run_id]
