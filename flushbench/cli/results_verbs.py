"""The analysis verbs of ``flushbench``: report, compare, show, export.

Each verb calls a library function of :mod:`analysis` (what a notebook calls too). Heavy
imports (pandas, scipy, plotly) happen inside the verbs so ``flushbench --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from core.errors import AnalysisError
from core.filecheck import check_output_dir, check_output_file
from flushbench.cli import app, tables
from flushbench.cli.console import make_console, say, shown
from flushbench.cli.options import DbOption, check_experiment_ref, check_run_id

if TYPE_CHECKING:
    from core.experiment.spec import ExperimentSpec
    from store.db import ResultsDB

ForceOption = Annotated[
    bool, typer.Option("--force", help="Compare runs even if host/server/dataset differ.")
]
ExperimentArg = Annotated[str, typer.Argument(help="Experiment name (or id).")]
CyclesOption = Annotated[
    str | None, typer.Option(
        "--cycles", help="whole: cut each periodic run's window to its whole flush cycles;"
        " as-set: the window as declared (default: the experiment's window.cycles)")]


def _cycles(value: str | None) -> str | None:
    """``--cycles``: ``whole``, ``as-set`` or unset; anything else one error."""
    if value is None or value in ("whole", "as-set"):
        return value
    raise AnalysisError(f"--cycles {value[:40]!r} is not a window rule", where="--cycles",
                        fix="write --cycles whole or --cycles as-set")


def _console() -> Any:
    return make_console()


def _experiment(name_or_id: str) -> str:
    """Refuse an id no database can hold (>= 2**63) before a query overflows on it."""
    return check_experiment_ref(name_or_id)


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
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace a file at one of the report's names (report.html,"
        " figures/NN-kind.png) that an earlier report did not write; without it such a folder"
        " is refused. A file the report did not write is never deleted.")] = False,
    server_reference: Annotated[str | None, typer.Option(
        "--server-reference", help="With several servers: the row each server's baseline is"
        " held against (its name, C3, or its label; default: the first baseline).")] = None,
) -> None:
    """Write a self-contained HTML report (and a PNG of every figure) for an experiment, or
    for several compared across databases.

    Into the folder -o names, the report writes report.html, figures/ and its manifest
    .flushbench-report.json; it replaces and removes only files an earlier report wrote (and
    nobody changed since). When the PNG export fails or is stopped (Chromium cannot start,
    or no figure is drawn for 20 s), report.html is still written, a warning says why, and the
    exit status is 0."""
    from analysis.comparisons.crossdb import parse_sources

    check_output_dir(out, "the report folder")
    problems: list[str] = []
    sources = parse_sources([_experiment(e) for e in experiments], db)
    if len(sources) > 1:
        from analysis.report.cross import write_cross_report

        if reference is not None or server_reference is not None:
            option = "--reference" if reference is not None else "--server-reference"
            raise AnalysisError(f"{option} applies to one experiment", where=option,
                                fix="report one experiment at a time")
        path = write_cross_report(sources, out, on=_knob_list(on), pairs=_pairs(pair),
                                  force=force, png=not no_png, overwrite=overwrite,
                                  problems=problems)
    else:
        from analysis.report.writer import write_report

        if on is not None or pair:
            raise AnalysisError("--on and --pair match cells across experiments",
                                where="--on", fix="name two experiments or more"
                                " (NAME@DATABASE)")
        path = write_report(sources[0].db, sources[0].experiment, out, png=not no_png,
                            force=force, reference=reference_spec(reference),
                            overwrite=overwrite, problems=problems,
                            server_reference=server_reference)
    for problem in problems:
        make_console(stderr=True).print(f"[yellow]warning:[/] {shown(problem)}")
    say(_console(), f"report: {path}")


def reference_spec(path: Path | None) -> ExperimentSpec | None:
    """The experiment file's spec (its reference results), or None."""
    if path is None:
        return None
    from core.experiment.loading import load_experiment

    return load_experiment(path)


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
    fmt: Annotated[str, typer.Option(
        "--format", help="text (the tables), markdown (for a blog post: each row against its"
        " baseline, the write-path ledger, the cost table) or csv (each row against its"
        " baseline: every figure beside its ratio).")] = "text",
    cycles: CyclesOption = None,
) -> None:
    """Print the comparison tables: cells vs baseline, knob effects, rankings, warnings —
    and the reproduction scorecard when the experiment carries reference results. With
    several experiments (or databases): cells matched by knobs, each source a block."""
    from analysis.comparisons.crossdb import parse_sources
    from analysis.reading.one_reading import one_reading
    from flushbench.cli.compare_output import print_comparison, print_cross
    from store.db import ResultsDB

    if fmt not in ("text", "markdown", "csv"):
        raise AnalysisError(f"unknown format {fmt!r}", where="--format",
                            fix="use text, markdown or csv")
    sources = parse_sources([_experiment(e) for e in experiments], db)
    if fmt in ("markdown", "csv"):
        if len(sources) > 1 or on is not None or pair or reference is not None:
            raise AnalysisError(f"--format {fmt} writes one experiment's tables",
                                where="--format", fix="compare one experiment at a time")
        from flushbench.cli.ledger_output import print_markdown
        from flushbench.cli.relative_output import print_csv

        with ResultsDB(sources[0].db, create=False, write=False) as results, one_reading():
            (print_markdown if fmt == "markdown" else print_csv)(
                sources[0].experiment, results, force=force)
        return
    if len(sources) > 1:
        if reference is not None:
            raise AnalysisError("--reference scores one experiment", where="--reference",
                                fix="compare one experiment with its reference at a time")
        print_cross(sources, force=force, on=_knob_list(on), pairs=_pairs(pair))
        return
    if on is not None or pair:
        raise AnalysisError("--on and --pair match cells across experiments", where="--on",
                            fix="name two experiments or more (NAME@DATABASE)")
    # One handle for every reading (each given a path would open its own).
    with ResultsDB(sources[0].db, create=False, write=False) as results, one_reading():
        print_comparison(sources[0].experiment, results, force=force,
                         reference=reference_spec(reference), cycles=_cycles(cycles))


