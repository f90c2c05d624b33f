"""Hostile inputs whose messages named the wrong cause: one row per case, named after what it
checks.

Each row runs the real ``flushbench`` entry point in this process, in a fresh folder
(``{tmp}``) that its ``setup`` prepares, and asserts one ``error: …`` line with the expected
fragments (the path or key, the cause, the fix), none of the misleading ones (``absent``),
no traceback, no crash log, and nothing written but what the row allows. Below the table: the
no-steady-state warning, which the analysis split at ``;`` into four lines of nonsense.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest

from core.paths import SERVER_PROFILES_DIR
from store.db import ResultsDB
from tests.cli.conftest import CliRun
from tests.cli.test_hostile_inputs import exp
from tests.support import system_tools
from tests.support.old_databases import fixture_path
from tests.support.queueing import enqueue_plain

BIG = str(2**63)
Setup = Callable[[Path], Callable[[], None] | None]


def queued(tmp: Path) -> None:
    """``{tmp}/r.sqlite`` holding experiment ``x`` (id 1): two queued runs."""
    db = ResultsDB(tmp / "r.sqlite")
    enqueue_plain(db, "x", 2)
    db.dispose()


def edited_old_database(tmp: Path) -> None:
    """A revision-0005 database someone gave the column revision 0006 adds: the migration
    itself fails (SQLite: duplicate column name)."""
    shutil.copy(fixture_path("0005"), tmp / "r.sqlite")
    conn = sqlite3.connect(tmp / "r.sqlite")
    conn.execute("ALTER TABLE runs ADD COLUMN window_start_s REAL")
    conn.commit()
    conn.close()


def immutable_database(tmp: Path) -> Callable[[], None]:
    """The queued database made immutable (``chattr +i``: root cannot write it either)."""
    if system_tools.which("chattr") is None:
        pytest.skip("chattr (e2fsprogs) is not installed")
    queued(tmp)
    for leftover in tmp.glob("r.sqlite-*"):
        leftover.unlink()
    db = tmp / "r.sqlite"
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True, check=False).returncode:
        pytest.fail("chattr +i failed: the row needs root on a file system with attributes")
    return lambda: subprocess.run(["chattr", "-i", str(db)], check=True)


def link_into_proc(tmp: Path) -> None:
    (tmp / "into-proc").symlink_to("/proc/self")


def servers(*names: str) -> Setup:
    """``{tmp}/x.yaml`` whose matrix names these servers (``{tmp}/md.yaml``: a profile copy)."""
    def write(tmp: Path) -> None:
        shutil.copy(SERVER_PROFILES_DIR / "mariadb-debian.yaml", tmp / "md.yaml")
        (tmp / "x.yaml").write_text(exp({"matrix": {"server": list(names)}}))
    return write


def window_start(value: str) -> Setup:
    def write(tmp: Path) -> None:
        (tmp / "x.yaml").write_text(exp({"window": {"start": value}}))
    return write


@dataclass
class Row:
    """One hostile input and what its message must and must not say."""

    id: str
    args: list[str]
    expect: list[str]
    setup: Setup | None = None
    absent: list[str] = field(default_factory=list)
    #: Files the command may leave in ``{tmp}`` (the database's own, a kept backup).
    may_write: tuple[str, ...] = ()
    marks: tuple[pytest.MarkDecorator, ...] = ()


NOT_KALEIDO = ["kaleido", "Chromium", "could not be drawn"]
DB = ["--db", "{tmp}/r.sqlite"]

ROWS = [
    Row("report-o-under-proc-is-refused-before-anything-is-read",
        ["report", "x", "-o", "/proc/flushbench-report", *DB],
        ["/proc/flushbench-report", "the report folder under /proc",
         "kernel file system", "choose a folder on a disk"], setup=queued),
    Row("report-o-through-a-link-into-proc-is-refused",
        ["report", "x", "-o", "{tmp}/into-proc/report", *DB],
        ["{tmp}/into-proc/report", "under /proc"], setup=link_into_proc),
    Row("plot-o-under-proc-is-not-blamed-on-kaleido",
        ["plot", "compare", "x", "C1", "C2", "-o", "/proc/flushbench.png", *DB],
        ["/proc/flushbench.png", "the figure file (-o) under /proc", "kernel file system"],
        setup=queued, absent=NOT_KALEIDO),
    Row("bundle-o-under-proc-is-not-blamed-on-the-bundle",
        ["bundle", "x", "-o", "/proc/flushbench.tar.zst", *DB],
        ["/proc/flushbench.tar.zst", "the bundle under /proc", "kernel file system"],
        setup=queued, absent=["cannot write the bundle there", "No such file"]),
    Row("export-o-under-sys-is-refused",
        ["export", "x", "-o", "/sys/flushbench.csv", *DB],
        ["/sys/flushbench.csv", "the export file (-o) under /sys"], setup=queued),
    Row("queue-cancel-run-beyond-2-63-is-one-sentence",
        ["queue", "cancel", "x", "--run", "100000000000000000000", *DB],
        ["--run", "no run 100000000000000000000", "run ids are between 1 and " + str(2**63 - 1)],
        setup=queued, absent=["OverflowError"]),
    Row("queue-cancel-run-2-63-is-one-sentence",
        ["queue", "cancel", "x", "--run", BIG, *DB], ["--run", f"no run {BIG}"], setup=queued),
    Row("failed-migration-says-what-failed-and-where-the-backup-is",
        ["db", "upgrade", *DB],
        ["sqlite:///{tmp}/r.sqlite", "the upgrade from revision 0005 to",
         "duplicate column name: window_start_s", "restored from its backup",
         "{tmp}/r.pre-upgrade-0005-", "which is kept", "run `flushbench db upgrade` again"],
        setup=edited_old_database,
        absent=["the server is up", "credentials", "host, port"],
        may_write=("r.pre-upgrade-0005-",)),
    Row("write-to-an-immutable-database-names-it",
        ["queue", "cancel", "x", *DB],
        ["sqlite:///{tmp}/r.sqlite", "attempt to write a readonly database",
         "make the file and its folder writable"], setup=immutable_database,
        absent=["(--db / $FLUSHBENCH_DB)", "host, port"]),
    Row("compare-an-experiment-with-itself-is-refused",
        ["compare", "x@{tmp}/r.sqlite", "x@{tmp}/r.sqlite"],
        ["are the same experiment (id 1) of the same database", "compared with itself",
         "name two different experiments"], setup=queued),
    Row("compare-an-id-with-its-own-name-is-refused",
        ["compare", "1@{tmp}/r.sqlite", "x@{tmp}/../case/r.sqlite"],
        ["1@r.sqlite and x@r.sqlite are the same experiment (id 1)"], setup=queued),
    Row("compare-one-experiment-in-one-database-given-twice-is-refused",
        ["compare", "x", "--db", "{tmp}/r.sqlite", "--db", "{tmp}/r.sqlite"],
        ["the same experiment (id 1) of the same database"], setup=queued),
    Row("window-start-misspelt-names-the-steady-keyword",
        ["validate", "{tmp}/x.yaml"],
        ["{tmp}/x.yaml", "window.start", "expected a duration like 10s, 30m or 1h30m, or"
         " `steady`, got 'Stedy'"], setup=window_start("Stedy")),
    Row("server-profile-as-name-and-path-is-one-server",
        ["validate", "{tmp}/x.yaml"],
        ["{tmp}/x.yaml: matrix.server[1]", f"'{SERVER_PROFILES_DIR}/mariadb-debian.yaml' and"
         " 'mariadb-debian' (server) are one server profile", "spelt two ways",
         "write it one way (e.g. 'mariadb-debian')"],
        setup=servers("mariadb-debian", f"{SERVER_PROFILES_DIR}/mariadb-debian.yaml"),
        marks=(pytest.mark.mysql,)),
    Row("server-profile-with-and-without-dot-slash-is-one-server",
        ["validate", "{tmp}/x.yaml"],
        ["matrix.server[1]", "'./md.yaml' and 'md.yaml' (matrix.server[0]) are one server"
         " profile ({tmp}/md.yaml)"],
        setup=servers("md.yaml", "./md.yaml"), marks=(pytest.mark.mysql,)),
]


def _fill(value: str, tmp: Path) -> str:
    return value.replace("{tmp}", str(tmp))


def _files(tmp: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tmp)): p.read_bytes() for p in tmp.rglob("*")
            if p.is_file() and not p.is_symlink()}


def test_row_names_are_unique() -> None:
    assert len({r.id for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id, marks=r.marks) for r in ROWS])
def test_hostile_message(row: Row, case_dir: Path, cli: CliRun) -> None:
    cleanup = row.setup(case_dir) if row.setup else None
    try:
        before = _files(case_dir)
        code, out, err = cli([_fill(a, case_dir) for a in row.args])
    finally:
        if cleanup is not None:
            cleanup()
    assert code == 2, f"exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    assert err.startswith("error: ") and err.count("error: ") == 1, err
    assert len(err.strip().splitlines()) <= 2, err  # one problem (preflight: headline + line)
    assert "Traceback" not in err + out and "internal error" not in err, err
    assert not (case_dir / "work" / "logs").exists()  # no crash log: no bug was hit
    for fragment in row.expect:
        assert _fill(fragment, case_dir) in err, err
    for fragment in row.absent:
        assert fragment not in err + out, err
    after = _files(case_dir)
    own = ("r.sqlite-wal", "r.sqlite-shm", *row.may_write)
    added = [name for name in set(after) - set(before) if not name.startswith(own)]
    assert added == [], added


# --- the no-steady-state warning: one warning, one line ---------------------------------------

def _unsettled() -> str:
    from runner.run.steady import SteadyStart

    series = {name: {"start_s": 300.0, "reached": False, "batches": 5}
              for name in ("throughput", "checkpoint age", "dirty pages")}
    return SteadyStart(start_s=300.0, reached=False, cap_s=300.0, series=series).message()


def test_the_no_steady_state_warning_lists_as_one_line() -> None:
    from analysis.steadiness.claims import run_warnings_by_kind

    warning = _unsettled()
    assert "; " not in warning
    done = pd.DataFrame({"run_id": [7, 8],
                         "warnings": [f"{warning}; noisy: CV 12.0% ≥ 10%", warning]})
    lines = run_warnings_by_kind(done)
    assert len(lines) == 2, lines
    assert lines[0].startswith("no steady state before the cap: 2 of 2 runs: run 7 (the window")
    assert "throughput never settles (cut at 300 s, 5 batches)" in lines[0]
    assert lines[1] == "noisy: 1 of 2 runs: run 7 (CV 12.0% ≥ 10%)"


def test_a_stored_warning_with_semicolons_in_its_figures_stays_one() -> None:
    """The text earlier versions stored: ``;`` inside the parentheses of its figures."""
    from analysis.steadiness.claims import split_warnings

    stored = ("no steady state before the cap: the window starts at 300 s after warmup, the"
              " latest allowed (MSER-5: throughput never settles; cut 300 s (5 batches),"
              " dirty pages never settles; cut 300 s (5 batches))")
    assert split_warnings(f"{stored}; noisy: CV 12.0% ≥ 10%; ") == [
        stored, "noisy: CV 12.0% ≥ 10%"]
    assert split_warnings("") == []


def test_a_capitalised_steady_is_the_keyword(tmp_path: Path) -> None:
    from core.experiment.loading import load_experiment

    for spelling in ("Steady", "STEADY", " steady "):
        (tmp_path / "x.yaml").write_text(exp({"window": {"start": spelling}}))
        window = load_experiment(tmp_path / "x.yaml").window
        assert window.steady and window.start == "steady", spelling
