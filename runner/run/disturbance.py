"""Was the run disturbed by the rest of the machine? Figures from its samples, judged.

The sampler stores, every tick, the whole host's CPU (``/proc/stat``: busy, idle, steal),
mysqld's, the driver's and flushbench's own CPU, the datadir device's I/O
(``/proc/diskstats``), the storage bytes of mysqld, the driver and flushbench
(``/proc/PID/io``) and, on a throttled run, the throttle group's own counters. Over the
measurement window this module turns them into figures and each figure past its threshold
into a named run warning (a ``run_events`` row, level ``warning``, its figures as JSON
evidence):

- ``disturbed-cpu``: CPU taken by processes other than mysqld, the driver and flushbench, as a
  share of the machine's capacity;
- ``disturbed-steal``: time the hypervisor gave this VM's CPUs to someone else;
- ``disturbed-io``: bytes moved on the datadir's device by anyone else;
- ``below-limit``: a throttled run that reached its storage limit in some interval but
  averaged well below it. A warning that qualifies the run, not a disturbance: something else
  may have held it back, or the server flushes in bursts on its own (MySQL 5.5's master
  thread did, at 40M/s in the flash-2011 calibration); the causes above decide.

Host pauses (``host-paused``) and missed sampler ticks (``samples-missed``) are recorded by
the runner as before and count as disturbances too (:data:`DISTURBANCE_KINDS`, which
``below-limit`` is not in). Thresholds and their reasons: ``docs/statistics.md`` ("Disturbed
runs").
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.storage_limits import AT_LIMIT, MIN_PAIRS, limit_figures
from core.storage_limits import LIMIT_FIELDS as _LIMIT_FIELDS
from core.storage_limits import delta as _delta
from core.storage_limits import pairs as _pairs
from core.storage_limits import sample_time as _ts
from core.storage_limits import value as _get
from store.models import DISTURBANCE_KINDS

__all__ = ["AT_LIMIT", "DISTURBANCE_KINDS", "MIN_PAIRS", "Finding", "assess", "cpu_figures",
           "in_window", "io_figures", "limit_figures"]

#: Other processes' CPU, as a share of every CPU's time over the window, that marks a run.
OTHERS_CPU_SHARE = 0.10
#: Steal time, as a share of every CPU's time over the window, that marks a run.
STEAL_SHARE = 0.05
#: Others' bytes on the datadir's device, as a share of all its bytes, that marks a run ...
OTHERS_IO_SHARE = 1 / 3
#: ... when they also moved at least this many bytes per second (a daemon's log lines do not).
OTHERS_IO_MIN_BPS = 1 << 20
#: A throttled run that reached its limit somewhere but averaged below this share of it.
BELOW_LIMIT = 0.80


_SECTOR = 512


@dataclass(frozen=True)
class Finding:
    """One disturbance past its threshold: a named warning with its figures."""

    kind: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)

    def evidence(self) -> str:
        """The figures as JSON (what ``run_events.evidence`` keeps)."""
        return json.dumps(self.figures, sort_keys=True, default=str)


def in_window(samples: Sequence[Any], start: dt.datetime | None, end: dt.datetime | None
              ) -> list[Any]:
    """The read (not missed) samples whose time lies in ``[start, end]`` (None: open side).

    With fewer than two there, every read sample: a run too short for its window to hold two
    ticks is judged on all of them rather than not at all.
    """
    read = [s for s in samples if not _get(s, "missed") and _ts(s) is not None]
    inside = [s for s in read if (start is None or _ts(s) >= start)
              and (end is None or _ts(s) <= end)]
    return inside if len(inside) >= 2 else read


def _span(pairs: Sequence[tuple[Any, Any]]) -> dict[str, str]:
    """The time span the figures cover (first and last sample read), ISO 8601 UTC."""
    return {"from": _ts(pairs[0][0]).isoformat(), "to": _ts(pairs[-1][1]).isoformat()}


def cpu_figures(samples: Sequence[Any]) -> dict[str, float] | None:
    """Others' CPU and steal over the samples: shares of the machine's CPU time.

    ``others`` is the host's busy time less mysqld's, the driver's and flushbench's own
    (each pair of ticks; a negative difference — per-process and host counters are rounded
    differently — counts as 0). Returns None with fewer than :data:`MIN_PAIRS` pairs.
    """
    pairs = _pairs(samples, "host_cpu_busy_s", "host_cpu_idle_s", "host_cpu_steal_s",
                   "mysqld_cpu_user_s", "mysqld_cpu_sys_s", "tool_cpu_s")
    if len(pairs) < MIN_PAIRS:
        return None
    capacity = others = steal = ours = 0.0
    peak = 0.0
    for a, b in pairs:
        cap = sum(_delta(a, b, n) for n in ("host_cpu_busy_s", "host_cpu_idle_s",
                                            "host_cpu_steal_s"))
        if cap <= 0:
            continue
        own = (_delta(a, b, "mysqld_cpu_user_s") + _delta(a, b, "mysqld_cpu_sys_s")
               + _delta(a, b, "tool_cpu_s"))
        if None not in (_get(a, "driver_cpu_user_s"), _get(b, "driver_cpu_user_s")):
            own += _delta(a, b, "driver_cpu_user_s") + _delta(a, b, "driver_cpu_sys_s")
        other = max(_delta(a, b, "host_cpu_busy_s") - own, 0.0)
        capacity += cap
        others += other
        ours += own
        steal += max(_delta(a, b, "host_cpu_steal_s"), 0.0)
        peak = max(peak, other / cap)
    if capacity <= 0:
        return None
    seconds = (_ts(pairs[-1][1]) - _ts(pairs[0][0])).total_seconds()
    return {"others_share": others / capacity, "others_peak_share": peak,
            "steal_share": steal / capacity, "others_cpu_s": others, "steal_s": steal,
            "own_cpu_s": ours, "capacity_cpu_s": capacity, "seconds": seconds,
            "cpus": capacity / seconds if seconds > 0 else math.nan, **_span(pairs)}


def io_figures(samples: Sequence[Any]) -> dict[str, float] | None:
    """Bytes others moved on the datadir's device: the device's bytes less our own.

    Our own is the larger of the throttle group's bytes (every bio mysqld issued on the
    device, the file-system metadata its fsyncs write included) and the ``/proc/PID/io`` bytes
    of mysqld, the driver and flushbench (which include buffered writes the kernel's flusher
    writes back for mysqld, charged to no group under cgroup v1). Returns None with fewer than
    :data:`MIN_PAIRS` pairs.
    """
    pairs = _pairs(samples, "disk_read_sectors", "disk_write_sectors", "own_io_read_bytes",
                   "own_io_write_bytes")
    if len(pairs) < MIN_PAIRS:
        return None
    device = own = others = 0.0
    for a, b in pairs:
        dev = (_delta(a, b, "disk_read_sectors") + _delta(a, b, "disk_write_sectors")) * _SECTOR
        mine = _delta(a, b, "own_io_read_bytes") + _delta(a, b, "own_io_write_bytes")
        if None not in (_get(a, "group_read_bytes"), _get(b, "group_read_bytes")):
            group = _delta(a, b, "group_read_bytes") + _delta(a, b, "group_write_bytes")
            mine = max(mine, group)
        if dev < 0:  # the device's counters were reset (a hot-plug): this pair says nothing
            continue
        device += dev
        own += max(mine, 0.0)
        others += max(dev - max(mine, 0.0), 0.0)
    seconds = (_ts(pairs[-1][1]) - _ts(pairs[0][0])).total_seconds()
    if seconds <= 0:
        return None
    return {"others_bytes": others, "device_bytes": device, "own_bytes": own,
            "others_share": others / device if device > 0 else 0.0,
            "others_bps": others / seconds, "seconds": seconds, **_span(pairs)}


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def assess(samples: Sequence[Any], *, start: dt.datetime | None = None,
           end: dt.datetime | None = None, limits: Mapping[str, float | None] | None = None
           ) -> list[Finding]:
    """The disturbances of one run, judged over its measurement window ``[start, end]``.

    ``samples`` are the run's sampler ticks (``SampleRecord`` objects or dicts with the same
    names); ``limits`` the storage limits in force (``write_iops``…), empty when unthrottled.
    """
    window = in_window(samples, start, end)
    found: list[Finding] = []
    cpu = cpu_figures(window)
    if cpu is not None:
        if cpu["others_share"] >= OTHERS_CPU_SHARE:
            found.append(Finding(
                "disturbed-cpu",
                f"disturbed CPU: other processes took {_pct(cpu['others_share'])} of the "
                f"machine's CPU during "
                f"the window ({cpu['others_cpu_s']:.1f} CPU-s of {cpu['capacity_cpu_s']:.1f}, "
                f"peak interval {_pct(cpu['others_peak_share'])}, threshold "
                f"{_pct(OTHERS_CPU_SHARE)})", cpu))
        if cpu["steal_share"] >= STEAL_SHARE:
            found.append(Finding(
                "disturbed-steal",
                f"steal time: the hypervisor stole {_pct(cpu['steal_share'])} of this VM's CPU"
                " time during "
                f"the window ({cpu['steal_s']:.1f} CPU-s, threshold {_pct(STEAL_SHARE)})", cpu))
    io = io_figures(window)
    if io is not None and io["others_share"] >= OTHERS_IO_SHARE \
            and io["others_bps"] >= OTHERS_IO_MIN_BPS:
        found.append(Finding(
            "disturbed-io",
            f"disturbed I/O: other processes moved {io['others_bps'] / (1 << 20):.1f} MiB/s on"
            " the datadir's "
            f"device during the window, {_pct(io['others_share'])} of its bytes (threshold "
            f"{_pct(OTHERS_IO_SHARE)} and {OTHERS_IO_MIN_BPS >> 20} MiB/s)", io))
    for name, fig in limit_figures(window, limits or {}).items():
        if fig["intervals_at_limit"] and fig["share"] < BELOW_LIMIT:
            unit = _LIMIT_FIELDS[name][1]
            found.append(Finding(
                "below-limit",
                f"below its limit: the throttled group averaged {fig['mean']:,.0f} {unit} against"
                " its "
                f"{name} limit of {fig['limit']:,.0f} ({_pct(fig['share'])}), though it was at "
                f"the limit in {fig['intervals_at_limit']:.0f} of {fig['intervals']:.0f} "
                f"intervals: held back, or flushing in bursts (threshold {_pct(BELOW_LIMIT)})",
                {"limit_name": name, **fig}))
    return found
