"""The reproduction scorecard: each comparison a reference makes, against what was measured.

An experiment file may carry the published results it reproduces
(``core/experiment/references.py``: a ``reference`` per include row and a top-level
``reference`` with the comparisons). For each
comparison — row *a* over row *b* — the scorecard puts the reference's ratio beside ours: the
ratio, its 95 % interval and its verdict from the one verdict rule every table uses
(:func:`analysis.statistics.verdicts.design_verdict`: blocked experiments through the cell +
block model), and grades the reproduction (:func:`grade`; rule and rationale in
``docs/statistics.md``, "The reproduction scorecard"):

- **reproduced** — our verdict has the reference's direction and its interval holds the
  reference's ratio, or our ratio is within :data:`TOLERANCE` of it (for a reference within
  ±5 % of 1, a claim of no difference: our interval lies inside that margin);
- **same direction, smaller** / **larger** — our verdict has the reference's direction but the
  size differs by more than the tolerance; the share of the reference's effect on the log
  scale is stated (log ours / log theirs);
- **no effect** — our interval lies inside the ±5 % equivalence margin of a claimed effect;
- **contradicts** — our verdict has the opposite direction, or our interval excludes the
  reference's ratio while covering 1 (no effect of its size), or a difference where the
  reference claims none;
- **inconclusive** — our interval covers both 1 and the reference's ratio, or there is none,
  or the grade moves between showing the reference's effect and not over the window starts;
- **not gradeable** — a compared row cannot test the claim (:func:`untestable_rows`): the
  flushing method it names never acted in its runs (:func:`core.flavors.inert_flushing_method`
  on the variables each run recorded), or every one of its runs still trended across its window
  (not at steady state). Our ratio is still shown; the headline counts it apart.

Beside each grade: the ratio over every plausible window start
(:func:`analysis.reading.window_cycles.window_sensitivity`, as ``compare`` states it per cell);
where our verdict changes inside that range it reads **window-dependent**; a grade that moves
between showing the reference's effect (reproduced, same direction) and not (no effect,
contradicts) over the starts is inconclusive.

The analysis never imports the runner: rows are matched to cells from the stored spec (read
typed: :class:`core.experiment.stored.StoredExperiment`) or one read from a file, by the include
row's own knob values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures import plots
from analysis.reading import window_cycles
from analysis.reading.rows import Row, include_rows
from analysis.reading.rows import row_names as row_names  # where callers name rows
from analysis.statistics import blocked
from analysis.statistics.verdicts import FASTER, SLOWER, Verdict, design_verdict
from analysis.steadiness.transients import not_steady_cells
from core import flavors
from core.experiment.references import ComparisonSpec
from core.experiment.spec import ExperimentSpec

#: A reference ratio within this factor of 1 claims "no difference", and an interval inside
#: it is "no effect" (docs/statistics.md).
MARGIN = 1.05
#: Our ratio within this factor of the reference's counts as reproducing its size.
TOLERANCE = 1.10
REPRODUCED, SMALLER, LARGER = "reproduced", "same direction, smaller", "same direction, larger"
NO_EFFECT, CONTRADICTS, INCONCLUSIVE = "no effect", "contradicts", "inconclusive"
#: A comparison whose rows cannot test the claim: shown, never counted among the grades.
NOT_GRADEABLE = "not gradeable"
#: Every grade in the order headlines count them.
GRADES = (REPRODUCED, SMALLER, LARGER, NO_EFFECT, CONTRADICTS, INCONCLUSIVE)
#: The grade colours: colour-blind safe (Okabe–Ito), "inconclusive" grey.
VERDICT_COLOURS = {REPRODUCED: "#009E73", SMALLER: "#56B4E9", LARGER: "#0072B2",
                   NO_EFFECT: "#E69F00", CONTRADICTS: "#D55E00", INCONCLUSIVE: "#777777",
                   NOT_GRADEABLE: "#CC79A7"}
#: What each grade says of the reference's effect: it shows (in its direction), it does not,
#: or no answer. A grade that moves between answers over the window starts is inconclusive.
_ANSWER = {REPRODUCED: "shows", SMALLER: "shows", LARGER: "shows", NO_EFFECT: "absent",
           CONTRADICTS: "absent", INCONCLUSIVE: "none"}
#: Each grade's marker, so the classes differ without colour too.
GRADE_SYMBOLS = {REPRODUCED: "circle", SMALLER: "triangle-left", LARGER: "triangle-right",
                 NO_EFFECT: "square", CONTRADICTS: "x", INCONCLUSIVE: "circle-open",
                 NOT_GRADEABLE: "hourglass"}
#: Columns of :func:`scorecard`. ``window_low``/``window_high``: the ratio over the plausible
#: window starts (``window_offsets``), ``window_dependent``: our verdict changes inside them,
#: ``window_grades``: the grades met there;
#: ``ungradeable``: why a compared row cannot test the claim ("" when it can); ``method_inert``
#: (like ``not_steady``): the compared rows whose flushing method never acted.
COLUMNS = ("comparison", "a", "b", "a_label", "b_label", "n_a", "n_b", "reference_ratio",
           "stated", "ratio", "ci_low", "ci_high", "p_value", "our_verdict", "verdict", "share",
           "size", "reason", "note", "not_steady", "window_low", "window_high",
           "window_offsets", "window_dependent", "window_grades", "ungradeable",
           "method_inert")


def has_reference(spec: ExperimentSpec) -> bool:
    """Whether a stored (or file) spec carries any reference result."""
    return spec.reference is not None or any(inc.reference for inc in spec.include)


def match_rows(spec: ExperimentSpec, cells: pd.DataFrame) -> list[Row]:
    """The include rows that carry a reference, each matched to the one cell it ran as.

    A row matches a cell whose knobs hold all the row's own values (the experiment's fixed
    values are not needed, so a file whose ``fixed`` changed since still matches). A row that
    matches no cell (not run) or several (ambiguous) keeps ``cell_id`` None and says why.
    """
    return [row for row in include_rows(spec, cells) if spec.include[row.index].reference]


def _comparisons(spec: ExperimentSpec, rows: list[Row], base_id: int | None
                 ) -> list[ComparisonSpec]:
    """The reference's comparisons, or every referenced row against the baseline's row."""
    if spec.reference is not None and spec.reference.comparisons:
        return list(spec.reference.comparisons)
    base = next((r for r in rows if r.cell_id is not None and r.cell_id == base_id), None)
    if base is None:
        return []
    return [ComparisonSpec(name=f"{r.name} vs {base.name}", a=r.index, b=base.index)
            for r in rows if r is not base and r.value is not None]


def grade(reference: float, ours: Verdict | None, margin: float = MARGIN,
          tolerance: float = TOLERANCE) -> tuple[str, float, str, str]:
    """(grade, share, size, reason) of our comparison against the reference's ratio.

    ``ours`` is the comparison's verdict from the one rule (ratio a / b, interval, and
    ``faster``/``slower`` only where the rule calls a difference); ``share`` is log ours over
    log the reference's (NaN for a claimed no-difference); ``size`` says where the
    reference's ratio lies against our interval. The rule of the module docstring.
    """
    if ours is None or not (math.isfinite(ours.ci_low) and math.isfinite(ours.ci_high)):
        return INCONCLUSIVE, math.nan, "–", "fewer than 2 runs on a side: no interval"
    low, high, ratio = ours.ci_low, ours.ci_high, ours.ratio
    ci = f"ours {ratio:.2f}× (95% CI {low:.2f}–{high:.2f}, {ours.verdict})"
    size = ("inside the CI" if low <= reference <= high
            else "above the CI" if reference > high else "below the CI")
    within_margin = 1 / margin <= low and high <= margin
    band = f"±{100 * (margin - 1):g}%"
    if 1 / margin <= reference <= margin:  # the reference claims "no difference"
        if within_margin:
            return REPRODUCED, math.nan, size, f"{ci} lies within {band} of 1, as the" \
                                               " reference's no-difference"
        if ours.verdict in (FASTER, SLOWER) and (low > margin or high < 1 / margin):
            return CONTRADICTS, math.nan, size, f"{ci}: a difference beyond {band} the" \
                                                " reference did not see"
        return INCONCLUSIVE, math.nan, size, f"{ci} is too wide to tell a difference from none"
    share = math.log(ratio) / math.log(reference)
    up = reference > 1
    agrees_in_direction = ours.verdict == (FASTER if up else SLOWER)
    if agrees_in_direction:
        if low <= reference <= high or abs(math.log(ratio / reference)) <= math.log(tolerance):
            return REPRODUCED, share, size, f"{ci} holds or is within" \
                f" {100 * (tolerance - 1):g}% of the reference's {reference:.2f}×"
        kind = SMALLER if abs(math.log(ratio)) < abs(math.log(reference)) else LARGER
        return kind, share, size, f"{ci}: the reference's direction, {100 * share:.0f}% of" \
                                  f" its effect on the log scale ({reference:.2f}×)"
    if ours.verdict in (FASTER, SLOWER):
        return CONTRADICTS, share, size, f"{ci}: the opposite direction to the reference's" \
                                         f" {reference:.2f}×"
    if within_margin:
        return NO_EFFECT, share, size, f"{ci} lies within {band} of 1: the reference's" \
                                       f" {reference:.2f}× does not show"
    if not low <= reference <= high:
        return CONTRADICTS, share, size, f"{ci} excludes the reference's {reference:.2f}×:" \
                                         " no effect of its size"
    return INCONCLUSIVE, share, size, f"{ci} covers both 1 and the reference's" \
                                      f" {reference:.2f}×"


def headline(table: pd.DataFrame) -> str:
    """``1 reproduced, 3 same direction but smaller, 1 contradicts; 4 not gradeable`` (grades
    present only; the comparisons that cannot be graded counted apart, after the grades)."""
    counts = table["verdict"].value_counts() if len(table) else pd.Series(dtype=int)
    words = {SMALLER: "same direction but smaller", LARGER: "same direction but larger"}
    text = ", ".join(f"{int(counts[g])} {words.get(g, g)}" for g in GRADES if counts.get(g))
    if counts.get(NOT_GRADEABLE):
        text += f"{'; ' if text else ''}{int(counts[NOT_GRADEABLE])} {NOT_GRADEABLE}"
    return text


def method_variables(db: Any, run_summary: pd.DataFrame) -> pd.DataFrame:
    """The flushing-method variables each counted run recorded (``SHOW GLOBAL VARIABLES``),
    one row per run id: what :func:`untestable_rows` reads."""
    from analysis.comparisons.compare import counted_runs
    from analysis.reading.query import run_variables

    ids = [int(r) for r in counted_runs(run_summary)["run_id"]]
    return run_variables(db, ids, (flavors.ADAPTIVE_FLUSHING, flavors.FLUSHING_METHOD))


def inert_method_cells(run_summary: pd.DataFrame, variables: pd.DataFrame | None
                       ) -> dict[int, str]:
    """Cells (id → why) whose every counted run recorded a flushing method that never acts
    (:func:`core.flavors.inert_flushing_method`); none without recorded variables."""
    from analysis.comparisons.compare import counted_runs

    if variables is None or variables.empty:
        return {}
    out: dict[int, str] = {}
    for cell_id, g in counted_runs(run_summary).groupby("cell_id", sort=False):
        methods = []
        for run_id in g["run_id"].astype(int):
            row = variables.loc[run_id] if run_id in variables.index else None
            methods.append(None if row is None else flavors.inert_flushing_method(
                {k: None if pd.isna(v) else str(v) for k, v in row.items()}))
        if methods and all(methods):
            out[int(cell_id)] = (
                f"its flushing method ({flavors.FLUSHING_METHOD}={methods[0]}) never acted:"
                f" every run ran with {flavors.ADAPTIVE_FLUSHING} OFF, and the method acts"
                " only while it is ON")
    return out


def untestable_rows(run_summary: pd.DataFrame, variables: pd.DataFrame | None
                    ) -> dict[int, str]:
    """Cells (id → why) that cannot stand for the reference's row: its named flushing method
    never acted in any of its runs (:func:`inert_method_cells`), or none of its runs reached
    steady state (:func:`analysis.steadiness.transients.not_steady_cells`: a transient)."""
    out = inert_method_cells(run_summary, variables)
    for cell_id, why in not_steady_cells(run_summary).items():
        out[cell_id] = f"{out[cell_id]}; {why}" if cell_id in out else why
    return out


def for_comparison(spec: ExperimentSpec, cmp: Any, db: Any) -> pd.DataFrame:
    """The scorecard of a :func:`analysis.comparisons.compare.compare` result ``cmp`` of the
    experiment in ``db``: with its window starts (its intervals and cycles) and the variables
    its runs recorded — what ``compare``, the report and the study tables show."""
    rs = cmp.frames.run_summary
    return scorecard(spec, rs, cmp.cells, intervals=cmp.frames.intervals,
                     cycles=cmp.cycles,
                     variables=method_variables(db, rs))


def scorecard(spec: ExperimentSpec, run_summary: pd.DataFrame, cells: pd.DataFrame,
              *, margin: float = MARGIN, intervals: pd.DataFrame | None = None,
              cycles: dict[int, Any] | None = None,
              variables: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per comparison of the reference: reference ratio, measured ratio, verdict.

    Parameters
    ----------
    spec:
        The experiment's stored spec (:class:`~core.experiment.stored.StoredExperiment`'s
        ``spec``) or one read from a file.
    run_summary, cells:
        :func:`analysis.tables.summaries.run_summary` and
        :func:`analysis.tables.summaries.cell_summary` of the experiment (``notpm``: each run's
        window average).
    intervals, cycles:
        The runs' intervals (:func:`analysis.reading.series.intervals`) and their
        :func:`analysis.reading.window_cycles.run_cycles`: each comparison's ratio over the
        plausible window starts; without them the window columns hold the stored window only.
    variables:
        :func:`method_variables` of the runs: a row whose flushing method never acted is not
        gradeable; without them only the steady-state test applies.

    Returns
    -------
    DataFrame
        :data:`COLUMNS`; empty when the spec has no reference. ``stated``: the reference
        stated the ratio (else it is the quotient of the two rows' reference values).
    """
    rows = match_rows(spec, cells)
    # A comparison with a stated ratio may name any include row, referenced or not.
    every = include_rows(spec, cells)
    by_index = {r.index: r for r in every}
    by_name = {r.name: r for r in every}
    labels = dict(zip(cells["cell_id"].astype(int), cells["cell_label"], strict=True))
    base = cells.loc[cells["is_baseline"].astype(bool), "cell_id"]
    judge = _judge_in_design(run_summary, spec)
    transient = not_steady_cells(run_summary)
    inert = inert_method_cells(run_summary, variables)
    untestable = untestable_rows(run_summary, variables)
    out = []
    sides: dict[int, tuple[int, int]] = {}  # table row → (cell a, cell b), for window starts
    for comp in _comparisons(spec, rows, int(base.iloc[0]) if len(base) else None):
        a, b = (by_index.get(side) if isinstance(side, int) else by_name.get(side)
                for side in (comp.a, comp.b))
        stated = comp.ratio is not None
        ref = float(comp.ratio) if comp.ratio is not None else (
            a.value / b.value if a and b and a.value and b.value else math.nan)
        record = {"comparison": comp.name, "a": a.name if a else str(comp.a),
                  "b": b.name if b else str(comp.b), "reference_ratio": ref,
                  "stated": stated, "note": str(comp.note or ""), "not_steady": "",
                  "window_low": math.nan, "window_high": math.nan, "window_offsets": "",
                  "window_dependent": False, "window_grades": "", "ungradeable": "",
                  "method_inert": ""}
        missing = [f"{side} ({r.name if r else getattr(comp, side)}): "
                   f"{r.problem if r else 'no such include row'}"
                   for side, r in (("a", a), ("b", b)) if r is None or r.cell_id is None]
        if missing:
            record.update(a_label="–", b_label="–", n_a=0, n_b=0, ratio=math.nan,
                          ci_low=math.nan, ci_high=math.nan, p_value=math.nan,
                          our_verdict="–", verdict=INCONCLUSIVE, share=math.nan, size="–",
                          reason="; ".join(missing))
            out.append(record)
            continue
        assert a is not None and b is not None and a.cell_id is not None \
            and b.cell_id is not None
        ours = judge(b.cell_id, a.cell_id)
        sides[len(out)] = (a.cell_id, b.cell_id)
        verdict, share, size, reason = grade(ref, ours, margin)
        # A row whose every run still trended measured a transient: marked beside the grade.
        record["not_steady"] = ", ".join(r.name for r in (a, b) if r.cell_id in transient)
        record["method_inert"] = ", ".join(r.name for r in (a, b) if r.cell_id in inert)
        # A row that cannot stand for the reference's row: the claim is not tested at all.
        why = [f"{r.name}: {untestable[r.cell_id]}" for r in (a, b) if r.cell_id in untestable]
        if why:
            verdict, share = NOT_GRADEABLE, math.nan
            reason = f"{'; '.join(why)} — {reason}"
            record["ungradeable"] = "; ".join(why)
        record.update(a_label=labels.get(a.cell_id, "?"), b_label=labels.get(b.cell_id, "?"),
                      n_a=ours.n_other, n_b=ours.n_baseline, ratio=ours.ratio,
                      ci_low=ours.ci_low, ci_high=ours.ci_high, p_value=ours.p_value,
                      our_verdict=ours.verdict, verdict=verdict, share=share, size=size,
                      reason=reason)
        out.append(record)
    table = pd.DataFrame(out, columns=list(COLUMNS))
    if intervals is not None and cycles is not None:
        _add_window_starts(table, spec, run_summary, sides, intervals, cycles, margin)
    return table


