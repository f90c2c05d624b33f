"""The PNG export has a time bound: a renderer whose Chromium never starts (as under a memory
limit) is stopped, its processes killed, and the export fails with one sentence — ``plot
compare -o x.png`` is then an error, ``report`` writes its HTML and warns.

The hanging renderer is a stand-in for kaleido's launcher (a shell script whose child holds
the pipe kaleido waits on), so the test needs no memory limit; what it checks is that the
export gives up and kills the launcher *and* its child. pytest-timeout is the harness's guard
against a hang, no test asserts on time.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from analysis.figures import png_export
from analysis.figures.png_export import PngExporter
from analysis.report.folder import MANIFEST
from store.migrate import head_revision
from tests.cli.conftest import CliRun
from tests.support.recorded import ROOT

DB = ROOT / "tests" / "fixtures" / "results-db" / f"rev-{head_revision()}.sqlite"
FIGURE = {"data": [{"type": "scatter", "x": [1, 2], "y": [3, 4]}], "layout": {}}


class HangingScope:
    """A kaleido scope whose Chromium never answers: ``transform`` starts a launcher whose
    child keeps its stdout open, then waits for the start-up line as kaleido does."""

    started: list[subprocess.Popen[bytes]] = []
    #: Where each launcher writes its child's pid.
    pids: Path = Path()

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._std_error_thread = None

    def transform(self, *_args: Any, **_kwargs: Any) -> bytes:
        before = _child_pids()
        proc = subprocess.Popen(
            ["sh", "-c", 'sleep 600 & echo $! >> "$0"; wait', str(HangingScope.pids)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        HangingScope.started.append(proc)
        # The scope is published once its launcher's child runs, as kaleido's is once its
        # Chromium answers: the export's kill then always has a child to reach, however
        # slowly a loaded machine forks (the pids file is the harness's, not a deadline).
        while len(_child_pids()) == len(before) and proc.poll() is None:
            time.sleep(0.01)
        self._proc = proc
        if not self._proc.stdout.readline():  # type: ignore[union-attr]
            raise ValueError("Failed to start Kaleido subprocess")
        return b""

    def _shutdown_kaleido(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            self._proc.stdin.close()


@pytest.fixture
def hanging(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[subprocess.Popen[bytes]]:
    """Every renderer hangs; the PNG cache is off; the export gives up after 1 s."""
    HangingScope.started = []
    HangingScope.pids = tmp_path / "children"
    monkeypatch.setattr(png_export, "_new_scope", HangingScope)
    monkeypatch.setattr(png_export, "STALL_SECONDS", 1.0)
    monkeypatch.setenv("FLUSHBENCH_ANALYSIS_CACHE", "0")
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return HangingScope.started


def _child_pids() -> list[str]:
    """The pids the launchers have written so far."""
    return HangingScope.pids.read_text().split() if HangingScope.pids.exists() else []


def _state(pid: int) -> str:
    """Process ``pid``'s state letter (``/proc/PID/stat``), or ``gone``."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _dead(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie nobody reaped yet)."""
    return _state(pid) in ("gone", "Z", "X")


def _children_gone(procs: list[subprocess.Popen[bytes]]) -> bool:
    """Every launcher ended, and so did the child it started (its ``sleep``)."""
    for proc in procs:
        proc.wait(timeout=30)  # the harness's guard: killed means it ends at once
    children = _child_pids()
    # A SIGKILLed process ends when it next runs: on a loaded machine that can take a while
    # (seen: still R after its launcher was reaped), so wait for it as for the launcher.
    deadline = time.monotonic() + 30
    while not all(_dead(int(pid)) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(children) and all(_dead(int(pid)) for pid in children)


@pytest.mark.timeout(120)
def test_a_renderer_that_never_starts_is_stopped_and_killed(
        hanging: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    target = tmp_path / "fig.png"
    exporter = PngExporter(renderers=1)
    exporter.submit(FIGURE, target, width=400, height=300)
    error = exporter.close()
    assert error is not None and "no figure was drawn in 1 s" in error
    assert "Chromium did not start or hangs" in error
    assert not target.exists() and exporter.written == []
    assert hanging and _children_gone(hanging), (
        [p.returncode for p in hanging], {pid: _state(int(pid)) for pid in _child_pids()})


@pytest.mark.timeout(120)
def test_plot_compare_to_png_fails_with_one_sentence(hanging: list[subprocess.Popen[bytes]],
                                                     tmp_path: Path, cli: CliRun) -> None:
    shutil.copyfile(DB, tmp_path / "db.sqlite")
    out = tmp_path / "two.png"
    code, stdout, err = cli(["plot", "compare", "study-short", "C1", "C2", "-o", str(out),
                             "--db", str(tmp_path / "db.sqlite")])
    assert code == 2, (stdout, err)
    assert err.count("error:") == 1 and "no figure was drawn in 1 s" in err, err
    assert "write .html instead" in err and not out.exists()
    assert _children_gone(hanging)


@pytest.mark.timeout(180)
def test_report_keeps_its_html_and_warns(hanging: list[subprocess.Popen[bytes]],
                                         tmp_path: Path, cli: CliRun) -> None:
    shutil.copyfile(DB, tmp_path / "db.sqlite")
    out = tmp_path / "report"
    code, stdout, err = cli(["report", "study-short", "-o", str(out),
                             "--db", str(tmp_path / "db.sqlite")])
    assert code == 0, err
    assert "warning: PNG export stopped: no figure was drawn in 1 s" in err, err
    assert "report.html is complete" in err
    page = (out / "report.html").read_text()
    assert "PNG export failed" in page and "no figure was drawn" in page
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "report.html"], \
        "a figure, the figures folder or the staging folder was left"
    assert _children_gone(hanging)
