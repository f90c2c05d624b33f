"""One colour per configuration across every figure of a report and ``plot compare``, the
baselines one neutral colour, a palette that stays distinct past 16 rows (issue 54).

The flash study (twelve rows, two baselines, one per server) is the study where this failed:
its memory figure coloured by a knob, its bars drew every row in one blue, and the palette
repeated after six rows. The figures are read as the report builds them (specs, no PNG).
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis.comparisons import row_compare, scorecard
from analysis.comparisons.compare import UNSET_LEVEL, compare
from analysis.figures import plots
from analysis.report.model import ReportModel
from analysis.report.render import sections_html
from tests.support.recorded_models import recorded_report_model

EXPERIMENT = "stability-2011-flash"
#: Figures that draw configurations: each must mark its traces (``plots.cell_meta``).
BY_CONFIGURATION = ("notpm", "notpm-distribution", "stability", "throughput-per-cell",
                    "rss-over-time", "latency-per-cell", "latency-distribution")


@pytest.fixture(scope="module")
def model(request: pytest.FixtureRequest) -> ReportModel:
    return recorded_report_model(request, EXPERIMENT, EXPERIMENT)


def _colour(trace: dict[str, Any]) -> Any:
    """The colour a trace draws its cell in: its line for a line, else its marker."""
    if trace.get("type", "scatter").startswith("scatter") and "lines" in trace.get("mode", ""):
        return trace["line"]["color"]
    return trace["marker"]["color"]


def _cell_colours_drawn(figures: list[tuple[str, dict]]) -> dict[int, dict[str, set[str]]]:
    """Cell id → colour → the figures that draw the cell in that colour."""
    seen: dict[int, dict[str, set[str]]] = {}
    for slug, spec in figures:
        for trace in spec["data"]:
            meta = trace.get("meta") or {}
            colour = _colour(trace) if meta else None
            pairs = ([(meta["cell"], colour)] if "cell" in meta
                     else list(zip(meta.get("cells", []), colour or [], strict=True)))
            for cell_id, c in pairs:
                seen.setdefault(int(cell_id), {}).setdefault(c, set()).add(slug)
    return seen


def _slug_kind(slug: str) -> str:
    return slug.split("-", 1)[1]


def test_every_configuration_has_one_colour_in_every_figure(model: ReportModel,
                                                            recorded_flash: Path) -> None:
    cells = model.comparison.cells
    assert len(cells) == 12 and int(cells["is_baseline"].sum()) == 2  # one per server
    figures = [(f.slug, f.spec) for f in model.figures]
    seen = _cell_colours_drawn(figures)
    marked = {_slug_kind(slug) for slug, spec in figures
              if any(t.get("meta") for t in spec["data"])}
    assert set(BY_CONFIGURATION) <= marked, set(BY_CONFIGURATION) - marked
    # Every cell is drawn, each in exactly one colour wherever it appears.
    assert set(seen) == {int(c) for c in cells["cell_id"]}
    one = {}
    for cell_id, colours in seen.items():
        assert len(colours) == 1, (cell_id, colours)
        one[cell_id] = next(iter(colours))
        # ...and in every figure that draws configurations.
        assert {_slug_kind(s) for s in one[cell_id] and colours[one[cell_id]]} >= set(
            BY_CONFIGURATION), cell_id
    bases = {int(c) for c in cells.loc[cells["is_baseline"].astype(bool), "cell_id"]}
    assert {one[c] for c in bases} == {plots.BASELINE_COLOUR}
    others = [one[c] for c in one if c not in bases]
    assert len(set(others)) == len(others) == 10 and plots.BASELINE_COLOUR not in others
    # The row order decides: the first non-baseline row takes the palette's first colour.
    ordered = cells.sort_values("position")
    first = int(ordered.loc[~ordered["is_baseline"].astype(bool), "cell_id"].iloc[0])
    assert one[first] == plots.CELL_COLOURS[0]

    # A trace named after a row (legend, box, dot) is marked, so no figure colours a
    # configuration by its own trace order without this test seeing it.
    names = set(scorecard.row_names(model.experiment["stored"].spec, cells).values())
    assert len(names) == 12
    for slug, spec in figures:
        for trace in spec["data"]:
            name = re.sub(r" \(baseline\)$", "", str(trace.get("name")))
            assert name not in names or trace.get("meta"), (slug, name)

    # plot compare draws its two rows in the report's colours.
    for a, b in (("C1", "C2"), ("C12", "C7")):
        fig = row_compare.compare_cells(recorded_flash, EXPERIMENT, a, b)
        drawn = _cell_colours_drawn([("compare", fig.to_dict())])
        assert len(drawn) == 2
        for cell_id, colours in drawn.items():
            assert set(colours) == {one[cell_id]}, (a, b, cell_id)


def _lab(colour: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of ``#rrggbb``."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(v: float) -> float:
        return v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_the_palette_stays_distinct_past_sixteen_rows() -> None:
    palette = plots.CELL_COLOURS
    assert len(set(palette)) == len(palette) >= 16
    lab = {c: _lab(c) for c in palette}
    closest = min(math.dist(lab[a], lab[b]) for a, b in itertools.combinations(palette, 2))
    assert closest >= 25, closest  # Okabe-Ito's own closest pair is 26
    base = _lab(plots.BASELINE_COLOUR)
    assert base[0] < 25 and math.hypot(base[1], base[2]) < 5  # near-black, no hue
    for c in palette:
        assert 30 <= lab[c][0] <= 75, c  # neither mistaken for the baseline nor pale on white
        assert math.dist(lab[c], base) >= 35, c
    # Sixteen rows and a baseline: seventeen colours, the baseline's the neutral one.
    cells = pd.DataFrame({"cell_id": range(100, 117), "position": range(17),
                          "is_baseline": [i == 3 for i in range(17)]})
    colours = plots.cell_colours(cells)
    assert colours[103] == plots.BASELINE_COLOUR
    assert len(set(colours.values())) == 17
    # Without a marked baseline the first row is compared with (analysis.reading.baselines):
    # neutral.
    colours = plots.cell_colours(cells.assign(is_baseline=False).sample(frac=1, random_state=1))
    assert colours[100] == plots.BASELINE_COLOUR and colours[101] == plots.CELL_COLOURS[0]


def test_bar_labels_stay_readable_on_every_colour() -> None:
    assert plots.text_colour_on(plots.BASELINE_COLOUR) == "white"
    assert plots.text_colour_on("#0072B2") == "white"
    assert plots.text_colour_on("#C2B280") == "#222222"  # the palette's palest


def test_an_unset_knob_level_reads_as_the_server_default(model: ReportModel,
                                                         recorded_flash: Path) -> None:
    """The flash study's knobs that only XtraDB rows set: the other rows' level read "nan"
    (``compare``) or "(not set)" (the report)."""
    text = re.sub(r"<[^>]+>", " ", sections_html(model))
    assert "keep_average vs default" in text and "(not set)" not in text
    me = compare(recorded_flash, EXPERIMENT).main_effects
    levels = pd.concat([me["level"], me["reference"]])
    assert not levels.map(lambda v: isinstance(v, float) and math.isnan(v)).any()
    assert not levels.isna().any()
    unset = me[(me["level"] == UNSET_LEVEL) | (me["reference"] == UNSET_LEVEL)]
    assert {"adaptive_checkpoint", "buffer_pool_instances"} <= set(unset["knob"])
