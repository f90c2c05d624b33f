"""The reproduction scorecard: the rule case by case, and the 2011 post against its rerun.

The rerun is a copy of the committed study database; the reference is the post's data as
``experiments/stability-2011.yaml`` carries it. Expectations are computed here by hand from
each run's window NOTPM: the geometric-mean ratio and Welch's t interval on log values, the
post's NOTPM quotients, and the verdict each interval earns under docs/statistics.md's rule.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.comparisons import scorecard
from analysis.statistics.verdicts import Verdict
from analysis.tables.frames import Frames, load
from core.experiment.loading import load_experiment
from core.experiment.spec import ExperimentSpec
from tests.support.cli_runner import CliRun
from tests.support.recorded import copy_recorded

EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "stability-2011.yaml"


def _ours(ratio: float, low: float, high: float, verdict: str) -> Verdict:
    """Our comparison as the verdict rule returns it (only the fields grading reads)."""
    return Verdict(verdict, "", ratio, low, high, "", math.nan, "", 4, 4, math.nan, math.nan,
                   math.nan)


@pytest.mark.parametrize(("reference", "ours", "grade", "size"), [
    # A claimed effect (1.55×), our verdict in its direction: size decides.
    (1.55, (1.50, 1.40, 1.62, "faster"), "reproduced", "inside the CI"),
    (1.55, (1.42, 1.40, 1.44, "faster"), "reproduced", "above the CI"),  # within 10 %
    (1.55, (1.36, 1.34, 1.39, "faster"), "same direction, smaller", "above the CI"),
    (2.00, (1.04, 1.02, 1.06, "faster"), "same direction, smaller", "above the CI"),
    (1.20, (1.60, 1.50, 1.70, "faster"), "same direction, larger", "below the CI"),
    # The opposite direction, called.
    (1.55, (0.80, 0.70, 0.90, "slower"), "contradicts", "above the CI"),
    # No direction called: inside the equivalence margin, excluding the claim, or too wide.
    (1.55, (1.00, 0.97, 1.03, "no clear difference"), "no effect", "above the CI"),
    (1.55, (0.77, 0.56, 1.05, "no clear difference"), "contradicts", "above the CI"),
    (1.55, (1.30, 0.90, 1.80, "no clear difference"), "inconclusive", "inside the CI"),
    # An interval off 1 on the claim's side that the rule did not call (its guard failed):
    # no direction is claimed for it.
    (1.55, (1.30, 1.02, 1.60, "no clear difference"), "inconclusive", "inside the CI"),
    # The mirror for a claimed slowdown.
    (0.58, (0.72, 0.70, 0.74, "slower"), "same direction, smaller", "below the CI"),
    (0.69, (0.66, 0.60, 0.75, "slower"), "reproduced", "inside the CI"),
    # A claimed "no difference" (within ±5 %): equivalence, a difference, or too wide.
    (0.995, (1.00, 0.97, 1.03, "no clear difference"), "reproduced", "inside the CI"),
    (0.995, (1.12, 1.08, 1.20, "faster"), "contradicts", "below the CI"),
    (0.995, (1.00, 0.90, 1.10, "no clear difference"), "inconclusive", "inside the CI"),
])
def test_the_grades(reference: float, ours: tuple, grade: str, size: str) -> None:
    got, share, got_size, reason = scorecard.grade(reference, _ours(*ours))
    assert (got, got_size) == (grade, size), reason
    if grade.startswith("same direction"):
        assert share == pytest.approx(math.log(ours[0]) / math.log(reference))
        assert f"{100 * share:.0f}% of its effect" in reason


def test_no_interval_is_inconclusive() -> None:
    got, _, size, reason = scorecard.grade(1.55, _ours(1.2, math.nan, math.nan, "x"))
    assert (got, size) == ("inconclusive", "–") and "no interval" in reason


def test_headline_counts_each_grade() -> None:
    table = pd.DataFrame({"verdict": ["reproduced", "same direction, smaller",
                                      "same direction, smaller", "contradicts"]})
    assert scorecard.headline(table) == ("1 reproduced, 2 same direction but smaller,"
                                         " 1 contradicts")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's private copy of the recorded 2011 study (every test here only reads it)."""
    return copy_recorded("stability-2011", tmp_path_factory.mktemp("scorecard") / "study.sqlite")


@pytest.fixture(scope="module")
def rerun(study: Path) -> Frames:
    return load(study, "stability-2011")


@pytest.fixture(scope="module")
def _plain_compare_runs() -> dict[str, tuple[int, str, str]]:
    """Where :func:`plain_compare` keeps its one run."""
    return {}


