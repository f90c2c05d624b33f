"""The report as a model, then a page: ``build_report_model`` holds what the report says
(data, sentences, figures), ``render`` draws it; neither needs the other's internals."""

from __future__ import annotations

import re
from pathlib import Path

import plotly.graph_objects as go
import pytest

from analysis.figures import plots
from analysis.report.build import build_report_model
from analysis.report.model import Figure, ReportModel, every_block
from analysis.report.render import render, sections_html


@pytest.fixture(scope="module")
def model(recorded_study: Path) -> ReportModel:
    return build_report_model(recorded_study, "stability-2011")


def test_the_model_holds_the_figures_sentences_and_data(model: ReportModel) -> None:
    assert model.title == "stability-2011"
    slugs = [f.slug for f in model.figures]
    # Numbered in page order, the overview first, each cell's figures after.
    assert slugs[:3] == ["01-notpm", "02-notpm-distribution", "03-stability"]
    assert [int(s[:2]) for s in slugs] == list(range(1, len(slugs) + 1))
    assert any(s.endswith("checkpoint-dirty-cell1") for s in slugs)
    # The sentences are the computed claims (tests/analysis/test_claims.py has the counts).
    assert model.claims[0].startswith("23 of 26 runs are noisy")
    # The data behind it: one throughput figure per cell of the comparison.
    cells = {int(c) for c in model.comparison.cells["cell_id"]}
    assert len(cells) == 8
    assert {int(s.rsplit("cell", 1)[1]) for s in slugs if "-throughput-cell" in s} == cells
    # Every figure is placed exactly once in the sections, as a block naming it; the
    # sections hold blocks, never HTML (analysis/report/model.py).
    placed = [b.slug for section in model.sections for b in every_block(section)
              if isinstance(b, Figure)]
    assert sorted(placed) == sorted(slugs)
    assert not any(isinstance(b, str) for section in model.sections for b in section)
    text = sections_html(model)
    assert sorted(re.findall(r"<!--figure:([\w.-]+)-->", text)) == sorted(slugs)


def test_render_draws_every_figure_and_leaves_the_model_unchanged(
        model: ReportModel, tmp_path: Path) -> None:
    widths = [f.spec["layout"].get("width") for f in model.figures]
    page = render(model, tmp_path / "a", png=False).read_text()
    again = render(model, tmp_path / "b", png=False).read_text()
    strip = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert strip.sub("", page) == strip.sub("", again)  # a value: rendering twice is the same
    for f in model.figures:
        assert page.count(f"id=\"fig-{f.slug}\"") == 1, f.slug
    assert "<!--figure:" not in page and "<!--claims-->" not in page
    assert "What the runs did" in page and model.claims[0].split(";")[0] in page
    # The page's divs size themselves; the model's figures keep the PNG's fixed width.
    assert [f.spec["layout"].get("width") for f in model.figures] == widths
    assert all(w in (None, plots.WIDTH) for w in widths)
    assert not (tmp_path / "a" / "figures").exists()  # png=False draws no PNG


def test_every_figure_is_valid_plotly(model: ReportModel) -> None:
    """The report hands its per-cell figures to plotly.js as plain dicts, unvalidated (plotly's
    Python validation was a fifth of a large report's time): here every figure of the report
    goes through plotly's validation, template included, so a misspelt property fails."""
    plain = [f for f in model.figures if isinstance(f.figure, dict)]
    assert len(plain) >= 2 * 8  # throughput and checkpoint/dirty of every cell, at least
    for f in model.figures:
        go.Figure(f.spec)  # raises ValueError on an invalid property
        assert isinstance(f.spec["layout"]["template"], dict), f.slug  # plotly.js needs it
    broken = {**plain[0].spec, "layout": {**plain[0].spec["layout"], "yaxiss": {}}}
    with pytest.raises(ValueError, match="yaxiss"):
        go.Figure(broken)


def test_a_queue_in_progress_reads_without_nan(recorded_study: Path, tmp_path: Path) -> None:
    """A report of a queue part-way through (runs still queued or running) prints no "nan" in
    any sentence or table: a queued run's warnings are empty, not NaN (found on a report of the
    flash study made while its queue was still running)."""
    import shutil
    import sqlite3

    db = tmp_path / "partial.sqlite"
    shutil.copy(recorded_study, db)
    con = sqlite3.connect(db)
    ids = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 4")]
    con.executemany("UPDATE runs SET status = ?, finished_at = NULL WHERE id = ?",
                    [("running" if i == ids[0] else "queued", i) for i in ids])
    con.commit()
    con.close()
    page = sections_html(build_report_model(db, "stability-2011"))
    text = re.sub(r"<!--.*?-->|<[^>]+>", " ", page)
    assert "queued" in text and "running" in text
    assert not re.search(r"\bnan\b", text, re.IGNORECASE), re.search(
        r".{80}\bnan\b.{20}", text, re.IGNORECASE | re.S)


def test_a_knob_a_cell_does_not_set_reads_as_such() -> None:
    assert plots.knob_text(float("nan")) == plots.NOT_SET == "(not set)"
    assert plots.knob_text(None) == "(not set)"
    assert (plots.knob_text(True), plots.knob_text(20000.0), plots.knob_text("area")) == (
        "on", "20000", "area")


def test_knob_levels_are_named_as_the_cell_labels_name_them() -> None:
    """The effects table said "log_file_size 335544320 vs 83886080" (the stored bytes) where
    every cell label says 320M and 80M."""
    import pandas as pd

    from analysis.report.sections import level_names

    cells = pd.DataFrame({
        "cell_label": ["server=a log_file_size=80M doublewrite=on",
                       "server=b log_file_size=320M doublewrite=off"],
        "knobs": [{"server": "a", "log_file_size": 83886080, "doublewrite": True},
                  {"server": "b", "log_file_size": 335544320.0, "doublewrite": False}]})
    names = level_names(cells)
    assert names[("log_file_size", "83886080")] == "80M"
    assert names[("log_file_size", "335544320")] == "320M"  # a float level prints the same
    assert names[("doublewrite", "off")] == "off"


def test_methodology_lines_for_two_servers() -> None:
    """A study on two servers: a variable that differs is each value with its cell count (not
    twelve long labels on one line), and every repetition rule of the spec is said."""
    import pandas as pd

    from analysis.report.sentences import repetitions_text, varies_text

    values = pd.Series({1: "5.5.62", 2: "5.5.62", 3: "5.5.62", 4: "5.5.44-MariaDB"})
    labels = {1: "a", 2: "b", 3: "c", 4: "server=xtradb"}
    assert varies_text(values, labels) == ("varies — 5.5.44-MariaDB (1 cell: server=xtradb);"
                                            " 5.5.62 (3 cells)")
    from core.experiment.spec import ExperimentSpec

    def spec(**keys: object) -> ExperimentSpec:
        return ExperimentSpec.model_validate({"version": 1, "name": "two-servers",
                                              "dataset": {"warehouses": 1},
                                              "workload": {"driver": "tpcc"}, **keys})

    assert repetitions_text(spec(
        repetitions=4, baseline_repetitions=6,
        include=[{"doublewrite": True}, {"doublewrite": False, "repetitions": 6}],
    )) == "4 declared per cell (baseline 6; 1 include row: 6)"
    assert repetitions_text(spec(repetitions=3)) == "3 declared per cell"
