"""What one experiment's report holds, decided before any of it is drawn.

:func:`read_report_data` reads the store once (the comparison, the representative runs'
samples and variables, memory, I/O, cost, response time, the claims) into a
:class:`~analysis.report.model.ReportData`; :func:`build_report_model` turns that into a
:class:`~analysis.report.model.ReportModel`: the sentences, the figures in page order and the
page's sections as typed blocks (:mod:`analysis.report.sections`), which
:func:`analysis.report.render.render` draws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysis.comparisons import scorecard, stability_claims
from analysis.comparisons.compare import compare
from analysis.reading.blas import one_blas_thread
from analysis.reading.memory import cell_memory, memory_matters
from analysis.reading.metric import metric_view, window_detail_rate
from analysis.reading.one_reading import one_reading
from analysis.reading.query import open_for_reading
from analysis.reading.rows import row_labels
from analysis.report.figures import FigureList, overview
from analysis.report.first_screen import anchored, contents, first_screen
from analysis.report.model import (
    Bullets,
    Claims,
    Heading,
    Link,
    Paragraph,
    PngSummary,
    ReportData,
    ReportFigure,
    ReportModel,
    Section,
    named,
)
from analysis.report.searches import search_section, search_verdict
from analysis.report.sections import (
    cell_section,
    effects,
    efficiency_section,
    io_section,
    latency_section,
    memory_section,
    methodology,
    ranking,
    scorecard_section,
)
from analysis.report.sentences import claims, fixed_rate_summary, summary
from analysis.report.servers import server_section
from analysis.report.write_path import write_path_section
from analysis.response import fixed_rate, latency, latency_windows, rate_search
from analysis.tables import efficiency, io_breakdown
from analysis.tables.frames import (
    DB,
    ExperimentRef,
    intervals,
    representative_runs,
    run_variables,
    samples,
    session_scope,
    varying_knobs,
)
from analysis.writes.run_digest import run_digests
from store.models import RunStatus

if TYPE_CHECKING:
    from core.experiment.spec import ExperimentSpec


def read_report_data(db: DB, experiment: ExperimentRef, force: bool) -> ReportData:
    """Load the comparison and every series the figures draw (bulk reads, one session)."""
    with one_blas_thread(), session_scope(db) as s:
        cmp = compare(s, experiment, force=force)
        rs = cmp.frames.run_summary
        reps = representative_runs(rs)
        metric = metric_view(cmp.experiment)
        # Each done run's memory row, checkpoint-age peak and window edges: from the analysis
        # cache, reading the samples only of runs not digested yet (analysis/writes/run_digest.py).
        done_ids = [int(r) for r in rs.loc[rs["status"] == RunStatus.DONE, "run_id"]]
        digest = run_digests(s, done_ids)
        # A fixed-rate experiment's runs against their targets (its first screen's answer).
        fixed = done_ids and fixed_rate.offers_fixed_rate(cmp.experiment["stored"].spec,
                                                          cmp.cells)
        lat = latency_windows.with_starts(s, cmp.frames, latency.load(s, cmp.frames),
                                          cmp.cycles)
        rates = (fixed_rate.per_run(intervals(s, run_ids=done_ids, detail=True)) if fixed
                 else pd.DataFrame())
        # A row that missed its rate is never compared as if it had held it: its verdicts in
        # the ranking and response-time tables become "missed rate", as in `compare`.
        fixed_rate.flag_missed(rates, cmp.frames.runs, cmp.cells, lat.cells)
        return ReportData(
            cmp=cmp, reps=reps,
            smp=samples(s, run_ids=list(reps.values())) if reps else pd.DataFrame(),
            variables=run_variables(s, list(reps.values())) if reps else pd.DataFrame(),
            metric=metric, qps={} if metric.per_minute else _cell_qps(s, rs),
            cell_mem=cell_memory(digest.memory, rs),
            io_table=io_breakdown.per_cell(s, cmp.frames, window=digest.window),
            claims=claims(s, rs, cmp.cells, digest.checkpoint_age_peaks,
                          row_labels(cmp.experiment["stored"].spec, cmp.cells), cmp.cycles),
            efficiency=efficiency.load(s, cmp.frames, digest),
            latency=lat, rates=rates,
        )


def _cell_qps(db: Any, rs: pd.DataFrame) -> dict[int, float]:
    """Per cell, the mean over done runs of the window QPS (sysbench's interval ``qps``)."""
    done = rs[rs["status"] == RunStatus.DONE]
    if done.empty:
        return {}
    ivl = intervals(db, run_ids=[int(r) for r in done["run_id"]], detail=True)
    per_run = window_detail_rate(ivl, "qps")
    if per_run.empty:
        return {}
    by_cell = done.assign(qps=done["run_id"].map(per_run)).groupby("cell_id")["qps"].mean()
    return {int(c): float(v) for c, v in by_cell.items() if pd.notna(v)}


def build_report_model(
    db: DB,
    experiment: ExperimentRef,
    *,
    force: bool = False,
    reference: ExperimentSpec | None = None,
    on_figure: Callable[[ReportFigure], None] | None = None,
    server_reference: str | None = None,
) -> ReportModel:
    """Everything one experiment's report says: data, sentences and figures, not yet drawn.

    Parameters are those of :func:`analysis.report.writer.write_report`; ``on_figure`` is called
    with each figure as soon as it is final (the PNG export starts drawing while the rest is
    built); ``server_reference`` the row each server is held against (default: the first
    baseline; :mod:`analysis.report.servers`). The sections are built in the order their
    figures are numbered.
    """
    with open_for_reading(db) as handle, one_reading():
        return _build_report_model(handle, experiment, force=force, reference=reference,
                                   on_figure=on_figure, server_reference=server_reference)


def _build_report_model(
    db: DB,
    experiment: ExperimentRef,
    *,
    force: bool,
    reference: ExperimentSpec | None,
    on_figure: Callable[[ReportFigure], None] | None,
    server_reference: str | None,
) -> ReportModel:
    """:func:`build_report_model` on one open handle, inside one reading of the store."""
    d = read_report_data(db, experiment, force)
    cmp, metric = d.cmp, d.metric
    exp, cells, rs = cmp.experiment, cmp.cells, cmp.frames.run_summary
    figs = FigureList(on_figure)
    # What every table, figure and sentence calls a row: its own short name (the reference's
    # `dw-on-50`), else only the knobs that differ from its baseline.
    names = row_labels(reference if reference is not None else exp["stored"].spec, cells)
    found = rate_search.searches(db, int(exp["id"]))
    if found:  # a rate search: its runs are steps at different rates, never pooled
        return _search_report(d, figs, names, found)
    overview_figures = overview(d, figs, names)
    io_part = io_section(figs, d.io_table, metric,
                         {str(c["cell_label"]): names[int(c["cell_id"])]
                          for _, c in cells.iterrows() if int(c["cell_id"]) in names})
    # The reproduction scorecard, when the experiment (or --reference) has references.
    claims_spec = reference if reference is not None else exp["stored"].spec
    score_part = scorecard_section(
        claims_spec, rs, cells, figs,
        stability=stability_claims.stability_scorecard(claims_spec, rs, cells),
        graded=(scorecard.for_comparison(claims_spec, cmp, db)
                if scorecard.has_reference(claims_spec) else None))
    memory_part = memory_section(cmp, figs, d.cell_mem, d.reps, d.smp, names)
    efficiency_part = efficiency_section(d.efficiency, cells, metric, names)
    write_path_part = write_path_section(d.efficiency, cells, metric, names)
    latency_part = latency_section(d, figs, names)
    # An experiment with a server axis: each server against the reference row, shown after
    # the ranking; numbered after the experiment-wide figures so theirs stay as docs cite them.
    servers_part = server_section(d, figs, names, server_reference)
    draw_memory = memory_matters(d.cell_mem, varying_knobs(rs))[0] if len(d.cell_mem) else False
    cell_sections = [
        cell_section(cmp, figs, cell, d.reps.get(int(cell["cell_id"])), d.smp,
                     cmp.frames.intervals, memory_figures=draw_memory,
                     name=names.get(int(cell["cell_id"])), lat=d.latency)
        for _, cell in cells.iterrows()
    ]
    effects_part = effects(cmp)
    # The first screen (verdict, caveats, next) and the contents; then the grids of every row
    # before each row's own part, whose figures are folded away.
    body: list[Section] = anchored([
        ranking(cmp, d.qps, names), servers_part,
        score_part, [Claims()],
        [Heading(2, ("Every row at once",), "grids"), *overview_figures] if overview_figures
        else [], latency_part, io_part, efficiency_part, write_path_part, memory_part,
        [Heading(2, ("Knob effects",), "effects"), *effects_part] if effects_part else [],
        *_configurations(d, names, cell_sections),
    ])
    # At a fixed rate the answer is response time at equal work, not throughput.
    verdict = (fixed_rate_summary(cmp, d.latency, d.rates, names) if not d.rates.empty
               else summary(cmp, names))
    sections: list[Section] = [
        first_screen(d, names, verdict),
        [contents(body), PngSummary()],
        *body,
    ]
    return ReportModel(
        experiment=exp, comparison=cmp, claims=d.claims, figures=figs.items,
        sections=sections,
        notes=[w for w in cmp.warnings if w.startswith("forced comparison")],
    )


def _configurations(d: ReportData, names: dict[int, str], cell_sections: list[Section]
                    ) -> list[Section]:
    """The rows' parts under their contents list, then the methodology (which names a cell
    by its row's own name where it has one)."""
    cells = d.cmp.cells
    labels = {int(d.reps[c]): names.get(int(c), lbl) for c, lbl
              in zip(cells["cell_id"], cells["cell_label"], strict=True) if c in d.reps}
    toc = tuple((Link(f"#cell-{int(c['cell_id'])}",
                      named(c["cell_label"], names.get(int(c["cell_id"])))),)
                for _, c in cells.iterrows())
    return [
        [Heading(2, ("Configurations",), "configurations"),
         Paragraph(("One part per row: its runs, then its own figures folded away (open them"
                    " with the line under each table).",), "sub"), Bullets(toc)],
        *cell_sections, methodology(d.cmp, d.variables, labels),
    ]


def _search_report(d: ReportData, figs: FigureList, names: dict[int, str],
                   found: list[rate_search.CellSearch]) -> ReportModel:
    """The report of a rate search (:mod:`analysis.report.searches`): its answers first, then
    each row's steps and the methodology — none of the parts that pool a row's runs (the
    ranking, the grids, latency, I/O, cost, memory and knob effects, the scorecard): a
    search's runs are steps at different rates, not repetitions."""
    cmp = d.cmp
    search_part = search_section(found, names, cmp.cells, figs)
    cell_sections = [
        cell_section(cmp, figs, cell, d.reps.get(int(cell["cell_id"])), d.smp,
                     cmp.frames.intervals, memory_figures=False,
                     name=names.get(int(cell["cell_id"])), lat=d.latency, search=True)
        for _, cell in cmp.cells.iterrows()
    ]
    body: list[Section] = anchored([search_part, *_configurations(d, names, cell_sections)])
    return ReportModel(
        experiment=cmp.experiment, comparison=cmp, claims=d.claims, figures=figs.items,
        sections=[first_screen(d, names, search_verdict(found, names), search=True),
                  [contents(body), PngSummary()], *body],
        notes=[w for w in cmp.warnings if w.startswith("forced comparison")],
    )