@pytest.fixture
def plain_compare(study: Path, cli: CliRun,
                  _plain_compare_runs: dict[str, tuple[int, str, str]]) -> tuple[int, str, str]:
    """``flushbench compare stability-2011 --db STUDY`` (no ``--reference``): (exit code,
    stdout, stderr), run once for the tests that read it (the same command on the same
    unchanged file prints the same)."""
    if "run" not in _plain_compare_runs:
        _plain_compare_runs["run"] = cli(["compare", "stability-2011", "--db", str(study)])
    return _plain_compare_runs["run"]


@pytest.fixture(scope="module")
def flash(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Frames, dict[int, str]]:
    """A private copy of the flash study (every test here only reads it), its frames and its
    rows' names from its stored experiment file (cell id → name)."""
    db = copy_recorded("stability-2011-flash", tmp_path_factory.mktemp("flash") / "flash.sqlite")
    fr = load(db, "stability-2011-flash")
    return db, fr, scorecard.row_names(fr.experiment["stored"].spec, fr.cell_summary)


def _spec() -> ExperimentSpec:
    return load_experiment(EXPERIMENT)


def _spec_data() -> dict:
    """The experiment file's spec as data, to change before validating it again."""
    return _spec().model_dump(mode="json")


def _by_hand(fr: Frames, a: str, b: str) -> tuple[float, float, float]:
    """Geometric-mean ratio a/b and its 95 % Welch interval on log NOTPM."""
    rs = fr.run_summary[fr.run_summary["status"] == "done"]
    la = np.log(rs.loc[rs["cell_label"] == a, "notpm"].to_numpy(float))
    lb = np.log(rs.loc[rs["cell_label"] == b, "notpm"].to_numpy(float))
    va, vb = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size
    df = (va + vb) ** 2 / (va**2 / (la.size - 1) + vb**2 / (lb.size - 1))
    d, half = la.mean() - lb.mean(), stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    return math.exp(d), math.exp(d - half), math.exp(d + half)


ON50 = "doublewrite=on max_dirty_pages_pct=50 io_capacity=20000"
ROWS = {
    "dw-off-50": "doublewrite=off max_dirty_pages_pct=50 io_capacity=20000",
    "dw-on-50": ON50,
    "base": "doublewrite=on max_dirty_pages_pct=75 io_capacity=200",
    "dw-on-30": "doublewrite=on max_dirty_pages_pct=30 io_capacity=20000",
    "dw-on-15": "doublewrite=on max_dirty_pages_pct=15 io_capacity=20000",
}


def test_the_2011_post_against_its_rerun(rerun: Frames) -> None:
    table = scorecard.scorecard(_spec(), rerun.run_summary, rerun.cell_summary)
    assert list(table["comparison"]) == [
        "doublewrite off vs on at 50/20000", "max_dirty 50 + io_capacity 20000 vs the defaults",
        "max_dirty 30 vs 50 (doublewrite on)", "max_dirty 15 vs 50 (doublewrite on)"]
    # The post's ratios: stated (1.55) or the quotient of its 15-minute averages.
    assert list(table["reference_ratio"]) == pytest.approx(
        [1.55, 41257.6 / 59922.8, 37039.73 / 41257.6, 37235.06 / 41257.6])
    assert list(table["stated"]) == [True, False, False, False]
    for _, row in table.iterrows():
        ratio, low, high = _by_hand(rerun, ROWS[row["a"]], ROWS[row["b"]])
        assert (row["a_label"], row["b_label"]) == (ROWS[row["a"]], ROWS[row["b"]])
        assert row["ratio"] == pytest.approx(ratio, rel=1e-9)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-9)
    # By hand: 0.56–1.05 covers 1 but not 1.55; 0.85–1.20 not 0.69; 0.91–1.03 not 0.898;
    # 0.92–1.06 not 0.9025 — under an operations limit, none of the post's effects shows.
    assert list(table["verdict"]) == ["contradicts"] * 4
    assert list(table["size"]) == ["above the CI", "below the CI", "below the CI",
                                   "below the CI"]
    assert list(table["n_a"]) == [3, 3, 3, 3] and list(table["n_b"]) == [3, 5, 3, 3]


