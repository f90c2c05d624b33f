"""A rate search's steps in a real SQLite results database, no server: each step queued by the
worker's :class:`SearchAdvancer` from the stored steps, a killed step taken over at the same
rate, a step its worker stopped measured again when the file is run again, a fresh process
resuming at the next untried rate, two deciders never queueing the same step twice."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from sqlalchemy import select, update

from core.experiment.rate_search import MaxUnder, StepResult, answer, next_rate
from core.experiment.spec import ExperimentSpec
from runner.fleet.rate_search import SearchAdvancer
from runner.host.identity import local_identity
from store import ledger
from store.db import ResultsDB
from store.models import Run

SPEC = ExperimentSpec.model_validate({
    "version": 1, "name": "search", "dataset": {"warehouses": 1},
    "workload": {"driver": "tpcc", "duration": "20s", "warmup": "2s", "report_interval": "5s",
                 "rate": {"max_under": {"p99": "200ms", "start": 1000, "step": 500}}},
    "matrix": {"doublewrite": [True, False]},
})
TARGET: MaxUnder = SPEC.workload.rate_search.max_under  # type: ignore[union-attr]
#: Each cell's synthetic p99 at a rate: cell a holds up to 2,000 NOTPM, cell b to 1,000.
LIMITS = {"a": 2000.0, "b": 1000.0}


class CurveJudge:
    """A judge from a synthetic curve (what the analysis reads from a step's intervals);
    counts the steps it was asked about."""

    def __init__(self, cell_of_run: dict[int, str]) -> None:
        self.cell_of_run = cell_of_run
        self.calls: list[int] = []

    def __call__(self, db: ResultsDB, run_id: int, rate: float) -> StepResult:
        self.calls.append(run_id)
        limit = LIMITS[self.cell_of_run[run_id]]
        return StepResult(rate, 100.0 if rate <= limit else 900.0, rate, 0.0, run_id)


@pytest.fixture
def db(tmp_path: Path):  # noqa: ANN201 - a ResultsDB
    handle = ResultsDB(tmp_path / "results.sqlite")
    yield handle
    handle.dispose()


def search_entry() -> ledger.ExperimentEntry:
    """The search experiment as ``flushbench run FILE`` hands it to the ledger."""
    return ledger.ExperimentEntry(
        name="search", measurement_hash="h", spec=SPEC.model_dump(mode="json"), files=None,
        placement="spread", hosts=None, window={}, metric={}, description="", source="s.yaml",
        cells=[ledger.CellEntry(key=k, position=i, label=k, is_baseline=i == 0, knobs={},
                                translation={}) for i, k in enumerate(LIMITS)],
        runs=[(k, 1) for k in LIMITS],
        step_rates={k: TARGET.first_rate for k in LIMITS},
    )


def enqueue_search(db: ResultsDB) -> int:
    return ledger.enqueue(db, search_entry(), host_id="here").experiment_id


def cells_of_runs(db: ResultsDB, experiment_id: int) -> dict[int, str]:
    return {s.run_id: key for key, steps in ledger.search_steps(db, experiment_id).items()
            for s in steps}


def run_one(db: ResultsDB, exp_id: int, status: str = "done") -> int:
    """Claim the next queued step and finish it with ``status``; its run id."""
    me = local_identity("host-a")
    run_id = ledger.claim_next(db, exp_id, identity=me)
    assert run_id is not None
    if status != "running":
        assert ledger.finish(db, run_id, status, owner=me.owner)
    return run_id


def steps_of(db: ResultsDB, exp_id: int) -> dict[str, list[tuple[float | None, str]]]:
    return {k: [(s.rate, s.status) for s in v]
            for k, v in ledger.search_steps(db, exp_id).items()}


def test_first_steps_are_queued_at_the_start_rate(db: ResultsDB) -> None:
    exp_id = enqueue_search(db)
    assert steps_of(db, exp_id) == {"a": [(1000.0, "queued")], "b": [(1000.0, "queued")]}
    # What `run` and `plan` print for the cells' runs: steps, not repetitions.
    assert SPEC.repetitions_label() == "a rate search (1 run a step)"


def test_the_search_runs_to_its_answer_from_the_stored_steps(db: ResultsDB) -> None:
    exp_id = enqueue_search(db)
    judge = CurveJudge({})
    advancer = SearchAdvancer(db, judge)
    while True:
        judge.cell_of_run = cells_of_runs(db, exp_id)
        advancer.advance(exp_id)
        with db.session() as s:
            if ledger.queued_run_count(s, exp_id) == 0:
                break
        run_one(db, exp_id)
    stored = steps_of(db, exp_id)
    assert [r for r, _ in stored["a"]] == [1000, 1500, 2000, 2500]
    assert [r for r, _ in stored["b"]] == [1000, 1500]
    # Each done step was judged once, however many times the worker looked.
    assert len(judge.calls) == len(set(judge.calls)) == 6
    steps = [judge(db, s.run_id, s.rate) for s in ledger.search_steps(db, exp_id)["a"]]
    assert answer(TARGET, steps).best.rate == 2000  # type: ignore[union-attr]


def test_a_killed_step_is_retried_at_its_rate_then_the_search_resumes(db: ResultsDB) -> None:
    exp_id = enqueue_search(db)
    run_one(db, exp_id)  # a: 1000 done
    run_one(db, exp_id)  # b: 1000 done
    first = SearchAdvancer(db, CurveJudge(cells_of_runs(db, exp_id)))
    first.advance(exp_id)  # a → 1500, b → 1500
    killed = run_one(db, exp_id, status="running")  # a's 1500 step: its worker dies
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    with db.session() as s, s.begin():
        s.execute(update(Run).where(Run.id == killed).values(lease_expires_at=past))
        taken = ledger.requeue_abandoned(s, exp_id, host_id="host-b")
    assert [old for old, _new in taken] == [killed]
    with db.session() as s:
        again = s.get(Run, taken[0][1])
        assert again is not None
        assert (again.step_rate, again.repetition, again.attempt) == (1500.0, 2, 2)
    # A new process (nothing cached) decides only from the stored steps.
    for _ in range(2):
        run_one(db, exp_id)  # b 1500 (fails), a 1500 attempt 2 (holds)
    fresh = SearchAdvancer(db, CurveJudge(cells_of_runs(db, exp_id)))
    fresh.advance(exp_id)
    assert steps_of(db, exp_id) == {
        "a": [(1000.0, "done"), (1500.0, "done"), (2000.0, "queued")],
        "b": [(1000.0, "done"), (1500.0, "done")],
    }


def test_a_failed_step_stops_its_cells_search(db: ResultsDB) -> None:
    exp_id = enqueue_search(db)
    run_one(db, exp_id, status="failed")  # a's first step: the server refused
    run_one(db, exp_id)
    SearchAdvancer(db, CurveJudge(cells_of_runs(db, exp_id))).advance(exp_id)
    stored = steps_of(db, exp_id)
    assert stored["a"] == [(1000.0, "failed")]
    assert stored["b"] == [(1000.0, "done"), (1500.0, "queued")]


def test_two_deciders_queue_a_step_once(db: ResultsDB) -> None:
    exp_id = enqueue_search(db)
    run_one(db, exp_id)
    run_one(db, exp_id)
    judge = CurveJudge(cells_of_runs(db, exp_id))
    first = SearchAdvancer(db, judge).advance(exp_id)
    second = SearchAdvancer(db, judge).advance(exp_id)
    assert len(first) == 2 and second == []
    # A decision taken from stale steps (step 1 seen, step 2 queued since) is refused.
    assert ledger.queue_step(db, exp_id, "a", 9999.0, after=1) is None
    with db.session() as s:
        assert 9999.0 not in set(s.scalars(select(Run.step_rate)))


def test_resume_of_the_file_keeps_the_steps(db: ResultsDB) -> None:
    exp_id = enqueue_search(db)
    run_one(db, exp_id)
    run_one(db, exp_id)
    SearchAdvancer(db, CurveJudge(cells_of_runs(db, exp_id))).advance(exp_id)
    before = steps_of(db, exp_id)
    assert enqueue_search(db) == exp_id  # `flushbench run FILE` again
    assert steps_of(db, exp_id) == before
    assert next_rate(TARGET, []) == 1000


def test_a_step_the_judge_cannot_read_stops_that_search_only_and_is_said_once(
        db: ResultsDB) -> None:
    from core.errors import AnalysisError

    exp_id = enqueue_search(db)
    run_one(db, exp_id)

    def broken(db: ResultsDB, run_id: int, rate: float) -> StepResult:
        raise AnalysisError("unreadable", where=f"run {run_id}")

    advancer = SearchAdvancer(db, broken)
    said = advancer.advance()
    assert len(said) == 1 and "not moved on" in said[0] and "unreadable" in said[0]
    assert advancer.advance() == []
    with db.session() as s:
        assert ledger.queued_run_count(s, exp_id) == 1  # b's first step, untouched


def enqueue_search_again(db: ResultsDB, **flags: bool) -> ledger.EnqueueResult:
    """``flushbench run FILE`` again (``fresh``, ``retry_failed`` as its flags)."""
    return ledger.enqueue(db, search_entry(), host_id="here", **flags)


def stop_a_later_step(db: ResultsDB, status: str) -> tuple[int, int]:
    """Both first steps done, the search moved on, a's second step (1,500 NOTPM) ended with
    ``status`` by its own worker (``queue stop --now``: interrupted; a crash: failed). Returns
    the experiment id and that step's run id."""
    exp_id = enqueue_search(db)
    run_one(db, exp_id)
    run_one(db, exp_id)
    SearchAdvancer(db, CurveJudge(cells_of_runs(db, exp_id))).advance(exp_id)
    return exp_id, run_one(db, exp_id, status=status)


@pytest.mark.parametrize("fresh", [False, True])
def test_a_later_step_stopped_by_its_worker_is_measured_again_on_resume(
        db: ResultsDB, fresh: bool) -> None:
    exp_id, stopped = stop_a_later_step(db, "interrupted")
    result = enqueue_search_again(db, fresh=fresh)
    with db.session() as s:
        again = s.scalars(select(Run).where(Run.cell_id == s.get(Run, stopped).cell_id,
                                            Run.repetition == 2, Run.attempt == 2)).one()
        assert (again.status, again.step_rate) == ("queued", 1500.0)
    assert result.requeued == (3 if fresh else 1)  # --fresh: the two first steps too
    # The search goes on from it: a holds 1,500, so its next step is 2,000.
    for _ in range(3 if fresh else 2):
        run_one(db, exp_id)
    SearchAdvancer(db, CurveJudge(cells_of_runs(db, exp_id))).advance(exp_id)
    assert [r for r, _ in steps_of(db, exp_id)["a"]] == [1000.0, 1500.0, 2000.0]


def test_a_later_step_that_crashed_is_kept_unless_retry_failed(db: ResultsDB) -> None:
    exp_id, crashed = stop_a_later_step(db, "failed")
    assert enqueue_search_again(db).kept_failed == 1
    assert steps_of(db, exp_id)["a"][-1] == (1500.0, "failed")
    assert enqueue_search_again(db, retry_failed=True).requeued == 1
    assert steps_of(db, exp_id)["a"][-1] == (1500.0, "queued")