def _add_window_starts(table: pd.DataFrame, spec: ExperimentSpec, run_summary: pd.DataFrame,
                       sides: dict[int, tuple[int, int]], intervals: pd.DataFrame,
                       cycles: dict[int, Any], margin: float) -> None:
    """Each comparison's ratio over the plausible window starts, in place: the machinery of
    :func:`analysis.reading.window_cycles.window_sensitivity` with each comparison as its
    "cell" (``sides``: table row → its a and b cell ids) and the scorecard's own judge as the
    verdict rule. A verdict that changes there is window-dependent (our verdict says so); a
    grade that moves between showing the reference's effect and not (:data:`_ANSWER`) over the
    starts is inconclusive, one that moves within either is kept and the others said."""
    from analysis.comparisons.compare import counted_runs

    if not sides:
        return
    pseudo = pd.DataFrame({"cell_id": list(sides),
                           "verdict": [table.at[k, "our_verdict"] for k in sides],
                           "verdict_reason": [""] * len(sides)})

    grades: dict[int, set[str]] = {k: set() for k in sides}  # each row's grade at each start

    def verdict_of(moved: pd.DataFrame) -> pd.DataFrame:
        judge = _judge_in_design(moved, spec)
        rows = []
        for k, (a_id, b_id) in sides.items():
            v = judge(b_id, a_id)
            grades[k].add(grade(float(table.at[k, "reference_ratio"]), v, margin)[0])
            rows.append({"cell_id": k, "verdict": v.verdict, "ratio": v.ratio})
        return pd.DataFrame(rows)

    moved = window_cycles.window_sensitivity(pseudo, counted_runs(run_summary), intervals,
                                             cycles, verdict_of)
    for _, m in moved.iterrows():
        k = int(m["cell_id"])
        table.at[k, "window_low"] = m["window_ratio_low"]
        table.at[k, "window_high"] = m["window_ratio_high"]
        table.at[k, "window_offsets"] = m["window_offsets"]
        table.at[k, "window_dependent"] = bool(m["window_dependent"])
        graded = table.at[k, "verdict"] != NOT_GRADEABLE
        table.at[k, "window_grades"] = "; ".join(g for g in GRADES if g in grades[k]) \
            if graded else ""
        said = []
        if m["window_dependent"]:
            table.at[k, "our_verdict"] = window_cycles.WINDOW_DEPENDENT
            said.append(f"our verdict changes with the window's start ({m['window_verdicts']})")
        answers = {_ANSWER[g] for g in grades[k]}
        if graded and len(answers) > 1:
            # Whether the reference's effect shows at all depends on the start: no finding.
            table.at[k, "verdict"], table.at[k, "share"] = INCONCLUSIVE, math.nan
            said.append("the grade changes with the window's start between showing the"
                        f" reference's effect and not ({table.at[k, 'window_grades']})")
        elif graded and len(grades[k]) > 1:
            others = ", ".join(g for g in GRADES
                               if g in grades[k] and g != table.at[k, "verdict"])
            said.append(f"the grade is {table.at[k, 'verdict']} at the stored window and"
                        f" {others} at other starts, which say the same of the reference's"
                        " effect")
        elif graded and said:
            said.append(f"the grade is {table.at[k, 'verdict']} at every start")
        if said:
            table.at[k, "reason"] = f"{', '.join(said)} — {table.at[k, 'reason']}"
    table.attrs["window_note"] = moved.attrs.get("window_note", "")


