"""Flush cycles seen before: what ``plan`` warns about when a window is too short for them.

``plan`` looks up every cell's configuration (the same knob values) in the done runs of the
results database — every experiment, or ``plan --pilot EXPERIMENT``'s — and warns when the
window cannot hold :data:`MIN_WINDOW_CYCLES` cycles of the longest period those runs showed
(:func:`analysis.reading.window_cycles.run_cycles`). Why five: ``docs/statistics.md``, "Flush cycles
and the window".
"""

from __future__ import annotations

from typing import Any

from analysis.reading.query import done_runs_by_knobs
from analysis.reading.series import intervals
from analysis.reading.window_cycles import run_cycles

#: A window should hold at least this many cycles for its phase to average out (issue 51:
#: the mean over a window of k cycles and a fraction moves by at most ≈ 1/(2k) of the swing).
MIN_WINDOW_CYCLES = 5


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two cells' knob values are one configuration (JSON-equal, unset = None)."""
    keys = set(a) | set(b)
    return all(a.get(k) == b.get(k) for k in keys)


def earlier_periods(db: Any, configurations: list[dict[str, Any]],
                    experiment: str | None = None) -> dict[int, tuple[float, str]]:
    """The longest flush cycle seen in done runs of each configuration (index → (period s,
    where it was seen)), from the results database: every experiment, or ``experiment``
    (``plan --pilot``). Configurations never run, or whose runs do not cycle, are absent."""
    rows = done_runs_by_knobs(db, experiment)
    wanted: dict[int, list[tuple[str, int]]] = {}
    for i, knobs in enumerate(configurations):
        for name, stored, run_id in rows:
            if _same(knobs, stored):
                wanted.setdefault(i, []).append((name, run_id))
    ids = sorted({r for runs in wanted.values() for _, r in runs})
    if not ids:
        return {}
    found = run_cycles(intervals(db, run_ids=ids, detail=False))
    out: dict[int, tuple[float, str]] = {}
    for i, runs in wanted.items():
        seen = [(found[r].throughput.period_s, name, r) for name, r in runs
                if r in found and found[r].periodic]
        if seen:
            period, name, run_id = max(seen)
            out[i] = (period, f"run {run_id} of {name!r}, {len(seen)} of {len(runs)} runs cycle")
    return out


def cycles_warnings(window_s: float, configurations: list[tuple[str, dict[str, Any]]],
                    periods: dict[int, tuple[float, str]]) -> list[str]:
    """``plan``'s warnings: configurations whose earlier cycle a window of ``window_s`` cannot
    hold :data:`MIN_WINDOW_CYCLES` times (``configurations``: (label, knobs) per cell)."""
    out = []
    for i, (label, _) in enumerate(configurations):
        if i not in periods:
            continue
        period, where = periods[i]
        if window_s < MIN_WINDOW_CYCLES * period:
            out.append(
                f"{label}: its throughput cycled every {period:.0f} s before ({where}); the"
                f" {window_s:.0f} s window holds {window_s / period:.1f} cycles, fewer than"
                f" {MIN_WINDOW_CYCLES} — lengthen the run to a window of at least"
                f" {MIN_WINDOW_CYCLES * period:.0f} s (workload.duration, window:)")
    return out
