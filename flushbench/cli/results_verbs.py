"""The analysis verbs of ``flushbench``: report, compare, show, export.

Each verb calls a library function of :mod:`analysis` (what a notebook calls too). Heavy
imports (pandas, scipy, plotly) happen inside the verbs so ``flushbench --help`` stays fast.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from core.errors import AnalysisError
from core.filecheck import check_output_dir, check_output_file
from flushbench.cli import app
from flushbench.cli.console import literal, make_console, say, shown
from flushbench.cli.options import DbOption, check_experiment_ref, check_run_id

ForceOption = Annotated[
    bool, typer.Option("--force", help="Compare runs even if host/server/dataset differ.")
]
ExperimentArg = Annotated[str, typer.Argument(help="Experiment name (or id).")]


def _console() -> Any:
    return make_console()


def _experiment(name_or_id: str) -> str:
    """Refuse an id no database can hold (>= 2**63) before a query overflows on it."""
    return check_experiment_ref(name_or_id)


def _f(value: Any, fmt: str = ",.0f") -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "–"
    return "–" if not math.isfinite(v) else format(v, fmt)


ExperimentsArg = Annotated[list[str], typer.Argument(
    help="Experiment name (or id); several, or NAME@DATABASE (a file, a bundle or a URL), to"
         " compare experiments across databases.")]
DbsOption = Annotated[list[str] | None, typer.Option(
    "--db", help="Results database: a path, a study bundle or a SQLAlchemy URL (default"
    " $FLUSHBENCH_DB or results/flushbench.sqlite). Repeat it to compare the experiments"
    " of several databases (one per experiment, in order, or one experiment in each).")]
OnOption = Annotated[str | None, typer.Option(
    "--on", help="Across databases: the knobs to match cells on, comma-separated (default:"
    " every knob that varies in any of the experiments).")]
PairOption = Annotated[list[str] | None, typer.Option(
    "--pair", help="Across databases, match by hand: one cell number per experiment (C1 = 1,"
    " as `compare` numbers them), e.g. --pair 1:1 --pair 3:2; repeat it per pair.")]
ReferenceOption = Annotated[Path | None, typer.Option(
    "--reference", help="Score against the reference results of this experiment file"
    " (include rows' `reference:` and the top-level `reference:`) instead of the stored"
    " experiment's.")]


@app.command("report")
def report_cmd(
    experiments: Annotated[list[str], typer.Argument(
        help="Experiment name (or id); several, or NAME@DATABASE, for one report comparing"
             " experiments across databases.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Folder to write report.html and "
                                      "figures/ into.")],
    db: Annotated[list[str] | None, typer.Option(
        "--db", help="Results database (path, bundle or URL); repeat it for several.")] = None,
    force: ForceOption = False,
    no_png: Annotated[bool, typer.Option("--no-png", help="Skip the PNG export.")] = False,
    on: OnOption = None,
    pair: PairOption = None,
    reference: ReferenceOption = None,
) -> None:
    """Write a self-contained HTML report (and a PNG of every figure) for an experiment, or
    for several compared across databases."""
    from analysis.crossdb import parse_sources

    check_output_dir(out, "the report folder")
    sources = parse_sources([_experiment(e) for e in experiments], db)
    if len(sources) > 1:
        from analysis.cross_report import write_cross_report

        if reference is not None:
            raise AnalysisError("--reference scores one experiment", where="--reference",
                                fix="report one experiment with its reference at a time")
        path = write_cross_report(sources, out, on=_knob_list(on), pairs=_pairs(pair),
                                  force=force, png=not no_png)
    else:
        from analysis.report import write_report

        if on is not None or pair:
            raise AnalysisError("--on and --pair match cells across experiments",
                                where="--on", fix="name two experiments or more"
                                " (NAME@DATABASE)")
        path = write_report(sources[0].db, sources[0].experiment, out, png=not no_png,
                            force=force, reference=_reference_spec(reference))
    say(_console(), f"report: {path}")


def _known(value: Any) -> str:
    """A value as text, or "–" when the run has none yet (None, NaN, NaT)."""
    import pandas as pd

    return "–" if value is None or pd.isna(value) else str(value)


def _level(value: Any) -> str:
    """A knob level as experiment files write it: on/off, 60 rather than 60.0."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return shown(str(value))


