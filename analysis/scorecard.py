"""The reproduction scorecard: each comparison a reference makes, against what was measured.

An experiment file may carry the published results it reproduces (``runner/references.py``:
a ``reference`` per include row and a top-level ``reference`` with the comparisons). For each
comparison — row *a* over row *b* — the scorecard puts the reference's ratio beside the
measured ratio of the two cells (geometric means of the runs' window averages, with a 95 %
Welch-on-log interval) and says whether the measurement **agrees**, **contradicts** or is
**inconclusive**. The rule, and why, is ``docs/statistics.md`` ("The reproduction
scorecard"):

- a reference ratio within ±5 % of 1 claims *no difference*: agrees when the whole interval
  lies within that margin, contradicts when the whole interval lies outside it, else
  inconclusive;
- a larger reference ratio claims an effect in its direction: agrees when the interval lies
  on the reference's side of 1 (the effect is reproduced; the size column says whether the
  reference's size is inside the interval), contradicts when the interval excludes the
  reference's size and does not lie on its side of 1 (no effect of that size, or the
  opposite), inconclusive when the interval covers both 1 and the reference's size.

The analysis never imports the runner: rows are matched to cells from the stored spec (or a
spec dict the caller read from a file) by the include row's own knob values.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import plots
from analysis.statistics.intervals import ratio_ci
from flushbench.redaction import redact, redact_url
from store.models import RunStatus

#: A reference ratio within this factor of 1 claims "no difference" (docs/statistics.md).
MARGIN = 1.05
AGREES, CONTRADICTS, INCONCLUSIVE = "agrees", "contradicts", "inconclusive"
#: The verdict colours: colour-blind safe (Okabe–Ito), "inconclusive" grey.
VERDICT_COLOURS = {AGREES: "#009E73", CONTRADICTS: "#D55E00", INCONCLUSIVE: "#777777"}
#: Columns of :func:`scorecard`.
COLUMNS = ("comparison", "a", "b", "a_label", "b_label", "n_a", "n_b", "reference_ratio",
           "stated", "ratio", "ci_low", "ci_high", "verdict", "size", "reason")


@dataclass(frozen=True)
class Row:
    """One include row with a reference: its index, name, reference value and matched cell."""

    index: int
    name: str
    value: float | None
    cell_id: int | None
    problem: str = ""


def has_reference(spec: dict[str, Any]) -> bool:
    """Whether a stored (or file) spec carries any reference result."""
    return bool(spec.get("reference")) or any(
        isinstance(inc, dict) and inc.get("reference") for inc in spec.get("include") or [])


#: Keys of an include row that are not knobs (``runner.references.IncludeCell``'s own fields:
#: a test keeps the two in step). ``variables`` holds raw knobs, matched as ``var.NAME``.
ROW_SETTINGS = ("reference", "repetitions", "variables")


def _partial_knobs(include: dict[str, Any]) -> dict[str, Any]:
    """An include row's own knob values as cells store them (``var.NAME`` for raw ones)."""
    out = {k: v for k, v in include.items() if k not in ROW_SETTINGS and v is not None}
    out.update({f"var.{k}": v for k, v in (include.get("variables") or {}).items()})
    return out


def _value(ref: dict[str, Any]) -> float | None:
    for key in ("notpm", "tps"):
        if ref.get(key) is not None:
            return float(ref[key])
    return None


def match_rows(spec: dict[str, Any], cells: pd.DataFrame) -> list[Row]:
    """The include rows that carry a reference, each matched to the one cell it ran as.

    A row matches a cell whose knobs hold all the row's own values (the experiment's fixed
    values are not needed, so a file whose ``fixed`` changed since still matches). A row that
    matches no cell (not run) or several (ambiguous) keeps ``cell_id`` None and says why.
    """
    rows = []
    for i, inc in enumerate(spec.get("include") or []):
        ref = inc.get("reference") if isinstance(inc, dict) else None
        if not ref:
            continue
        partial = _partial_knobs(inc)
        hits = [int(c["cell_id"]) for _, c in cells.iterrows()
                if all((c["knobs"] or {}).get(k) == v for k, v in partial.items())]
        problem = ("" if len(hits) == 1 else "not run in this experiment" if not hits
                   else f"matches {len(hits)} cells")
        rows.append(Row(i, ref.get("name") or str(i), _value(ref),
                        hits[0] if len(hits) == 1 else None, problem))
    return rows


