"""``flushbench plot compare``: rows of the recorded 2011 studies on one time axis, written as
SVG, PNG (at twice its size) and HTML, named in title and legend, and the one-sentence errors
for a wrong row, metric or file."""

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
    # The recorded study's rows have no names: each is called as the report calls it, the
    # baseline by its label, another row by the knobs that differ from the baseline's.
    assert ("doublewrite=on max_dirty_pages_pct=75 io_capacity=200 vs doublewrite=off"
            " max_dirty_pages_pct=50 io_capacity=20000: dirty pages (% of the buffer pool)"
            in text.replace("\\u003cbr\\u003e", " ").replace("<br>", " "))
    assert "* plotly.js v" in text  # self-contained: opens offline


def test_plot_compare_errors_name_what_to_fix(recorded_study: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "x.png")
    cases = [
        (("C1", "C1", "-o", out), "are the same cell"),
        (("C1", "doublewrite=off", "-o", out), "matches several cells"),
        (("C1", "C12", "-o", out), "names no cell"),
        (("C1", "C3", "--metric", "latency", "-o", out), "unknown metric 'latency'"),
        (("C1", "C3", "-o", str(tmp_path / "x.pdf")), "must end in .svg, .png or .html"),
    ]
    for args, message in cases:
        res = _plot(recorded_study, *args)
        assert isinstance(res.exception, AnalysisError), (args, res.output)
        assert message in str(res.exception), (args, str(res.exception))
    assert not (tmp_path / "x.png").exists()


def test_the_help_lists_the_metrics_the_library_draws() -> None:
    from analysis.comparisons.row_compare import METRICS
    from flushbench.cli.plot_verbs import METRIC_NAMES

    assert tuple(METRICS) == METRIC_NAMES


def test_plot_compare_draws_rows_by_name_as_svg_and_a_2x_png(recorded_flash: Path,
                                                              tmp_path: Path) -> None:
    """The blog figure: three rows or more by their names, each name in the title and the
    legend, written as SVG and as a PNG of twice the figure's pixel size."""
    import struct

    from analysis.comparisons import row_compare
    from analysis.figures.plots import HEIGHT, WIDTH

    rows = ("base", "dw-off-50", "dw-off-60", "dw-on-50")
    fig = row_compare.compare_cells(recorded_flash, "stability-2011-flash", *rows)
    title = fig.layout.title.text.replace("<br>", " ")
    assert title.startswith(" vs ".join(rows) + ":"), title
    legend = [t.name.replace("<br>", " ") for t in fig.data if t.showlegend]
    assert [entry.split(" ")[0] for entry in legend] == list(rows)
    assert "(baseline)" in legend[0] and all("(baseline)" not in e for e in legend[1:])
    # Nothing clipped: every legend line fits the figure's width (≈ 7 px a character).
    assert all(7 * len(line) + 80 < WIDTH for t in fig.data if t.showlegend
               for line in t.name.split("<br>"))
    svg = tmp_path / "x.svg"
    res = CliRunner().invoke(build_app(), ["plot", "compare", "stability-2011-flash",
                                           *rows[:3], "-o", str(svg), "--db",
                                           str(recorded_flash)])
    assert res.exit_code == 0, res.output
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<svg") and "dw-off-60" in text and "dw-off-50" in text
    png = tmp_path / "x.png"
    res = CliRunner().invoke(build_app(), ["plot", "compare", "stability-2011-flash",
                                           *rows[:3], "-o", str(png), "--db",
                                           str(recorded_flash)])
    assert res.exit_code == 0, res.output
    head = png.read_bytes()[:24]
    width, height = struct.unpack(">II", head[16:24])
    figure = row_compare.compare_cells(recorded_flash, "stability-2011-flash", *rows[:3])
    assert (width, height) == (2 * WIDTH, 2 * (figure.layout.height or HEIGHT))
