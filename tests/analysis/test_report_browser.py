"""The HTML report of each recorded database, laid out by headless Chromium: no figure may
be empty, and no legend may cover a title, an axis title, an annotation or another figure's
text; no two annotations may collide. The page is measured as a reader's browser draws it
(plotly.js's own SVG, at a 1400 px wide window), then screenshotted."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from analysis.report.writer import write_report
from tests.support import system_tools

CHROMIUM = system_tools.which("chromium") or system_tools.which("chromium-browser")

#: Run in the page once plotly.js has drawn: per figure, whether it drew any mark, and which
#: boxes of text overlap (legend against titles and annotations, annotation against
#: annotation). The answer goes into an attribute of <body>, which --dump-dom prints.
_CHECK = """
<script>
function __boxes(gd, sel) {
  return Array.from(gd.querySelectorAll(sel)).map(function (e) {
    var r = e.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom,
            text: (e.textContent || '').trim().slice(0, 60)};
  }).filter(function (b) { return b.x1 - b.x0 > 1 && b.y1 - b.y0 > 1; });
}
function __overlap(a, b) {
  var slack = 1;  // touching edges are not an overlap
  return a.x0 < b.x1 - slack && b.x0 < a.x1 - slack && a.y0 < b.y1 - slack
    && b.y0 < a.y1 - slack;
}
function __check() {
  var out = [];
  document.querySelectorAll('.plotly-graph-div').forEach(function (gd) {
    var id = gd.id;
    var marks = gd.querySelectorAll(
      '.scatterlayer path.js-line, .scatterlayer .point, .barlayer .point, '
      + '.boxlayer path.box, .heatmaplayer image, .hm image, .barlayer .point path');
    var drawn = Array.from(marks).filter(function (m) {
      var d = m.getAttribute('d');
      return m.tagName.toLowerCase() === 'image' || (d && d.length > 8 && d !== 'M0,0Z');
    });
    if (!drawn.length) out.push(id + ': empty figure');
    var legend = __boxes(gd, '.legend .bg');
    var texts = __boxes(gd, '.g-gtitle text, .g-xtitle text, .g-x2title text, '
      + '.g-ytitle text, .annotation-text-g text');
    legend.forEach(function (l) {
      texts.forEach(function (t) {
        if (__overlap(l, t)) out.push(id + ': legend covers "' + t.text + '"');
      });
    });
    var notes = __boxes(gd, '.annotation-text-g text');
    for (var i = 0; i < notes.length; i++)
      for (var j = i + 1; j < notes.length; j++)
        if (__overlap(notes[i], notes[j]))
          out.push(id + ': "' + notes[i].text + '" collides with "' + notes[j].text + '"');
  });
  document.body.setAttribute('data-layout-problems', JSON.stringify(out));
  document.body.setAttribute('data-figures-checked',
                             String(document.querySelectorAll('.plotly-graph-div').length));
}
window.addEventListener('load', function () { setTimeout(__check, 1500); });
</script>
"""


def _chromium(args: list[str], user_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={user_dir}", "--window-size=1400,3000",
         "--virtual-time-budget=30000", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )


def _problems(report: Path, tmp_path: Path, *also: str) -> tuple[list[str], int]:
    """Layout problems Chromium finds in the report, and how many figures it checked; ``also``
    are more arguments for the same browser start (a screenshot of the page)."""
    page = tmp_path / "checked.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", _CHECK + "</body>"),
                    encoding="utf-8")
    res = _chromium(["--dump-dom", *also, page.resolve().as_uri()], tmp_path / "profile")
    assert res.returncode == 0, res.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", res.stdout)
    assert body, res.stdout[:500]
    found = re.search(r'data-layout-problems="([^"]*)"', body.group(1))
    count = re.search(r'data-figures-checked="(\d+)"', body.group(1))
    assert found and count, "the check did not run: " + body.group(1)[:300]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&")), int(
        count.group(1))


#: The study whose report is also screenshotted (the layout check runs on every study): the
#: flash study's, two servers and the longest labels.
SCREENSHOT_OF = "recorded_flash"


@pytest.mark.slow  # browser starts and two reports: out of the fast lane
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (scripts/setup.sh "
                    "installs it)")
@pytest.mark.parametrize("name", ["recorded_study", "recorded_allocators", "recorded_flash"])
def test_report_figures_are_drawn_and_legends_cover_nothing(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    db = request.getfixturevalue(name)
    report = write_report(db, None, tmp_path / "report", png=False)
    n_figures = report.read_text(encoding="utf-8").count('class="plotly-graph-div"')
    # Drawing the page to a PNG is the same browser path whatever the study: one screenshot
    # proves it, taken by the browser start that checks the layout (the check only sets
    # attributes on the body; a second start drew the whole report again).
    shot = tmp_path / "report.png"
    also = ("--hide-scrollbars", f"--screenshot={shot}") if name == SCREENSHOT_OF else ()
    problems, checked = _problems(report, tmp_path, *also)
    assert checked == n_figures > 5
    assert problems == []
    if name != SCREENSHOT_OF:
        return
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 100_000


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium")
def test_the_check_catches_an_empty_figure_and_a_covering_legend(tmp_path: Path) -> None:
    """The check itself can fail: a figure without data and a legend laid over the title."""
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    empty = go.Figure(layout=dict(title=dict(text="nothing here")))
    covered = go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2], name="a long legend entry"),
                        layout=dict(title=dict(text="a title under the legend", x=0.1),
                                    showlegend=True, height=450, width=700,
                                    legend=dict(x=0.0, y=1.2, yanchor="top", xanchor="left")))
    divs = "".join(f.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{i}")
                   for i, f in enumerate((empty, covered)))
    page = tmp_path / "report.html"
    page.write_text(f"<html><head><script>{get_plotlyjs()}</script></head><body>{divs}"
                    "</body></html>", encoding="utf-8")
    problems, checked = _problems(page, tmp_path)
    assert checked == 2
    assert "fig-0: empty figure" in problems
    assert any(p.startswith("fig-1: legend covers") for p in problems), problems
