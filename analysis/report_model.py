"""What one experiment's report holds, decided before any of it is drawn.

:func:`read_report_data` reads the store once (the comparison, the representative runs'
samples and variables, memory, I/O, cost, response time, the claims); :func:`build_report_model`
turns that into a :class:`ReportModel`: the sentences, the figures in page order and the page's
sections (:mod:`analysis.report_sections`), which :func:`analysis.report_html.render` draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.comparisons import scorecard, stability_claims
from analysis.comparisons.compare import Comparison, compare
from analysis.reading.blas import one_blas_thread
from analysis.reading.memory import cell_memory, memory_matters
from analysis.reading.metric import MetricView, metric_view, window_detail_rate
from analysis.report_figures import FigureList, ReportFigure, overview
from analysis.report_html import CLAIMS, PNG_SUMMARY, named
from analysis.report_ledger import write_path_section
from analysis.report_sections import (
    cell_section,
    effects,
    efficiency_section,
    io_section,
    latency_section,
    memory_section,
    methodology,
    ranking,
)
from analysis.report_sentences import claims, summary
from analysis.response import latency
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


@dataclass
class ReportModel:
    """What a report says, before any of it is drawn: the data, the sentences, the figures.

    Built by :func:`build_report_model`, drawn by :func:`analysis.report_html.render`.
    ``sections`` are the page's parts in order (tables already as HTML); a figure appears in
    them as a marker naming its slug and the claims as :data:`analysis.report_html.CLAIMS`,
    so the same model renders with or without PNGs.
    """

    experiment: dict[str, Any]
    comparison: Comparison
    #: Sentences computed from the runs ("N of M runs noisy"…), exceptions named.
    claims: list[str]
    #: Figures in page order.
    figures: list[ReportFigure]
    sections: list[str]
    #: Forced-comparison warnings shown at the top.
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        """The experiment's name, the page's heading."""
        return str(self.experiment["name"])


@dataclass
class ReportData:
    """Everything the report reads from the store, in one session."""

    cmp: Comparison
    reps: dict[int, int]
    smp: pd.DataFrame
    variables: pd.DataFrame
    metric: MetricView
    qps: dict[int, float]
    cell_mem: pd.DataFrame
    io_table: pd.DataFrame
    claims: list[str]
    #: Cost per transaction and what bound each run and row (analysis/tables/efficiency.py).
    efficiency: efficiency.Efficiency
    #: Response time per run, cell and type, and its verdicts (analysis/response/latency.py).
    latency: latency.Latency


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
        return ReportData(
            cmp=cmp, reps=reps,
            smp=samples(s, run_ids=list(reps.values())) if reps else pd.DataFrame(),
            variables=run_variables(s, list(reps.values())) if reps else pd.DataFrame(),
            metric=metric, qps={} if metric.per_minute else _cell_qps(s, rs),
            cell_mem=cell_memory(digest.memory, rs),
            io_table=io_breakdown.per_cell(s, cmp.frames, window=digest.window),
            claims=claims(s, rs, cmp.cells, digest.checkpoint_age_peaks),
            efficiency=efficiency.load(s, cmp.frames, digest),
            latency=latency.load(s, cmp.frames),
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
    reference: dict[str, Any] | None = None,
    on_figure: Callable[[ReportFigure], None] | None = None,
) -> ReportModel:
    """Everything one experiment's report says: data, sentences and figures, not yet drawn.

    Parameters are those of :func:`analysis.report.write_report`; ``on_figure`` is called
    with each figure as soon as it is final (the PNG export starts drawing while the rest is
    built). The sections are built in the order their figures are numbered.
    """
    d = read_report_data(db, experiment, force)
    cmp, metric = d.cmp, d.metric
    exp, cells, rs = cmp.experiment, cmp.cells, cmp.frames.run_summary
    figs = FigureList(on_figure)
    # The rows' own short names (the reference's `dw-on-50`), where the experiment has them.
    names = scorecard.row_names(reference or exp["spec"], cells)
    overview_figures = overview(d, figs, names)
    io_html = io_section(figs, d.io_table, metric,
                         {str(c["cell_label"]): names[int(c["cell_id"])]
                          for _, c in cells.iterrows() if int(c["cell_id"]) in names})
    # The reproduction scorecard, when the experiment (or --reference) has references.
    claims_spec = reference or exp["spec"]
    score_html = scorecard.section(claims_spec, rs, cells, figs.add,
                                   stability=stability_claims.stability_scorecard(
                                       claims_spec, rs, cells))
    memory_html = memory_section(cmp, figs, d.cell_mem, d.reps, d.smp, names)
    efficiency_html = efficiency_section(d.efficiency, cells, metric, names)
    write_path_html = write_path_section(d.efficiency, cells, metric, names)
    latency_html = latency_section(d, figs, names)
    draw_memory = memory_matters(d.cell_mem, varying_knobs(rs))[0] if len(d.cell_mem) else False
    cell_sections = [
        cell_section(cmp, figs, cell, d.reps.get(int(cell["cell_id"])), d.smp,
                     cmp.frames.intervals, memory_figures=draw_memory,
                     name=names.get(int(cell["cell_id"])), lat=d.latency)
        for _, cell in cells.iterrows()
    ]
    # The methodology names a cell by its row's own name where it has one.
    labels = {int(d.reps[c]): names.get(int(c), lbl) for c, lbl
              in zip(cells["cell_id"], cells["cell_label"], strict=True) if c in d.reps}
    toc = "".join(f"<li><a href='#cell-{int(c['cell_id'])}'>"
                  f"{named(c['cell_label'], names.get(int(c['cell_id'])))}</a></li>"
                  for _, c in cells.iterrows())
    sections = [
        f"<h2>Summary</h2>{summary(cmp, names)}{PNG_SUMMARY}",
        ranking(cmp, d.qps, names),
        score_html, CLAIMS, *overview_figures, latency_html, io_html, efficiency_html,
        write_path_html, memory_html, effects(cmp),
        f"<h2>Configurations</h2><ul>{toc}</ul>", *cell_sections,
        methodology(cmp, d.variables, labels),
    ]
    return ReportModel(
        experiment=exp, comparison=cmp, claims=d.claims, figures=figs.items,
        sections=sections,
        notes=[w for w in cmp.warnings if w.startswith("forced comparison")],
    )