def window_text(row: Any) -> str:
    """``0.86–0.94 over window starts -40…+0 s``, ``window-dependent`` first where our verdict
    changes there; ``""`` without a range."""
    low, high = row["window_low"], row["window_high"]
    if not (isinstance(low, float) and math.isfinite(low) and math.isfinite(high)):
        return ""
    text = f"{low:.2f}–{high:.2f} over window starts {row['window_offsets']}"
    return f"{window_cycles.WINDOW_DEPENDENT}: {text}" if row["window_dependent"] else text


def _judge_in_design(run_summary: pd.DataFrame, spec: ExperimentSpec
                     ) -> Callable[[int, int], Verdict]:
    """``judge(b, a)``: the one verdict rule for cell a against cell b in this experiment's
    design (its blocks, the model fitted once), over its counted runs."""
    from analysis.comparisons.compare import counted_runs, design_blocks

    done = counted_runs(run_summary)
    values = done["notpm"].to_numpy(dtype=float)
    cell_ids = done["cell_id"].astype(int).to_list()
    blocks, unit = design_blocks(done, spec)
    block_list = None if blocks is None else blocks.reindex(done.index).to_list()
    model = None
    if block_list is not None and len(values):
        ok = np.isfinite(values) & (values > 0)
        model = blocked.fit(np.log(values[ok]), list(np.asarray(cell_ids)[ok]),
                            list(np.asarray(block_list, dtype=object)[ok]))

    def judge(reference: int, other: int) -> Verdict:
        return design_verdict(values, cell_ids, block_list, reference, other, model=model,
                              block_unit=unit or "block")

    return judge


