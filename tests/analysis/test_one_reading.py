"""One command's reading of the store (analysis/reading/one_reading.py): inside a scope a
question asked again is not read again, each caller's frame is its own, and outside a scope
(a notebook beside a running queue) every call sees what was written since."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import event, update

from analysis.reading.one_reading import one_reading
from analysis.reading.query import open_for_reading, runs
from analysis.reading.series import intervals
from store.db import ResultsDB
from store.models import Run
from tests.support.db_shapes import one_cell_one_run


@pytest.fixture
def store(tmp_path: Path) -> ResultsDB:
    db = one_cell_one_run(tmp_path / "one.sqlite")
    yield db
    db.dispose()


def _statements(db: ResultsDB) -> list[str]:
    """Every SQL statement ``db``'s engine runs from now on."""
    seen: list[str] = []
    event.listen(db.engine, "before_cursor_execute",
                 lambda conn, cursor, statement, *rest: seen.append(statement))
    return seen


def _mark_failed(db: ResultsDB) -> None:
    with db.session() as s, s.begin():
        s.execute(update(Run).values(status="failed"))


def test_inside_a_scope_a_question_asked_again_reads_nothing(store: ResultsDB) -> None:
    with one_reading():
        first = runs(store, "shape")
        seen = _statements(store)
        again = runs(store, "shape")
        assert seen == []
        # Other arguments are another question.
        runs(store, "shape", all_attempts=True)
        assert seen
    pd.testing.assert_frame_equal(first, again)
    assert first.attrs == again.attrs


def test_each_caller_gets_its_own_frame(store: ResultsDB) -> None:
    with one_reading():
        first = runs(store, "shape")
        first["status"] = "changed"
        first.attrs["knobs"].append("not a knob")
        first_iv = intervals(store, "shape")
        first_iv.loc[:, "notpm"] = -1.0
        again = runs(store, "shape")
        again_iv = intervals(store, "shape")
    assert set(again["status"]) == {"done"}
    assert "not a knob" not in again.attrs["knobs"]
    assert len(again_iv) > 0 and (again_iv["notpm"] > 0).all()


def test_outside_a_scope_every_call_sees_what_was_written(store: ResultsDB) -> None:
    assert set(runs(store, "shape")["status"]) == {"done"}
    _mark_failed(store)
    assert set(runs(store, "shape")["status"]) == {"failed"}


def test_a_new_scope_reads_again(store: ResultsDB) -> None:
    with one_reading():
        assert set(runs(store, "shape")["status"]) == {"done"}
    _mark_failed(store)
    with one_reading():
        assert set(runs(store, "shape")["status"]) == {"failed"}


def test_a_path_is_opened_once_and_closed_and_a_handle_is_kept_open(tmp_path: Path,
                                                                  store: ResultsDB) -> None:
    path = tmp_path / "one.sqlite"
    with open_for_reading(path) as handle:
        assert isinstance(handle, ResultsDB) and handle is not store
        assert len(runs(handle, "shape")) == 1
    with open_for_reading(store) as handle:
        assert handle is store
    assert len(runs(store, "shape")) == 1  # still open