def _reference_spec(path: Path | None) -> dict[str, Any] | None:
    """The experiment file's spec (its reference results), or None."""
    if path is None:
        return None
    from runner.experiment.spec import load_experiment

    return load_experiment(path).model_dump(mode="json")


def _knob_list(on: str | None) -> list[str] | None:
    return None if on is None else [k.strip() for k in on.split(",") if k.strip()]


def _pairs(pair: list[str] | None) -> list[list[int]] | None:
    """``["1:1", "3:2"]`` → ``[[1, 1], [3, 2]]``; an AnalysisError for anything else."""
    if not pair:
        return None
    out = []
    for text in pair:
        parts = text.split(":")
        if not all(p.strip().isdigit() and len(p.strip()) < 7 for p in parts):
            raise AnalysisError(f"{text[:40]!r} is not a pair of cell numbers",
                                where="--pair", fix="write cell numbers joined by ':', e.g. 1:3")
        out.append([int(p) for p in parts])
    return out


@app.command("compare")
def compare_cmd(
    experiments: ExperimentsArg,
    db: DbsOption = None,
    force: ForceOption = False,
    on: OnOption = None,
    pair: PairOption = None,
    reference: ReferenceOption = None,
) -> None:
    """Print the comparison tables: cells vs baseline, knob effects, rankings, warnings —
    and the reproduction scorecard when the experiment carries reference results. With
    several experiments (or databases): cells matched by knobs, each source a block."""
    from analysis.crossdb import parse_sources

    sources = parse_sources([_experiment(e) for e in experiments], db)
    if len(sources) > 1:
        if reference is not None:
            raise AnalysisError("--reference scores one experiment", where="--reference",
                                fix="compare one experiment with its reference at a time")
        _print_cross(sources, force=force, on=_knob_list(on), pairs=_pairs(pair))
        return
    if on is not None or pair:
        raise AnalysisError("--on and --pair match cells across experiments", where="--on",
                            fix="name two experiments or more (NAME@DATABASE)")
    _print_one(sources[0].experiment, sources[0].db, force=force,
               reference=_reference_spec(reference))


