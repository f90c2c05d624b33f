"""Response time where people read it: ``compare`` (a p99 verdict per cell, lower = better),
``show`` (beside the stability score), the report (its section, figures and per-type table),
``plot compare --metric p99``; exact figures named exact, the driver's own named so, runs
without histograms named — on a synthetic Go-driver store and copies of the committed studies
(tpcc_start, the Go driver before histograms, sysbench)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.figures.small_multiples import STALL_COLOUR, latency_grid_spec
from analysis.report.build import build_report_model
from analysis.report.render import sections_html
from analysis.response import latency
from analysis.tables.frames import load
from core.errors import AnalysisError
from flushbench.cli import build_app
from tests.support.synthetic_store import SynthCell, build_store


@pytest.fixture(scope="module")
def go_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Go-driver runs with histograms: the baseline, a cell 1.6 × slower to respond, and one
    whose throughput falls to a fifth every 300 s."""
    path = tmp_path_factory.mktemp("latency-views") / "results.sqlite"
    build_store(path, [SynthCell(knobs={"doublewrite": True, "io_capacity": 200}, notpm=30000),
                       SynthCell(knobs={"doublewrite": False, "io_capacity": 200}, notpm=30000,
                                 latency_scale=1.6),
                       SynthCell(knobs={"doublewrite": False, "io_capacity": 400},
                                 notpm=30000, hole_every_s=300.0)],
                name="go", repetitions=4, warmup=30, duration=600, n_counters=40, seed=5)
    return path


def _latency_block(out: str) -> str:
    start = out.index("Response time:")
    return out[start:out.index("Cost per", start)]


def test_compare_prints_a_p99_verdict_per_cell(go_db: Path, cli) -> None:  # noqa: ANN001
    code, out, err = cli(["compare", "go", "--db", str(go_db)])
    assert code == 0, err
    block = _latency_block(out)
    assert "New-Order p99, ms (lower is better)" in block
    # With histograms the median leads: id, p50, p99, p99.9 / max, ratio, verdict.
    assert re.search(r"┃ id\s*┃\s*p50 ┃\s*p99 ┃", block), block
    rows = {m.group(1): m.group(2) for m in re.finditer(
        r"│ (C\d) │[^│]*│[^│]*│[^│]*│[^│]*│ ([a-z ()]+?)\s*│", block)}
    # A verdict may wrap onto the row's next line: its first word is on the first.
    assert rows == {"C1": "baseline", "C2": "higher", "C3": rows["C3"]}
    assert rows["C3"] in ("no clear", "higher", "lower")
    assert ("p99 of the window's merged histograms with the waits no completion measured (a"
            " stall's, and those in flight at the window's end; exact within 1/128)") in \
        " ".join(block.split())
    assert re.search(r"C2: Mann-Whitney p = [\d.]+ < 0.05", block)
    assert "no latency histograms" not in block


def test_compare_of_the_go_study_before_histograms_names_its_runs(recorded_study: Path,
                                                                   cli) -> None:  # noqa: ANN001
    code, out, err = cli(["compare", "stability-2011", "--db", str(recorded_study)])
    assert code == 0, err
    block = " ".join(_latency_block(out).split())
    assert "median over the window of the driver's own per-interval p99" in block
    assert ("no latency histograms (their p99 is the driver's per-interval figure): 26 runs"
            " (1–3, 5–27): the driver stored no latency histogram") in block
    assert len(re.findall(r"│ C\d │", block)) == 8


def _rows(out: str) -> list[tuple[str, str]]:
    """``show``'s table as (key, value) rows, wrapped lines joined."""
    rows: list[tuple[str, str]] = []
    for line in out.splitlines():
        parts = line.split("│")
        if len(parts) != 4:
            continue
        key, value = parts[1].strip(), parts[2].strip()
        if key:
            rows.append((key, value))
        elif rows:
            rows[-1] = (rows[-1][0], f"{rows[-1][1]} {value}")
    return rows


