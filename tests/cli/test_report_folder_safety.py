"""`report -o DIR` into a folder that holds the user's files, links and named pipes.

One table, one row per case (the model is ``test_bundle_safety.py``): each row fills a fresh
report folder — beside an ``outside/`` folder its links point into — runs the real
``flushbench report`` (in this process; a row with a named pipe as a subprocess with a timeout,
since a pipe opened by mistake would block for ever: the timeout is the harness's guard, not an
assertion on time), and lists every path
under the case folder before and after: its kind and, for a file, its sha256 (``lstat``, so a
link or a FIFO is listed, never followed or opened). A refusal is one ``error:`` line naming
the path with the fix, exit 2, and the case folder exactly as it was. A report that is written
changes nothing but the report's own names (``report.html``, ``figures/NN-kind.png``, the
manifest) inside the report folder, deletes only what ``deleted`` names, and leaves no
temporary file behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from analysis.report.folder import MANIFEST
from store.migrate import head_revision
from tests.cli.conftest import CliRun
from tests.support.folder_listing import listing
from tests.support.recorded import ROOT

DB = ROOT / "tests" / "fixtures" / "results-db" / f"rev-{head_revision()}.sqlite"
EXPERIMENT = "study-short"
FLUSHBENCH = Path(sys.executable).parent / "flushbench"
#: The harness's guard: a report into this small database takes seconds (PNGs from a warm
#: cache); a process still running at this point is a hang.
TIMEOUT = 240
PRECIOUS = b"the user's own file\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_report(case: Path, cache: Path, *args: str) -> tuple[int, str, str]:
    """``flushbench report study-short --db DB ARGS`` in ``case``, as a subprocess."""
    env = {**os.environ, "FLUSHBENCH_CACHE_DIR": str(cache), "COLUMNS": "400"}
    env.pop("FLUSHBENCH_DB", None)
    proc = subprocess.run([str(FLUSHBENCH), "report", EXPERIMENT, "--db", str(case / "db.sqlite"),
                           *args], cwd=case, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    return proc.returncode, proc.stdout, proc.stderr


# ------------------------------------------------------------------- the rows' builders
# Each gets the case folder (with out/, outside/precious.txt and outside/dir/ made) and a
# function running an earlier report, and returns the report's extra arguments.

Build = Callable[[Path, Callable[..., None]], list[str]]


def user_file(name: str, *more: str) -> Build:
    def build(case: Path, _earlier: Callable[..., None]) -> list[str]:
        path = case / "out" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(PRECIOUS)
        return list(more)
    return build


def link(name: str, target: str, *more: str) -> Build:
    def build(case: Path, _earlier: Callable[..., None]) -> list[str]:
        path = case / "out" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(case / target)
        return list(more)
    return build


def fifo(name: str, *more: str) -> Build:
    def build(case: Path, _earlier: Callable[..., None]) -> list[str]:
        path = case / "out" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        return list(more)
    return build


def manifest_text(text: bytes, *more: str) -> Build:
    def build(case: Path, _earlier: Callable[..., None]) -> list[str]:
        (case / "out" / MANIFEST).write_bytes(text)
        return list(more)
    return build


def tampered_manifest(case: Path, earlier: Callable[..., None]) -> list[str]:
    """A manifest listing the user's files — with their true sha256 where it names them
    outside the folder, a wrong one inside — beside a figure an earlier report really wrote
    (listed with its true sha256: the only file the report may delete)."""
    figures = case / "out" / "figures"
    figures.mkdir()
    (figures / "98-old.png").write_bytes(b"an earlier report's figure")
    (figures / "99-mine.png").write_bytes(PRECIOUS)
    precious = case / "outside" / "precious.txt"
    files = {"figures/98-old.png": _sha(b"an earlier report's figure"),
             "figures/99-mine.png": _sha(b"something else"),
             "../outside/precious.txt": _sha(PRECIOUS), str(precious): _sha(PRECIOUS),
             "figures/../../outside/precious.txt": _sha(PRECIOUS),
             "outside/precious.txt": _sha(PRECIOUS)}
    (case / "out" / MANIFEST).write_text(json.dumps({"format": 1, "files": files}))
    return []


def page_is_a_folder(case: Path, _earlier: Callable[..., None]) -> list[str]:
    (case / "out" / "report.html").mkdir()
    return ["--overwrite"]


def report_folder_is_a_fifo(case: Path, _earlier: Callable[..., None]) -> list[str]:
    (case / "out").rmdir()
    os.mkfifo(case / "out")
    return []


def earlier_report_then(change: Callable[[Path], None] | None, *more: str) -> Build:
    """An earlier report (HTML only) into the folder, then ``change`` to it."""
    def build(case: Path, earlier: Callable[..., None]) -> list[str]:
        earlier("--no-png")
        if change is not None:
            change(case / "out")
        return list(more)
    return build


def _edit_page(out: Path) -> None:
    with (out / "report.html").open("ab") as page:
        page.write(b"<!-- my notes -->")


def _page_becomes_link(out: Path) -> None:
    (out / "report.html").unlink()
    (out / "report.html").symlink_to(out.parent / "outside" / "precious.txt")


@dataclass(frozen=True)
class Case:
    id: str
    build: Build
    #: Fragments of the one error line; None: the report is written.
    expect: list[str] | None
    #: Paths (relative to the case folder) a written report may replace or delete.
    replaced: frozenset[str] = frozenset()
    #: Paths a written report must have deleted (an earlier report's stale figure).
    gone: frozenset[str] = frozenset()
    #: Run as a subprocess with a timeout (a named pipe is involved).
    pipe: bool = False


REFUSE_FIX = "pass --overwrite to replace it"
CASES = [
    # The user's own files at the report's names.
    Case("users-report-html-refused", user_file("report.html", "--no-png"),
         ["out/report.html", "was not written by flushbench", REFUSE_FIX]),
    Case("users-report-html-refused-with-png", user_file("report.html"),
         ["out/report.html", REFUSE_FIX]),
    Case("users-figure-refused-before-anything-is-drawn", user_file("figures/01-notpm.png"),
         ["out/figures/01-notpm.png", REFUSE_FIX]),
    Case("users-figure-stays-with-no-png", user_file("figures/01-notpm.png", "--no-png"), None),
    Case("users-other-files-stay", user_file("notes.txt"), None),
    Case("users-report-html-replaced-with-overwrite",
         user_file("report.html", "--no-png", "--overwrite"), None,
         replaced=frozenset({"out/report.html"})),
    # Links at the report's names: never written through.
    Case("report-html-link-refused", link("report.html", "outside/precious.txt", "--no-png"),
         ["out/report.html", "a link", REFUSE_FIX]),
    Case("report-html-link-replaced-not-followed-with-overwrite",
         link("report.html", "outside/precious.txt", "--no-png", "--overwrite"), None,
         replaced=frozenset({"out/report.html"})),
    Case("manifest-link-refused", link(MANIFEST, "outside/precious.txt", "--no-png"),
         [f"out/{MANIFEST}", "a link", "not a manifest flushbench wrote"]),
    Case("figure-link-refused", link("figures/01-notpm.png", "outside/precious.txt"),
         ["out/figures/01-notpm.png", "a link", REFUSE_FIX]),
    Case("figures-folder-link-refused-even-with-overwrite",
         link("figures", "outside/dir", "--overwrite"),
         ["out/figures", "a link, not a folder"]),
    Case("figures-is-a-file-refused", user_file("figures"),
         ["out/figures", "a file, not a folder", "--no-png"]),
    Case("figures-is-a-file-stays-with-no-png", user_file("figures", "--no-png"), None),
    Case("report-html-is-a-folder-refused-even-with-overwrite",
         page_is_a_folder,
         ["out/report.html", "a folder is there"]),
    # Named pipes: refused at once, never opened.
    Case("fifo-manifest-refused", fifo(MANIFEST, "--no-png"),
         [f"out/{MANIFEST}", "named pipe"], pipe=True),
    Case("fifo-report-html-refused", fifo("report.html", "--no-png"),
         ["out/report.html", "named pipe"], pipe=True),
    Case("fifo-figure-refused", fifo("figures/01-notpm.png"),
         ["out/figures/01-notpm.png", "named pipe"], pipe=True),
    Case("fifo-manifest-replaced-with-overwrite", fifo(MANIFEST, "--no-png", "--overwrite"),
         None, replaced=frozenset({f"out/{MANIFEST}"}), pipe=True),
    Case("fifo-report-folder-refused", report_folder_is_a_fifo, ["out", "named pipe"],
         pipe=True),
    # Manifests the report did not write.
    Case("manifest-not-json-refused", manifest_text(b"{not json", "--no-png"),
         [f"out/{MANIFEST}", "not a manifest flushbench wrote"]),
    Case("manifest-huge-refused", manifest_text(b" " * (2 * 1024 * 1024), "--no-png"),
         [f"out/{MANIFEST}", "not a manifest flushbench wrote"]),
    Case("tampered-manifest-deletes-only-the-earlier-reports-figure", tampered_manifest, None,
         replaced=frozenset({"out/figures/98-old.png"}),
         gone=frozenset({"out/figures/98-old.png"})),
    # An earlier report in the folder.
    Case("earlier-report-is-replaced", earlier_report_then(None), None,
         replaced=frozenset({"out/report.html"})),
    Case("earlier-report-edited-by-the-user-refused", earlier_report_then(_edit_page, "--no-png"),
         ["out/report.html", "changed since", REFUSE_FIX]),
    Case("earlier-report-page-now-a-link-refused",
         earlier_report_then(_page_becomes_link, "--no-png"),
         ["out/report.html", "a link", REFUSE_FIX]),
]

def _report_name(rel: str) -> bool:
    """Whether ``rel`` is a name a report may create or change inside ``out/``."""
    if rel in ("out", "out/report.html", f"out/{MANIFEST}", "out/figures"):
        return True
    return rel.startswith("out/figures/") and rel.endswith(".png") and rel.count("/") == 2


@pytest.fixture(scope="module")
def png_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One PNG cache for the table: a figure drawn once is not drawn again."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_report_folder(case: Case, tmp_path: Path, png_cache_dir: Path, cli: CliRun,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "case"
    (folder / "out").mkdir(parents=True)
    (folder / "outside" / "dir").mkdir(parents=True)
    (folder / "outside" / "precious.txt").write_bytes(PRECIOUS)
    shutil.copyfile(DB, folder / "db.sqlite")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(png_cache_dir))
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.delenv("FLUSHBENCH_DB", raising=False)

    def report(*args: str) -> tuple[int, str, str]:
        if case.pipe:
            return run_report(folder, png_cache_dir, "-o", "out", *args)
        return cli(["report", EXPERIMENT, "--db", str(folder / "db.sqlite"), "-o", "out",
                    *args])

    def earlier(*args: str) -> None:
        code, _, err = report(*args)
        assert code == 0, err

    args = case.build(folder, earlier)
    before = {k: v for k, v in listing(folder).items() if not k.startswith("db.sqlite")}
    code, out, err = report(*args)
    after = {k: v for k, v in listing(folder).items() if not k.startswith("db.sqlite")}
    assert "Traceback" not in err and "internal error" not in err, err
    if case.expect is not None:
        assert code == 2, (out, err)
        assert err.startswith("error: ") and err.count("error:") == 1, err
        for fragment in case.expect:
            assert fragment in err, (fragment, err)
        assert after == before, "the folder changed although the report was refused"
        return
    assert code == 0, err
    assert after.get("out/report.html", ("",))[0] == "file", "report.html is not a file"
    for name, was in before.items():
        if name in case.replaced:
            continue
        if _report_name(name) and name not in ("out", "out/figures"):
            # One of the report's names: only the report's own earlier file may change.
            assert after.get(name) == was or name == f"out/{MANIFEST}", name
        else:
            assert after.get(name) == was, f"{name} was changed or deleted"
    assert not case.gone & set(after), sorted(case.gone & set(after))
    created = set(after) - set(before)
    assert all(_report_name(n) for n in created), sorted(created)
    assert (folder / "outside" / "precious.txt").read_bytes() == PRECIOUS