def _print_one(experiment: str, db: str | None, *, force: bool,
               reference: dict[str, Any] | None) -> None:
    """``compare`` of one experiment: the tables, then its scorecard when it has one."""
    from rich.table import Table

    from analysis import efficiency, latency
    from analysis.compare import aa_floor_text, compare
    from analysis.metric import metric_view
    from analysis.statistics.design import NO_MAIN_EFFECT

    cmp = compare(db, experiment, force=force)
    m = metric_view(cmp.experiment)
    eff = efficiency.load(db, cmp.frames)
    lat = latency.load(db, cmp.frames)
    con = _console()
    exp = cmp.experiment
    win = exp["window"]
    con.print(f"[bold]{shown(exp['name'])}[/] — window {win.start:g}–{win.end:g} s after "
              f"{win.warmup:g} s warmup; "
              f"{shown(', '.join(cmp.metadata.get('server_version', [])))}")
    # Short ids keep the tables inside 80 columns; the legend gives the whole labels.
    cells = cmp.cells.set_index("cell_id")
    ids = {cid: f"C{int(cells.loc[cid, 'position']) + 1}" for cid in cells.index}
    con.print("configurations:")
    for cid, c in cells.sort_values("position").iterrows():
        con.print(f"  {ids[cid]}  {shown(c['cell_label'])}"
                  + (" (baseline)" if c["is_baseline"] else ""))
    several = "baseline_id" in cells and cells["baseline_id"].nunique() > 1
    t = Table(title="Against the baseline (mean of repetitions, 95% CI)"
              if not several else "Against each row's own baseline (mean of repetitions,"
              " 95% CI)")
    t.add_column("id")
    t.add_column("runs", justify="right")
    t.add_column(f"{m.name} (95% CI)", justify="right")
    t.add_column("ratio (95% CI)", justify="right")
    t.add_column("verdict")
    t.add_column("bound")  # what bound most of its runs (analysis/bound.py)
    for _, r in cmp.ranking.iterrows():
        c = cells.loc[r["cell_id"]]
        style = {"faster": "green", "slower": "red"}.get(c["verdict"], "")
        t.add_row(
            ids[r["cell_id"]],
            str(c["n_done"]) + (f"+{c['n_failed']}✗" if c["n_failed"] else "")
            # Disturbed runs the experiment's `disturbed:` policy leaves out (reasons below).
            + (f" (+{c['n_excluded']} excl.)" if c.get("n_excluded") else ""),
            f"{_f(m.of(c['notpm_mean']))} ({_f(m.of(c['notpm_ci_low']))}–"
            f"{_f(m.of(c['notpm_ci_high']))})",
            "–" if c["is_baseline"] else
            f"{_f(c['ratio'], '.2f')}× ({_f(c['ratio_ci_low'], '.2f')}–"
            f"{_f(c['ratio_ci_high'], '.2f')})"
            + (f" vs {ids[int(c['baseline_id'])]}" if several else ""),
            f"[{style}]{c['verdict']}[/]" if style else c["verdict"],
            _bound_cell(eff.bound_cells, r["cell_id"]),
        )
    con.print(t)
    if cmp.cells.attrs.get("baselines_note"):
        con.print(shown(cmp.cells.attrs["baselines_note"]), soft_wrap=True)
    con.print("why (the verdict rule: docs/statistics.md; MDE: the change that could hide at"
              " this design and noise):")
    for _, r in cmp.ranking.iterrows():
        c = cells.loc[r["cell_id"]]
        if not c["is_baseline"]:
            mde = (f" — MDE ±{_f(c['mde_pct'], '.1f')}%"
                   if math.isfinite(c["mde_pct"]) and "could hide" not in c["verdict_reason"]
                   else "")
            con.print(f"  {ids[r['cell_id']]}: {shown(c['verdict_reason'])}{mde}",
                      soft_wrap=True)
    floor = cmp.cells.attrs.get("noise_floor") or {}
    if floor.get("n"):
        con.print(f"A/A noise floor: {aa_floor_text(floor)}", soft_wrap=True)
    if len(cmp.main_effects):
        me = cmp.main_effects
        t = Table(title="Main effect of each knob (ratio to its reference level)")
        for col in ("knob", "level", "ratio", "95% CI", "p"):
            t.add_column(col, justify="left" if col in ("knob", "level") else "right")
        for _, r in me[me["estimable"]].iterrows():
            t.add_row(shown(r["knob"]), f"{_level(r['level'])} vs {_level(r['reference'])}",
                      f"{_f(r['ratio'], '.3f')}×",
                      f"{_f(r['ci_low'], '.3f')}–{_f(r['ci_high'], '.3f')}",
                      _f(r["p_value"], ".4f"))
        if me["estimable"].any():
            con.print(t)
        for _, r in me[~me["estimable"]].drop_duplicates("knob").iterrows():
            con.print(f"main effect of {shown(r['knob'])}: {shown(r['reason'])}",
                      soft_wrap=True)
    if len(cmp.interactions):
        it = cmp.interactions
        t = Table(title="Two-way interactions (F test on log throughput)")
        for col in ("knob A", "knob B", "interaction %", "p"):
            t.add_column(col, justify="left" if col.startswith("knob") else "right")
        for _, r in it[it["estimable"]].iterrows():
            t.add_row(shown(r["knob_a"]), shown(r["knob_b"]), _f(r["rms_pct"], ".2f"),
                      _f(r["p_value"], ".4f"))
        if it["estimable"].any():
            con.print(t)
        # An interaction of a knob whose main effect is not estimable cannot be either: the
        # main-effect lines above already say why, so those are counted, not listed (the
        # 2011 flash study's twelve rows printed 36 such lines).
        implied = it["reason"].astype(str).str.startswith(NO_MAIN_EFFECT)
        for _, r in it[~it["estimable"] & ~implied].iterrows():
            con.print(f"interaction {shown(r['knob_a'])}×{shown(r['knob_b'])}: "
                      f"{shown(r['reason'])}", soft_wrap=True)
        n_implied = int((~it["estimable"] & implied).sum())
        if n_implied:
            con.print(f"{n_implied} more interaction(s) not estimable: each involves a knob "
                      "whose main effect is not estimable (above)", soft_wrap=True)
    t = Table(title="Ranked by stability (100 × p5 / median; 100 = flat)")
    for col in ("rank", "id", "score", "CV %", f"{m.name} rank"):
        t.add_column(col, justify="right")
    for _, r in cmp.ranking.sort_values("rank_stability").iterrows():
        t.add_row(str(r["rank_stability"]), ids[r["cell_id"]], _f(r["score_median"], ".0f"),
                  _f(r["cv_pct_median"], ".1f"), str(r["rank_notpm"]))
    con.print(t)
    _print_latency(con, lat, ids, m)
    _print_cost(con, eff, ids, m)
    _print_scorecard(con, cmp, reference)
    for w in cmp.warnings:
        con.print(f"[yellow]warning:[/] {shown(w)}")


