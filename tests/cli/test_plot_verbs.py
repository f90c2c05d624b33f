"""``flushbench plot compare``: two cells of the recorded 2011 study on one time axis, written
as PNG and HTML, and the one-sentence errors for a wrong cell, metric or file."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from core.errors import AnalysisError
from flushbench.cli import build_app

STUDY = "stability-2011"


def _plot(db: Path, *args: str) -> object:
    return CliRunner().invoke(build_app(), ["plot", "compare", STUDY, *args, "--db", str(db)])


def test_plot_compare_writes_png_and_html(recorded_study: Path, tmp_path: Path) -> None:
    png = tmp_path / "off-vs-on.png"
    res = _plot(recorded_study, "C1", "C3", "-o", str(png))
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    html = tmp_path / "dirty.html"
    res = _plot(recorded_study, "C1", "doublewrite=off max_dirty_pages_pct=50", "--metric",
                "dirty", "-o", str(html))
    assert res.exit_code == 0, res.output
    text = html.read_text(encoding="utf-8")
    assert "C1 vs C3: dirty pages (% of the buffer pool)" in text
    assert "* plotly.js v" in text  # self-contained: opens offline


def test_plot_compare_errors_name_what_to_fix(recorded_study: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "x.png")
    cases = [
        (("C1", "C1", "-o", out), "are the same cell"),
        (("C1", "doublewrite=off", "-o", out), "matches several cells"),
        (("C1", "C12", "-o", out), "names no cell"),
        (("C1", "C3", "--metric", "latency", "-o", out), "unknown metric 'latency'"),
        (("C1", "C3", "-o", str(tmp_path / "x.svg")), "must end in .png or .html"),
    ]
    for args, message in cases:
        res = _plot(recorded_study, *args)
        assert isinstance(res.exception, AnalysisError), (args, res.output)
        assert message in str(res.exception), (args, str(res.exception))
    assert not (tmp_path / "x.png").exists()


def test_the_help_lists_the_metrics_the_library_draws() -> None:
    from analysis.comparisons.two_cells import METRICS
    from flushbench.cli.plot_verbs import METRIC_NAMES

    assert tuple(METRICS) == METRIC_NAMES
