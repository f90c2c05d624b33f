"""Every verb fits the terminal it runs in (issue 54, item 8).

The real ``flushbench`` command in a subprocess, its output piped (not a terminal) and
``$COLUMNS`` saying how wide the terminal is: ``plan`` of the shipped 2011 study, ``doctor``,
``status``, ``show 1`` and ``compare`` on a private copy of the committed flash study print no
line wider than 80 columns at 80, nor than 120 at 120 — tables fold or turn into
``heading: value`` lists, sentences wrap — and nothing is cut short with "…".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.paths import tpcc_binary
from tests.support.recorded import copy_recorded

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "experiments" / "stability-2011.yaml"
WIDTHS = (80, 120)


@pytest.fixture(scope="module")
def flash(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private copy of the committed flash study (status marks abandoned runs: it writes)."""
    return str(copy_recorded("stability-2011-flash",
                             tmp_path_factory.mktemp("width") / "flash.sqlite"))


def flushbench(args: list[str], columns: int, cwd: Path) -> tuple[int, str, str]:
    """``flushbench ARGS`` as a user runs it, piped, in a ``columns``-wide terminal."""
    env = {**os.environ, "COLUMNS": str(columns), "FLUSHBENCH_WORK": str(cwd / "work")}
    env.pop("FLUSHBENCH_DB", None)
    done = subprocess.run([sys.executable, "-c", "from flushbench.cli import main; main()",
                           *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=600, check=False)
    return done.returncode, done.stdout, done.stderr


def widest(text: str) -> str:
    """The longest line of ``text``."""
    return max(text.splitlines() or [""], key=len)


def check_fits(out: str, width: int) -> None:
    line = widest(out)
    assert len(line) <= width, f"{len(line)} columns at COLUMNS={width}: {line!r}"
    # rich's "…" ends a value it cut, at a cell's or a line's end ("-40…+0 s" is text).
    cut = re.search(r".*…\s*([│┃]|$)", out, re.M)
    assert cut is None, f"a value was cut short: {cut.group(0) if cut else ''}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("verb", [
    "status", "show",
    # compare analyses the whole study in its process: 7 CPU-s a width, out of the fast lane
    pytest.param("compare", marks=pytest.mark.slow)])
def test_results_verbs_fit(verb: str, width: int, flash: str, tmp_path: Path) -> None:
    args = {"status": ["status"], "show": ["show", "1"],
            "compare": ["compare", "stability-2011-flash"]}[verb]
    code, out, err = flushbench([*args, "--db", flash], width, tmp_path)
    assert code == 0, err
    check_fits(out, width)
    # Fitting does not lose what the wide output says.
    expected = {"status": ["stability-2011-flash", "52 done" if width == 80 else "52"],
                "show": ["tpcc_tpcc-mysql-schema-w10-mariadb-5.5.44_", "91e8547bac"],
                "compare": ["Against each row's own baseline", "ps-bigredo-75-noneighbors",
                            "reproduction scorecard", "Above the floor"]}[verb]
    flat = " ".join(out.split())
    for text in expected:
        assert text in flat or text in out.replace("\n", ""), text


def test_doctor_fits(tmp_path: Path) -> None:
    for width in WIDTHS:
        code, out, err = flushbench(["doctor"], width, tmp_path)
        assert code in (0, 1), err  # 1: a required check fails on this host; still printed
        check_fits(out, width)
        assert "drop_caches" in out and "results database" in out


@pytest.mark.mysql  # plan runs preflight: the server parses each option set
@pytest.mark.skipif(not tpcc_binary().is_file(), reason="tpcc/bin/tpcc is not built"
                    " (the study's driver; scripts/setup.sh builds it)")
def test_plan_fits_and_keeps_every_server_variable(tmp_path: Path) -> None:
    outs = {}
    for width in WIDTHS:
        code, out, err = flushbench(["plan", str(STUDY)], width, tmp_path)
        assert code == 0, err
        check_fits(out, width)
        # Whole variables, never folded mid-name, in either form (table or list).
        assert "innodb_max_dirty_pages_pct=75" in out and "Run order" in out
        outs[width] = out
    # At 120 the cells are still a table; at 80, where a variable and the other columns
    # cannot share a line, one heading: value block per cell.
    assert "┃ server variables" in outs[120]
    assert "  server variables: innodb_doublewrite=ON" in outs[80]


def test_help_names_types_in_words(tmp_path: Path) -> None:
    for verb in ("compare", "run", "plan"):
        code, out, err = flushbench([verb, "--help"], 80, tmp_path)
        assert code == 0, err
        check_fits(out.replace("…", ""), 80)
        assert "<bool>" not in out and "<list[" not in out and "<str>" not in out, out
    code, out, _ = flushbench(["compare", "--help"], 80, tmp_path)
    assert "TEXT…" in out and "PATH" in out
    assert "--force  " in out and "--force            <" not in out
