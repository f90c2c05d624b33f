"""Every read verb on every valid database shape: a clear sentence, never an internal error.

The table is shapes (:mod:`tests.support.db_shapes`: no experiment, no cells, cells without
runs, only queued / running / failed runs, done runs without intervals or samples, a failed
baseline, a mix) × read verbs (``status``, ``show``, ``compare``, ``report``, ``export`` in
each table and format, and the notebooks). Each verb either succeeds (exit 0) with what it
promises, or refuses (exit 2) with one ``error: …`` line that says *why* — which runs the
experiment has — never a traceback or a crash log. Which of the two is expected is part of the
table, so a verb that starts refusing good data fails here too.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import select

from store.db import ResultsDB
from store.models import Run
from tests.support.cli_runner import CliRun
from tests.support.db_shapes import NAME, SHAPES
from tests.support.notebook_kernel import NotebookKernel
from tests.support.parallel import session_folder


@dataclass(frozen=True)
class Facts:
    """What a shape holds, hence what each verb must do with it."""

    #: A fragment of the sentence every refusal must contain (what the runs are).
    words: str
    #: Some done run has intervals in its window: compare and report succeed.
    analysable: bool = False
    has_runs: bool = True
    has_intervals: bool = False
    has_samples: bool = False


FACTS: dict[str, Facts] = {
    "empty": Facts("no experiment 'shape' in the results database", has_runs=False),
    "no-cells": Facts("(no run)", has_runs=False),
    "cells-no-runs": Facts("(no run)", has_runs=False),
    "only-queued": Facts("(4 runs: 4 queued)"),
    "only-running": Facts("(4 runs: 3 queued, 1 running)"),
    "only-failed": Facts("(4 runs: 4 failed)"),
    "done-without-rows": Facts("(4 runs: 4 done)"),
    "intervals-no-samples": Facts("(4 runs: 4 done)", analysable=True, has_intervals=True),
    "samples-no-intervals": Facts("(4 runs: 4 done)", has_samples=True),
    "baseline-failed": Facts("", analysable=True, has_intervals=True, has_samples=True),
    "one-cell-one-run": Facts("", analysable=True, has_intervals=True, has_samples=True),
    "mix": Facts("", analysable=True, has_intervals=True, has_samples=True),
}


def test_the_table_covers_every_shape() -> None:
    assert set(FACTS) == set(SHAPES)


@pytest.fixture(scope="session")
def shape_store(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each shape built once per test session (a verb gets a copy: some verbs reap or write).

    Under pytest-xdist the workers share one set: the first worker to get here builds every
    shape into a private folder, renamed into place whole under a lock, and the others wait
    for it and read the same files (the builders are deterministic, so each worker would build
    byte-for-byte the same databases; the tests of this file run on every worker).
    """
    shared = session_folder(request.config, tmp_path_factory, "db-shapes")
    built = shared / "built"
    with (shared / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the worker dies)
        if not built.is_dir():
            staging = Path(tempfile.mkdtemp(dir=shared, prefix="building-"))
            for name, build in SHAPES.items():
                build(staging / f"{name}.sqlite").dispose()
            staging.rename(built)
    return {name: built / f"{name}.sqlite" for name in SHAPES}


@pytest.fixture
def shape_db(request: pytest.FixtureRequest, shape_store: dict[str, Path],
             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy (sqlite3 backup API: WAL included) of the shape ``request.param``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))
    dst = tmp_path / "results.sqlite"
    src_conn, dst_conn = sqlite3.connect(shape_store[request.param]), sqlite3.connect(dst)
    with dst_conn:
        src_conn.backup(dst_conn)
    src_conn.close()
    dst_conn.close()
    return dst


def _clean(code: int, out: str, err: str, work: Path = Path("work")) -> None:
    """Exit 0 or 2; never an internal error, a traceback or a crash log (in ``work``, the
    command's ``FLUSHBENCH_WORK``)."""
    text = out + err
    assert code in (0, 2), f"exit {code}\n{text}"
    assert "Traceback" not in text and "internal error" not in text, text
    assert not list(work.glob("logs/flushbench-crash-*")), text


def _refused(code: int, out: str, err: str, words: str) -> None:
    """Exit 2 with one ``error:`` line saying what the experiment's runs are."""
    assert code == 2, f"exit {code}, expected a refusal\n{out}\n{err}"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert words in lines[0], lines[0]


