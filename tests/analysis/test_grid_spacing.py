"""Small-multiples grids leave room between rows: drawn by Chromium at the PNG's size, no x tick
label or x axis title of a panel touches the title of the panel below it (the quickstart's 2×2
throughput grid had its upper tick labels run into the lower titles)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import plotly.io as pio
import pytest
from plotly.offline import get_plotlyjs

from analysis.figures import small_multiples
from analysis.figures.plots import resolved
from analysis.tables import frames
from tests.support import system_tools
from tests.support.synthetic_store import SynthCell, build_store

CHROMIUM = system_tools.which("chromium") or system_tools.which("chromium-browser")

#: Boxes of every x tick label and x axis title against every annotation (the panel titles).
_CHECK = """
<script>
function __boxes(sel) {
  return Array.from(document.querySelectorAll(sel)).map(function (e) {
    var r = e.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom,
            text: (e.textContent || '').trim().slice(0, 40)};
  }).filter(function (b) { return b.x1 - b.x0 > 1 && b.y1 - b.y0 > 1; });
}
function __check() {
  var out = [];
  var ticks = __boxes('.xaxislayer-above text, [class^="g-x"][class$="title"] text');
  var titles = __boxes('.annotation-text-g text');
  ticks.forEach(function (t) {
    titles.forEach(function (a) {
      if (t.x0 < a.x1 - 1 && a.x0 < t.x1 - 1 && t.y0 < a.y1 - 1 && a.y0 < t.y1 - 1)
        out.push('"' + t.text + '" touches "' + a.text + '"');
    });
  });
  document.body.setAttribute('data-problems', JSON.stringify(out));
  document.body.setAttribute('data-counts', ticks.length + ' ' + titles.length);
}
window.addEventListener('load', function () { setTimeout(__check, 1000); });
</script>
"""


def _overlaps(spec: dict, tmp_path: Path) -> tuple[list[str], int, int]:
    """What touches what once Chromium has drawn the figure at its own (the PNG's) size."""
    fig = resolved(spec)
    width, height = fig["layout"]["width"], fig["layout"]["height"]
    div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id="grid",
                      default_width=f"{width}px", default_height=f"{height}px")
    page = tmp_path / "grid.html"
    page.write_text(f"<html><head><script>{get_plotlyjs()}</script></head><body "
                    f"style='margin:0'>{div}{_CHECK}</body></html>", encoding="utf-8")
    res = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width + 40},{height + 40}",
         "--virtual-time-budget=20000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", res.stdout)
    assert body, res.stdout[:500]
    found = re.search(r'data-problems="([^"]*)"', body.group(1))
    counts = re.search(r'data-counts="(\d+) (\d+)"', body.group(1))
    assert found and counts, "the check did not run: " + body.group(1)[:300]
    problems = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    return problems, int(counts.group(1)), int(counts.group(2))


def _frames(db: Path) -> tuple:
    fr = frames.load(db)
    return fr, fr.intervals.merge(fr.run_summary[["run_id", "cell_id"]], on="run_id")


@pytest.fixture(scope="module")
def study(recorded_study: Path) -> tuple:
    """The 2011 study as recorded: 8 cells, 30-minute runs."""
    return _frames(recorded_study)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The quickstart's shape: doublewrite × max_dirty_pages_pct, one 60 s run each."""
    db = tmp_path_factory.mktemp("quickstart") / "results.sqlite"
    build_store(db, [SynthCell(knobs={"doublewrite": dw, "max_dirty_pages_pct": pct},
                               notpm=1500) for dw in (True, False) for pct in (50, 75)],
                name="quickstart", repetitions=1, warmup=10, duration=60, n_counters=30)
    return _frames(db)


def _grid(loaded: tuple, n_cells: int) -> dict:
    fr, ivl = loaded
    cells = fr.cell_summary.sort_values("position").head(n_cells)
    win = fr.experiment["window"]
    return small_multiples.throughput_grid_spec(ivl[ivl["cell_id"].isin(cells["cell_id"])],
                                                cells, window=(win.start, win.end))


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium")]


@pytest.mark.parametrize(("store", "n_cells"), [("quickstart", 4), ("study", 3),
                                                ("study", 8)])
def test_tick_labels_and_axis_titles_stay_clear_of_the_titles_below(
        store: str, n_cells: int, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    problems, ticks, titles = _overlaps(_grid(request.getfixturevalue(store), n_cells),
                                        tmp_path)
    assert titles == n_cells and ticks > 4 * n_cells
    assert problems == []


def test_the_check_finds_tick_labels_in_a_title(quickstart: tuple, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The quickstart's 2×2 grid with no room for the tick labels between the rows (the
    grid's earlier 7 % gap left ~29 px: the tick labels touched the titles below)."""
    monkeypatch.setattr(small_multiples, "X_TICKS_PX", 0)
    monkeypatch.setattr(small_multiples, "ROW_PAD_PX", 0)
    problems, _, _ = _overlaps(_grid(quickstart, 4), tmp_path)
    assert problems and all("touches" in p for p in problems), problems
