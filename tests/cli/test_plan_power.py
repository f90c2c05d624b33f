"""``plan --detect``: the power table, its noise sources and its refusals (real preflight)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.conftest import CliRun
from tests.support.recorded import recorded_copy

pytestmark = pytest.mark.mysql  # plan runs preflight: the binary parses each option set


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough for the plan's tables to stay tables (tests/cli/
    test_terminal_width.py checks them at 80 columns)."""
    monkeypatch.setenv("COLUMNS", "200")


ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "experiments" / "stability-2011.yaml"


def test_stated_cv_gives_runs_needed_and_a_warning(cli: CliRun) -> None:
    code, out, err = cli(["plan", str(STUDY), "--detect", "12%", "--cv", "3%"])
    assert code == 0, err
    out = " ".join(out.split())
    assert "Power: finding 12 %" in out and "noise from --cv 3 %" in out
    # 5 vs 3 at CV 3 % finds 12 % (MDE ≈ 10 %); 4 per cell would too (power.runs_needed).
    assert re.search(r"5 vs 3 │ ±(9\.\d|10\.\d) % │ 4 │", out), out
    assert "cannot find" not in out
    code, out, err = cli(["plan", str(STUDY), "--detect", "5%", "--cv", "3%"])
    assert code == 0, err
    assert "cannot find 5 % in 7 of 7 comparison(s)" in " ".join(out.split())


def test_pilot_noise_from_a_database(cli: CliRun,
                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    study_db = recorded_copy("stability-2011", tmp_path_factory)
    code, out, err = cli(["plan", str(STUDY), "--detect", "33%", "--pilot", "stability-2011",
                          "--db", str(study_db)])
    assert code == 0, err
    assert "baseline of 'stability-2011' (5 runs: CV 12.5 %)" in " ".join(out.split())


def test_plan_shows_the_start_offsets(cli: CliRun, tmp_path: Path) -> None:
    """pre_run.start_jitter: on by default for a study that repeats its cells; `plan` says the
    bound and how each run's offset is drawn; `start_jitter: 0` turns it off."""
    code, out, err = cli(["plan", str(STUDY), "--db", str(tmp_path / "none.sqlite")])
    assert code == 0, err
    flat = " ".join(out.split())
    assert "start offsets (the default when a cell repeats" in flat
    assert "each run warms up 0–120 s longer, whole seconds drawn from order.seed" in flat
    off = tmp_path / "off.yaml"
    off.write_text(STUDY.read_text().replace("\npre_run:\n", "\npre_run:\n  start_jitter: 0\n",
                                             1))
    code, out, err = cli(["plan", str(off), "--db", str(tmp_path / "none.sqlite")])
    assert code == 0, err
    assert "start offsets" not in " ".join(out.split())


@pytest.mark.parametrize(("args", "message"), [
    (["--cv", "3%"], "--cv only goes with --detect"),
    (["--detect", "ten"], "--detect ten is not a percentage"),
    (["--detect", "0%"], "is not a percentage between 0 and 1000"),
    (["--detect", "10%", "--cv", "3%", "--pilot", "x"], "give --cv or --pilot, not both"),
    (["--detect", "10%", "--db", "{tmp}/none.sqlite"], "--detect needs a noise figure"),
], ids=["cv-without-detect", "word", "zero", "both-sources", "no-noise"])
def test_refusals(cli: CliRun, tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = cli(["plan", str(STUDY), *(a.replace("{tmp}", str(tmp_path)) for a in args)])
    assert code == 2 and message in err.replace("\n", " ") and "Traceback" not in err