@app.command("show")
def show_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id (see `flushbench status`).")],
    db: DbOption = None,
) -> None:
    """Show one run: cell, status, metadata, window NOTPM, stability figures."""
    from analysis.reading.one_reading import one_reading
    from store.db import ResultsDB

    check_run_id(run_id)
    # One handle for every reading below: each of them given a path opens its own (an engine
    # and the schema's revision check: a third of show's time, twenty times over).
    with ResultsDB(db, create=False, write=False) as results, one_reading():
        _show(run_id, results)


def _show(run_id: int, db: ResultsDB) -> None:
    """``show``'s table of one run, read through ``db``."""
    from analysis.comparisons import scorecard
    from analysis.reading.metric import metric_view
    from analysis.tables import frames
    from store.models import RunStatus

    rdf = frames.runs(db, run_ids=[run_id], all_attempts=True)
    if rdf.empty:
        raise AnalysisError(f"no run {run_id}", where="runs",
                            fix="list runs with `flushbench status`")
    rs = frames.run_summary(db, runs_df=rdf)
    r = rs.iloc[0]
    info = frames.experiment_info(db, int(r["experiment_id"]))
    m = metric_view(info)
    # The row's name in the experiment file (`name:` on an include row), as the report titles it.
    name = scorecard.row_names(info["stored"].spec, rdf[["cell_id", "knobs"]]).get(
        int(r["cell_id"]))
    # A run not done has no response time, cost or bound to show.
    done = r["status"] == RunStatus.DONE
    rate = _rate_rows(db, run_id) if done else []
    rate += _search_rows(db, int(r["experiment_id"]), int(r["cell_id"]), run_id)
    _console().print(tables.run_table(run_id, r, m,
                                      [*rate, *_latency_rows(db, r, m, fixed_rate=bool(rate))]
                                      if done else [],
                                      _efficiency_rows(db, rs, m) if done else [], name=name,
                                      cycle_rows=_cycle_rows(db, run_id, m) if done else None))


def _cycle_rows(db: Any, run_id: int, m: Any) -> list[tuple[str, str]]:
    """``show``'s rows on a done run's flush cycles and its window
    (analysis/reading/window_cycles.py)."""
    from analysis.reading import window_cycles
    from analysis.tables import frames

    found = window_cycles.run_cycles(frames.intervals(db, run_ids=[run_id], detail=False),
                                     frames.samples(db, run_ids=[run_id], counters=()))
    return tables.cycle_rows(found.get(run_id), m)


