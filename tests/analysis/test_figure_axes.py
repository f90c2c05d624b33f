"""The axis audit of every figure a report draws (and ``plot compare``'s): one name for the
time origin, throughput in NOTPM unless the axis says how its unit relates, at least three
labelled ticks on every log axis, a title on every value axis."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import pytest

from analysis.comparisons import row_compare
from analysis.figures import plots
from tests.support.recorded_models import recorded_report_model

TIME_NAMES = {plots.TIME_AXIS, plots.TIME_AXIS_WITH_WARMUP}


@pytest.fixture(scope="module")
def figures(request: pytest.FixtureRequest, recorded_flash: Path) -> list[tuple[str, dict]]:
    """Every figure of two reports as plain dicts, and plot compare's for each metric."""
    out = []
    for name in ("stability-2011", "stability-2011-flash"):
        model = recorded_report_model(request, name, name)
        out += [(f"{name}/{f.slug}", go.Figure(f.figure).to_dict()) for f in model.figures]
    for metric in ("throughput", "p99", "dirty"):
        fig = row_compare.compare_cells(recorded_flash, "stability-2011-flash", "base",
                                        "dw-off-50", "dw-off-60", metric=metric)
        out.append((f"compare/{metric}", fig.to_dict()))
    return out


def _axes(layout: dict[str, Any]) -> Iterator[tuple[str, dict]]:
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            yield key, axis


def _title(axis: dict) -> str:
    title = axis.get("title") or {}
    return str(title.get("text") or "") if isinstance(title, dict) else str(title)


def test_log_ticks_label_at_least_three_values_over_any_range() -> None:
    for low, high in ((900, 2300), (1200, 1500), (3, 40_000), (0.5, 0.9), (101, 102)):
        ticks = plots.log_ticks(low, high)
        assert len(ticks["tickvals"]) >= plots.MIN_LOG_TICKS, (low, high, ticks)
        assert all(low <= v <= high for v in ticks["tickvals"]), (low, high, ticks)
        assert len(ticks["ticktext"]) == len(ticks["tickvals"])


def test_every_figure_names_time_one_way_and_labels_its_log_axes(
        figures: list[tuple[str, dict]]) -> None:
    timed = counted = 0
    for name, fig in figures:
        layout = fig["layout"]
        for key, axis in _axes(layout):
            title = _title(axis).replace("<br>", " ")
            if "minute" in title and "per minute" not in title:
                assert title in TIME_NAMES, (name, key, title)
                timed += 1
            assert "since measurement start" not in title, (name, key, title)
            if axis.get("type") == "log":
                assert len(axis.get("tickvals") or []) >= plots.MIN_LOG_TICKS, (name, key)
                assert len(axis.get("ticktext") or []) == len(axis["tickvals"]), (name, key)
            # Throughput is NOTPM unless the axis gives the factor to NOTPM.
            if re.match(r"New-Orders?( transactions)? per [\d.]+ s", title):
                assert "NOTPM" in title, (name, key, title)
                counted += 1
        # A figure with a shaded measurement window draws it on the named time axis.
        shapes = layout.get("shapes") or []
        if any(s.get("type") == "rect" and s.get("fillcolor") for s in shapes) and any(
                "minute" in _title(a) for _, a in _axes(layout)):
            assert any(_title(a) in TIME_NAMES for _, a in _axes(layout)), name
    assert timed >= 10
    assert counted >= 3


def test_every_value_axis_has_a_title_with_its_unit(figures: list[tuple[str, dict]]) -> None:
    missing = []
    for name, fig in figures:
        for key, axis in _axes(fig["layout"]):
            if axis.get("type") == "category" or not axis.get("visible", True):
                continue
            if axis.get("showticklabels") is False:
                continue
            title = _title(axis)
            if not title:
                continue  # panels share the title of their row or column (small multiples)
            # A value axis says its unit: in brackets, "per", a rate, a percentage, a score.
            if not any(w in title for w in ("(", " per ", "/s", "%", "score", "minutes",
                                            "threads", "runs")):
                missing.append((name, key, title))
    assert not missing
