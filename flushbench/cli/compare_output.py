"""What ``flushbench compare`` prints: the tables of :mod:`flushbench.cli.tables` in order,
with the sentences between them (legends, each verdict's reason, what could not be
estimated, warnings).

:func:`print_comparison` prints one experiment (against its baseline, knob effects,
stability, response time, cost, the scorecard); :func:`print_cross` several experiments
from several databases, cells matched by knobs. Numbers come from :mod:`analysis`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from core.units import format_number as number
from flushbench.cli import tables
from flushbench.cli.console import make_console, para, shown
from flushbench.cli.ledger_output import print_ledger_tables

if TYPE_CHECKING:
    from core.experiment.spec import ExperimentSpec
    from store.db import ResultsDB


def print_comparison(experiment: str, db: ResultsDB | str | None, *, force: bool,
                     reference: ExperimentSpec | None, cycles: str | None = None) -> None:
    """``compare`` of one experiment: the tables, then its scorecard when it has one
    (``cycles``: ``--cycles``, how periodic runs' windows are cut)."""
    from analysis.comparisons import scorecard
    from analysis.comparisons.compare import compare
    from analysis.reading.metric import metric_view
    from analysis.response import latency, latency_windows
    from analysis.tables import efficiency

    cmp = compare(db, experiment, force=force, cycles=cycles)
    m = metric_view(cmp.experiment)
    eff = efficiency.load(db, cmp.frames)
    # A fixed-rate experiment's p99 verdicts judged over the window starts, as its throughput's.
    lat = latency_windows.with_starts(db, cmp.frames, latency.load(db, cmp.frames), cmp.cycles)
    rate_notes = _missed_rates(db, cmp, lat)
    con = make_console()
    exp = cmp.experiment
    win = exp["window"]
    whole = (cycles or win.cycles) == "whole"
    con.print(f"[bold]{shown(exp['name'])}[/] — window {win.start:g}–{win.end:g} s after "
              f"{win.warmup:g} s warmup"
              + (" (a periodic run's cut to its whole flush cycles)" if whole else "") + "; "
              f"{shown(', '.join(cmp.metadata.get('server_version', [])))}")
    # Short ids keep the tables inside 80 columns; the legend gives the whole labels.
    cells = cmp.cells.set_index("cell_id")
    ids = {cid: f"C{int(cells.loc[cid, 'position']) + 1}" for cid in cells.index}
    # The rows' names in the experiment file (`name:`), as the report titles them.
    names = scorecard.row_names(exp["stored"].spec, cmp.cells[["cell_id", "knobs"]])
    con.print("configurations:")
    for cid, c in cells.sort_values("position").iterrows():
        para(con, f"  {ids[cid]}  {configuration_line(c, cells, names.get(int(cid)), ids)}",
             hang=len(ids[cid]) + 2)
    if _print_searches(con, db, exp, ids):
        for w in cmp.warnings:
            para(con, f"[yellow]warning:[/] {shown(w)}")
        return
    con.print(tables.comparison_table(cmp, ids, m, eff.bound_cells))
    _print_verdicts(con, cmp, ids)
    _print_effects(con, cmp)
    con.print(tables.stability_table(cmp.ranking, ids, m))
    _print_latency(con, lat, ids, m)
    _print_cost(con, eff, ids, m)
    # The write-path ledger, its floor and the cost table against each row's baseline.
    print_ledger_tables(con, eff, cmp, ids, m)
    _print_scorecard(con, cmp, reference, db)
    for w in [*cmp.warnings, *(f"{ids[cid]} {why}" for cid, why in rate_notes.items())]:
        para(con, f"[yellow]warning:[/] {shown(w)}")


def configuration_line(cell: Any, cells: Any, name: str | None, ids: dict[Any, str]) -> str:
    """One line of ``compare``'s legend: the row's name, then the baseline's whole settings,
    or for any other row only what differs from its own baseline (``dw-off-50 ·
    doublewrite=off max_dirty_pages_pct=50 io_capacity=20000 (vs C1)``), so a reader sees the
    question each row asks."""
    from core.experiment.cells import differing_label

    head = shown(name + " · ") if name else ""
    base_id = cell.get("baseline_id")
    if cell["is_baseline"] or base_id is None or base_id not in cells.index:
        return f"{head}{shown(cell['cell_label'])}" + (" (baseline)" if cell["is_baseline"]
                                                        else "")
    diff = differing_label(cell["knobs"] or {}, cells.loc[base_id, "knobs"] or {})
    return f"{head}{shown(diff)} (vs {ids[base_id]})"


def _print_searches(con: Any, db: ResultsDB | str | None, exp: Any, ids: dict[Any, str]) -> bool:
    """A rate search's answer per cell with its step table (analysis/response/rate_search.py);
    False when the experiment is no search. A search's runs are steps at different rates,
    not repetitions, so its cells are compared by the rates they held, not by pooled
    figures."""
    from analysis.response import rate_search

    found = rate_search.searches(db, int(exp["id"]))
    if not found:
        return False
    con.print("[bold]rate search[/] — each step a run at one fixed rate, held when its window"
              " p99 (stalls and in-flight waits counted) is within the target, its achieved"
              " rate ≥ 95 % of the step's and its stall seconds (intervals completing no"
              " New-Order) within the limit:")
    for cell in found:
        para(con, f"  {ids.get(cell.cell_id, '?')}  {shown(cell.text)}", hang=6)
        if cell.found.steps:  # a cell not reached yet has no step to list
            con.print(tables.search_steps_table(rate_search.step_table(cell.found,
                                                                       cell.target)))
    para(con, "A search's runs are steps at different rates, not repetitions: its cells are"
              " compared by the rates they held (above), not by pooled throughput or latency.")
    return True


def _missed_rates(db: ResultsDB | str | None, cmp: Any, lat: Any) -> dict[Any, str]:
    """The cells with a fixed-rate run that missed its target, and why: their throughput and
    response-time verdicts become "missed rate" (never compared as if they held the load the
    other rows carried; :func:`analysis.response.fixed_rate.flag_missed`)."""
    from analysis.response import fixed_rate
    from analysis.tables import frames

    done = [int(x) for x in cmp.frames.intervals["run_id"].unique()]
    rates = fixed_rate.per_run(frames.intervals(db, run_ids=done, detail=True))
    return fixed_rate.flag_missed(rates, cmp.frames.runs, cmp.cells, lat.cells)


def _print_verdicts(con: Any, cmp: Any, ids: dict[Any, str]) -> None:
    """Below the comparison table: several baselines, each verdict's reason and MDE, the
    A/A noise floor."""
    from analysis.comparisons.compare import aa_floor_text

    cells = cmp.cells.set_index("cell_id")
    if cmp.cells.attrs.get("window_note"):
        para(con, shown(cmp.cells.attrs["window_note"]))
    if cmp.cells.attrs.get("baselines_note"):
        para(con, shown(cmp.cells.attrs["baselines_note"]))
    con.print("why (the verdict rule: docs/statistics.md; MDE: the change that could hide at"
              " this design and noise):")
    for _, r in cmp.ranking.iterrows():
        c = cells.loc[r["cell_id"]]
        if not c["is_baseline"]:
            mde = (f" — MDE ±{number(c['mde_pct'], '.1f')}%"
                   if math.isfinite(c["mde_pct"]) and "could hide" not in c["verdict_reason"]
                   else "")
            para(con, f"  {ids[r['cell_id']]}: {shown(c['verdict_reason'])}{mde}")
    floor = cmp.cells.attrs.get("noise_floor") or {}
    if floor.get("n"):
        para(con, f"A/A noise floor: {aa_floor_text(floor)}")


def _print_effects(con: Any, cmp: Any) -> None:
    """The knobs' main effects and two-way interactions, then why the others are not
    estimable (an interaction of a knob whose main effect is not estimable: counted)."""
    from analysis.statistics.design import NO_MAIN_EFFECT

    if len(cmp.main_effects):
        me = cmp.main_effects
        if me["estimable"].any():
            con.print(tables.main_effects_table(me))
        for _, r in me[~me["estimable"]].drop_duplicates("knob").iterrows():
            para(con, f"main effect of {shown(r['knob'])}: {shown(r['reason'])}")
    if len(cmp.interactions):
        it = cmp.interactions
        if it["estimable"].any():
            con.print(tables.interactions_table(it))
        # An interaction of a knob whose main effect is not estimable cannot be either: the
        # main-effect lines above already say why, so those are counted, not listed (the
        # 2011 flash study's twelve rows printed 36 such lines).
        implied = it["reason"].astype(str).str.startswith(NO_MAIN_EFFECT)
        for _, r in it[~it["estimable"] & ~implied].iterrows():
            para(con, f"interaction {shown(r['knob_a'])}×{shown(r['knob_b'])}: "
                      f"{shown(r['reason'])}")
        n_implied = int((~it["estimable"] & implied).sum())
        if n_implied:
            para(con, f"{n_implied} more interaction(s) not estimable: each involves a knob "
                      "whose main effect is not estimable (above)")


def _print_latency(con: Any, lat: Any, ids: dict[Any, str], m: Any) -> None:
    """Response time beside stability: each cell's window percentile and its verdict against
    the baseline (lower is better), stall seconds and jitter (analysis/response/latency.py)."""
    from analysis.response import latency
    from analysis.response.latency import STALL_MULTIPLE

    v = lat.view
    if v.percentile is None:
        con.print("response time: the driver printed no latency figure")
        return
    con.print(tables.latency_table(lat, ids, m))
    unit = "New-Order" if m.per_minute else "transaction"
    median = "p50: the median of the cell's runs' windows merged, waits included. " \
        if v.exact else ""
    para(con, f"{v.name}: a run's is the {v.how}; a cell's the {v.cell_how}. {median}"
              "p99.9, max: the"
              " window's, waits included (a stall is a wait of at least its length; without"
              " histograms p99.9 is what the stalls prove, – when they prove nothing)."
              " stall s: seconds"
              f" of window intervals with no {unit} or {v.name} above {STALL_MULTIPLE:g} × the"
              f" run's median; jitter: CV of the per-interval {v.name} (both the median of the"
              " runs)")
    con.print(f"why ({v.name} verdicts, the throughput verdicts' rule on the window {v.name}):")
    for cell_id, c in lat.cells.iterrows():
        if c["verdict"] != "baseline":
            para(con, f"  {ids.get(cell_id, str(cell_id))}: {shown(c['verdict_reason'])}")
    if lat.missing:
        para(con, f"no latency histograms (their {v.name} is the driver's per-interval figure):"
                  f" {shown(latency.missing_text(lat.missing))}")


def _print_cost(con: Any, eff: Any, ids: dict[Any, str], m: Any) -> None:
    """Cost per transaction of each cell (median of its counted runs) and, below, what bound
    each row in a sentence (analysis/writes/cost.py, analysis/writes/bound.py)."""
    if eff.cost_cells.empty and eff.bound_cells.empty:
        return
    unit = "New-Order" if m.per_minute else "transaction"
    if not eff.cost_cells.empty:
        con.print(tables.cost_table(eff.cost_cells, ids, unit))
    con.print("what bound each row (the attribution most of its runs share; rules:"
              " docs/statistics.md):")
    for cell_id, row in eff.bound_cells.iterrows():
        para(con, f"  {ids.get(cell_id, str(cell_id))}: {shown(row['bound_text'])}"
                  f" ({row['bound_runs']} runs)")


def _print_scorecard(con: Any, cmp: Any, reference: ExperimentSpec | None,
                     db: ResultsDB | str | None) -> None:
    """The reproduction scorecard: the reference's ratios against the measured ones, each
    over the window starts, with the comparisons that cannot be graded counted apart."""
    from analysis.comparisons import scorecard

    spec = reference if reference is not None else cmp.experiment["stored"].spec
    if not scorecard.has_reference(spec):
        if reference is not None:
            con.print("scorecard: the experiment file carries no `reference:` results")
        return
    table = scorecard.for_comparison(spec, cmp, db)
    source = (spec.reference.source if spec.reference else None) or "the reference"
    para(con, f"reproduction scorecard — reference: {shown(source)}")
    for i, r in table.iterrows():
        para(con, f"  R{i + 1}  {shown(r['comparison'])}: {shown(r['a'])} ({r['n_a']} runs)"
                  f" / {shown(r['b'])} ({r['n_b']} runs)")
    con.print(tables.scorecard_table(table))
    if table.attrs.get("window_note"):
        para(con, shown(table.attrs["window_note"]))
    con.print(f"scorecard: {scorecard.headline(table)}")
    con.print("why (* = computed from the two rows' reference values; rule:"
              " docs/statistics.md, 'The reproduction scorecard'):")
    for i, r in table.iterrows():
        note = f" (note: {shown(r['note'])})" if r["note"] else ""
        para(con, f"  R{i + 1}: {shown(r['reason'])}{note}")
    _print_stability_claims(con, spec, cmp)


def _print_stability_claims(con: Any, spec: ExperimentSpec, cmp: Any) -> None:
    """What the reference says of each line, graded against each row's runs."""
    from analysis.comparisons import scorecard
    from analysis.comparisons.stability_claims import stability_scorecard

    claims = stability_scorecard(spec, cmp.frames.run_summary, cmp.cells)
    if claims.empty:
        return
    con.print(f"stability claims: {scorecard.headline(claims)}")
    for i, r in claims.iterrows():
        para(con, f"  S{i + 1}  {shown(r['claim'])} — {r['verdict']}: ours {shown(r['measured'])}"
                  f" ({shown(r['reason'])})")


def print_cross(sources: list[Any], *, force: bool, on: list[str] | None,
                pairs: list[list[int]] | None) -> None:
    """``compare`` across experiments and databases: sources, matching, pooled and
    source-against-source tables, every number under the name of its source."""
    from analysis.comparisons.crossdb import cross_compare, sources_table

    cross = cross_compare(sources, on=on, pairs=pairs, force=force)
    con = make_console()
    # Short ids keep the tables narrow; every table's title repeats what they stand for.
    sid = {s.label: f"S{i + 1}" for i, s in enumerate(cross.sources)}
    legend = "; ".join(f"{sid[s.label]} = {s.label}" for s in cross.sources)
    con.print("sources:")
    for _, r in sources_table(cross).iterrows():
        para(con, f"  {sid[r['source']]}  {shown(r['source'])}: experiment "
                  f"{shown(r['experiment'])} (#{r['experiment_id']}) in {shown(r['database'])}")
    con.print(tables.cross_sources_table(sources_table(cross), sid, legend))
    _print_matching(con, cross, pairs)
    con.print(tables.cross_cells_table(cross, sid, legend))
    if len(cross.pooled):
        con.print(tables.pooled_table(cross.pooled, legend))
    if len(cross.between):
        con.print(tables.between_table(cross, sid, legend))
    for w in cross.warnings:
        para(con, f"[yellow]warning:[/] {shown(w)}")


def _print_matching(con: Any, cross: Any, pairs: list[list[int]] | None) -> None:
    """What differs between the sources, how the cells were matched, which were left out."""
    for knob, values in cross.context.items():
        para(con, f"differs between the sources (not matched on): {shown(knob)}: "
                  + "; ".join(f"{shown(v)} in {shown(s)}" for s, v in values.items()))
    how = ("by hand (--pair)" if pairs else
           f"on {', '.join(cross.on)}" if cross.on else "on nothing (one cell each)")
    para(con, f"cells matched {shown(how)}: "
              f"{cross.cells['match'].nunique()} matched")
    for u in cross.unmatched:
        para(con, f"  unmatched, left out: {shown(u)}")
    con.print("matched cells:")
    for match, g in cross.cells.groupby("match"):
        para(con, f"  M{match}  {shown(g['label'].iloc[0])}"
                  + (" (baseline)" if g["is_baseline"].iloc[0] else ""), hang=len(f"M{match}") + 2)