def _run_ids(db: Path) -> list[int]:
    rdb = ResultsDB(db, create=False)
    try:
        with rdb.session() as s:
            return list(s.scalars(select(Run.id).order_by(Run.id)))
    finally:
        rdb.dispose()


SHAPE_IDS = sorted(SHAPES)


@pytest.mark.parametrize("shape_db", SHAPE_IDS, indirect=True)
def test_status(shape_db: Path, cli: CliRun) -> None:
    code, out, err = cli(["status", "--db", str(shape_db)])
    _clean(code, out, err)
    assert code == 0 and out.strip(), err


@pytest.mark.parametrize("shape_db", SHAPE_IDS, indirect=True)
def test_show_every_run(shape_db: Path, request: pytest.FixtureRequest, cli: CliRun) -> None:
    ids = _run_ids(shape_db)
    for run_id in ids or [1]:
        code, out, err = cli(["show", str(run_id), "--db", str(shape_db)])
        _clean(code, out, err)
        if ids:
            assert code == 0 and f"run {run_id}" in out and "status" in out, err
            assert "None" not in out and "NaT" not in out, out  # "–" for what is not known
        else:
            _refused(code, out, err, "no run 1")


@pytest.mark.parametrize("verb", ["compare", "report"])
@pytest.mark.parametrize("shape_db", SHAPE_IDS, indirect=True)
def test_compare_and_report(shape_db: Path, verb: str, request: pytest.FixtureRequest,
                            cli: CliRun) -> None:
    facts = FACTS[request.node.callspec.params["shape_db"]]
    extra = ["-o", "rep", "--no-png"] if verb == "report" else []
    code, out, err = cli([verb, NAME, *extra, "--db", str(shape_db)])
    _clean(code, out, err)
    if not facts.analysable:
        _refused(code, out, err, facts.words)
        assert not Path("rep/report.html").exists()
    elif verb == "report":
        assert code == 0 and Path("rep/report.html").stat().st_size > 10_000, err
    else:
        assert code == 0 and "Against the baseline" in out, err


@dataclass(frozen=True)
class PngReport:
    """``report NAME -o rep`` with PNGs, run once into a fresh folder of its own."""

    code: int
    out: str
    err: str
    #: The command's working folder: ``rep/`` (the report) and ``work/`` (its work folder).
    home: Path


@pytest.fixture(scope="session")
def png_reports() -> dict[str, PngReport]:
    """The PNG reports made so far, by shape (:func:`_png_report`)."""
    return {}


def _png_report(shape: str, db: Path, cli: CliRun, made: dict[str, PngReport],
                factory: pytest.TempPathFactory) -> PngReport:
    """The report with PNGs of ``shape`` (from ``db``, a copy of it) into a new empty folder.

    Made once: ``test_report_with_pngs`` checks it, and the report-over-a-larger-one test
    starts from a copy of the same folder (the same command on the same data into an empty
    folder: a report with PNGs costs a CPU-second or more). Its folder is never written
    after: a test that writes into it works on a copy.
    """
    if shape not in made:
        home = factory.mktemp(f"png-report-{shape}")
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(home)
            patch.setenv("FLUSHBENCH_WORK", str(home / "work"))
            code, out, err = cli(["report", NAME, "-o", "rep", "--db", str(db)])
        made[shape] = PngReport(code, out, err, home)
    return made[shape]


#: The two tests that share the report with PNGs of ``mix`` run on one xdist worker.
PNG_REPORTS = pytest.mark.xdist_group("tests/analysis/test_database_shapes.py::png-reports")