def _print_latency(con: Any, lat: Any, ids: dict[Any, str], m: Any) -> None:
    """Response time beside stability: each cell's window percentile and its verdict against
    the baseline (lower is better), stall seconds and jitter (analysis/latency.py)."""
    from rich.table import Table

    from analysis import latency
    from analysis.latency import HIGHER, LOWER, STALL_MULTIPLE

    v = lat.view
    if v.percentile is None:
        con.print("response time: the driver printed no latency figure")
        return
    who = "New-Order " if m.per_minute else ""
    t = Table(title=f"Response time: {who}{v.name}, ms (lower is better)")
    for col in ("id", f"{v.name} ms", "ratio (95% CI)", "verdict", "stall s", "jitter %"):
        t.add_column(col, justify="left" if col in ("id", "verdict") else "right")
    styles = {LOWER: "green", HIGHER: "red"}
    for cell_id, c in lat.cells.iterrows():
        t.add_row(ids.get(cell_id, str(cell_id)), _f(c["value_ms"], ",.1f"),
                  "–" if c["verdict"] == "baseline" else
                  f"{_f(c['ratio'], '.2f')}× ({_f(c['ratio_ci_low'], '.2f')}–"
                  f"{_f(c['ratio_ci_high'], '.2f')})",
                  f"[{styles[c['verdict']]}]{c['verdict']}[/]" if c["verdict"] in styles
                  else c["verdict"],
                  _f(c["stall_s_median"], ",.0f"), _f(c["jitter_pct_median"], ".0f"))
    con.print(t)
    unit = "New-Order" if m.per_minute else "transaction"
    con.print(f"{v.name}: a run's is the {v.how}; a cell's the {v.cell_how}. stall s: seconds"
              f" of window intervals with no {unit} or {v.name} above {STALL_MULTIPLE:g} × the"
              f" run's median; jitter: CV of the per-interval {v.name} (both the median of the"
              " runs)", soft_wrap=True)
    con.print(f"why ({v.name} verdicts, the throughput verdicts' rule on the window {v.name}):")
    for cell_id, c in lat.cells.iterrows():
        if c["verdict"] != "baseline":
            con.print(f"  {ids.get(cell_id, str(cell_id))}: {shown(c['verdict_reason'])}",
                      soft_wrap=True)
    if lat.missing:
        con.print(f"no latency histograms (their {v.name} is the driver's per-interval figure):"
                  f" {shown(latency.missing_text(lat.missing))}", soft_wrap=True)


def _bound_cell(cells: Any, cell_id: Any) -> str:
    """A cell's attribution in the comparison table: ``byte limit 6/6``."""
    from analysis.bound import short

    if cell_id not in cells.index:
        return "–"
    row = cells.loc[cell_id]
    agreeing, _, total = str(row["bound_runs"]).partition(" of ")
    return f"{short(row['bound'])} {agreeing}/{total}"


