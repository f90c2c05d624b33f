"""A report a reader can navigate (issue 54, items 2, 3, 5 and 9), on the committed studies.

The first screen is the verdict, then the caveats that change it with counts computed from the
same runs as the rest of the page, then what to do next; a contents list links every part by
its own heading; each row's own figures are folded (``<details>``) under the grids; the
ranking table is one line per row, its reasons in notes; rows are called by their own names
in the tables and in compare's warnings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis.comparisons.compare import compare
from analysis.report.model import (
    Break,
    Bullets,
    Contents,
    Figure,
    Fold,
    Heading,
    ReportModel,
    Span,
    Table,
    Value,
    every_block,
)
from analysis.report.render import blocks_html, sections_html
from analysis.steadiness.claims import split_warnings
from store.models import RunStatus
from tests.support.recorded import recorded_copy
from tests.support.recorded_models import recorded_report_model


@pytest.fixture(scope="module")
def generations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_copy("generations", tmp_path_factory)


@pytest.fixture(scope="module")
def gen_model(request: pytest.FixtureRequest) -> ReportModel:
    return recorded_report_model(request, "generations", "generations")


@pytest.fixture(scope="module")
def flash_model(request: pytest.FixtureRequest) -> ReportModel:
    return recorded_report_model(request, "stability-2011-flash", "stability-2011-flash")


@pytest.fixture(scope="module", params=["gen_model", "flash_model"])
def model(request: pytest.FixtureRequest) -> ReportModel:
    """Each study's report model in turn: the fixture above of that name, built once.

    A module-scoped fixture by name (not ``getfixturevalue`` in each test) keeps the tests that
    take it in this file's xdist group (tests/support/parallel.py), so ``make test`` builds each
    model once on one worker instead of once per worker a case lands on.
    """
    return request.getfixturevalue(request.param)


def words(parts: object) -> str:
    """Rich text (or a block's text) as its plain words."""
    if isinstance(parts, str):
        return parts
    if isinstance(parts, Value):
        return str(parts.value)
    if isinstance(parts, Span):
        return words(parts.parts)
    if isinstance(parts, tuple):
        return "".join(words(p) for p in parts)
    return ""


def first_screen_items(model: ReportModel, heading: str) -> list[str]:
    """The list under one heading of the first section."""
    section = model.sections[0]
    at = next(i for i, b in enumerate(section) if isinstance(b, Heading)
              and words(b.text) == heading)
    nxt = section[at + 1]
    return [words(item) for item in nxt.items] if isinstance(nxt, Bullets) else []


def test_first_screen_is_verdict_then_caveats_then_next(model: ReportModel) -> None:
    headings = [words(b.text) for b in model.sections[0] if isinstance(b, Heading)]
    assert headings == ["Verdict", "Caveats", "Next"]
    assert first_screen_items(model, "Verdict")[0].startswith("Most throughput: ")
    assert any("flushbench show " in line for line in first_screen_items(model, "Next"))
    # The contents list comes right after, before the first part.
    assert isinstance(model.sections[1][0], Contents)


def test_caveat_counts_are_the_warnings_counts(model: ReportModel) -> None:
    """The noisy, not-steady and window-dependent counts are those the Warnings section and
    the summary give, counted here independently from the same frames."""
    rs = model.comparison.frames.run_summary
    done = rs[rs["status"] == RunStatus.DONE]
    per_run = [{w.partition(": ")[0] for w in split_warnings(str(t))}
               for t in done["warnings"].fillna("")]
    shaky = sum(1 for kinds in per_run if kinds & {"noisy", "oscillates"})
    noisy = sum(1 for kinds in per_run if "noisy" in kinds)
    caveats = first_screen_items(model, "Caveats")
    assert f"{shaky} of {len(done)} runs noisy or oscillating ({noisy} noisy" in " ".join(
        caveats)
    # The Warnings section's line on the same kind says the same count.
    assert any(w.startswith(f"noisy: {noisy} of {len(done)} runs")
               for w in model.comparison.warnings)
    steady = sum(1 for kinds in per_run if "not-steady" in kinds)
    assert (f"{steady} of {len(done)} runs not at steady state" in " ".join(caveats)) == (
        steady > 0)
    moving = int((model.comparison.cells["verdict"] == "window-dependent").sum())
    verdict = " ".join(first_screen_items(model, "Verdict"))
    if moving:
        assert f"{moving} of {len(model.comparison.cells)} rows window-dependent" in " ".join(
            caveats)
        assert f"{moving} window-dependent" in verdict
        assert any("--cycles whole" in n for n in first_screen_items(model, "Next"))


def test_generations_has_window_dependent_rows(gen_model: ReportModel) -> None:
    """The test above reaches its window-dependent branch on the committed study."""
    assert (gen_model.comparison.cells["verdict"] == "window-dependent").sum() == 2


def test_contents_links_every_part_by_its_heading(model: ReportModel) -> None:
    contents = model.sections[1][0]
    assert isinstance(contents, Contents)
    html = sections_html(model) + blocks_html([contents])
    parts = re.findall(r"<h2 id='([^']+)'>(.*?)</h2>", html)
    listed = [(a, w) for a, w in contents.entries]
    # Every part after the first screen is listed, in page order, by its own words.
    first = [b.anchor for b in model.sections[0] if isinstance(b, Heading) and b.level == 2]
    assert [(a, re.sub("<[^>]+>", "", w)) for a, w in parts if a not in first] == listed
    assert len({a for a, _ in listed}) == len(listed)
    for anchor, _ in listed:
        assert f"href='#{anchor}'" in html
    assert {"Ranking", "Configurations", "Methodology", "What the runs did"} <= {
        w for _, w in listed}


def test_each_rows_figures_are_folded_under_the_grids(gen_model: ReportModel) -> None:
    top = [b.slug for s in gen_model.sections for b in s if isinstance(b, Figure)]
    folded = [b.slug for s in gen_model.sections for b in every_block(s)
              if isinstance(b, Figure) and b.slug not in top]
    assert "throughput-per-cell" in " ".join(top)  # the grid of every row stays open
    assert folded and all(re.search(r"cell\d+$", slug) for slug in folded)
    assert not any(re.search(r"-cell\d+$", slug) for slug in top)
    folds = [b for s in gen_model.sections for b in s if isinstance(b, Fold)]
    html = sections_html(gen_model)
    assert html.count("<details class='fold'>") == len(folds)
    # One fold per row, and the ranking's notes.
    assert len(folds) == len(gen_model.comparison.cells) + 1


def test_ranking_is_one_line_per_row_named_by_its_row(model: ReportModel) -> None:
    ranking = next(s for s in model.sections if s and isinstance(s[0], Heading)
                   and words(s[0].text) == "Ranking")
    table = next(b for b in ranking if isinstance(b, Table))
    ranked = model.comparison.ranking
    assert len(table.rows) == len(ranked)

    def breaks(parts: object) -> bool:
        if isinstance(parts, Break):
            return True
        if isinstance(parts, Span):
            return breaks(parts.parts)
        return isinstance(parts, tuple) and any(breaks(p) for p in parts)

    assert not any(breaks(cell) for row in table.rows for cell in row)
    # A named row is called by its name alone; its knobs are in its note.
    first = [words(row[0]).removesuffix(" (baseline)") for row in table.rows]
    assert all(" · " not in name and "=" not in name for name in first)
    notes = next(b for f in ranking if isinstance(f, Fold) for b in f.blocks)
    assert isinstance(notes, Bullets) and len(notes.items) == len(ranked)
    reasons = model.comparison.cells.set_index("cell_id")["verdict_reason"]
    for n, (note, (_, r)) in enumerate(zip(notes.items, ranked.iterrows(), strict=True), 1):
        text = words(note)
        assert text.startswith(f"[{n}] ") and str(r["cell_label"]) in text
        # Each compared row's note says why its verdict, as the table's [n] promises.
        assert (str(reasons[r["cell_id"]]) in text) != bool(r["is_baseline"])


def test_compare_warnings_name_rows_by_their_names(generations: Path) -> None:
    cmp = compare(generations, "generations")
    moving = [w for w in cmp.warnings if ": window-dependent — " in w]
    assert len(moving) == 2
    assert all(w.split(":")[0] in {"mysql-5.5-fast", "mariadb-10.2-fast"} for w in moving)
    assert not any(w.startswith("server=") for w in cmp.warnings)
