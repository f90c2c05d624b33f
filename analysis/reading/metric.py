"""The experiment's primary metric as tables, figures and exports name it.

The queue stores each experiment's metric (``experiments.metric``: ``name`` NOTPM or TPS,
``unit``, ``counts``, ``per_minute``), from the workload adapter. The analysis computes its
window averages per minute (the ``notpm*`` columns of the summaries: Σ count × 60 / Σ seconds),
so a per-second metric such as sysbench's TPS is those columns ÷ 60. :class:`MetricView` does
that conversion once, and names the figure; sysbench's queries per second (QPS), which its
interval lines print next to TPS, is read from the interval detail by :func:`window_detail_rate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: The metric of experiments queued without one (the TPC-C study's).
DEFAULT_METRIC = {"name": "NOTPM", "unit": "New-Order transactions per minute",
                  "counts": "New-Order transactions", "per_minute": True}


@dataclass(frozen=True)
class MetricView:
    """How to show one experiment's primary metric.

    Attributes
    ----------
    name:
        Short name for headers (``NOTPM``, ``TPS``).
    unit:
        What it measures, for axis titles (``transactions per second``).
    counts:
        What one interval count counts (``New-Order transactions``, ``transactions``).
    per_minute:
        Whether the metric is a per-minute rate.
    """

    name: str
    unit: str
    counts: str
    per_minute: bool

    @property
    def scale(self) -> float:
        """Factor from the summaries' per-minute columns (``notpm*``) to this metric."""
        return 1.0 if self.per_minute else 1.0 / 60.0

    @property
    def per(self) -> str:
        """``min`` or ``s``: the metric's time unit."""
        return "min" if self.per_minute else "s"

    @property
    def column(self) -> str:
        """The per-interval column of :func:`analysis.reading.series.intervals` in this metric's
        unit."""
        return "notpm" if self.per_minute else "per_s"

    def of(self, value: Any) -> float:
        """A per-minute figure (``notpm_mean``, a CI bound…) in this metric; NaN stays NaN."""
        try:
            return float(value) * self.scale
        except (TypeError, ValueError):
            return math.nan

    def scaled(self, df: pd.DataFrame, prefix: str = "notpm") -> pd.DataFrame:
        """A copy of ``df`` whose ``notpm*`` columns are in this metric (for plots)."""
        out = df.copy()
        for col in out.columns:
            if str(col).startswith(prefix) and not str(col).endswith("_cv_pct"):
                out[col] = pd.to_numeric(out[col], errors="coerce") * self.scale
        return out


def metric_view(stored: Mapping[str, Any] | None) -> MetricView:
    """The :class:`MetricView` of an experiment's stored metric (``experiment_info()["metric"]``).

    Parameters
    ----------
    stored:
        The ``metric`` dict, or an ``experiment_info`` dict holding one; None gives NOTPM.
    """
    if stored is not None and "metric" in stored and isinstance(stored["metric"], Mapping):
        stored = stored["metric"]
    m = {**DEFAULT_METRIC, **dict(stored or {})}
    return MetricView(str(m["name"]), str(m["unit"]), str(m["counts"]), bool(m["per_minute"]))


def window_detail_rate(intervals_df: pd.DataFrame, column: str = "qps") -> pd.Series:
    """Per run, the window average of a per-second detail rate (sysbench's ``qps``).

    The average is weighted by interval length (Σ rate × seconds / Σ seconds), like the primary
    metric. Runs without that column or without window intervals get no entry.

    Parameters
    ----------
    intervals_df:
        From :func:`analysis.reading.series.intervals` with ``detail=True`` (``in_window`` flags).
    column:
        The expanded detail column.
    """
    if column not in intervals_df.columns or intervals_df.empty:
        return pd.Series(dtype=float, name=column)
    win = intervals_df[intervals_df["in_window"] & intervals_df[column].notna()]
    if win.empty:
        return pd.Series(dtype=float, name=column)
    weighted = win[column].to_numpy(dtype=float) * win["interval_s"].to_numpy(dtype=float)
    frame = pd.DataFrame({"run_id": win["run_id"].to_numpy(), "w": weighted,
                          "s": win["interval_s"].to_numpy(dtype=float)})
    sums = frame.groupby("run_id")[["w", "s"]].sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        out = sums["w"] / sums["s"]
    out.name = column
    return out