def figure(table: pd.DataFrame, *, source: str = "") -> go.Figure:
    """Reference ratio (open diamond) and measured ratio with its 95 % CI, per comparison.

    A log axis (1.5× and 1/1.5× are as far from 1), the line at 1 and the ±5 % band of "no
    difference"; each comparison's grade is its marker's colour and shape (and legend entry).
    """
    subtitle = (f"reference: {source}; ours: ratio with the verdict rule's 95% CI" if source
                else "ours: ratio with the verdict rule's 95% CI")
    fig = plots.titled_figure("Reproduction scorecard: the reference's ratios against ours",
                              subtitle)
    # The grade is the marker's colour, shape and legend entry: the labels stay short, so the
    # plot (and the legend above it) keep their width in a narrow report.
    names = [str(r["comparison"]) for _, r in table.iterrows()]
    for verdict, colour in VERDICT_COLOURS.items():
        part = table[table["verdict"] == verdict]
        if part.empty:
            continue
        ys = [names[i] for i in part.index]
        fig.add_trace(go.Scatter(
            x=part["ratio"], y=ys, mode="markers", name=verdict,  # ours, by its grade
            marker=dict(color=colour, size=11, symbol=GRADE_SYMBOLS[verdict]),
            error_x=dict(type="data", symmetric=False, color=colour,
                         array=(part["ci_high"] - part["ratio"]).fillna(0),
                         arrayminus=(part["ratio"] - part["ci_low"]).fillna(0))))
    fig.add_trace(go.Scatter(x=table["reference_ratio"], y=names, mode="markers",
                             name="reference", marker=dict(symbol="diamond-open", size=13,
                                                           color="#222222", line_width=2)))
    fig.add_vrect(x0=1 / MARGIN, x1=MARGIN, fillcolor="#999999", opacity=0.15, line_width=0)
    fig.add_vline(x=1, line=dict(color="#555555", width=1))
    fig.update_xaxes(title="ratio a / b (log scale)", **plots.log_axis(
        [table[c] for c in ("ratio", "ci_low", "ci_high", "reference_ratio")]
        + [[1 / MARGIN, MARGIN]]))
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=names)
    return _legend_above(fig, subtitle, len(table))


