"""After a run measured: its steady-state start, its disturbances, and the disturbed policy.

:func:`record_checks` runs once the driver and the sampler have stopped, on what the run
recorded in memory: with ``window: {start: steady}`` it chooses the run's window start
(:mod:`runner.run.steady`) and stores it (``runs.window_start_s``); then it judges the samples of
the window for disturbances (:mod:`runner.run.disturbance`) and stores each as a named warning with
its figures. :func:`apply_policy` runs once the run is ``done``: with ``disturbed: {action:
rerun}`` a disturbed run gets a replacement attempt at the end of the queue, while the
disturbed one stays stored, with its evidence (the analysis leaves it out of verdicts).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from core.experiment.spec import ExperimentSpec
from runner.run.disturbance import Finding, assess
from runner.run.steady import choose_start
from store.db import ResultsDB
from store.ledger.recorder import RunRecorder
from store.ledger.runs import disturbance_warnings, queue_disturbed_rerun


def record_checks(exp: ExperimentSpec, rec: RunRecorder, intervals: Sequence[Any],
                  samples: Sequence[Any], measure_start: dt.datetime | None,
                  limits: Mapping[str, float | None] | None, *, offset_s: float = 0.0
                  ) -> list[Finding]:
    """Record the run's window start (steady windows) and its disturbances; return them.

    ``offset_s``: the run's start offset, which lengthened its warm-up."""
    window = exp.resolved_window()
    start_s, end_s = window["start"], window["end"]
    if exp.window.steady and measure_start is not None:
        chosen = choose_start(intervals, samples, measure_start=measure_start,
                              warmup=exp.workload.warmup + offset_s, cap_s=start_s,
                              end_s=end_s)
        start_s = chosen.start_s
        rec.set_run_fields(window_start_s=start_s)
        rec.event("info" if chosen.reached else "warning",
                  "steady-state" if chosen.reached else "no-steady-state", chosen.message())
    begin = end = None
    if measure_start is not None:
        begin = measure_start + dt.timedelta(seconds=start_s)
        end = measure_start + dt.timedelta(seconds=end_s)
    found = assess(samples, start=begin, end=end, limits=limits)
    for finding in found:
        rec.event("warning", finding.kind, finding.message, finding.evidence())
    return found


def disturbances(db: ResultsDB, run_id: int) -> list[str]:
    """The disturbance warnings stored for a run (kinds of
    :data:`store.models.DISTURBANCE_KINDS`)."""
    return disturbance_warnings(db, run_id)


def apply_policy(db: ResultsDB, exp: ExperimentSpec, run_id: int) -> int | None:
    """With ``disturbed: {action: rerun}``, queue a replacement of a disturbed done run.

    The replacement is a new attempt of the same cell and repetition, placed after every run
    of the experiment (a disturbance that lasts a while should be over by then). At most
    ``max_reruns`` replacements per repetition: the attempts already disturbed count. Returns
    the new run's id, or None.
    """
    if exp.disturbed.action != "rerun":
        return None
    kinds = disturbances(db, run_id)
    if not kinds:
        return None
    return queue_disturbed_rerun(db, run_id, kinds, exp.disturbed.max_reruns)
