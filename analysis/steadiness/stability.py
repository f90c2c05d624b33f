"""How flat is a throughput line? Figures of one run's per-interval series over its window.

The 2011 study judged configurations by *shape*: a flat line, an oscillation, or holes. These
figures make each of those a number (methods and their simulated error rates:
``docs/statistics.md``):

- **stability score** = ``100 × p5 / median`` — 100 is a flat line; 50 means one interval in
  twenty runs at half the typical rate or worse. Planning works from the low intervals, not the
  average, so the score is built on the 5th percentile (nearest rank, as tpcc-mysql's
  percentiles: always an interval that happened).
- **CV** (% of the mean), **holes** (share of intervals below 0.5 × median), **longest low
  stretch** (seconds in a row below 0.8 × median), **step** and **trend** (significant
  changes, not periods) — :mod:`analysis.statistics.shape`;
- **oscillation**: a periodogram peak that stands out of the series' own red noise (false-alarm
  probability ≤ 1 %, at least two cycles in the window) — :mod:`analysis.statistics.oscillation`.

A run gets a warning when its CV is ≥ 10 % (pyperf's noise threshold), when it oscillates,
and for each shape finding (holes, a step, a drift).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from analysis.statistics.oscillation import detect_oscillation
from analysis.statistics.percentiles import nearest_rank
from analysis.statistics.shape import describe_shape

#: pyperf warns when the standard deviation is ≥ 10 % of the mean; so do we.
CV_WARN_PCT = 10.0


@dataclass(frozen=True)
class Stability:
    """Stability figures of one series (see the module docstring for definitions)."""

    n: int
    median: float
    mean: float
    cv_pct: float
    p5: float
    p5_ratio: float
    score: float
    holes_share: float
    longest_low_s: float
    period_s: float
    period_share: float
    trend_pct_per_min: float
    oscillates: bool
    #: False-alarm probability of the strongest period (NaN: too few intervals to tell).
    period_fap: float = math.nan
    #: One sentence: why the series does or does not oscillate.
    oscillation: str = ""
    step_pct: float = math.nan
    step_at_s: float = math.nan
    trend_p: float = math.nan
    #: Intervals without a single transaction (a stall to zero).
    zero_intervals: int = 0
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, object]:
        """The figures as a flat dict (warnings joined with '; ')."""
        out = asdict(self)
        out["warnings"] = "; ".join(self.warnings)
        return out


def stability(
    values: Sequence[float] | np.ndarray,
    interval_s: float = 10.0,
    times_s: Sequence[float] | np.ndarray | None = None,
) -> Stability:
    """Stability figures of one run's per-interval throughput over its measurement window.

    Parameters
    ----------
    values:
        Throughput per interval (New-Orders per interval or NOTPM: every figure is scale-free
        except ``median``/``mean``/``p5``). NaN entries are dropped.
    interval_s:
        Report interval in seconds (for stretch lengths and the period).
    times_s:
        Interval times in seconds (for the trend); default ``0, interval_s, 2*interval_s…``.

    Returns
    -------
    Stability
        With ``warnings`` naming CV ≥ 10 % and oscillation.
    """
    arr = np.asarray(values, dtype=float)
    if times_s is None:
        t = np.arange(arr.size, dtype=float) * interval_s
    else:
        t = np.asarray(times_s, dtype=float)
    keep = np.isfinite(arr)
    arr, t = arr[keep], t[keep]
    if arr.size == 0:
        nan = math.nan
        return Stability(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, 0.0, nan, False,
                         oscillation="no intervals", warnings=("no intervals in the window",))
    median = float(np.median(arr))
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    cv_pct = 100.0 * std / mean if mean > 0 else math.nan
    p5 = nearest_rank(arr, 5)
    warnings: list[str] = []
    shape = describe_shape(arr, t, interval_s=interval_s)
    if median > 0:
        p5_ratio = p5 / median
    else:
        p5_ratio = math.nan
        warnings.append("no throughput in the window (median is 0)")
    osc = detect_oscillation(arr, t, interval_s=interval_s)
    if np.isfinite(cv_pct) and cv_pct >= CV_WARN_PCT:
        warnings.append(f"noisy: CV {cv_pct:.1f}% ≥ {CV_WARN_PCT:g}%")
    if osc.oscillates:
        warnings.append(
            f"oscillates: period {osc.period_s:.0f} s holds {100 * osc.share:.0f}% of the"
            f" variance (false-alarm p = {osc.fap:.3f})"
        )
    if median > 0:
        warnings.extend(shape.findings)
    return Stability(
        n=int(arr.size),
        median=median,
        mean=mean,
        cv_pct=cv_pct,
        p5=p5,
        p5_ratio=p5_ratio,
        score=100.0 * p5_ratio if np.isfinite(p5_ratio) else math.nan,
        holes_share=shape.holes_share,
        longest_low_s=shape.longest_low_s,
        period_s=osc.period_s,
        period_share=osc.share if np.isfinite(osc.share) else 0.0,
        trend_pct_per_min=shape.trend_pct_per_min,
        oscillates=osc.oscillates,
        period_fap=osc.fap,
        oscillation=osc.reason,
        step_pct=shape.step_pct,
        step_at_s=shape.step_at_s,
        trend_p=shape.trend_p,
        zero_intervals=int((arr == 0).sum()),
        warnings=tuple(warnings),
    )
