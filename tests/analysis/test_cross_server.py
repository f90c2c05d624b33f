"""Each server against a reference row (analysis/comparisons/cross_server.py) and its place in
the report (analysis/report/servers.py), on the committed generations study (one baseline per
server); and the throughput bars grouped under their baselines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from analysis.comparisons.cross_server import cross_server, server_rows
from analysis.figures import plots
from analysis.reading.window_cycles import WINDOW_DEPENDENT
from analysis.report.build import build_report_model
from analysis.report.model import Figure, Heading, ReportModel, Table
from tests.support.recorded import recorded_copy
from tests.support.recorded_models import recorded_report_model
from tests.support.rich_words import words

EXPERIMENT = "generations"


@pytest.fixture(scope="module")
def generations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the committed generations study."""
    return recorded_copy("generations", tmp_path_factory)


@pytest.fixture(scope="module")
def model(request: pytest.FixtureRequest) -> ReportModel:
    return recorded_report_model(request, "generations", EXPERIMENT)


def test_server_rows_prefer_each_servers_baseline() -> None:
    cells = pd.DataFrame({
        "cell_id": [1, 2, 3, 4, 5], "position": [0, 1, 2, 3, 4],
        "is_baseline": [False, True, False, False, False],
        "knobs": [{"server": "a"}, {"server": "a"}, {"server": "b"}, {"server": "b"},
                  {"x": 1}],
    })
    # Server a's baseline, server b's first row (it has no baseline); a row without a server
    # stands for none.
    assert server_rows(cells) == {"a": 2, "b": 3}
    assert server_rows(cells[cells["cell_id"] <= 2]) == {"a": 2}


def test_each_server_is_held_against_the_reference_row(model: ReportModel) -> None:
    cmp = model.comparison
    cells = cmp.cells.set_index("cell_id")
    bases = cmp.cells[cmp.cells["is_baseline"].astype(bool)].sort_values("position")
    lat_cells = pd.DataFrame(index=cells.index)
    cross = cross_server(cmp, lat_cells, pd.DataFrame(index=cells.index))
    assert cross is not None
    # The reference is the first baseline; one line per server, its baseline row.
    assert cross.reference_id == int(bases["cell_id"].iloc[0])
    assert list(cross.rows["cell_id"]) == [int(c) for c in bases["cell_id"]]
    assert len(set(cross.rows["server"])) == len(cross.rows) == 5
    ref = cross.rows[cross.rows["cell_id"] == cross.reference_id].iloc[0]
    assert ref["ratio"] == 1.0 and ref["verdict"] == "reference"
    others = cross.rows[cross.rows["cell_id"] != cross.reference_id]
    for _, r in others.iterrows():
        # The rule's ratio (blocked, on logs) stays near the ratio of the rows' means and
        # inside its own interval; the verdict follows the interval's side of 1.
        plain = cells.at[r["cell_id"], "notpm_mean"] / cells.at[cross.reference_id,
                                                                   "notpm_mean"]
        assert r["ratio"] == pytest.approx(plain, rel=0.05)
        assert r["ci_low"] <= r["ratio"] <= r["ci_high"]
        # At the stored window the verdict follows the interval's side of 1; over the window
        # starts it holds, or the row is window-dependent and says where it changes.
        if r["ci_low"] > 1:
            assert r["verdict_at_window"] == "faster"
        if r["ci_high"] < 1:
            assert r["verdict_at_window"] == "slower"
        assert r["window_ratio_low"] <= r["ratio"] <= r["window_ratio_high"]
        assert (r["verdict"] == WINDOW_DEPENDENT) == bool(r["window_dependent"])
        if r["window_dependent"]:
            assert "changes with the window's start" in r["verdict_reason"]
        else:
            assert r["verdict"] == r["verdict_at_window"]


def test_the_servers_that_were_faster_only_at_the_stored_window_say_so(
        model: ReportModel) -> None:
    """docs/statistics.md and the generations write-up: Percona 5.5's and MariaDB 10.2's
    defaults, "faster" than MySQL 5.5's at the stored window (whose 1.5 flush cycles put
    MySQL 5.5 at its lowest), are window-dependent over the window starts; 10.11 and 11.4
    stay slower at every start."""
    cmp = model.comparison
    cross = cross_server(cmp, pd.DataFrame(index=cmp.cells.set_index("cell_id").index),
                         pd.DataFrame(index=cmp.cells.set_index("cell_id").index))
    assert cross is not None
    rows = cross.rows.set_index("server")
    for server, low, high in (("percona-5.5", 0.83, 1.19), ("mariadb-10.2", 0.83, 1.31)):
        row = rows.loc[server]
        assert row["verdict_at_window"] == "faster" and row["verdict"] == WINDOW_DEPENDENT
        assert (round(row["window_ratio_low"], 2), round(row["window_ratio_high"], 2)) == (
            low, high)
    for server in ("mariadb-debian", "mariadb-11.4"):
        assert rows.loc[server, "verdict"] == "slower"
        assert rows.loc[server, "window_ratio_high"] < 1


