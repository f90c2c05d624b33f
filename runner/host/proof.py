"""Did the storage limit hold? Achieved IOPS and bandwidth from counters, judged against limits.

The counters are the throttle group's own (v1 ``blkio.throttle.io_serviced`` /
``io_service_bytes``, v2 ``io.stat``): every bio the kernel charged to mysqld's group on the
datadir's device, in the units the limit is enforced in. A run's proof is one
:class:`IoCounters` reading before the measured window, one after, and the elapsed seconds.

The kernel's throttle works in time slices (100 ms on this kernel): a group may run ahead of its
rate by about one slice's worth of I/O at the start of a burst. Over a window of ``W`` seconds
that is a relative excess of about ``0.1 / W``, so a verdict needs a window of a couple of
seconds before a 10 % tolerance means anything (``MIN_WINDOW_S``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.experiment.storage import StorageSpec

#: Measured rate may exceed the limit by this fraction before the limit is "not in force".
DEFAULT_TOLERANCE = 0.10
#: Shorter windows are not judged: one 100 ms throttle slice of burst would be >5 % of them.
MIN_WINDOW_S = 2.0
#: Fewer operations than this in the window say nothing about an IOPS limit.
MIN_OPERATIONS = 50


@dataclass(frozen=True)
class IoCounters:
    """Cumulative I/O charged to one group on one device."""

    read_ios: int = 0
    write_ios: int = 0
    read_bytes: int = 0
    write_bytes: int = 0

    def __sub__(self, other: IoCounters) -> IoCounters:
        return IoCounters(
            self.read_ios - other.read_ios,
            self.write_ios - other.write_ios,
            self.read_bytes - other.read_bytes,
            self.write_bytes - other.write_bytes,
        )

    def as_record(self, prefix: str = "io_") -> dict[str, int]:
        """Flat dict for run metadata: ``io_read_ios``, ``io_write_bytes``..."""
        return {
            f"{prefix}read_ios": self.read_ios,
            f"{prefix}write_ios": self.write_ios,
            f"{prefix}read_bytes": self.read_bytes,
            f"{prefix}write_bytes": self.write_bytes,
        }


def parse_v1_counters(serviced: str, service_bytes: str, dev: str) -> IoCounters:
    """Parse cgroup v1 ``blkio.throttle.io_serviced`` and ``io_service_bytes`` for ``dev``.

    Lines look like ``254:0 Write 600``; a device with no I/O yet has no lines (all zeros).
    """

    def pick(text: str) -> dict[str, int]:
        values: dict[str, int] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == dev:
                values[parts[1]] = int(parts[2])
        return values

    ios, nbytes = pick(serviced), pick(service_bytes)
    return IoCounters(
        read_ios=ios.get("Read", 0),
        write_ios=ios.get("Write", 0),
        read_bytes=nbytes.get("Read", 0),
        write_bytes=nbytes.get("Write", 0),
    )


def parse_io_stat(text: str, dev: str) -> IoCounters:
    """Parse cgroup v2 ``io.stat`` (``254:0 rbytes=.. wbytes=.. rios=.. wios=.. ...``)."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == dev:
            kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            return IoCounters(
                read_ios=int(kv.get("rios", 0)),
                write_ios=int(kv.get("wios", 0)),
                read_bytes=int(kv.get("rbytes", 0)),
                write_bytes=int(kv.get("wbytes", 0)),
            )
    return IoCounters()


def read_proc_io(pid: int) -> dict[str, int]:
    """``/proc/PID/io`` as a dict (``read_bytes``, ``write_bytes``, ``cancelled_write_bytes``...).

    These are bytes the process caused to be fetched from / sent to the storage layer, whatever
    cgroup the bios were charged to: a cross-check of the group's counters (buffered writes
    written back by the kernel's flusher count here for mysqld but, in cgroup v1, not in its
    group). Needs the same user or root.
    """
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        key, _, value = line.partition(":")
        values[key.strip()] = int(value)
    return values


@dataclass(frozen=True)
class IoRates:
    """Achieved rates over one window."""

    seconds: float
    read_iops: float
    write_iops: float
    read_bps: float
    write_bps: float
    delta: IoCounters

    def as_record(self) -> dict[str, float]:
        """Flat dict for run metadata (``io_write_iops``... in per-second units)."""
        return {
            "io_window_s": round(self.seconds, 3),
            "io_read_iops": round(self.read_iops, 1),
            "io_write_iops": round(self.write_iops, 1),
            "io_read_bps": round(self.read_bps),
            "io_write_bps": round(self.write_bps),
        }