def _print_cost(con: Any, eff: Any, ids: dict[Any, str], m: Any) -> None:
    """Cost per transaction of each cell (median of its counted runs) and, below, what bound
    each row in a sentence (analysis/cost.py, analysis/bound.py)."""
    from rich.table import Table

    from analysis.cost import COLUMNS, FORMATS, LABELS

    if eff.cost_cells.empty and eff.bound_cells.empty:
        return
    unit = "New-Order" if m.per_minute else "transaction"
    if not eff.cost_cells.empty:
        t = Table(title=f"Cost per {unit} (median of each row's runs, measurement window)")
        t.add_column("id")
        for c in COLUMNS:
            t.add_column(LABELS[c], justify="right")
        for cell_id, row in eff.cost_cells.iterrows():
            t.add_row(ids.get(cell_id, str(cell_id)), *[_f(row[c], FORMATS[c]) for c in COLUMNS])
        con.print(t)
    con.print("what bound each row (the attribution most of its runs share; rules:"
              " docs/statistics.md):")
    for cell_id, row in eff.bound_cells.iterrows():
        con.print(f"  {ids.get(cell_id, str(cell_id))}: {shown(row['bound_text'])}"
                  f" ({row['bound_runs']} runs)", soft_wrap=True)


def _print_scorecard(con: Any, cmp: Any, reference: dict[str, Any] | None) -> None:
    """The reproduction scorecard: the reference's ratios against the measured ones."""
    from rich.table import Table

    from analysis import scorecard

    spec = reference if reference is not None else cmp.experiment["spec"]
    if not scorecard.has_reference(spec):
        if reference is not None:
            con.print("scorecard: the experiment file carries no `reference:` results")
        return
    table = scorecard.scorecard(spec, cmp.frames.run_summary, cmp.cells)
    source = (spec.get("reference") or {}).get("source") or "the reference"
    con.print(f"reproduction scorecard — reference: {shown(source)}", soft_wrap=True)
    for i, r in table.iterrows():
        con.print(f"  R{i + 1}  {shown(r['comparison'])}: {shown(r['a'])} ({r['n_a']} runs)"
                  f" / {shown(r['b'])} ({r['n_b']} runs)", soft_wrap=True)
    t = Table(title="The reference's ratios against ours (a / b)")
    for col in ("id", "reference", "ours (95% CI)", "our verdict", "reproduction",
                "reference vs our CI"):
        t.add_column(col, justify="right" if col in ("reference", "ours (95% CI)")
                     else "left")
    styles = {scorecard.REPRODUCED: "green", scorecard.SMALLER: "cyan",
              scorecard.LARGER: "blue", scorecard.NO_EFFECT: "yellow",
              scorecard.CONTRADICTS: "red"}
    for i, r in table.iterrows():
        style = styles.get(r["verdict"], "")
        t.add_row(f"R{i + 1}",
                  f"{_f(r['reference_ratio'], '.2f')}×" + ("" if r["stated"] else " *"),
                  f"{_f(r['ratio'], '.2f')}× ({_f(r['ci_low'], '.2f')}–"
                  f"{_f(r['ci_high'], '.2f')})",
                  r["our_verdict"], f"[{style}]{r['verdict']}[/]" if style else r["verdict"],
                  r["size"])
    con.print(t)
    con.print(f"scorecard: {scorecard.headline(table)}")
    con.print("why (* = computed from the two rows' reference values; rule:"
              " docs/statistics.md, 'The reproduction scorecard'):")
    for i, r in table.iterrows():
        note = f" (note: {shown(r['note'])})" if r["note"] else ""
        con.print(f"  R{i + 1}: {shown(r['reason'])}{note}", soft_wrap=True)
    _print_stability_claims(con, spec, cmp)


def _print_stability_claims(con: Any, spec: dict[str, Any], cmp: Any) -> None:
    """What the reference says of each line, graded against each row's runs."""
    from analysis import scorecard
    from analysis.stability_claims import stability_scorecard

    claims = stability_scorecard(spec, cmp.frames.run_summary, cmp.cells)
    if claims.empty:
        return
    con.print(f"stability claims: {scorecard.headline(claims)}")
    for i, r in claims.iterrows():
        con.print(f"  S{i + 1}  {shown(r['claim'])} — {r['verdict']}: ours {shown(r['measured'])}"
                  f" ({shown(r['reason'])})", soft_wrap=True)