def test_default_comparisons_and_rows_not_run(rerun: Frames) -> None:
    data = _spec_data()
    data["reference"] = None  # every referenced row against the baseline's row
    data["include"].append({**data["include"][0], "max_dirty_pages_pct": 90,
                            "reference": {"name": "never-run", "notpm": 1000.0}})
    spec = ExperimentSpec.model_validate(data)
    table = scorecard.scorecard(spec, rerun.run_summary, rerun.cell_summary)
    assert len(table) == 8 and set(table["b"]) == {"base"}
    off50 = table.set_index("a").loc["dw-off-50"]
    assert off50["reference_ratio"] == pytest.approx(63898.13 / 59922.8)
    ratio, low, high = _by_hand(rerun, ROWS["dw-off-50"], ROWS["base"])
    assert (off50["ci_low"], off50["ci_high"]) == pytest.approx((low, high), rel=1e-9)
    never = table.set_index("a").loc["never-run"]
    assert never["verdict"] == "inconclusive"
    assert never["reason"] == "a (never-run): not run in this experiment"


def test_compare_prints_the_scorecard(study: Path, cli: CliRun,
                                      plain_compare: tuple[int, str, str]) -> None:
    code, out, err = cli(["compare", "stability-2011", "--db", str(study),
                          "--reference", str(EXPERIMENT)])
    assert code == 0, out + err
    flat = " ".join(out.split())  # free text wraps at the terminal's width
    assert "reproduction scorecard — reference: Vadim Tkachenko" in flat
    assert "R1 doublewrite off vs on at 50/20000: dw-off-50 (3 runs) / dw-on-50 (3 runs)" in flat
    table = out[out.index("│ R1"):]
    r1 = " ".join(table[:table.index("│ R2")].split())  # the row, with its wrapped lines
    assert "1.55×" in r1 and "0.76×" in r1 and "(0.56–1.05)" in r1 and "contradicts" in r1
    assert "scorecard: 4 contradicts" in flat
    # The stored experiment (queued before the reference was written) has none: no scorecard.
    code, out, _ = plain_compare
    assert code == 0 and "scorecard" not in out


def test_figure_draws_every_comparison(rerun: Frames) -> None:
    table = scorecard.scorecard(_spec(), rerun.run_summary, rerun.cell_summary)
    fig = scorecard.figure(table, source="the post")
    measured = [t for t in fig.data if t.name in scorecard.GRADES]
    reference = next(t for t in fig.data if t.name == "reference")
    assert [t.name for t in measured] == ["contradicts"]
    assert list(measured[0].x) == pytest.approx(list(table["ratio"]))
    assert list(reference.x) == pytest.approx(list(table["reference_ratio"]))
    assert list(reference.y) == list(table["comparison"])
    assert fig.layout.xaxis.type == "log"



def test_report_section(rerun: Frames) -> None:
    from analysis.report.figures import FigureList
    from analysis.report.render import blocks_html
    from analysis.report.sections import scorecard_section

    figs = FigureList()
    blocks = scorecard_section(_spec(), rerun.run_summary, rerun.cell_summary, figs)
    assert [f.slug for f in figs.items] == ["01-scorecard"]
    page = blocks_html(blocks, {"01-scorecard": "<div id='scorecard'></div>"})
    assert "<div id='scorecard'></div>" in page
    assert "<h2 id='scorecard'>Reproduction scorecard</h2>" in page
    assert "<b>4 contradicts</b>" in page
    assert "<td class='l'>doublewrite off vs on at 50/20000</td>" in page
    # The stored experiment (queued before the reference was written) has no section.
    assert scorecard_section(rerun.experiment["stored"].spec, rerun.run_summary, rerun.cell_summary,
                             FigureList()) == []


def test_report_carries_the_scorecard(study: Path, cli: CliRun, tmp_path: Path) -> None:
    out = tmp_path / "report"
    code, text, err = cli(["report", "stability-2011", "--db", str(study), "-o", str(out),
                           "--no-png", "--reference", str(EXPERIMENT)])
    assert code == 0, text + err
    page = (out / "report.html").read_text()
    assert "<h2 id='scorecard'>Reproduction scorecard</h2>" in page
    assert "<b>4 contradicts</b>" in page
    assert "<td class='l'>doublewrite off vs on at 50/20000</td>" in page
    # The rows' own names (the reference's) title each configuration's section and panel.
    assert f"<h3 id='cell-3'><b>dw-off-50</b> · {ROWS['dw-off-50']}</h3>" in page
    assert "<li><a href='#cell-1'><b>base</b> · " in page
    # Every table that lists rows names it by its name (ranking, response time, cost, what
    # bound it); the full "name · knobs" titles its section, the configurations list and its
    # ranking note.
    assert page.count("<b>dw-off-50</b>") >= 7
    assert page.count(f"<b>dw-off-50</b> · {ROWS['dw-off-50']}") >= 3
    assert "Most throughput: <b>dw-on-50</b> with" in page
    assert "200 (1 cell: base); 20000 (7 cells)" in page  # methodology, io_capacity
    assert r"\u003cb\u003ebase\u003c\u002fb\u003e \u00b7 \u003cb\u003ebaseline" in page