def row_names(spec: dict[str, Any], cells: pd.DataFrame) -> dict[int, str]:
    """Cell id → the name its include row's reference gives it (``dw-on-50``): the short name
    the study itself uses, for panel titles and headings. Cells without one are absent."""
    return {r.cell_id: r.name for r in match_rows(spec, cells)
            if r.cell_id is not None and r.name}


def _comparisons(spec: dict[str, Any], rows: list[Row], base_id: int | None
                 ) -> list[dict[str, Any]]:
    """The reference's comparisons, or every referenced row against the baseline's row."""
    ref = spec.get("reference") or {}
    if ref.get("comparisons"):
        return list(ref["comparisons"])
    base = next((r for r in rows if r.cell_id is not None and r.cell_id == base_id), None)
    if base is None:
        return []
    return [{"name": f"{r.name} vs {base.name}", "a": r.index, "b": base.index, "ratio": None}
            for r in rows if r is not base and r.value is not None]


def judge(reference: float, low: float, high: float, margin: float = MARGIN
          ) -> tuple[str, str, str]:
    """(verdict, size, reason) for a reference ratio and the measured 95 % interval.

    The rule of the module docstring; NaN bounds (fewer than 2 runs a side) are inconclusive.
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return INCONCLUSIVE, "–", "fewer than 2 runs on a side: no interval"
    ci = f"the 95% CI {low:.2f}–{high:.2f}"
    size = ("inside the CI" if low <= reference <= high
            else "above the CI" if reference > high else "below the CI")
    if 1 / margin <= reference <= margin:  # the reference claims "no difference"
        if 1 / margin <= low and high <= margin:
            return AGREES, size, f"{ci} lies within ±{100 * (margin - 1):g}% of 1, as the" \
                                 " reference's no-difference"
        if low > margin or high < 1 / margin:
            return CONTRADICTS, size, f"{ci} lies outside ±{100 * (margin - 1):g}% of 1:" \
                                      " a difference the reference did not see"
        return INCONCLUSIVE, size, f"{ci} is too wide to tell a difference from none"
    up = reference > 1
    if (low > 1) if up else (high < 1):
        return AGREES, size, f"{ci} lies {'above' if up else 'below'} 1, the reference's side"
    if (high < reference) if up else (low > reference):
        what = ("the opposite direction" if ((high < 1) if up else (low > 1))
                else "no effect of the reference's size")
        return CONTRADICTS, size, f"{ci} excludes {reference:.2f}: {what}"
    return INCONCLUSIVE, size, f"{ci} covers both 1 and the reference's {reference:.2f}"


def scorecard(spec: dict[str, Any], run_summary: pd.DataFrame, cells: pd.DataFrame,
              *, margin: float = MARGIN) -> pd.DataFrame:
    """One row per comparison of the reference: reference ratio, measured ratio, verdict.

    Parameters
    ----------
    spec:
        The experiment's stored spec (``Frames.experiment["spec"]``) or one read from a file.
    run_summary, cells:
        :func:`analysis.summaries.run_summary` and :func:`analysis.summaries.cell_summary`
        of the experiment (``notpm``: each run's window average).

    Returns
    -------
    DataFrame
        :data:`COLUMNS`; empty when the spec has no reference. ``stated``: the reference
        stated the ratio (else it is the quotient of the two rows' reference values).
    """
    rows = match_rows(spec, cells)
    by_index = {r.index: r for r in rows}
    by_name = {r.name: r for r in rows}
    labels = dict(zip(cells["cell_id"].astype(int), cells["cell_label"], strict=True))
    base = cells.loc[cells["is_baseline"].astype(bool), "cell_id"]
    done = run_summary[(run_summary["status"] == RunStatus.DONE)
                       & run_summary["notpm"].notna()]
    values = {int(c): g["notpm"].to_numpy(dtype=float) for c, g in done.groupby("cell_id")}
    out = []
    for comp in _comparisons(spec, rows, int(base.iloc[0]) if len(base) else None):
        a, b = (by_index.get(comp[s]) if isinstance(comp[s], int) else by_name.get(comp[s])
                for s in ("a", "b"))
        stated = comp.get("ratio") is not None
        ref = float(comp["ratio"]) if stated else (
            a.value / b.value if a and b and a.value and b.value else math.nan)
        record = {"comparison": comp["name"], "a": a.name if a else str(comp["a"]),
                  "b": b.name if b else str(comp["b"]), "reference_ratio": ref,
                  "stated": stated}
        missing = [f"{side} ({r.name if r else comp[side]}): "
                   f"{r.problem if r else 'no such row with a reference'}"
                   for side, r in (("a", a), ("b", b)) if r is None or r.cell_id is None]
        if missing:
            record.update(a_label="–", b_label="–", n_a=0, n_b=0, ratio=math.nan,
                          ci_low=math.nan, ci_high=math.nan, verdict=INCONCLUSIVE, size="–",
                          reason="; ".join(missing))
            out.append(record)
            continue
        assert a is not None and b is not None and a.cell_id is not None \
            and b.cell_id is not None
        va, vb = values.get(a.cell_id, np.array([])), values.get(b.cell_id, np.array([]))
        ci = ratio_ci(vb, va)
        verdict, size, reason = judge(ref, ci.low, ci.high, margin)
        record.update(a_label=labels.get(a.cell_id, "?"), b_label=labels.get(b.cell_id, "?"),
                      n_a=int(va.size), n_b=int(vb.size), ratio=ci.estimate,
                      ci_low=ci.low, ci_high=ci.high, verdict=verdict, size=size,
                      reason=reason)
        out.append(record)
    return pd.DataFrame(out, columns=list(COLUMNS))


def figure(table: pd.DataFrame, *, source: str = "") -> go.Figure:
    """Reference ratio (open diamond) and measured ratio with its 95 % CI, per comparison.

    A log axis (1.5× and 1/1.5× are as far from 1), the line at 1 and the ±5 % band of "no
    difference"; each comparison's row names its verdict, coloured.
    """
    subtitle = (f"reference: {source}; ours: geometric mean ratio with 95% CI" if source
                else "ours: geometric mean ratio with 95% CI")
    fig = plots._figure("Reproduction scorecard: the reference's ratios against ours", subtitle)
    names = [f"{r['comparison']} — {r['verdict']}" for _, r in table.iterrows()]
    for verdict, colour in VERDICT_COLOURS.items():
        part = table[table["verdict"] == verdict]
        if part.empty:
            continue
        ys = [names[i] for i in part.index]
        fig.add_trace(go.Scatter(
            x=part["ratio"], y=ys, mode="markers", name=f"measured ({verdict})",
            marker=dict(color=colour, size=11),
            error_x=dict(type="data", symmetric=False, color=colour,
                         array=(part["ci_high"] - part["ratio"]).fillna(0),
                         arrayminus=(part["ratio"] - part["ci_low"]).fillna(0))))
    fig.add_trace(go.Scatter(x=table["reference_ratio"], y=names, mode="markers",
                             name="reference", marker=dict(symbol="diamond-open", size=13,
                                                           color="#222222", line_width=2)))
    fig.add_vrect(x0=1 / MARGIN, x1=MARGIN, fillcolor="#999999", opacity=0.15, line_width=0)
    fig.add_vline(x=1, line=dict(color="#555555", width=1))
    fig.update_xaxes(type="log", title="ratio a / b (log scale)")
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=names)
    # The legend above the plot: below it, it collides with the axis title on short figures.
    extra = plots.subtitle_extra_px(subtitle)  # a long source wraps onto a second line
    fig.update_layout(height=max(320, 170 + 46 * len(table) + extra), margin=dict(t=120 + extra),
                      title=dict(y=1, yanchor="top", pad=dict(t=34)),  # two lines: not cut off
                      legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0))
    return fig


def section(spec: dict[str, Any], run_summary: pd.DataFrame, cells: pd.DataFrame,
            add_figure: Callable[[str, go.Figure], str]) -> str:
    """The report's scorecard section (table and figure), or ``""`` without a reference.

    ``add_figure(name, fig)`` places a figure and returns its HTML (the report's figures).
    """
    if not has_reference(spec):
        return ""
    table = scorecard(spec, run_summary, cells)
    ref = spec.get("reference") or {}
    source = redact(str(ref.get("source") or "the reference"))
    if table.empty:
        return ("<h2 id='scorecard'>Reproduction scorecard</h2><p class='sub'>The experiment "
                f"carries reference results ({html.escape(source)}) but no comparison can be "
                "made: give the baseline row a reference value, or list "
                "<code>reference.comparisons</code>.</p>")

    def num(value: float, fmt: str = ".2f") -> str:
        return format(value, fmt) if math.isfinite(value) else "–"

    rows = []
    for _, r in table.iterrows():
        colour = VERDICT_COLOURS[r["verdict"]]
        rows.append(
            f"<tr><td class='l'>{html.escape(str(r['comparison']))}</td>"
            f"<td class='l'>{html.escape(str(r['a']))} / {html.escape(str(r['b']))}</td>"
            f"<td>{r['n_a']} / {r['n_b']}</td>"
            f"<td>{num(r['reference_ratio'])}×{'' if r['stated'] else ' *'}</td>"
            f"<td>{num(r['ratio'])}×</td><td>{num(r['ci_low'])} – {num(r['ci_high'])}</td>"
            f"<td class='l' style='color:{colour};font-weight:600'>{r['verdict']}</td>"
            f"<td class='l'>{html.escape(str(r['reason']))}</td></tr>")
    head = "".join(f"<th class='{'l' if i < 2 or i > 5 else ''}'>{h}</th>" for i, h in
                   enumerate(["comparison", "a / b", "runs", "reference", "ours",
                              "95% CI", "verdict", "why"]))
    # Masked: a stored experiment may predate the refusal of URLs with credentials.
    link = (f" (<a href='{html.escape(redact_url(str(ref['url'])))}'>source</a>)"
            if str(ref.get("url") or "").lower().startswith(("https://", "http://")) else "")
    counts = table["verdict"].value_counts()
    summary = ", ".join(f"{int(counts.get(v, 0))} {v}"
                        for v in (AGREES, CONTRADICTS, INCONCLUSIVE))
    return (
        "<h2 id='scorecard'>Reproduction scorecard</h2>"
        f"<p class='sub'>Each comparison the reference makes — {html.escape(source)}{link} — "
        "as its ratio a / b beside ours: the geometric mean ratio of the two cells' runs "
        "with a Welch 95% interval on log values. <b>Agrees</b>: the interval lies on the "
        "reference's side of 1 (or, for a reference within ±5% of 1, inside that margin); "
        "<b>contradicts</b>: the interval excludes the reference's ratio and does not lie on "
        "its side of 1 (or lies outside the ±5% margin); <b>inconclusive</b>: the interval "
        f"covers both. {summary}. * the quotient of the two rows' reference values (the "
        "reference states no ratio). Rule: docs/statistics.md.</p>"
        + add_figure("scorecard", figure(table, source=source))
        + f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
