"""Response time per run and per cell, beside throughput: stalls, jitter, the window's p99 and
a verdict on it against each cell's baseline.

Which figures exist depends on the driver (docs/domain.md, "Response time"):

* the Go driver stores every interval's histograms: a run's window p99 (and each type's p95,
  p99, max) is read off the merge of its window intervals, and a cell's off the merge of its
  runs' windows (:mod:`analysis.response.latency_histograms`) — **exact** within the layout's
  precision (1/128);
* tpcc_start prints New-Order's p95, p99 and max per interval, and each other type's max;
  sysbench its one percentile (p95 by default) per interval; the Go driver before histograms
  each type's p95, p99 and max per interval. Percentiles do not merge, so a run's figure is
  then the **median over the window of the driver's per-interval figure** — the driver's own,
  marked as such wherever shown. A maximum is exact either way (the largest one printed).

Both count the waits no completion measured (:mod:`analysis.response.latency_tail`): a stall's
intervals stand for waits of at least its length, and the Go driver's transactions still in flight
at the window's end for waits of at least their age — so a run that stalls never gets a better
window percentile or maximum from its stall than it would have had without it.

Per run, over its window intervals: ``stall_s``, the seconds of intervals that completed no
transaction of the metric or whose percentile is above :data:`STALL_MULTIPLE` × the run's
median per-interval percentile; ``jitter_pct``, the CV of the per-interval percentile (SD /
mean, %). Lower is better for all of them, and for the verdict: ``compare`` judges the ratio of
the window percentile between a cell and its baseline with the one verdict rule
(:func:`analysis.statistics.verdicts.design_verdict`), its ``faster`` (ratio above 1) read as
*higher* latency, *worse*.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.comparisons.compare import BASELINE, design_blocks
from analysis.reading.baselines import baseline_of
from analysis.reading.metric import metric_view
from analysis.reading.query import DB
from analysis.reading.series import intervals
from analysis.response.latency_histograms import WindowHistograms, percentiles, window_histograms
from analysis.response.latency_tail import stall_bound_ms, stall_waits_ms
from analysis.statistics import blocked
from analysis.statistics.verdicts import FASTER, SLOWER, design_verdict
from analysis.steadiness.claims import id_ranges
from analysis.steadiness.disturbed import counted
from analysis.tables.frames import Frames
from core.experiment.spec import ExperimentSpec
from store.latency_codec import TXN_TYPES
from store.models import RunStatus

#: An interval whose percentile is above this multiple of its run's median is a stall.
STALL_MULTIPLE = 4.0
#: The Go driver: the one whose runs should carry histograms (run_metadata.driver).
HISTOGRAM_DRIVER = "tpcc"
#: Verdict labels: lower latency is better.
LOWER, HIGHER = "lower (better)", "higher (worse)"
#: The columns of :attr:`Latency.runs`.
RUN_COLUMNS = ("median_ms", "jitter_pct", "stall_s", "stall_intervals", "window_ms",
               "window_p50_ms", "window_p95_ms", "window_p999_ms", "window_max_ms",
               "value_ms", "histograms")


@dataclass(frozen=True)
class LatencyView:
    """What an experiment's latency figures are: which percentile, and whether exact.

    ``percentile`` is 99 where the runs have a p99, else 95 (sysbench's default), None when
    no run has a latency figure; ``exact`` when every counted run's window histograms were
    merged (the Go driver), else the figures are the driver's own per-interval ones.
    """

    percentile: int | None
    exact: bool

    @property
    def name(self) -> str:
        """``p99`` (or ``p95``)."""
        return f"p{self.percentile}"

    @property
    def column(self) -> str:
        """The per-interval column of :func:`analysis.reading.series.intervals`."""
        return f"p{self.percentile}_ms"

    @property
    def how(self) -> str:
        """How a run's window figure is made, in words (for every table that shows one)."""
        if self.exact:
            return (f"{self.name} of the window's merged histograms with the waits no"
                    " completion measured (a stall's, and those in flight at the window's"
                    " end; exact within 1/128)")
        return (f"median over the window of the driver's own per-interval {self.name}"
                " (percentiles do not merge: not the window's), at least what the window's"
                " stalls prove (each a wait of at least its length)")

    @property
    def cell_how(self) -> str:
        """How a cell's figure is made, in words."""
        if self.exact:
            return (f"{self.name} of its runs' windows merged, waits included (exact within"
                    " 1/128)")
        return ("median of its runs' figures (not a merged percentile)")


@dataclass(frozen=True)
class Latency:
    """An experiment's response-time figures: per run, per cell, per type and cell."""

    view: LatencyView
    #: Per done run (index: run id): :data:`RUN_COLUMNS`.
    runs: pd.DataFrame
    #: Per cell (index: cell id, row order): ``value_ms`` (the cell's figure), ``p50_ms``,
    #: ``p999_ms`` and ``max_ms`` (the window's median, p99.9 and maximum, waits included;
    #: the median only from histograms), ``exact``,
    #: ``runs_median_ms``, ``stall_s_median``, ``stall_s_max``, ``jitter_pct_median`` and the
    #: verdict columns ``ratio, ratio_ci_low, ratio_ci_high, p_value, verdict,
    #: verdict_reason, baseline_id``.
    cells: pd.DataFrame
    #: Per cell and transaction type: ``cell_id, type, p95_ms, p99_ms, p999_ms, max_ms,
    #: exact``.
    types: pd.DataFrame
    #: Go-driver done runs whose window has no (complete) histograms, with why.
    missing: dict[int, str] = field(default_factory=dict)

    @functools.cached_property
    def by_run(self) -> dict[int, dict[str, float]]:
        """:attr:`runs` as run id → figures (a table row per run reads them without pandas)."""
        return {int(r): row for r, row in self.runs.to_dict("index").items()}


def view_of(intervals_df: pd.DataFrame, complete: bool) -> LatencyView:
    """The percentile the window intervals have (99, else 95), exact when ``complete``."""
    win = intervals_df[intervals_df["in_window"]]
    for p in (99, 95):
        col = f"p{p}_ms"
        if col in win and win[col].notna().any():
            return LatencyView(p, complete)
    return LatencyView(None, False)


def _stalls(count: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """One run's window intervals in order (transactions, percentile): the percentile per
    interval (NaN without transactions), which intervals are stalls, and the run's median
    percentile."""
    value = np.where((count > 0) & (value > 0), value, np.nan)
    good = value[np.isfinite(value)]
    median = float(np.median(good)) if good.size else math.nan
    return value, (count == 0) | (value > STALL_MULTIPLE * median), median


def _per_run(intervals_df: pd.DataFrame, column: str, run_ids: list[int] | None = None
             ) -> tuple[np.ndarray, dict[str, np.ndarray], list[tuple[int, int]]]:
    """The window intervals (of ``run_ids``) in run and interval order, as arrays, and each
    run's ``[lo, hi)`` slice of them (plain numpy slices: a pandas groupby per run costs more
    than the figures)."""
    win = intervals_df[intervals_df["in_window"]]
    if run_ids is not None:
        win = win[win["run_id"].isin(run_ids)]
    win = win.sort_values(["run_id", "seq"], kind="stable")
    cols = {c: win[c].to_numpy(dtype=float) if c in win else np.full(len(win), np.nan)
            for c in ("primary_count", column, "max_ms", "interval_s", "t")}
    ids = win["run_id"].to_numpy()
    cuts = np.r_[0, np.flatnonzero(np.diff(ids)) + 1, len(ids)]
    return ids, cols, [(int(lo), int(hi)) for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)
                       if hi > lo]


def run_figures(intervals_df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per run (index: run id), from its window intervals' ``column`` (a percentile, ms):
    ``median_ms``, ``jitter_pct``, ``stall_s``, ``stall_intervals`` and ``window_max_ms`` (the
    largest maximum printed). An interval without transactions has no percentile (the Go
    driver prints 0) and is a stall."""
    ids, cols, bounds = _per_run(intervals_df, column)
    rows = {}
    for lo, hi in bounds:
        value, stall, median = _stalls(cols["primary_count"][lo:hi], cols[column][lo:hi])
        good = value[np.isfinite(value)]
        tops = cols["max_ms"][lo:hi]
        rows[int(ids[lo])] = {
            "median_ms": median,
            "jitter_pct": float(100 * good.std(ddof=1) / good.mean())
            if good.size > 1 and good.mean() > 0 else math.nan,
            "stall_s": float(cols["interval_s"][lo:hi][stall].sum()),
            "stall_intervals": int(stall.sum()),
            "window_max_ms": float(np.nanmax(tops)) if np.isfinite(tops).any() else math.nan,
        }
    out = pd.DataFrame.from_dict(rows, orient="index",
                                 columns=["median_ms", "jitter_pct", "stall_s",
                                          "stall_intervals", "window_max_ms"])
    out.index.name = "run_id"
    return out


def window_waits(intervals_df: pd.DataFrame, run_ids: list[int],
                 measured: Collection[int] = ()) -> dict[int, tuple[np.ndarray, float]]:
    """Per run: its window stalls' censored waits in ms
    (:func:`analysis.response.latency_tail.stall_waits_ms`) and its window's completions of the
    metric. A run in ``measured`` ran at a fixed rate: every transaction a stall held up was
    started late and timed from its scheduled start, so its stalls' waits are already among
    its completions (and in flight) — none is added twice."""
    ids, cols, bounds = _per_run(intervals_df, "primary_count", run_ids)
    out = {}
    for lo, hi in bounds:
        count = np.nan_to_num(cols["primary_count"][lo:hi])
        run_id = int(ids[lo])
        out[run_id] = (np.zeros(0) if run_id in measured
                       else stall_waits_ms(count, cols["interval_s"][lo:hi]),
                       float(count.sum()))
    return out


def fixed_rate_runs(runs_df: pd.DataFrame) -> set[int]:
    """The runs of ``runs_df`` (:func:`analysis.tables.frames.runs`) that ran at a fixed rate: their
    driver summary has a ``rate`` (docs/tpcc.md, "Fixed rate")."""
    if "driver_summary" not in runs_df.columns:
        return set()
    return {int(r) for r, d in zip(runs_df["run_id"], runs_df["driver_summary"], strict=True)
            if isinstance(d, dict) and d.get("rate")}


def stall_spans(intervals_df: pd.DataFrame, column: str, run_ids: list[int]
                ) -> dict[int, list[tuple[float, float]]]:
    """Per run, its stall intervals as (start, end) in seconds after warmup (the figures mark
    them)."""
    ids, cols, bounds = _per_run(intervals_df, column, run_ids)
    out = {}
    for lo, hi in bounds:
        _, stall, _ = _stalls(cols["primary_count"][lo:hi], cols[column][lo:hi])
        ends = cols["t"][lo:hi][stall]
        starts = ends - cols["interval_s"][lo:hi][stall]
        out[int(ids[lo])] = list(zip(starts.tolist(), ends.tolist(), strict=True))
    return out


def load(db: DB, fr: Frames) -> Latency:
    """The :class:`Latency` of ``fr``'s done runs (histograms from the analysis cache where
    merged before)."""
    rs = fr.run_summary
    done = rs[rs["status"] == RunStatus.DONE]
    ids = [int(r) for r in done["run_id"]]
    hist = window_histograms(db, fr.intervals, ids)
    go = set(fr.runs.loc[fr.runs["driver"] == HISTOGRAM_DRIVER, "run_id"].astype(int)) \
        if "driver" in fr.runs else set()
    missing = {r: _why_missing(hist[r]) for r in ids if r in go and not hist[r].complete}
    counted_ids = [int(r) for r in rs.loc[counted(rs), "run_id"]]
    view = view_of(fr.intervals, bool(counted_ids)
                   and all(hist[r].complete for r in counted_ids))
    measured = fixed_rate_runs(fr.runs)
    runs = _runs(fr.intervals, view, hist, ids, measured)
    cells = _cells(rs, fr, runs, view, hist, measured)
    return Latency(view=view, runs=runs, cells=cells,
                   types=_types(db, rs, fr, view, hist), missing=missing)


def one_run(db: DB, intervals_df: pd.DataFrame, run_id: int, *, fixed_rate: bool = False
            ) -> tuple[LatencyView, pd.Series, str | None]:
    """One run's figures (a row of :attr:`Latency.runs`), what they are (exact when its
    window's histograms are complete) and why a histogram of its window could not be read
    (None when none failed). ``intervals_df``: the run's intervals; ``fixed_rate``: it ran at
    one (its stalls' waits are measured, :func:`window_waits`)."""
    hist = window_histograms(db, intervals_df, [run_id])
    view = view_of(intervals_df, hist[run_id].complete)
    return view, _runs(intervals_df, view, hist, [run_id],
                       {run_id} if fixed_rate else set()).iloc[0], hist[run_id].problem


def missing_text(missing: dict[int, str]) -> str:
    """``27 runs (1–3, 5–27): why; run 4: why`` — runs grouped by the reason they lack
    histograms; empty when none does."""
    by_reason: dict[str, list[int]] = {}
    for run_id, why in sorted(missing.items()):
        by_reason.setdefault(why, []).append(run_id)
    return "; ".join(
        (f"{len(ids)} runs ({id_ranges(ids)})" if len(ids) > 1 else f"run {ids[0]}")
        + f": {why}" for why, ids in by_reason.items())


def _why_missing(h: WindowHistograms) -> str:
    if h.problem:
        return h.problem
    if h.with_histogram == 0:
        return "the driver stored no latency histogram (a tpcc binary older than them)"
    return f"{h.with_histogram} of its {h.window_intervals} window intervals have one"


def _runs(intervals_df: pd.DataFrame, view: LatencyView, hist: dict[int, WindowHistograms],
          ids: list[int], measured: Collection[int] = ()) -> pd.DataFrame:
    """Per done run: the interval figures and, where complete, the window's merged ones."""
    figures = run_figures(intervals_df, view.column) if view.percentile else pd.DataFrame(
        columns=["median_ms", "jitter_pct", "stall_s", "stall_intervals", "window_max_ms"])
    out = figures.reindex(ids)
    out.index.name = "run_id"
    waits = window_waits(intervals_df, ids, measured)
    none: tuple[np.ndarray, float] = (np.zeros(0), 0.0)
    merged = {r: percentiles([hist[r]], waits_ms=[waits.get(r, none)[0]])
              if hist[r].complete else {} for r in ids}
    key = "p99_ms" if view.percentile == 99 else "p95_ms"
    out["window_ms"] = [merged[r].get(key) for r in ids]
    out["window_p50_ms"] = [merged[r].get("p50_ms") for r in ids]
    out["window_p95_ms"] = [merged[r].get("p95_ms") for r in ids]
    # Without histograms: the waits' own bound (0: they do not reach that far).
    bound = {r: {p: stall_bound_ms(*waits.get(r, none), p) for p in (95, 99, 99.9)}
             for r in ids}
    out["window_p999_ms"] = [merged[r].get("p999_ms") if merged[r]
                             else bound[r][99.9] or None for r in ids]
    printed = out["window_max_ms"].to_numpy(dtype=float)
    longest = [float(waits.get(r, none)[0].max(initial=0.0)) for r in ids]
    out["window_max_ms"] = [merged[r].get("max_ms") or _nanmax(top, wait) for r, top, wait
                            in zip(ids, printed, longest, strict=True)]
    per_interval = [_nanmax(m, bound[r][view.percentile or 99])
                    for r, m in zip(ids, out["median_ms"].to_numpy(dtype=float), strict=True)]
    out["value_ms"] = out["window_ms"] if view.exact else per_interval
    out["histograms"] = ["complete" if hist[r].complete else "partial"
                         if hist[r].with_histogram else "none" for r in ids]
    for c in RUN_COLUMNS:
        if c != "histograms":
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    return out[list(RUN_COLUMNS)]


def _cells(rs: pd.DataFrame, fr: Frames, runs: pd.DataFrame, view: LatencyView,
           hist: dict[int, WindowHistograms], measured: Collection[int] = ()) -> pd.DataFrame:
    """Per cell: its figures (merged over its counted runs when exact, waits included), the
    runs' spread of stalls and jitter, and the verdict against its baseline."""
    done = rs[counted(rs)]
    rows = {}
    waits = window_waits(fr.intervals, [int(r) for r in done["run_id"]], measured) \
        if view.exact else {}
    none: tuple[np.ndarray, float] = (np.zeros(0), 0.0)
    for cell_id in fr.cell_summary.sort_values("position")["cell_id"].astype(int):
        mine = [int(r) for r in done.loc[done["cell_id"] == cell_id, "run_id"]]
        r = runs.reindex(mine)
        merged = percentiles([hist[x] for x in mine],
                             waits_ms=[waits.get(x, none)[0] for x in mine]) \
            if view.exact and mine else {}
        key = "p99_ms" if view.percentile == 99 else "p95_ms"
        rows[cell_id] = {
            "value_ms": merged.get(key) if view.exact else _median(r["value_ms"]),
            # The median wait needs the histograms: the driver prints no p50 per interval.
            "p50_ms": merged.get("p50_ms") if view.exact else math.nan,
            "p999_ms": merged.get("p999_ms") if view.exact else _median(r["window_p999_ms"]),
            "max_ms": merged.get("max_ms") if view.exact else
            float(r["window_max_ms"].max()) if r["window_max_ms"].notna().any() else math.nan,
            "exact": bool(view.exact and merged.get(key) is not None),
            "runs_median_ms": _median(r["value_ms"]),
            "stall_s_median": _median(r["stall_s"]),
            "stall_s_max": float(r["stall_s"].max()) if r["stall_s"].notna().any()
            else math.nan,
            "jitter_pct_median": _median(r["jitter_pct"]),
        }
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "cell_id"
    verdicts = latency_verdicts(runs, rs, fr.cell_summary, fr.experiment["stored"].spec)
    return out.join(verdicts)


def _nanmax(a: float, b: float) -> float:
    """The larger of two figures, either possibly NaN (or 0: none); NaN when neither is one."""
    got = [x for x in (a, b) if x is not None and math.isfinite(x) and x > 0]
    return max(got) if got else math.nan


def _median(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return float(v.median()) if len(v) else math.nan


def latency_verdicts(runs: pd.DataFrame, rs: pd.DataFrame, cells_df: pd.DataFrame,
                     spec: ExperimentSpec) -> pd.DataFrame:
    """Per cell (index: cell id): the ratio of its runs' window figure (``runs.value_ms``) to
    its baseline's, with the verdict rule of throughput (blocks as the design has them);
    ``verdict`` is :data:`LOWER`/:data:`HIGHER` where the rule finds a difference."""
    done = rs[counted(rs)]
    values = done["run_id"].map(runs["value_ms"]).to_numpy(dtype=float)
    cell_ids = done["cell_id"].astype(int).to_list()
    blocks, unit = design_blocks(rs, spec)
    block_list = None if blocks is None else blocks.reindex(done.index).to_list()
    model = None
    ok = np.isfinite(values) & (values > 0)
    if block_list is not None and ok.any():
        model = blocked.fit(np.log(values[ok]), [c for c, k in zip(cell_ids, ok, strict=True)
                                                 if k],
                            [b for b, k in zip(block_list, ok, strict=True) if k])
    own = baseline_of(cells_df)
    rows = {}
    for cell_id in cells_df["cell_id"].astype(int):
        base = own[cell_id]
        if cell_id == base:
            rows[cell_id] = dict(ratio=1.0, ratio_ci_low=math.nan, ratio_ci_high=math.nan,
                                 p_value=math.nan, verdict=BASELINE,
                                 verdict_reason="the reference cell", baseline_id=base)
            continue
        v = design_verdict(values, cell_ids, block_list, base, cell_id, model=model,
                           block_unit=unit)
        rows[cell_id] = dict(ratio=v.ratio, ratio_ci_low=v.ci_low, ratio_ci_high=v.ci_high,
                             p_value=v.p_value,
                             verdict={FASTER: HIGHER, SLOWER: LOWER}.get(v.verdict, v.verdict),
                             verdict_reason=v.reason, baseline_id=base)
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "cell_id"
    return out


def _types(db: DB, rs: pd.DataFrame, fr: Frames, view: LatencyView,
           hist: dict[int, WindowHistograms]) -> pd.DataFrame:
    """Per cell and type: p95, p99, p99.9 and max over the cell's counted runs — merged when
    every one has complete histograms (with the transactions in flight at each window's end),
    else the driver's per-interval figures (median of the
    percentiles, largest maximum) where it prints them per type."""
    done = rs[counted(rs)]
    columns = ["cell_id", "type", "p95_ms", "p99_ms", "p999_ms", "max_ms", "exact"]
    rows: list[list[Any]] = []
    if not metric_view(fr.experiment).per_minute:  # sysbench: one kind of transaction
        return pd.DataFrame(rows, columns=columns)
    without = [int(r) for r in done["run_id"] if not hist[int(r)].complete]
    detail = intervals(db, run_ids=without, detail=True, window_only=True) if without \
        else pd.DataFrame()
    for cell_id in fr.cell_summary.sort_values("position")["cell_id"].astype(int):
        mine = [int(r) for r in done.loc[done["cell_id"] == cell_id, "run_id"]]
        if mine and all(hist[r].complete for r in mine):
            for name in TXN_TYPES:
                got = percentiles([hist[r] for r in mine], name)
                rows.append([cell_id, name, *(got[c] for c in columns[2:6]), True])
            continue
        win = detail[detail["run_id"].isin(mine)] if len(detail) else detail
        for name in TXN_TYPES if len(win) else ():
            prefix = "" if name == "new_order" else f"{name}_"
            got = [_median(win[f"{prefix}p{q}_ms"]) if f"{prefix}p{q}_ms" in win
                   else math.nan for q in (95, 99)]
            top = win[f"{prefix}max_ms"].max() if f"{prefix}max_ms" in win else math.nan
            if any(pd.notna(x) for x in (*got, top)):
                rows.append([cell_id, name, *got, math.nan, float(top), False])
    return pd.DataFrame(rows, columns=columns)