@pytest.mark.parametrize(("true", "reference", "wrong"), [
    (1.55, 1.55, "contradicts"),   # the reference is right: we must rarely contradict it
    (0.90, 0.90, "contradicts"),
    (1.00, 1.55, "reproduced"),    # no effect at all: we must rarely reproduce a 1.55× claim
    (1.00, 1.55, "same direction, smaller"),  # ... or call an effect in its direction
    (1.00, 0.90, "reproduced"),
    (1.00, 1.00, "contradicts"),   # "no difference" claimed and true
])
def test_the_grades_error_rates(true: float, reference: float, wrong: str) -> None:
    """Simulated 4 vs 4 lognormal runs, CV 10 %, judged by the verdict rule and graded: a
    wrong grade at most as often as a 95 % interval misses on one side (2.5 %, plus
    simulation error) — docs/statistics.md."""
    from analysis.statistics.verdicts import verdict

    rng = np.random.default_rng(2011)
    sd = math.sqrt(math.log(1 + 0.10**2))
    grades = []
    for _ in range(3000):
        b = np.exp(rng.normal(0, sd, 4))
        a = np.exp(rng.normal(math.log(true), sd, 4))
        grades.append(scorecard.grade(reference, verdict(b, a))[0])
    assert grades.count(wrong) / len(grades) <= 0.03


def test_a_row_with_its_own_repetitions_still_matches_its_cell(rerun: Frames) -> None:
    """An include row's ``repetitions`` (the flash study's second A/A baseline) is a setting of
    the row, not a knob: the row matches its cell (it once read "not run in this
    experiment")."""
    data = _spec_data()
    data["include"][0] = {**data["include"][0], "repetitions": 6}
    table = scorecard.scorecard(ExperimentSpec.model_validate(data), rerun.run_summary,
                                rerun.cell_summary)
    assert "not run" not in " ".join(table["reason"])
    assert table.set_index("b").loc["base", "n_b"].min() > 0


def test_rows_named_by_their_own_name_title_the_report_and_are_compared(rerun: Frames) -> None:
    """``name:`` names a row without a reference value: the report's row names hold it, and a
    comparison with a stated ratio may name such a row (it once said "no such row with a
    reference")."""
    data = _spec_data()
    # Rows a comparison without a stated ratio divides keep their value (the model asks it).
    unstated = {c[side] for c in data["reference"]["comparisons"] if c["ratio"] is None
                for side in ("a", "b")}
    for inc in data["include"]:
        ref = inc.pop("reference")
        inc["name"] = ref["name"]
        if ref["name"] in ("base", "dw-on-50") or ref["name"] in unstated:
            inc["reference"] = {"notpm": ref["notpm"]}  # referenced, named by the row
    spec = ExperimentSpec.model_validate(data)
    names = scorecard.row_names(spec, rerun.cell_summary)
    labels = dict(zip(rerun.cell_summary["cell_id"], rerun.cell_summary["cell_label"],
                      strict=True))
    assert {labels[c]: n for c, n in names.items() if n in ROWS} == {v: k for k, v in ROWS.items()}
    table = scorecard.scorecard(spec, rerun.run_summary, rerun.cell_summary)
    row = table.set_index("comparison").loc["doublewrite off vs on at 50/20000"]
    assert (row["a"], row["b"], row["reference_ratio"]) == ("dw-off-50", "dw-on-50", 1.55)
    ratio, low, high = _by_hand(rerun, ROWS["dw-off-50"], ROWS["dw-on-50"])
    assert row["ratio"] == pytest.approx(ratio, rel=1e-9)


def test_show_names_the_run_s_row_as_the_experiment_file_does(
        cli: CliRun, flash: tuple[Path, Frames, dict[int, str]]) -> None:
    """``show`` titles a run with its include row's name (the flash study's rows carry the
    post's: ``ps-optimized``), as the report does."""
    db, fr, names = flash
    run = fr.run_summary[fr.run_summary["status"] == "done"].iloc[0]
    code, out, err = cli(["show", str(int(run["run_id"])), "--db", str(db)])
    assert code == 0, out + err
    name = names[int(run["cell_id"])]
    # The label column is as wide as show's longest label: match the row, not its padding.
    assert re.search(rf"│ configuration +│ {re.escape(name)} · ", out), out


