"""A rate search end to end on the Debian MariaDB with the Go driver (``workload.rate:
{max_under: …}``): two steps of 15 s by bisection between 600 NOTPM (far below what one
warehouse answers) and 1,000,000 (which no server answers with one connection), the search's
`max_steps` (the midpoints a bisection goes on to are the synthetic curves' tests,
tests/core/experiment/test_rate_search.py). Each step is
a run holding its own rate; the answer is the rate that held, its evidence stored and printed
by ``compare`` and ``show``; running the file again measures nothing more. One connection,
the tiny runs' own: the step beyond reach runs flat out for all its seconds (a third step, the
midpoint, doubled that), and two connections took both cores from the test workers beside
them."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest
from sqlalchemy import select

from analysis.report.build import build_report_model
from analysis.report.first_screen import heading_text
from analysis.report.model import Bullets, Heading, Value
from analysis.report.writer import write_report
from analysis.response.rate_search import CellSearch, judge_step, searches
from runner.fleet.worker import run_experiment
from store.db import ResultsDB
from store.models import Run
from tests.support.cli_runner import CliRun
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

SEARCH = "rate: {max_under: {p99: 2s, max_steps: 2, bisect: {low: 600, high: 1000000, " \
         "resolution: 1000}}}"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))


def test_a_search_on_a_real_cell_answers_with_a_rate_it_held(tmp_path: Path, work: Path,
                                                              cli: CliRun) -> None:
    path = tiny_tpcc_experiment(tmp_path, "rate-search", duration="15s", report_interval="5s",
                                sampling="5s", workload=SEARCH)
    code, out, err = cli(["plan", str(path)])
    assert code == 0, err
    said = " ".join(out.replace("│", " ").split())
    assert "a rate search: the runs above are each cell's first step, at 600 NOTPM" in said, said
    assert "at most 2 — up to 2 runs" in said, said
    db_path = tmp_path / "r.sqlite"
    db = ResultsDB(db_path)
    outcome = run_experiment(path, db, work=work, judge=judge_step)
    assert (outcome.done, outcome.failed) == (2, 0)
    with db.session() as s:
        runs = list(s.scalars(select(Run).order_by(Run.repetition)))
        steps = [(r.repetition, r.step_rate, r.driver_summary["rate"]["target_notpm"])
                 for r in runs]
    # low, then high (the low one held); each rate reached the driver. What held and what
    # failed are the search's two steps: it is over.
    assert steps == [(1, 600, 600), (2, 1_000_000, 1_000_000)]
    (cell,) = searches(db, outcome.experiment_id)
    assert cell.found.finished
    assert cell.found.best is not None, cell.text
    assert cell.found.best.rate == 600, cell.text
    assert {s.rate for s in cell.found.steps} == {600, 1_000_000}
    assert "achieved" in "; ".join(cell.found.lowest_failure.failures(cell.target))  # type: ignore[union-attr]

    code, out, err = cli(["compare", "rate-search", "--db", str(db_path)])
    assert code == 0, err
    said = " ".join(out.replace("│", " ").split())
    assert "highest rate under p99 2000 ms: 600 NOTPM (held at 600: p99" in said, said
    assert "failed at 1,000,000" in said and "not by pooled throughput" in said, said
    code, out, err = cli(["show", str(runs[0].id), "--db", str(db_path)])
    assert code == 0, err
    said = " ".join(out.replace("│", " ").split())
    assert "this step at 600 NOTPM held; highest rate under" in said, said

    # The report answers as compare does and pools nothing across the steps.
    check_the_report(db_path, cell, tmp_path / "report")

    # Run again: the steps are kept and the search is over — nothing is measured.
    again = run_experiment(path, db, work=work, judge=judge_step)
    assert (again.done, again.failed) == (0, 0)
    with db.session() as s:
        assert len(list(s.scalars(select(Run)))) == 2


def check_the_report(db_path: Path, cell: CellSearch, out: Path) -> None:
    """The report of the search: its verdict is the answer, its rate-search part lists the
    two steps with the rate that held ringed in the figure, and no part that pools a row's
    runs (the ranking, the grids, latency, knob effects) is on the page."""
    model = build_report_model(db_path, "rate-search")
    headings = [heading_text(b) for section in model.sections for b in section
                if isinstance(b, Heading)]
    assert "The highest rate under the target" in headings, headings
    for pooled in ("Ranking", "Every row at once", "Response time", "Knob effects"):
        assert not any(h.startswith(pooled) for h in headings), headings
    verdict = model.sections[0][1]
    assert isinstance(verdict, Bullets)
    said = " ".join(str(p.value) for item in verdict.items for p in item
                    if isinstance(p, Value))
    assert "highest rate under p99 2000 ms: 600 NOTPM" in said, said
    (figure,) = [f for f in model.figures if f.slug.endswith("-rate-search")]
    fig = go.Figure(figure.figure)
    line = next(t for t in fig.data if t.mode == "lines+markers")
    drawn = sorted(s.rate for s in cell.found.steps if s.p99_ms > 0)
    assert list(line.x) == drawn and line.meta == {"cell": cell.cell_id}
    ring = next(t for t in fig.data if t.mode == "markers")
    assert list(ring.x) == [600]
    page = write_report(db_path, "rate-search", out, png=False).read_text()
    assert "1,000,000" in page and "The highest rate under the target" in page