def _print_cross(sources: list[Any], *, force: bool, on: list[str] | None,
                 pairs: list[list[int]] | None) -> None:
    """``compare`` across experiments and databases: sources, matching, pooled and
    source-against-source tables, every number under the name of its source."""
    from rich.table import Table

    from analysis.crossdb import cross_compare, sources_table

    cross = cross_compare(sources, on=on, pairs=pairs, force=force)
    scale = 1.0 if cross.metric_name == "NOTPM" else 1 / 60
    con = _console()
    # Short ids keep the tables narrow; every table's title repeats what they stand for.
    sid = {s.label: f"S{i + 1}" for i, s in enumerate(cross.sources)}
    legend = "; ".join(f"{sid[s.label]} = {s.label}" for s in cross.sources)
    con.print("sources:")
    for _, r in sources_table(cross).iterrows():
        con.print(f"  {sid[r['source']]}  {shown(r['source'])}: experiment "
                  f"{shown(r['experiment'])} (#{r['experiment_id']}) in {shown(r['database'])}",
                  soft_wrap=True)
    t = Table(title=f"Sources ({shown(legend)})")
    for col in ("source", "server", "hosts", "cells", "runs", "window"):
        t.add_column(col, justify="right" if col in ("cells", "runs") else "left")
    for _, r in sources_table(cross).iterrows():
        t.add_row(sid[r["source"]], shown(r["server"]), shown(r["hosts"]), str(r["cells"]),
                  str(r["runs_done"]), r["window"])
    con.print(t)
    for knob, values in cross.context.items():
        con.print(f"differs between the sources (not matched on): {shown(knob)}: "
                  + "; ".join(f"{shown(v)} in {shown(s)}" for s, v in values.items()),
                  soft_wrap=True)
    how = ("by hand (--pair)" if pairs else
           f"on {', '.join(cross.on)}" if cross.on else "on nothing (one cell each)")
    con.print(f"cells matched {shown(how)}: "
              f"{cross.cells['match'].nunique()} matched", soft_wrap=True)
    for u in cross.unmatched:
        con.print(f"  unmatched, left out: {shown(u)}", soft_wrap=True)
    con.print("matched cells:")
    for match, g in cross.cells.groupby("match"):
        con.print(f"  M{match}  {shown(g['label'].iloc[0])}"
                  + (" (baseline)" if g["is_baseline"].iloc[0] else ""))
    m = cross.metric_name
    t = Table(title=f"Per source: {m} and ratio to the source's own baseline (95% CI;"
                    f" {shown(legend)})")
    for col in ("cell", "source", "runs", f"{m} (95% CI)", "ratio (95% CI)", "verdict"):
        t.add_column(col, justify="right" if col in ("runs",) or m in col else "left")
    for _, r in cross.cells.iterrows():
        t.add_row(f"M{r['match']}", sid[r["source"]], str(r["n_done"]),
                  f"{_f(r['mean'] * scale)} ({_f(r['ci_low'] * scale)}–"
                  f"{_f(r['ci_high'] * scale)})",
                  "–" if r["is_baseline"] else f"{_f(r['ratio'], '.2f')}× "
                  f"({_f(r['ratio_ci_low'], '.2f')}–{_f(r['ratio_ci_high'], '.2f')})",
                  r["verdict"])
    con.print(t)
    if len(cross.pooled):
        t = Table(title=f"Ratio to the baseline pooled over the sources as blocks"
                        f" ({shown(legend)})")
        for col in ("cell", "sources", "ratio (95% CI)", "p", "verdict", "sources disagree?"):
            t.add_column(col, justify="left" if col in ("cell", "verdict") else "right")
        for i, r in cross.pooled.iterrows():
            het = r["heterogeneity_p"]
            t.add_row(f"M{i + 1}", str(r["n_sources"]),
                      "–" if r["verdict"] == "baseline" else f"{_f(r['ratio'], '.2f')}× "
                      f"({_f(r['ratio_ci_low'], '.2f')}–{_f(r['ratio_ci_high'], '.2f')})",
                      _f(r["p_value"], ".3f"), r["verdict"],
                      "–" if not math.isfinite(het) else
                      (f"yes (Cochran's Q p = {het:.3g})" if het < 0.05 else f"no (p = {het:.2g})"))
        con.print(t)
    if len(cross.between):
        matches = dict(zip(cross.cells["key"], cross.cells["match"], strict=False))
        t = Table(title=f"The same cell in each source against S1 ({shown(legend)})")
        for col in ("cell", "source", "runs", "ratio (95% CI)", "p", "verdict"):
            t.add_column(col, justify="left" if col in ("cell", "source", "verdict")
                         else "right")
        for _, r in cross.between.iterrows():
            t.add_row(f"M{matches[r['key']]}", f"{sid[r['source']]} / S1",
                      f"{r['n_other']} vs {r['n_first']}",
                      f"{_f(r['ratio'], '.2f')}× ({_f(r['ci_low'], '.2f')}–"
                      f"{_f(r['ci_high'], '.2f')})", _f(r["p_value"], ".3f"), r["verdict"])
        con.print(t)
    for w in cross.warnings:
        con.print(f"[yellow]warning:[/] {shown(w)}", soft_wrap=True)