def _legend_above(fig: go.Figure, subtitle: str, rows: int) -> go.Figure:
    """The legend above the plot (below it, it collides with the axis title on short
    figures), the height for ``rows`` rows, room for a subtitle that wraps."""
    extra = plots.subtitle_extra_px(subtitle)  # a long source wraps onto a second line
    # A legend of more than three entries wraps onto more lines, upwards: room for each.
    entries = sum(1 for trace in fig.data if trace.showlegend is not False)
    extra += 28 * max(0, (entries - 1) // 3)
    fig.update_layout(height=max(320, 170 + 46 * rows + extra), margin=dict(t=120 + extra),
                      title=dict(y=1, yanchor="top", pad=dict(t=34)),  # two lines: not cut off
                      legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0))
    return fig


def stability_figure(stability: pd.DataFrame) -> go.Figure:
    """The scorecard's stability panel: each claim at its row's median stability score
    (100 = a flat line), coloured and marked by its grade."""
    subtitle = "each claim at its row's median stability score (100 × p5 / median)"
    fig = plots.titled_figure("Reproduction scorecard: what the reference says of each line",
                              subtitle)
    names = [str(r["claim"]) for _, r in stability.iterrows()]
    scores = [float(str(m).split("score ")[1].split(",")[0]) if "score " in str(m)
              else math.nan for m in stability["measured"]]
    for verdict, colour in VERDICT_COLOURS.items():
        idx = [i for i, v in enumerate(stability["verdict"]) if v == verdict]
        if not idx:
            continue
        fig.add_trace(go.Scatter(x=[scores[i] for i in idx], y=[names[i] for i in idx],
                                 mode="markers", name=verdict,
                                 marker=dict(color=colour, size=11,
                                             symbol=GRADE_SYMBOLS[verdict]),
                                 hovertext=[stability["reason"].iloc[i] for i in idx]))
    fig.update_xaxes(range=[-2, 102], title="the row's median stability score (100 = flat)")
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=names)
    return _legend_above(fig, subtitle, len(stability))