def achieved(before: IoCounters, after: IoCounters, seconds: float) -> IoRates:
    """Rates between two readings ``seconds`` apart.

    Raises
    ------
    ValueError
        If ``seconds`` is not positive or a counter went backwards (different groups/devices).
    """
    if seconds <= 0:
        raise ValueError(f"window must be positive, got {seconds} s")
    delta = after - before
    if min(delta.read_ios, delta.write_ios, delta.read_bytes, delta.write_bytes) < 0:
        raise ValueError(f"counters went backwards ({before} -> {after}): not the same group")
    return IoRates(
        seconds=seconds,
        read_iops=delta.read_ios / seconds,
        write_iops=delta.write_ios / seconds,
        read_bps=delta.read_bytes / seconds,
        write_bps=delta.write_bytes / seconds,
        delta=delta,
    )


@dataclass(frozen=True)
class LimitCheck:
    """One limit against its measured rate."""

    name: str  # write_iops, read_iops, write_bandwidth, read_bandwidth
    limit: float
    measured: float
    count: int  # operations or bytes in the window
    judged: bool
    held: bool

    @property
    def ratio(self) -> float:
        """measured / limit (1.0 = at the limit)."""
        return self.measured / self.limit

    def evidence(self) -> str:
        """One line: ``write_iops: 1,180/s measured vs 1,000 limit (+18.0 %) over 12 s``."""
        unit = "B/s" if "bandwidth" in self.name else "/s"
        return (
            f"{self.name}: {self.measured:,.0f}{unit} measured vs {self.limit:,.0f} limit "
            f"({(self.ratio - 1) * 100:+.1f} %)"
            + ("" if self.judged else " — not judged (too little I/O)")
        )


@dataclass(frozen=True)
class Verdict:
    """Whether the storage limits were in force over a window."""

    status: str  # "held" | "exceeded" | "not_judged" | "unlimited"
    rates: IoRates
    checks: tuple[LimitCheck, ...]
    reason: str

    @property
    def ok(self) -> bool:
        """False only when a limit was measurably exceeded (``exceeded``)."""
        return self.status != "exceeded"

    def as_record(self) -> dict[str, Any]:
        """Flat dict for run metadata: status, reason and every measured rate."""
        return {"io_limit_verdict": self.status, "io_limit_evidence": self.reason,
                **self.rates.as_record(), **self.rates.delta.as_record()}


def judge(
    spec: StorageSpec,
    before: IoCounters,
    after: IoCounters,
    seconds: float,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    min_window_s: float = MIN_WINDOW_S,
) -> Verdict:
    """Compare achieved rates with ``spec``'s limits.

    A limit is *exceeded* when its measured rate is above ``limit * (1 + tolerance)`` over a
    window of at least ``min_window_s`` seconds with at least ``MIN_OPERATIONS`` operations
    (or that many 4 KiB pages for a bandwidth limit). A limit the workload never came near
    simply *held*: the verdict says whether the limit was in force, not whether it bound; the
    ratio in each check says how close the workload came.

    Returns
    -------
    Verdict
        ``exceeded`` (with the evidence of every offending limit), ``held``, ``not_judged``
        (window too short or too little I/O to tell), or ``unlimited`` (no limits to check).
    """
    rates = achieved(before, after, seconds)
    limits = {
        "read_iops": (spec.read_iops, rates.read_iops, rates.delta.read_ios, MIN_OPERATIONS),
        "write_iops": (spec.write_iops, rates.write_iops, rates.delta.write_ios, MIN_OPERATIONS),
        "read_bandwidth": (spec.read_bandwidth, rates.read_bps, rates.delta.read_bytes,
                           MIN_OPERATIONS * 4096),
        "write_bandwidth": (spec.write_bandwidth, rates.write_bps, rates.delta.write_bytes,
                            MIN_OPERATIONS * 4096),
    }
    checks = []
    for name, (limit, measured, count, min_count) in limits.items():
        if limit is None:
            continue
        judged = seconds >= min_window_s and count >= min_count
        held = not judged or measured <= limit * (1 + tolerance)
        checks.append(LimitCheck(name, float(limit), measured, count, judged, held))
    if not checks:
        return Verdict("unlimited", rates, (), "no storage limits were set")
    bad = [c for c in checks if not c.held]
    if bad:
        reason = (
            f"limit not in force over {seconds:.1f} s (tolerance {tolerance:.0%}): "
            + "; ".join(c.evidence() for c in bad)
        )
        return Verdict("exceeded", rates, tuple(checks), reason)
    if seconds < min_window_s:
        return Verdict("not_judged", rates, tuple(checks),
                       f"window of {seconds:.1f} s is shorter than {min_window_s:.0f} s")
    if not any(c.judged for c in checks):
        return Verdict("not_judged", rates, tuple(checks),
                       "too little I/O in the window to judge any limit: "
                       + "; ".join(c.evidence() for c in checks))
    return Verdict("held", rates, tuple(checks),
                   f"over {seconds:.1f} s: " + "; ".join(c.evidence() for c in checks))
