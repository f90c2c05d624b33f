"""The report: HTML + PNGs on a synthetic store, opened in headless Chromium; the CLI verbs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from analysis.report.writer import write_report
from flushbench.cli import build_app
from tests.support import system_tools
from tests.support.parallel import REAL_RUN_GROUP

CHROMIUM = system_tools.which("chromium") or system_tools.which("chromium-browser")


@pytest.fixture(
    scope="session",
    # Under xdist each case's tests share one worker, so each report is written once; the real
    # case shares the session's real run with the other readers of it.
    params=[pytest.param("synthetic", marks=pytest.mark.xdist_group("report-synthetic")),
            pytest.param("real", marks=[pytest.mark.mysql,
                                        pytest.mark.xdist_group(REAL_RUN_GROUP)])],
)
def report(
    request: pytest.FixtureRequest, study_db: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The report of the synthetic study and of a real short run (MariaDB + Go driver).

    FLUSHBENCH_TEST_RESULTS_DB points the "real" case at another database (a quickstart run).
    """
    if request.param == "real":
        db = os.environ.get("FLUSHBENCH_TEST_RESULTS_DB") or request.getfixturevalue(
            "real_results_db"
        )
    else:
        db = study_db
    return write_report(db, None, tmp_path_factory.mktemp("report"), png=True)