def test_compare_names_each_configuration_as_the_experiment_file_does(
        cli: CliRun, flash: tuple[Path, Frames, dict[int, str]]) -> None:
    """``compare``'s legend of short ids gives each row's name before its knobs."""
    db, fr, names = flash
    code, out, err = cli(["compare", "stability-2011-flash", "--db", str(db)])
    assert code == 0, out + err
    legend = out.split("configurations:\n", 1)[1]
    for cell in fr.cell_summary.sort_values("position").itertuples():
        assert f"  C{int(cell.position) + 1}  {names[int(cell.cell_id)]} · " in legend, legend


def test_compare_gives_each_row_only_what_differs_from_its_own_baseline(
        cli: CliRun, flash: tuple[Path, Frames, dict[int, str]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The legend's baselines carry their whole settings; every other row only the knobs it
    changes, and which baseline it is compared with (the flash study has two: MySQL's base and
    XtraDB's big-redo row)."""
    monkeypatch.setenv("COLUMNS", "200")  # one legend entry per line
    db = flash[0]
    code, out, err = cli(["compare", "stability-2011-flash", "--db", str(db)])
    assert code == 0, out + err
    legend = out.split("configurations:\n", 1)[1].split("\n")
    line = {entry.split()[0]: entry.split(None, 1)[1] for entry in legend
            if entry.startswith("  C")}
    assert line["C1"].startswith("base · server=mysql-5.5 ") and line["C1"].endswith(
        "(baseline)")
    assert line["C2"] == "dw-on-50 · max_dirty_pages_pct=50 io_capacity=20000 (vs C1)"
    assert line["C3"] == ("dw-off-50 · doublewrite=off max_dirty_pages_pct=50"
                          " io_capacity=20000 (vs C1)")
    assert line["C10"].startswith("ps-bigredo-75 · server=xtradb-5.5 ")
    assert line["C11"] == "ps-bigredo-75-noneighbors · flush_neighbor_pages=none (vs C10)"


def test_the_overview_figures_name_the_rows_as_the_reference_does(study: Path) -> None:
    """With row names (the reference's), the figures that put configurations on an axis use
    them: "dw-off-50", not a label of 50–130 characters."""
    from analysis.report.build import build_report_model

    model = build_report_model(study, "stability-2011", reference=_spec())
    by_slug = {f.slug.split("-", 1)[1]: f.spec for f in model.figures}
    assert set(by_slug["notpm"]["data"][0]["y"]) == set(ROWS) | {"dw-off-60", "dw-off-70",
                                                                "dw-on-60"}
    assert "base (baseline)" in by_slug["notpm-distribution"]["layout"]["yaxis"]["categoryarray"]
    assert "dw-on-15" in by_slug["io-per-transaction"]["data"][0]["y"]


def test_compare_counts_interactions_its_main_effects_rule_out(
        study: Path, plain_compare: tuple[int, str, str]) -> None:
    """An interaction of a knob whose main effect is not estimable is counted in one line, not
    listed (the flash study printed 36 such lines); the others keep their own reason."""
    from analysis.comparisons.compare import compare
    from analysis.statistics.design import NO_MAIN_EFFECT

    reasons = compare(study, "stability-2011").interactions["reason"].astype(str)
    implied = int(reasons.str.startswith(NO_MAIN_EFFECT).sum())
    assert implied  # the walk moves max_dirty and io_capacity together: both not estimable
    code, out, err = plain_compare
    assert code == 0, out + err
    listed = [line for line in out.splitlines() if line.startswith("interaction ")]
    assert not any("no estimable main effect" in line for line in listed), listed
    assert len(listed) == int((~reasons.str.startswith(NO_MAIN_EFFECT)
                               & reasons.str.startswith("not estimable")).sum())
    assert (f"{implied} more interaction(s) not estimable: each involves a knob whose main "
            "effect is not estimable (above)") in " ".join(out.split())


def test_report_counts_interactions_its_main_effects_rule_out(study: Path,
                                                             tmp_path: Path) -> None:
    """The report's interactions table lists only pairs with a reason of their own."""
    from analysis.report.writer import write_report
    from analysis.statistics.design import NO_MAIN_EFFECT

    html = write_report(study, "stability-2011", tmp_path / "rep", png=False).read_text()
    section = html[html.index("<h3>Two-way interactions</h3>"):]
    section = section[: section.index("</p>", section.index("pair(s) of knobs"))]
    assert "no estimable main effect" not in section
    assert NO_MAIN_EFFECT not in section
    assert "pair(s) of knobs not estimable: each involves a knob whose main effect" in section