@app.command("show")
def show_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id (see `flushbench status`).")],
    db: DbOption = None,
) -> None:
    """Show one run: cell, status, metadata, window NOTPM, stability figures."""
    from rich.table import Table

    from analysis import frames
    from analysis.metric import metric_view

    check_run_id(run_id)
    rdf = frames.runs(db, run_ids=[run_id], all_attempts=True)
    if rdf.empty:
        raise AnalysisError(f"no run {run_id}", where="runs",
                            fix="list runs with `flushbench status`")
    rs = frames.run_summary(db, runs_df=rdf)
    r = rs.iloc[0]
    m = metric_view(frames.experiment_info(db, int(r["experiment_id"])))
    con = _console()
    t = Table(title=f"run {run_id}", show_header=False)
    t.add_column("", style="bold")
    t.add_column("")
    rows = [
        ("configuration", r["cell_label"] + (" (baseline)" if r["is_baseline"] else "")),
        ("repetition / attempt", f"{r['repetition']} / {r['attempt']}"
         + (" (superseded)" if r["superseded"] else "")),
        ("status", str(r["status"]) + (f" — {r['error']}" if r["error"] else "")),
        ("started", _known(r["started_at"])), ("finished", _known(r["finished_at"])),
        # A run not started yet has no metadata: one "–", not "None (None × None)".
        ("server", f"{r['server_flavor']} {r['server_version']}"
         if _known(r["server_flavor"]) != "–" else "–"),
        ("host", f"{r['hostname']} ({r['cpu_count']} × {r['cpu_model']})"
         if _known(r["hostname"]) != "–" else "–"),
        ("dataset", _known(r["dataset_key"])),
        (f"{m.name} (window average)", _f(m.of(r.get("notpm")))),
        *([("driver TpmC (whole run)", _f(r.get("tpmc_driver")))] if m.per_minute else []),
        ("stability score", _f(r.get("score"), ".1f")),
        *_latency_rows(db, r, m),
        ("CV %", _f(r.get("cv_pct"), ".1f")),
        ("holes (< 0.5× median)", f"{_f(r.get('holes_share', math.nan) * 100, '.0f')} %"),
        ("longest low stretch", f"{_f(r.get('longest_low_s'))} s"),
        ("dominant period", f"{_f(r.get('period_s'))} s ({_f(r.get('period_share', 0) * 100)}"
         "% of variance)"),
        ("trend", f"{_f(r.get('trend_pct_per_min'), '+.2f')} % of median per minute"),
        # Checkpoint age and dirty pages across the window: a trend is `not-steady` (below).
        ("levels across the window",
         f"checkpoint age {_f(r.get('checkpoint_age_trend_mib_per_min'), '+.1f')} MiB/min"
         f" ({_f(r.get('checkpoint_age_change_pct'), '+.0f')} % of the maximum), dirty pages"
         f" {_f(r.get('dirty_trend_points_per_min'), '+.1f')} points/min"
         f" ({_f(r.get('dirty_change_points'), '+.1f')} points)"),
        ("p95 latency (median)", f"{_f(r.get('p95_ms_median'), '.1f')} ms (median of the"
         " driver's own per-interval p95)"),
        ("warnings", str(r.get("warnings") or "none")),
        # A steady window's start, chosen for this run; a disturbed run the policy excludes.
        ("window start", f"{_f(r.get('window_start_s'), '.0f')} s after warmup (steady state)"
         if _f(r.get("window_start_s")) != "–" else "the experiment's"),
        ("in verdicts", str(r.get("excluded_reason") or "yes")),
        *_efficiency_rows(db, rs, m),
    ]
    for k, v in rows:
        t.add_row(literal(k), literal(v))
    con.print(t)


