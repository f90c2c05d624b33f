"""The analysis verbs of ``flushbench``: report, compare, show, export.

Each verb calls a library function of :mod:`analysis` (what a notebook calls too). Heavy
imports (pandas, scipy, plotly) happen inside the verbs so ``flushbench --help`` stays fast.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from flushbench.cli import app
from flushbench.cli.console import literal, make_console, say, shown
from flushbench.cli.options import DbOption
from flushbench.errors import AnalysisError
from flushbench.filecheck import check_output_dir, check_output_file

ForceOption = Annotated[
    bool, typer.Option("--force", help="Compare runs even if host/server/dataset differ.")
]
#: Ids are 64-bit signed integers in every database flushbench uses.
MAX_ID = 2**63 - 1
ExperimentArg = Annotated[str, typer.Argument(help="Experiment name (or id).")]


def _console() -> Any:
    return make_console()


def _experiment(name_or_id: str) -> str:
    """Refuse an id no database can hold (>= 2**63) before a query overflows on it."""
    text = name_or_id.strip()
    if text.isdigit() and int(text) > MAX_ID:
        raise AnalysisError(f"no experiment {text[:30]}: ids are between 1 and {MAX_ID}",
                            where="experiments", fix="list experiments with `flushbench status`")
    return name_or_id


def _f(value: Any, fmt: str = ",.0f") -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "–"
    return "–" if not math.isfinite(v) else format(v, fmt)


@app.command("report")
def report_cmd(
    experiment: ExperimentArg,
    out: Annotated[Path, typer.Option("-o", "--out", help="Folder to write report.html and "
                                      "figures/ into.")],
    db: DbOption = None,
    force: ForceOption = False,
    no_png: Annotated[bool, typer.Option("--no-png", help="Skip the PNG export.")] = False,
) -> None:
    """Write a self-contained HTML report (and a PNG of every figure) for an experiment."""
    from analysis.report import write_report

    check_output_dir(out, "the report folder")
    path = write_report(db, _experiment(experiment), out, png=not no_png, force=force)
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


@app.command("compare")
def compare_cmd(
    experiment: ExperimentArg,
    db: DbOption = None,
    force: ForceOption = False,
) -> None:
    """Print the comparison tables: cells vs baseline, knob effects, rankings, warnings."""
    from rich.table import Table

    from analysis.compare import aa_floor_text, compare
    from analysis.metric import metric_view

    cmp = compare(db, _experiment(experiment), force=force)
    m = metric_view(cmp.experiment)
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
    t = Table(title="Against the baseline (mean of repetitions, 95% CI)")
    t.add_column("id")
    t.add_column("runs", justify="right")
    t.add_column(f"{m.name} (95% CI)", justify="right")
    t.add_column("ratio (95% CI)", justify="right")
    t.add_column("verdict")
    for _, r in cmp.ranking.iterrows():
        c = cells.loc[r["cell_id"]]
        style = {"faster": "green", "slower": "red"}.get(c["verdict"], "")
        t.add_row(
            ids[r["cell_id"]],
            str(c["n_done"]) + (f"+{c['n_failed']}✗" if c["n_failed"] else ""),
            f"{_f(m.of(c['notpm_mean']))} ({_f(m.of(c['notpm_ci_low']))}–"
            f"{_f(m.of(c['notpm_ci_high']))})",
            "–" if c["is_baseline"] else
            f"{_f(c['ratio'], '.2f')}× ({_f(c['ratio_ci_low'], '.2f')}–"
            f"{_f(c['ratio_ci_high'], '.2f')})",
            f"[{style}]{c['verdict']}[/]" if style else c["verdict"],
        )
    con.print(t)
    con.print("why (p: exact Mann-Whitney; MDE: the change that could hide at this n and noise):")
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
        for _, r in it[~it["estimable"]].iterrows():
            con.print(f"interaction {shown(r['knob_a'])}×{shown(r['knob_b'])}: "
                      f"{shown(r['reason'])}")
    t = Table(title="Ranked by stability (100 × p5 / median; 100 = flat)")
    for col in ("rank", "id", "score", "CV %", f"{m.name} rank"):
        t.add_column(col, justify="right")
    for _, r in cmp.ranking.sort_values("rank_stability").iterrows():
        t.add_row(str(r["rank_stability"]), ids[r["cell_id"]], _f(r["score_median"], ".0f"),
                  _f(r["cv_pct_median"], ".1f"), str(r["rank_notpm"]))
    con.print(t)
    for w in cmp.warnings:
        con.print(f"[yellow]warning:[/] {shown(w)}")


@app.command("show")
def show_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id (see `flushbench status`).")],
    db: DbOption = None,
) -> None:
    """Show one run: cell, status, metadata, window NOTPM, stability figures."""
    from rich.table import Table

    from analysis import frames
    from analysis.metric import metric_view

    if not 1 <= run_id <= MAX_ID:
        raise AnalysisError(f"no run {run_id}: run ids are between 1 and {MAX_ID}",
                            where="runs", fix="list runs with `flushbench status`")
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
        ("CV %", _f(r.get("cv_pct"), ".1f")),
        ("holes (< 0.5× median)", f"{_f(r.get('holes_share', math.nan) * 100, '.0f')} %"),
        ("longest low stretch", f"{_f(r.get('longest_low_s'))} s"),
        ("dominant period", f"{_f(r.get('period_s'))} s ({_f(r.get('period_share', 0) * 100)}"
         "% of variance)"),
        ("trend", f"{_f(r.get('trend_pct_per_min'), '+.2f')} % of median per minute"),
        ("p95 latency (median)", f"{_f(r.get('p95_ms_median'), '.1f')} ms"),
        ("warnings", str(r.get("warnings") or "none")),
    ]
    for k, v in rows:
        t.add_row(literal(k), literal(v))
    con.print(t)


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