@pytest.mark.slow
@PNG_REPORTS
@pytest.mark.parametrize("shape_db", ["mix", "intervals-no-samples"], indirect=True)
def test_report_with_pngs(shape_db: Path, request: pytest.FixtureRequest, cli: CliRun,
                          png_reports: dict[str, PngReport],
                          tmp_path_factory: pytest.TempPathFactory) -> None:
    """The PNG export too (a report whose runs have no samples has fewer figures)."""
    shape = request.node.callspec.params["shape_db"]
    made = _png_report(shape, shape_db, cli, png_reports, tmp_path_factory)
    _clean(made.code, made.out, made.err, made.home / "work")
    assert made.code == 0, made.err
    pngs = list((made.home / "rep" / "figures").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


@pytest.mark.parametrize(("what", "fmt"), [("intervals", "csv"), ("intervals", "parquet"),
                                           ("samples", "csv"), ("runs", "parquet")])
@pytest.mark.parametrize("shape_db", SHAPE_IDS, indirect=True)
def test_export(shape_db: Path, what: str, fmt: str, request: pytest.FixtureRequest,
                cli: CliRun) -> None:
    facts = FACTS[request.node.callspec.params["shape_db"]]
    target = Path(f"out.{fmt}")
    code, out, err = cli(["export", NAME, "-o", str(target), "--what", what, "--format", fmt,
                          "--db", str(shape_db)])
    _clean(code, out, err)
    has = {"intervals": facts.has_intervals, "samples": facts.has_samples,
           "runs": facts.has_runs}[what]
    if not has:
        _refused(code, out, err, facts.words or "no experiment")
        assert not target.exists()  # no empty file that looks like a lost export
        return
    assert code == 0, err
    df = pd.read_csv(target) if fmt == "csv" else pd.read_parquet(target)
    assert len(df) and "run_id" in df.columns


#: The shapes a notebook meets differently: no experiment at all, no finished run, finished
#: runs without samples, and a baseline that failed (each notebook run costs seconds; the
#: other shapes reach the same code paths through the verbs above).
NOTEBOOK_SHAPES = ["empty", "only-queued", "intervals-no-samples", "baseline-failed"]


@pytest.mark.slow
@pytest.mark.parametrize("notebook", ["explore.ipynb", "stability-study.ipynb"])
@pytest.mark.parametrize("shape_db", NOTEBOOK_SHAPES, indirect=True)
def test_notebook(shape_db: Path, notebook: str, request: pytest.FixtureRequest,
                  kernel: NotebookKernel) -> None:
    """A notebook runs to the end, or stops at the first cell that needs a finished run with
    the same sentence the verbs print (a flushbench error, never a KeyError deep in pandas)."""
    facts = FACTS[request.node.callspec.params["shape_db"]]
    outputs, error = kernel.run(notebook, {"FLUSHBENCH_DB": str(shape_db),
                                           "FLUSHBENCH_EXPERIMENT": NAME})
    if facts.analysable:
        assert not error, error
        assert any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outputs)
    else:
        assert error.startswith("AnalysisError: "), error
        assert facts.words in error and "\n" not in error, error


@pytest.mark.slow
@PNG_REPORTS
def test_a_report_over_a_larger_one_leaves_only_its_own_pngs(
        shape_store: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        cli: CliRun, png_reports: dict[str, PngReport],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two reports into one folder, the second with fewer figures (its runs have no samples):
    the folder then holds exactly the PNGs the second page links, plus a user's own file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))
    user_file = tmp_path / "rep" / "figures" / "my-notes.png"
    for i, shape in enumerate(["mix", "intervals-no-samples"]):
        db = tmp_path / f"{shape}.sqlite"
        src, dst = sqlite3.connect(shape_store[shape]), sqlite3.connect(db)
        with dst:
            src.backup(dst)
        src.close()
        dst.close()
        if i == 0:
            # The first report is the one test_report_with_pngs[mix] checks (into an empty
            # folder): this folder starts as a copy of it, manifest included.
            made = _png_report(shape, db, cli, png_reports, tmp_path_factory)
            assert made.code == 0, made.err
            shutil.copytree(made.home / "rep", tmp_path / "rep", symlinks=True)
        else:
            code, out, err = cli(["report", NAME, "-o", "rep", "--db", str(db)])
            assert code == 0, err
        if i == 0:
            first = {p.name for p in Path("rep/figures").glob("*.png")}
            user_file.write_bytes(b"mine")
    linked = set(re.findall(r"href='figures/([^']+\.png)'",
                            Path("rep/report.html").read_text(encoding="utf-8")))
    left = {p.name for p in Path("rep/figures").glob("*.png")}
    assert linked and first - linked, "the second report should draw fewer figures"
    assert left == linked | {"my-notes.png"}
    assert user_file.read_bytes() == b"mine"
