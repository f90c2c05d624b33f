"""One import for notebooks and the report: the store as DataFrames.

:func:`load` reads everything a comparison or a report needs with bulk queries. The work is
split by concern: :mod:`analysis.reading.query` (reading the store), :mod:`analysis.reading.series`
(derived time series: NOTPM per interval, rates, dirty %, checkpoint age) and
:mod:`analysis.tables.summaries` (per run and per cell); their public functions are re-exported
here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.reading.blas import one_blas_thread
from analysis.reading.query import (
    CHECKED_METADATA,
    DB,
    DEFAULT_COUNTERS,
    KEY_VARIABLES,
    METADATA_COLUMNS,
    ExperimentRef,
    Window,
    experiment_info,
    experiments,
    extract_counters,
    resolve_experiment,
    run_variables,
    runs,
    runs_in_words,
    session_scope,
    status_counters,
    varying_knobs,
    window_of,
)
from analysis.reading.series import MB, RATE_COUNTERS, intervals, limits_from_variables, samples
from analysis.tables.summaries import cell_summary, representative_runs
from analysis.tables.summaries import run_summary as _run_summary
from core.errors import AnalysisError
from store.models import RunStatus

__all__ = [
    "CHECKED_METADATA",
    "DB",
    "DEFAULT_COUNTERS",
    "KEY_VARIABLES",
    "MB",
    "METADATA_COLUMNS",
    "RATE_COUNTERS",
    "ExperimentRef",
    "Frames",
    "Window",
    "cell_summary",
    "experiment_info",
    "experiments",
    "extract_counters",
    "intervals",
    "limits_from_variables",
    "load",
    "representative_runs",
    "require_finished",
    "resolve_experiment",
    "run_summary",
    "run_variables",
    "runs",
    "runs_in_words",
    "samples",
    "session_scope",
    "status_counters",
    "varying_knobs",
    "window_of",
]


@functools.wraps(_run_summary)
def run_summary(*args: Any, **kwargs: Any) -> pd.DataFrame:
    # The stability tests' small matrix products, on one BLAS thread (analysis.reading.blas).
    with one_blas_thread():
        return _run_summary(*args, **kwargs)


@dataclass
class Frames:
    """Everything the comparison and the report need, loaded once."""

    experiment: dict[str, Any]
    runs: pd.DataFrame
    intervals: pd.DataFrame
    run_summary: pd.DataFrame
    cell_summary: pd.DataFrame


def require_finished(fr: Frames) -> pd.DataFrame:
    """The done runs with data in the measurement window; AnalysisError when there is none.

    What every table and figure needs: a notebook calls it before its first plot so that an
    experiment still queued, all failed, or without cells stops with this sentence.
    """
    rs = fr.run_summary
    done = rs[(rs["status"] == RunStatus.DONE) & rs["notpm"].notna()]
    if done.empty:
        raise AnalysisError(
            f"experiment {fr.experiment['name']!r} has no finished run with intervals in "
            f"its measurement window ({runs_in_words(fr.runs)})",
            where="runs",
            fix="run it (`flushbench run`) or check `flushbench status` for failures",
        )
    return done


def load(db: DB, experiment: ExperimentRef = None, *, detail: bool = False,
         cycles: str | None = None) -> Frames:
    """Load runs, intervals, run and cell summaries of one experiment with bulk queries.

    ``cycles`` (``whole`` or ``as-set``; default: the experiment's ``window.cycles``):
    ``whole`` cuts each periodic run's window to its whole flush cycles before anything is
    computed from the intervals (:func:`analysis.reading.series.intervals`) — how a study stored
    before the key existed is re-judged at read time. Figures from the samples (bound, cost,
    levels) keep the stored window.

    ``detail=True`` also expands the per-type interval detail (Payment counts, sysbench qps…),
    which costs more than everything else together on large experiments. BLAS runs on one
    thread meanwhile (:mod:`analysis.reading.blas`: the stability tests' small products).
    """
    with one_blas_thread(), session_scope(db) as s:
        info = experiment_info(s, experiment)
        rdf = runs(s, info["id"])
        idf = intervals(s, run_ids=list(rdf.loc[rdf["status"] == RunStatus.DONE, "run_id"]),
                        detail=detail, cycles=cycles)
        rs = run_summary(s, runs_df=rdf, intervals_df=idf)
        cs = cell_summary(s, run_summary_df=rs)
    return Frames(experiment=info, runs=rdf, intervals=idf, run_summary=rs, cell_summary=cs)
