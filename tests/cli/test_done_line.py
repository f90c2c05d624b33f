"""The worker's "run N done" line says the run's figures, also when a rerun already replaces it."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from sqlalchemy import select

from flushbench.cli.logs import LogReporter
from store.db import ResultsDB
from store.models import Run
from tests.support.synthetic_store import SynthCell, build_store


def test_done_line_of_a_run_whose_rerun_is_queued(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "r.sqlite")
    build_store(db, [SynthCell(knobs={"doublewrite": True}, notpm=8000)], name="lines",
                repetitions=1, warmup=10, duration=120, n_counters=10)
    with db.session() as s, s.begin():
        (run,) = s.scalars(select(Run)).all()
        run_id = run.id
        # What the rerun policy adds for a disturbed run: a newer attempt, queued.
        s.add(Run(cell_id=run.cell_id, repetition=run.repetition, attempt=run.attempt + 1,
                  order_index=99))
    stream = io.StringIO()
    with LogReporter(db, None, stream=stream) as reporter:
        reporter.run_started(1, 2, SimpleNamespace(label="doublewrite=on"), 1, run_id)
        reporter.run_finished(run_id, "done", None)
    db.dispose()
    line = stream.getvalue().splitlines()[-1]
    assert f"run {run_id} done: cell doublewrite=on, repetition 1, NOTPM " in line, line
    assert "no summary" not in line and "(window mean)" in line


def test_a_named_row_is_called_by_its_name(tmp_path: Path) -> None:
    """A cell an include row names is "row NAME" in the worker's lines, as in the summary
    table; a matrix cell is "cell LABEL"."""
    from core.experiment.cells import expand
    from core.experiment.loading import load_experiment
    from core.paths import EXPERIMENTS_DIR
    from flushbench.cli.logs import cell_called

    path = EXPERIMENTS_DIR / "mysql-9.7-io-capacity.yaml"
    cells = expand(load_experiment(path), str(path))
    assert [cell_called(c) for c in cells] == [
        "row io-10000", "row io-10000-dw-off", "row io-200", "row io-200-dw-off"]
    matrix = expand(load_experiment(EXPERIMENTS_DIR / "quickstart.yaml"))
    assert all(cell_called(c) == f"cell {c.label}" for c in matrix)
    stream = io.StringIO()
    with LogReporter(ResultsDB(tmp_path / "r.sqlite"), None, stream=stream) as reporter:
        reporter.run_started(1, 12, cells[2], 1, 7)
    assert "run 7 started: row io-200, repetition 1 (1/12)" in stream.getvalue()
