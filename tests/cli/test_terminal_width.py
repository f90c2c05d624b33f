"""Every verb fits the terminal it runs in (issue 54, item 8).

The real ``flushbench`` entry point in a child process, its output piped (not a terminal) and
``$COLUMNS`` saying how wide the terminal is: ``plan`` of the shipped 2011 study, ``doctor``,
``status``, ``show 1`` and ``compare`` on a private copy of the committed flash study print no
line wider than 80 columns at 80, nor than 120 at 120 — tables fold or turn into
``heading: value`` lists, sentences wrap — and nothing is cut short with "…".

Several invocations share one child (:mod:`tests.support.cli_child`: imports paid once, each
invocation's output its own). The quick verbs run in one child per width, started with
``$COLUMNS`` at that width, so a console made at import (``status``'s, ``doctor``'s last line)
takes the width a fresh ``flushbench`` would; ``compare`` and ``plan`` run at both widths in
one child, widest first (see :func:`widest_first`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from core.paths import tpcc_binary
from tests.support.cli_child import Invocation, Outcome, run_in_one_child
from tests.support.recorded import copy_recorded

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "experiments" / "stability-2011.yaml"
WIDTHS = (80, 120)
#: The verbs whose ``--help`` must name option types in words (at 80 columns).
HELP_VERBS = ("compare", "run", "plan")


@pytest.fixture(scope="module")
def flash(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private copy of the committed flash study (status marks abandoned runs: it writes)."""
    return str(copy_recorded("stability-2011-flash",
                             tmp_path_factory.mktemp("width") / "flash.sqlite"))


def flushbench(jobs: Sequence[tuple[str, list[str], int]], columns: int,
               work: Path) -> dict[tuple[str, int], Outcome]:
    """``flushbench ARGS`` of each (name, ARGS, width) as a user runs it, piped, in a
    ``width``-wide terminal, in turn in one child started with ``$COLUMNS`` = ``columns``;
    (name, width) → its outcome."""
    env = {**os.environ, "COLUMNS": str(columns), "FLUSHBENCH_WORK": str(work)}
    env.pop("FLUSHBENCH_DB", None)
    said = run_in_one_child([Invocation(f"{name} at {width}", args,
                                        env={"COLUMNS": str(width)})
                             for name, args, width in jobs],
                            env=env, cwd=ROOT, deadline_s=600)
    return {(name, width): said[f"{name} at {width}"] for name, _, width in jobs}


def widest_first(name: str, args: list[str], work: Path) -> dict[int, Outcome]:
    """``flushbench ARGS`` at 120 then at 80 columns in one child started at 120: width →
    outcome. For a verb that prints through consoles it makes per call (``compare``,
    ``plan``), so each invocation takes its own ``$COLUMNS``. Were one made at import, it
    would lay the 80-column run out as at 120: a line past 80 fails that run's check, and
    output whose every line fits in 80 is laid out alike at both widths — it can fail the
    check, never pass it wrongly."""
    said = flushbench([(name, args, width) for width in sorted(WIDTHS, reverse=True)],
                      max(WIDTHS), work)
    return {width: outcome for (_, width), outcome in said.items()}


@pytest.fixture(scope="module")
def quick_said(flash: str, tmp_path_factory: pytest.TempPathFactory
               ) -> dict[tuple[str, int], Outcome]:
    """``status``, ``show 1`` and ``doctor`` at each width, and each ``--help`` of
    :data:`HELP_VERBS` at 80: (name, width) → outcome, one child per width (status first,
    at 80 first: it marks the copy's abandoned runs, as before any other verb)."""
    work = tmp_path_factory.mktemp("width-work")
    said: dict[tuple[str, int], Outcome] = {}
    for width in WIDTHS:
        jobs = [("status", ["status", "--db", flash], width),
                ("show", ["show", "1", "--db", flash], width), ("doctor", ["doctor"], width)]
        if width == 80:
            jobs += [(f"{verb} --help", [verb, "--help"], width) for verb in HELP_VERBS]
        said |= flushbench(jobs, width, work)
    return said


@pytest.fixture(scope="module")
def compare_said(flash: str, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Outcome]:
    """``compare`` of the flash study at each width (width → outcome): the slow lane's
    alone, so the fast lane never analyses the whole study."""
    return widest_first("compare", ["compare", "stability-2011-flash", "--db", flash],
                        tmp_path_factory.mktemp("width-work"))


def widest(text: str) -> str:
    """The longest line of ``text``."""
    return max(text.splitlines() or [""], key=len)


def check_fits(out: str, width: int) -> None:
    line = widest(out)
    assert len(line) <= width, f"{len(line)} columns at COLUMNS={width}: {line!r}"
    # rich's "…" ends a value it cut, at a cell's or a line's end ("-40…+0 s" is text).
    cut = re.search(r".*…\s*([│┃]|$)", out, re.M)
    assert cut is None, f"a value was cut short: {cut.group(0) if cut else ''}"


def finished(run: Outcome) -> tuple[int | None, str, str]:
    """An invocation's exit code, stdout and stderr, once it is known to have ended."""
    assert run.finished, run.note
    return run.code, run.out, run.err


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("verb", [
    "status", "show",
    # compare analyses the whole study in its process: 7 CPU-s a width, out of the fast lane
    pytest.param("compare", marks=pytest.mark.slow)])
# flash, named here: the module's tests are one xdist group (tests/support/parallel.py), so one
# worker runs the children below once, though the test reaches them through getfixturevalue.
@pytest.mark.usefixtures("flash")
def test_results_verbs_fit(verb: str, width: int, request: pytest.FixtureRequest) -> None:
    # Each lane computes only its own verbs' outputs (compare's fixture only when it runs).
    run = (request.getfixturevalue("compare_said")[width] if verb == "compare"
           else request.getfixturevalue("quick_said")[verb, width])
    code, out, err = finished(run)
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


def test_doctor_fits(quick_said: dict[tuple[str, int], Outcome]) -> None:
    for width in WIDTHS:
        code, out, err = finished(quick_said["doctor", width])
        assert code in (0, 1), err  # 1: a required check fails on this host; still printed
        check_fits(out, width)
        assert "drop_caches" in out and "results database" in out


@pytest.mark.mysql  # plan runs preflight: the server parses each option set
@pytest.mark.skipif(not tpcc_binary().is_file(), reason="tpcc/bin/tpcc is not built"
                    " (the study's driver; scripts/setup.sh builds it)")
def test_plan_fits_and_keeps_every_server_variable(tmp_path: Path) -> None:
    outs = {}
    for width, run in widest_first("plan", ["plan", str(STUDY)], tmp_path / "work").items():
        code, out, err = finished(run)
        assert code == 0, err
        check_fits(out, width)
        # Whole variables, never folded mid-name, in either form (table or list).
        assert "innodb_max_dirty_pages_pct=75" in out and "Run order" in out
        outs[width] = out
    # At 120 the cells are still a table; at 80, where a variable and the other columns
    # cannot share a line, one heading: value block per cell.
    assert "┃ server variables" in outs[120]
    assert "  server variables: innodb_doublewrite=ON" in outs[80]


def test_help_names_types_in_words(quick_said: dict[tuple[str, int], Outcome]) -> None:
    for verb in HELP_VERBS:
        code, out, err = finished(quick_said[f"{verb} --help", 80])
        assert code == 0, err
        check_fits(out.replace("…", ""), 80)
        assert "<bool>" not in out and "<list[" not in out and "<str>" not in out, out
    out = quick_said["compare --help", 80].out
    assert "TEXT…" in out and "PATH" in out
    assert "--force  " in out and "--force            <" not in out
