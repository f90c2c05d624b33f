"""Parse Debian sysbench 1.0.20 output: ``--report-interval`` lines and the final statistics.

Pure functions and a stateful line parser; unit-tested on recorded real output in
``tests/fixtures/sysbench/``. An interval line looks like::

    [ 2s ] thds: 4 tps: 1576.60 qps: 31546.95 (r/w/o: 22083.87/6307.39/3155.69)
    lat (ms,95%): 4.18 err/s: 0.50 reconn/s: 0.00

(one line; wrapped here).

sysbench 1.0.20 has no ``--warmup-time`` (that came in 1.1), so the run lasts warmup + duration
and the phase is decided here: an interval ending at or before the warmup is ``warmup``.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from core.errors import WorkloadError
from runner.workloads.base import IntervalRecord, OutputParser

_NUM = r"(\d+(?:\.\d+)?)"
INTERVAL_RE = re.compile(
    rf"^\[\s*{_NUM}s\s*\]\s+thds:\s+(\d+)\s+tps:\s+{_NUM}\s+qps:\s+{_NUM}\s+"
    rf"\(r/w/o:\s+{_NUM}/{_NUM}/{_NUM}\)\s+lat\s+\(ms,(\d+)%\):\s+{_NUM}\s+"
    rf"err/s:\s+{_NUM}\s+reconn/s:\s+{_NUM}"
)
_SUMMARY_COUNT_RE = re.compile(
    rf"^\s*(transactions|queries|ignored errors|reconnects):\s+(\d+)\s+\({_NUM} per sec\.\)"
)
_PERFORMED_RE = re.compile(r"^\s+(read|write|other|total):\s+(\d+)\s*$")
_TOTAL_TIME_RE = re.compile(rf"^\s*total time:\s+{_NUM}s\s*$")
_EVENTS_RE = re.compile(r"^\s*total number of events:\s+(\d+)\s*$")
_LATENCY_RE = re.compile(rf"^\s*(min|avg|max|sum|(\d+)th percentile):\s+{_NUM}\s*$")


def parse_interval_line(line: str) -> dict[str, Any] | None:
    """The fields of one ``[ Ns ]`` report line, or ``None`` when the line is not one.

    Raises
    ------
    WorkloadError
        When the line starts like a report line but does not parse (the message quotes it).
    """
    m = INTERVAL_RE.match(line)
    if m is None:
        if re.match(r"^\[\s*\d+(?:\.\d+)?s\s*\]", line):
            raise WorkloadError(
                f"cannot parse sysbench report line: {line!r}",
                fix="is this sysbench 1.0.x? flushbench parses sysbench 1.0.20 output",
            )
        return None
    g = m.groups()
    return {
        "elapsed_s": float(g[0]),
        "threads": int(g[1]),
        "tps": float(g[2]),
        "qps": float(g[3]),
        "reads_per_s": float(g[4]),
        "writes_per_s": float(g[5]),
        "other_per_s": float(g[6]),
        "percentile": int(g[7]),
        "lat_ms": float(g[8]),
        "err_per_s": float(g[9]),
        "reconn_per_s": float(g[10]),
    }


class SysbenchParser(OutputParser):
    """Line parser for one sysbench run.

    Parameters
    ----------
    warmup_s:
        Seconds at the start of the run that count as warmup. Records take the time their
        line was read as ``ts`` (sysbench prints no wall-clock time).
    """

    def __init__(self, warmup_s: float) -> None:
        self.warmup_s = warmup_s
        self._seq = 0
        self._prev_elapsed = 0.0
        self._summary: dict[str, Any] = {}
        self._section: str | None = None

    def feed(self, line: str, read_ts: dt.datetime) -> IntervalRecord | None:
        """Consume one stdout line; return an :class:`IntervalRecord` for a report line."""
        fields = parse_interval_line(line)
        if fields is not None:
            return self._record(fields, read_ts)
        self._feed_summary(line)
        return None

    def _record(self, f: dict[str, Any], read_ts: dt.datetime) -> IntervalRecord:
        self._seq += 1
        elapsed = f["elapsed_s"]
        interval = elapsed - self._prev_elapsed
        self._prev_elapsed = elapsed
        pct = f["percentile"]
        # sysbench's err/s counts "ignored errors" (deadlocks, lock wait timeouts): the
        # transaction is rolled back and restarted, so they are retries, not failures (a
        # non-ignored error aborts sysbench, which shows as a non-zero exit).
        return IntervalRecord(
            seq=self._seq,
            ts=read_ts,
            elapsed_s=elapsed,
            interval_s=interval,
            phase="warmup" if elapsed <= self.warmup_s + 1e-9 else "measure",
            primary_count=f["tps"] * interval,
            p95_ms=f["lat_ms"] if pct == 95 else None,
            p99_ms=f["lat_ms"] if pct == 99 else None,
            max_ms=None,
            errors=0.0,
            retries=f["err_per_s"] * interval,
            detail={
                "threads": f["threads"],
                "tps": f["tps"],
                "qps": f["qps"],
                "reads_per_s": f["reads_per_s"],
                "writes_per_s": f["writes_per_s"],
                "other_per_s": f["other_per_s"],
                f"lat_p{pct}_ms": f["lat_ms"],
                "err_per_s": f["err_per_s"],
                "reconn_per_s": f["reconn_per_s"],
            },
        )

    def _feed_summary(self, line: str) -> None:
        s = self._summary
        stripped = line.strip()
        if stripped == "queries performed:":
            self._section = "performed"
            return
        if stripped.startswith("Latency (ms):"):
            self._section = "latency"
            return
        if stripped.endswith(":") and not line.startswith(" "):
            self._section = None
        if m := _SUMMARY_COUNT_RE.match(line):
            key = m.group(1).replace(" ", "_")
            s[key] = int(m.group(2))
            s[f"{key}_per_s"] = float(m.group(3))
            self._section = None
            return
        if self._section == "performed" and (m := _PERFORMED_RE.match(line)):
            s.setdefault("queries_performed", {})[m.group(1)] = int(m.group(2))
            return
        if m := _TOTAL_TIME_RE.match(line):
            s["total_time_s"] = float(m.group(1))
            return
        if m := _EVENTS_RE.match(line):
            s["events"] = int(m.group(1))
            return
        if self._section == "latency" and (m := _LATENCY_RE.match(line)):
            name = f"p{m.group(2)}" if m.group(2) else m.group(1)
            s.setdefault("latency_ms", {})[name] = float(m.group(3))

    def summary(self) -> dict[str, Any] | None:
        """Final statistics (covering the whole run, warmup included), once printed."""
        if "transactions" not in self._summary:
            return None
        out = dict(self._summary)
        # sysbench 1.0 cannot exclude the warmup from its totals; say so next to them.
        out["includes_warmup_s"] = self.warmup_s
        return out


def parse_output(
    text: str, warmup_s: float, read_ts: dt.datetime
) -> tuple[list[IntervalRecord], dict[str, Any] | None]:
    """Parse a whole recorded output (tests, re-parsing evidence files)."""
    parser = SysbenchParser(warmup_s)
    records = [r for line in text.splitlines() if (r := parser.feed(line, read_ts)) is not None]
    return records, parser.summary()