def _latency_rows(db: Any, r: Any, m: Any) -> list[tuple[str, str]]:
    """``show``'s response-time rows beside the stability score: the window's percentile
    (exact from the histograms, or the driver's per-interval median, said so), stall seconds,
    jitter (analysis/latency.py); none for a run not done."""
    from analysis import frames, latency
    from store.models import RunStatus

    if r["status"] != RunStatus.DONE:
        return []
    run_id = int(r["run_id"])
    view, fig = latency.one_run(db, frames.intervals(db, run_ids=[run_id], detail=False),
                                run_id)
    if view.percentile is None:
        return [("response time", "– (the driver printed no latency figure)")]
    unit = "New-Order" if m.per_minute else "transaction"
    who = "New-Order " if m.per_minute else ""
    return [
        (f"{who}{view.name} (window)", f"{_f(fig['value_ms'], ',.1f')} ms — {view.how}"),
        ("stall seconds", f"{_f(fig['stall_s'])} s ({_f(fig['stall_intervals'])} intervals"
         f" with no {unit} or {view.name} above {latency.STALL_MULTIPLE:g} × the run's median"
         f" {_f(fig['median_ms'], ',.1f')} ms)"),
        (f"{view.name} jitter", f"{_f(fig['jitter_pct'], '.0f')} % (CV of the per-interval"
         f" {view.name})"),
    ]


def _efficiency_rows(db: Any, rs: Any, m: Any) -> list[tuple[str, str]]:
    """``show``'s rows on what bound a done run and what each transaction cost
    (analysis/bound.py, analysis/cost.py); none for a run not done."""
    from analysis import bound, cost, frames
    from analysis.run_digest import run_digests
    from store.models import RunStatus

    r = rs.iloc[0]
    run_id = int(r["run_id"])
    if r["status"] != RunStatus.DONE:
        return []
    digests = run_digests(db, [run_id])
    spec = frames.experiment_info(db, int(r["experiment_id"]))["spec"]
    what = bound.per_run(db, rs, digests, spec)
    costs = cost.per_run(digests.window, digests.usage,
                         frames.intervals(db, run_ids=[run_id], detail=False), [run_id]).iloc[0]
    unit = "New-Order" if m.per_minute else "transaction"
    fmt = {c: f"{_f(costs[c], cost.FORMATS[c])} {cost.LABELS[c]}" for c in cost.COLUMNS}
    return [
        ("what bound it", str(what.loc[run_id, "bound_text"]) if run_id in what.index
         else "– (no samples in the window)"),
        (f"cost per {unit} (window)",
         f"{fmt['mysqld_cpu_us']}, {fmt['client_cpu_us']}; {fmt['read_ops']} ("
         f"{fmt['read_kib']}), {fmt['write_ops']} ({fmt['write_kib']}) on the datadir's"
         f" device; {fmt['row_lock_waits']}"),
    ]


@app.command("export")
def export_cmd(
    experiment: ExperimentArg,
    out: Annotated[Path, typer.Option("-o", "--out", help="File to write.")],
    db: DbOption = None,
    fmt: Annotated[str, typer.Option("--format", help="csv or parquet.")] = "csv",
    what: Annotated[str, typer.Option("--what", help="intervals, samples or runs.")] = "intervals",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Export an experiment's intervals, samples or run summaries as CSV or Parquet."""
    from analysis.export import export

    if fmt in ("csv", "parquet") and what in ("intervals", "samples", "runs"):
        check_output_file(out, "the export file (-o)")
    path = export(db, _experiment(experiment), out, fmt=fmt, what=what, force=force)
    say(_console(), f"wrote {path}")
