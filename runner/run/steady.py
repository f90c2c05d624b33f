"""``window: {start: steady}``: where one run's measurement window starts, chosen at its end.

Three series judge it, each on its own clock: the driver's throughput per interval, and from
the sampler the checkpoint age (LSN − checkpoint LSN) and the dirty share of the buffer pool.
MSER-5 (:mod:`core.steady_state`) cuts each one's warm-up transient; the run's window
starts at the latest cut, converted to seconds after warmup, and never later than the
experiment's ``max_start``. A series that never settles (MSER-5's minimum at its half-way
bound), or a run too short to judge, starts at ``max_start`` and is said so in a warning.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.steady_state import mser5


@dataclass(frozen=True)
class SteadyStart:
    """The start chosen for one run, and why.

    Attributes
    ----------
    start_s:
        Seconds after warmup where the run's window starts.
    reached:
        False when some series never settled (or none could be judged): ``start_s`` is then
        the cap.
    series:
        Per series: ``start_s`` (its own cut, seconds after warmup), ``reached``, ``batches``.
    """

    start_s: float
    reached: bool
    cap_s: float
    series: dict[str, dict[str, Any]] = field(default_factory=dict)

    def message(self) -> str:
        """One line for the run's events.

        No ``;`` in it: the analysis joins a run's warnings with ``"; "`` and splits them there
        (:func:`analysis.steadiness.claims.split_warnings`).
        """
        parts = ", ".join(
            f"{name} settles at {s['start_s']:.0f} s ({s['batches']} batches)" if s["reached"]
            else f"{name} never settles (cut at {s['start_s']:.0f} s, {s['batches']} batches)"
            for name, s in self.series.items())
        if self.reached:
            return (f"steady state from {self.start_s:.0f} s after warmup, cap"
                    f" {self.cap_s:.0f} s (MSER-5: {parts})")
        return (f"no steady state before the cap: the window starts at {self.start_s:.0f} s "
                f"after warmup, the latest allowed (MSER-5: {parts or 'too few observations'})")


def _throughput(intervals: Sequence[Any], warmup: float, end_s: float
                ) -> tuple[list[float], list[float]]:
    """(start of each measure interval in seconds after warmup, its count per second)."""
    times, values = [], []
    for r in intervals:
        if r.phase != "measure" or not r.interval_s:
            continue
        start = float(r.elapsed_s) - float(r.interval_s) - warmup
        if start + float(r.interval_s) > end_s + 1e-6:
            break
        times.append(start)
        values.append(float(r.primary_count) / float(r.interval_s))
    return times, values


def _sampled(samples: Sequence[Any], measure_start: dt.datetime, end_s: float
             ) -> dict[str, tuple[list[float], list[float]]]:
    """Checkpoint age (bytes) and dirty share per read sample inside ``[0, end_s]``."""
    age: tuple[list[float], list[float]] = ([], [])
    dirty: tuple[list[float], list[float]] = ([], [])
    for s in samples:
        if s.missed or s.ts is None:
            continue
        t = (s.ts - measure_start).total_seconds()
        if t < 0 or t > end_s:
            continue
        if s.lsn is not None and s.checkpoint_lsn is not None:
            age[0].append(t)
            age[1].append(float(s.lsn - s.checkpoint_lsn))
        pool = (s.pages_data or 0) + (s.pages_free or 0)
        if s.pages_dirty is not None and pool > 0:
            dirty[0].append(t)
            dirty[1].append(s.pages_dirty / pool)
    return {"checkpoint age": age, "dirty pages": dirty}


def choose_start(intervals: Sequence[Any], samples: Sequence[Any], *,
                 measure_start: dt.datetime, warmup: float, cap_s: float, end_s: float
                 ) -> SteadyStart:
    """The steady-state start of one run (see the module docstring).

    ``intervals`` are the driver's ``IntervalRecord`` objects, ``samples`` the sampler's
    ``SampleRecord`` objects; ``measure_start`` is when warmup ended (UTC).
    """
    series = {"throughput": _throughput(intervals, warmup, end_s),
              **_sampled(samples, measure_start, end_s)}
    found: dict[str, dict[str, Any]] = {}
    starts: list[float] = []
    for name, (times, values) in series.items():
        cut = mser5(values)
        if cut.batches == 0:
            continue  # no such series in this run (sampling off, a server without LSNs)
        t = times[cut.start] if cut.reached and cut.start < len(times) else cap_s
        found[name] = {"start_s": min(t, cap_s), "reached": cut.reached,
                       "batches": cut.batches}
        starts.append(t if cut.reached else cap_s)
    reached = bool(found) and all(s["reached"] for s in found.values())
    start = min(max(starts), cap_s) if starts and reached else cap_s
    return SteadyStart(start_s=max(start, 0.0), reached=reached, cap_s=cap_s, series=found)