def _rate_rows(db: Any, run_id: int) -> list[tuple[str, str]]:
    """``show``'s row of a fixed-rate run: its target, the rate it achieved, the intervals
    below 95 % and its queue (analysis/response/fixed_rate.py); none for the closed loop."""
    from analysis.response import fixed_rate
    from analysis.tables import frames

    runs = fixed_rate.per_run(frames.intervals(db, run_ids=[run_id], detail=True))
    return [("fixed rate", fixed_rate.run_text(runs.loc[run_id]))] if run_id in runs.index \
        else []


def _search_rows(db: Any, experiment_id: int, cell_id: int, run_id: int
                 ) -> list[tuple[str, str]]:
    """``show``'s row of a rate search's step: the step held or failed, and the cell's
    search so far (analysis/response/rate_search.py); none for a run outside a search."""
    from analysis.response import rate_search

    for cell in rate_search.searches(db, experiment_id):
        if cell.cell_id != cell_id:
            continue
        step = next((s for s in cell.found.steps if s.run_id == run_id), None)
        why = step.failures(cell.target) if step is not None else []
        mine = ("" if step is None else
                f"this step at {step.rate:,.0f} NOTPM "
                + ("held; " if not why else f"failed ({'; '.join(why)}); "))
        return [("rate search", mine + cell.text)]
    return []


def _latency_rows(db: Any, r: Any, m: Any, *, fixed_rate: bool) -> list[tuple[str, str]]:
    """``show``'s response-time rows of a done run: the window's percentile (exact from the
    histograms, or the driver's per-interval median, said so), stall seconds, jitter
    (analysis/response/latency.py); ``fixed_rate``: the run ran at one."""
    from analysis.response import latency
    from analysis.tables import frames

    run_id = int(r["run_id"])
    view, fig, unread = latency.one_run(
        db, frames.intervals(db, run_ids=[run_id], detail=False), run_id, fixed_rate=fixed_rate)
    return tables.latency_rows(view, fig, m, unread)


def _efficiency_rows(db: Any, rs: Any, m: Any) -> list[tuple[str, str]]:
    """``show``'s rows on what bound a done run, what each transaction cost and where its
    written bytes went (analysis/writes/bound.py, analysis/writes/cost.py,
    analysis/writes/ledger.py)."""
    from analysis.tables import frames
    from analysis.writes import bound, cost, ledger
    from analysis.writes.run_digest import run_digests

    r = rs.iloc[0]
    run_id = int(r["run_id"])
    digests = run_digests(db, [run_id])
    spec = frames.experiment_info(db, int(r["experiment_id"]))["stored"].spec
    what = bound.per_run(db, rs, digests, spec)
    intervals = frames.intervals(db, run_ids=[run_id], detail=False)
    costs = cost.per_run(digests.window, digests.usage, intervals, [run_id]).iloc[0]
    written = ledger.per_run(db, digests.window, digests.usage, intervals, [run_id]).iloc[0]
    return [*tables.efficiency_rows(
        str(what.loc[run_id, "bound_text"]) if run_id in what.index else None, costs, m),
        *tables.ledger_rows(written, m)]


@app.command("export")
def export_cmd(
    experiment: ExperimentArg,
    out: Annotated[Path, typer.Option("-o", "--out", help="File to write.")],
    db: DbOption = None,
    fmt: Annotated[str, typer.Option("--format", help="csv or parquet; the file's name must"
                                     " end in .csv (or .csv.gz …) or .parquet/.pq to match.")
                   ] = "csv",
    what: Annotated[str, typer.Option("--what", help="intervals, samples or runs.")] = "intervals",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file (never"
                                        " the database or bundle read).")] = False,
) -> None:
    """Export an experiment's intervals, samples or run summaries as CSV or Parquet.

    The file's suffix must match --format (a .csv name with --format parquet is refused).
    The export never writes over what it reads — the results database, its -wal/-shm/-journal
    files, the bundle --db names, through a link or a hard link — not even with --force."""
    from analysis.tables.export import export

    if fmt in ("csv", "parquet") and what in ("intervals", "samples", "runs"):
        check_output_file(out, "the export file (-o)")
    path = export(db, _experiment(experiment), out, fmt=fmt, what=what, force=force)
    say(_console(), f"wrote {path}")