def test_the_report_shows_the_cross_server_figure_and_table(model: ReportModel) -> None:
    names = {b.anchor: words(b.text) for s in model.sections for b in s
             if isinstance(b, Heading)}
    ref = "mysql-5.5-defaults"
    assert names["servers"] == f"Each server against {ref}"
    section = next(s for s in model.sections
                   if any(isinstance(b, Heading) and b.anchor == "servers" for b in s))
    # Right after the ranking, before the figures of the overview.
    order = [i for i, s in enumerate(model.sections)
             if any(isinstance(b, Heading) and words(b.text) == "Ranking" for b in s)]
    assert model.sections.index(section) == order[0] + 1
    slug = next(b.slug for b in section if isinstance(b, Figure))
    spec = next(f.figure for f in model.figures if f.slug == slug)
    fig = go.Figure(spec)
    assert ref in fig.layout.title.text and ref in fig.layout.xaxis.title.text
    assert len(fig.data) == 5 and all(t.meta for t in fig.data)
    tab = next(b for b in section if isinstance(b, Table))
    assert any(ref in h for h in tab.headers)
    assert [words(r[0]) for r in tab.rows] == list(
        model.comparison.cells.sort_values("position").loc[
            model.comparison.cells["is_baseline"].astype(bool), "server"])
    assert sum("reference" in words(r[3]) for r in tab.rows) == 1


def test_throughput_bars_are_grouped_under_their_named_baseline(model: ReportModel) -> None:
    cells = model.comparison.cells
    fig = plots.notpm_bars(cells)
    bar = fig.data[0]
    order = bar.meta["cells"]
    base_of = dict(zip(cells["cell_id"], cells["baseline_id"], strict=True))
    groups = [base_of[c] for c in order]
    # Each baseline's rows are contiguous.
    runs = [g for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]]
    assert len(runs) == len(set(groups)) == 5
    label = dict(zip(cells["cell_id"], cells["cell_label"], strict=True))
    for cell_id, text in zip(order, bar.text, strict=True):
        if base_of[cell_id] != cell_id:
            assert f" vs {label[base_of[cell_id]]}" in text, text


def test_a_chosen_reference_row_stands_for_its_server(generations: Path) -> None:
    """``--server-reference``: another row is the reference, named in heading and figure, and
    stands for its server in place of that server's baseline."""
    model = build_report_model(f"sqlite:///{generations}", EXPERIMENT,
                               server_reference="percona-5.5-fast")
    section = next(s for s in model.sections
                   if any(isinstance(b, Heading) and b.anchor == "servers" for b in s))
    assert words(section[0].text) == "Each server against percona-5.5-fast"
    tab = next(b for b in section if isinstance(b, Table))
    rows = {words(r[0]): r for r in tab.rows}
    assert words(rows["percona-5.5"][1]) == "percona-5.5-fast"
    assert "reference" in words(rows["percona-5.5"][3])
    assert sum("reference" in words(r[3]) for r in tab.rows) == 1
    slug = next(b.slug for b in section if isinstance(b, Figure))
    fig = go.Figure(next(f.figure for f in model.figures if f.slug == slug))
    assert "percona-5.5-fast" in fig.layout.title.text


def test_report_refuses_a_server_reference_that_names_no_row(generations: Path,
                                                             tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from core.errors import AnalysisError
    from flushbench.cli import build_app

    out = tmp_path / "report"
    res = CliRunner().invoke(build_app(), ["report", EXPERIMENT, "--db", str(generations),
                                           "-o", str(out), "--no-png",
                                           "--server-reference", "mysql-9.9-defaults"])
    assert isinstance(res.exception, AnalysisError), res.output
    assert "'mysql-9.9-defaults' names no cell" in str(res.exception)
    assert "C1 (mysql-5.5-defaults)" in str(res.exception)  # the rows it could name
    assert not (out / "report.html").exists()