def test_report_is_self_contained_with_every_section(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    # plotly.js inlined exactly once, nothing fetched from the network.
    assert html.count("class=\"plotly-graph-div\"") >= 4
    assert html.count("* plotly.js v") == 1
    assert "<script src=" not in html and "<link" not in html
    for section in ("Verdict", "Caveats", "Next", "Contents", "Ranking", "Configurations",
                    "Methodology", "Key server variables", "Hardware", "measurement window",
                    "stability score"):
        assert section in html
    assert "innodb_max_dirty_pages_pct" in html


def test_report_writes_a_png_per_figure(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    pngs = sorted((report.parent / "figures").glob("*.png"))
    n_figures = html.count("class=\"plotly-graph-div\"")
    assert "PNG export failed" not in html
    assert len(pngs) == n_figures
    # Each figure links its own PNG; no placeholder is left in the page.
    assert html.count("<div class='png'>PNG: <a href='figures/") == n_figures
    assert "<!--png:" not in html and "<!--png-summary-->" not in html
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 10_000  # a rendered chart, not an empty canvas
    assert any("checkpoint-dirty" in p.name for p in pngs)


def test_report_survives_a_png_failure(study_db: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.figures import png_export

    def broken() -> None:
        raise RuntimeError("no chromium here")

    monkeypatch.setattr(png_export, "_new_scope", broken)
    # An empty cache of its own: a PNG drawn by an earlier test would need no Chromium at all.
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    path = write_report(study_db, "study", tmp_path)
    html = path.read_text(encoding="utf-8")
    assert "PNG export failed" in html and "no chromium here" in html
    assert not (tmp_path / "figures").exists() or not list((tmp_path / "figures").glob("*.png"))
    assert "PNG: <a" not in html and "<!--png:" not in html  # no link to a missing file


def _chromium(args: list[str], user_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={user_dir}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=15000", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )


@pytest.mark.slow  # a browser start: out of the fast lane
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_report_renders_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    url = report.resolve().as_uri()
    # One browser start lays the page out, prints its DOM and draws it to a PNG.
    shot = tmp_path / "report.png"
    dom = _chromium(["--dump-dom", "--hide-scrollbars", "--window-size=1400,3000",
                     f"--screenshot={shot}", url], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = report.read_text(encoding="utf-8")
    n_figures = html.count("class=\"plotly-graph-div\"")
    # Every figure drew its SVG layers and its traces.
    assert dom.stdout.count('class="main-svg"') >= 2 * n_figures
    assert len(re.findall(r'class="trace scatter|class="trace bars|class="hm"',
                          dom.stdout)) >= n_figures
    assert not re.search(r"<html[^>]*data-js-errors", dom.stdout), "script errors on the page"
    console_errors = [line for line in dom.stderr.splitlines()
                      if "CONSOLE" in line and ("Uncaught" in line or "Error" in line)]
    assert not console_errors
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 100_000  # text, tables and charts, not a blank page
    keep = os.environ.get("FLUSHBENCH_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


def _app() -> typer.Typer:
    return build_app()


def test_cli_compare_show_export(study_db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(_app(), ["compare", "study", "--db", str(study_db)],
                        env={"COLUMNS": "220"})
    assert res.exit_code == 0, res.output
    assert "faster" in res.output and "Main effect" in res.output
    assert "not enough repetitions" in res.output
    assert "MDE ±" in res.output  # every verdict says how large a change could hide
    res = runner.invoke(_app(), ["show", "1", "--db", str(study_db)])
    assert res.exit_code == 0, res.output
    assert "stability score" in res.output and "bench-host" in res.output
    out = tmp_path / "s.csv"
    res = runner.invoke(_app(), ["export", "study", "-o", str(out), "--what", "samples",
                                 "--db", str(study_db)])
    assert res.exit_code == 0, res.output
    assert "checkpoint_age_mb" in out.read_text().splitlines()[0]


def test_cli_report_and_errors(study_db: Path, mixed_meta_db: Path, tmp_path: Path) -> None:
    from core.errors import AnalysisError

    runner = CliRunner()
    res = runner.invoke(_app(), ["report", "study", "-o", str(tmp_path / "r"), "--no-png",
                                 "--db", str(study_db)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r" / "report.html").exists()
    res = runner.invoke(_app(), ["compare", "mixed", "--db", str(mixed_meta_db)])
    assert isinstance(res.exception, AnalysisError)  # the runner's CLI boundary prints it
    res = runner.invoke(_app(), ["compare", "mixed", "--force", "--db", str(mixed_meta_db)])
    assert res.exit_code == 0 and "forced comparison" in res.output
    res = runner.invoke(_app(), ["export", "study", "-o", str(tmp_path / "x"), "--format", "xls",
                                 "--db", str(study_db)])
    assert isinstance(res.exception, AnalysisError)


def test_sysbench_sweep_report_has_the_threads_figure(tmp_path: Path) -> None:
    from tests.support.synthetic_store import SynthCell, build_store

    cells = [
        SynthCell(knobs={"allocator": alloc, "connections": threads},
                  notpm=60_000 * threads ** 0.5 * (1.5 if alloc == "jemalloc" else 1.0))
        for alloc in ("glibc", "jemalloc") for threads in (8, 32, 128)
    ]
    build_store(tmp_path / "s.sqlite", cells, name="sweep", repetitions=3, duration=120,
                warmup=10, n_counters=40, driver="sysbench")
    html = write_report(tmp_path / "s.sqlite", "sweep", tmp_path / "r", png=False).read_text(
        encoding="utf-8")
    assert "TPS vs client threads per allocator" in html
    assert "TPS per 10 s interval" in html and "New-Order transactions per" not in html
    assert "NOTPM" not in html.split("<main>")[1]
    assert "sysbench 8 tables" in html


def test_cli_compare_fits_80_columns(study_db: Path) -> None:
    """Tables fit an 80-column terminal; labels are whole in the legend, never cut mid-word."""
    res = CliRunner().invoke(_app(), ["compare", "study", "--db", str(study_db)],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    table_lines = [ln for ln in res.output.splitlines() if ln[:1] in "┏┃┡│└━┗"]
    assert table_lines and all(len(ln) <= 80 for ln in table_lines), res.output
    assert "C1  doublewrite=on max_dirty_pages_pct=50 (baseline)" in res.output
    assert "max_dirty_pages_pc\n" not in res.output


def test_a_knob_set_in_some_rows_only_colours_the_memory_figure(tmp_path: Path) -> None:
    """Include rows that set a knob only where it applies: the rows without it form one
    "unset" level of the memory figure's colours and dashes instead of failing the report
    (a numeric knob's column is float there, and NaN equals nothing)."""
    from tests.support.synthetic_store import SynthCell, build_store

    # A numeric knob unset in some rows: its column is float, each read a new NaN object.
    # The allocator varies, so the memory figure is drawn.
    cells = [SynthCell(knobs={"allocator": "glibc"}, notpm=40_000),
             SynthCell(knobs={"allocator": "jemalloc"}, notpm=55_000),
             SynthCell(knobs={"allocator": "glibc", "max_dirty_pages_pct": 60.0}, notpm=42_000)]
    build_store(tmp_path / "s.sqlite", cells, name="partial", repetitions=2, duration=120,
                warmup=10, n_counters=40)
    html = write_report(tmp_path / "s.sqlite", "partial", tmp_path / "r", png=False).read_text(
        encoding="utf-8")
    assert "rss-over-time" in html
