"""How close a storage throttle group's own counters ran to each limit, interval by interval.

Shared by the runner's ``below-limit`` warning (:mod:`runner.run.disturbance`) and the analysis's
attribution of what bound a run (:mod:`analysis.writes.bound`): both judge the same figures of the
same samples, so the rule lives once, below both. Pure: samples in, figures out.

A sample is a ``SampleRecord`` or a mapping with the same names (``ts``, ``missed``, the
``group_*`` counters); a figure missing on either side of a pair of ticks leaves that pair out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

#: A throttled group "at its limit" in an interval: within 10 % of it (the throttle's accuracy).
AT_LIMIT = 0.90
#: Fewest sample pairs a figure is judged on (one pair is one interval of the sampler).
MIN_PAIRS = 2
#: Storage limit → (the group's counter of it, unit in messages).
LIMIT_FIELDS = {
    "write_iops": ("group_write_ios", "IOPS"),
    "read_iops": ("group_read_ios", "IOPS"),
    "write_bandwidth": ("group_write_bytes", "B/s"),
    "read_bandwidth": ("group_read_bytes", "B/s"),
}


def value(sample: Any, name: str) -> Any:
    """One figure of a sample (a record or a mapping); None when it has none."""
    return sample.get(name) if isinstance(sample, Mapping) else getattr(sample, name, None)


def sample_time(sample: Any) -> dt.datetime | None:
    """The sample's time stamp, UTC (a naive one is UTC)."""
    ts = value(sample, "ts")
    if ts is not None and ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.UTC)
    return ts


def pairs(samples: Sequence[Any], *names: str) -> list[tuple[Any, Any]]:
    """Consecutive sample pairs where every named figure is known on both sides."""
    ok = [s for s in samples if all(value(s, n) is not None for n in names)]
    return list(zip(ok, ok[1:], strict=False))


def delta(a: Any, b: Any, name: str) -> float:
    """How much a figure grew from sample ``a`` to sample ``b``."""
    return float(value(b, name)) - float(value(a, name))


def limit_figures(samples: Sequence[Any], limits: Mapping[str, float | None]
                  ) -> dict[str, dict[str, float]]:
    """Per storage limit set: the group's mean rate over the samples, as a share of the limit,
    and in how many sampler intervals it was at the limit (within :data:`AT_LIMIT`)."""
    out: dict[str, dict[str, float]] = {}
    for name, (counter, _unit) in LIMIT_FIELDS.items():
        limit = limits.get(name)
        if not limit:
            continue
        spans = [((sample_time(b) - sample_time(a)).total_seconds(), delta(a, b, counter))
                 for a, b in pairs(samples, counter)]
        spans = [(s, d) for s, d in spans if s > 0 and d >= 0]
        if len(spans) < MIN_PAIRS:
            continue
        seconds = sum(s for s, _ in spans)
        mean = sum(d for _, d in spans) / seconds
        at_limit = sum(1 for s, d in spans if d / s >= AT_LIMIT * limit)
        out[name] = {"limit": float(limit), "mean": mean, "share": mean / limit,
                     "intervals_at_limit": at_limit, "intervals": len(spans)}
    return out