def test_show_puts_response_time_beside_the_stability_score(go_db: Path,
                                                            cli) -> None:  # noqa: ANN001
    code, out, err = cli(["show", "1", "--db", str(go_db)])
    assert code == 0, err
    rows = _rows(out)
    keys = [k for k, _ in rows]
    at = keys.index("stability score")
    assert keys[at + 1:at + 6] == ["New-Order p50 (window)", "New-Order p99 (window)",
                                   "New-Order p99.9, max (window)", "stall seconds",
                                   "p99 jitter"]
    values = dict(rows)
    assert re.fullmatch(r"[\d,.]+ ms — the merged histograms' median, waits included",
                        values["New-Order p50 (window)"])
    assert re.fullmatch(r"[\d,.]+ ms — p99 of the window's merged histograms with the waits no"
                        r" completion measured \(a stall's, and those in flight at the"
                        r" window's end; exact within 1/128\)", values["New-Order p99 (window)"])
    assert re.fullmatch(r"[\d,.]+ ms \(exact\), [\d,.]+ ms — waits in stalls and in flight"
                        r" included", values["New-Order p99.9, max (window)"])
    assert re.fullmatch(r"\d+ s \(\d+ intervals with no New-Order or p99 above 4 × the run's"
                        r" median [\d,.]+ ms\)", values["stall seconds"])
    assert re.fullmatch(r"\d+ % \(CV of the per-interval p99\)", values["p99 jitter"])


def test_the_report_has_the_section_figures_and_types(go_db: Path) -> None:
    model = build_report_model(go_db, "go")
    slugs = [f.slug.split("-", 1)[1] for f in model.figures]
    assert "latency-per-cell" in slugs and "latency-distribution" in slugs
    page = sections_html(model)
    section = page[page.index("<h2 id='response-time'>Response time</h2>"):]
    section = section[:section.index("<h2", 5)]
    assert "exact within 1/128" in section and "higher (worse)" in section
    assert "<th class=''>p50 ms</th><th class=''>p99 ms</th>" in section
    assert "<h3>Per transaction type</h3>" in section and "Stock-Level" in section
    # The runs table of each cell has each run's p99 and stall seconds beside its score.
    assert "<th class=''>score</th><th class=''>p99 ms</th><th class=''>stall s</th>" in page


@pytest.mark.parametrize(("name", "said"), [
    ("recorded_flash", "median over the window of the driver&#x27;s own per-interval p99"),
    ("recorded_allocators", "p95 in ms, lower is better"),
])
def test_reports_of_the_committed_studies_build_with_the_drivers_own_figures(
        name: str, said: str, request: pytest.FixtureRequest) -> None:
    model = build_report_model(request.getfixturevalue(name), None)
    page = sections_html(model)
    assert "<h2 id='response-time'>Response time</h2>" in page and said in page
    assert "exact within 1/128" not in page
    assert any(f.slug.endswith("latency-per-cell") for f in model.figures)


def test_the_grid_marks_the_representative_runs_stalls(go_db: Path) -> None:
    fr = load(go_db)
    lat = latency.load(go_db, fr)
    ivl = fr.intervals.merge(fr.run_summary[["run_id", "cell_id"]], on="run_id")
    cells = fr.cell_summary.sort_values("position")
    holes = int(cells["cell_id"].iloc[2])
    reps = {int(c): int(r) for c, r in ivl.groupby("cell_id")["run_id"].min().items()}
    stalls = latency.stall_spans(ivl, "p99_ms", list(reps.values()))
    spec = latency_grid_spec(ivl, cells, window=(300.0, 600.0), bold_runs=reps, stalls=stalls)
    bands = [s for s in spec["layout"]["shapes"] if s.get("fillcolor") == STALL_COLOUR]
    assert stalls[reps[holes]] and len(bands) == sum(len(v) for v in stalls.values())
    assert {(b["x0"], b["x1"]) for b in bands if b["xref"] == "x3"} == {
        (a / 60, b / 60) for a, b in stalls[reps[holes]]}
    assert lat.runs.loc[reps[holes], "stall_intervals"] == len(stalls[reps[holes]])
    assert all(spec["layout"][f"yaxis{s}"]["type"] == "log" for s in ("", "2", "3"))


def _plot(db: Path, experiment: str, *args: str) -> object:
    return CliRunner().invoke(build_app(), ["plot", "compare", experiment, *args, "--db",
                                            str(db)])


def test_plot_compare_draws_p99_on_a_log_axis(go_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "p99.html"
    res = _plot(go_db, "go", "C1", "C2", "--metric", "p99", "-o", str(out))
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    # C2 is called by what differs from the baseline, as the report calls it.
    assert ("vs doublewrite=off: New-Order p99 response time per interval (ms, log)"
            in text.replace("\\u003cbr\\u003e", " ").replace("<br>", " "))
    assert '"type":"log"' in text


def test_plot_compare_p99_of_sysbench_says_what_it_has(recorded_allocators: Path,
                                                       tmp_path: Path) -> None:
    res = _plot(recorded_allocators, "allocators-example", "C1", "C2", "--metric", "p99", "-o",
                str(tmp_path / "x.png"))
    assert isinstance(res.exception, AnalysisError), res.output
    assert "recorded no p99 per interval" in str(res.exception)
    assert "p95 by default" in res.exception.fix
