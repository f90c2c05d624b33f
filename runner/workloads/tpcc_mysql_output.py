"""Parse Percona-Lab tpcc-mysql ``tpcc_start`` text output.

Pure code, unit-tested on the recorded runs in ``tests/fixtures/tpcc-mysql/``. After
``MEASURING START.`` each report line reads::

      10, trx: 1939, 95%: 94.515, 99%: 133.353, max_rt: 339.577, 1934|166.987,
    193|75.606, 194|347.783, 194|430.195

(one line; wrapped here)
= seconds since the measurement started, New-Order count in the interval, its p95/p99/max
response time (ms), then ``count|max_rt`` for Payment, Order-Status, Delivery, Stock-Level.
At the end, ``<Raw Results>`` gives per type ``sc`` (on time), ``lt`` (late), ``rt`` (retry),
``fl`` (failure), followed by `` in N sec.``; ``<TpmC>`` gives the printed TpmC.

tpcc-mysql prints nothing during the ramp-up, so every report line is ``measure`` and its
``elapsed_s`` is ramp-up + t (the time since the workload started, like the other drivers).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from core.errors import WorkloadError
from runner.workloads.base import IntervalRecord, OutputParser

#: tpcc-mysql's transaction type index → the names the Go driver uses.
TXN_TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")
_MIX_NAMES = {
    "New-Order": "new_order",
    "Payment": "payment",
    "Order-Status": "order_status",
    "Delivery": "delivery",
    "Stock-Level": "stock_level",
}

_F = r"(\d+(?:\.\d+)?)"
INTERVAL_RE = re.compile(
    rf"^\s*(\d+), trx: (\d+), 95%: {_F}, 99%: {_F}, max_rt: {_F}, "
    rf"(\d+)\|{_F}, (\d+)\|{_F}, (\d+)\|{_F}, (\d+)\|{_F}\s*$"
)
_LOOKS_LIKE_INTERVAL = re.compile(r"^\s*\d+,\s*trx:")
_RAW_RE = re.compile(
    rf"^\s*\[(\d)\]\s+sc:(\d+)\s+lt:(\d+)\s+rt:(\d+)\s+fl:(\d+)"
    rf"(?:\s+avg_rt:\s*{_F}\s*\((\d+)\))?"
)
_IN_SEC_RE = re.compile(r"^\s*in (\d+) sec\.\s*$")
_TPMC_RE = re.compile(rf"^\s*{_F} TpmC\s*$")
_RAMPUP_RE = re.compile(r"^\s*\[rampup\]:\s*(\d+)")
_MEASURE_RE = re.compile(r"^\s*\[measure\]:\s*(\d+)")
_MIX_RE = re.compile(r"^\s*([A-Za-z-]+): ([\d.]+)%\s+\(>=\s*[\d.]+%\)\s+\[(OK|NG)\]")
_RT_RE = re.compile(r"^\s*([A-Za-z-]+): ([\d.]+)%\s+\[(OK|NG)\]")


def parse_interval_line(line: str) -> dict[str, Any] | None:
    """The fields of one report line, or ``None`` when the line is not one.

    Raises
    ------
    WorkloadError
        When a line starts like a report line (``N, trx:``) but does not parse.
    """
    m = INTERVAL_RE.match(line)
    if m is None:
        if _LOOKS_LIKE_INTERVAL.match(line):
            raise WorkloadError(
                f"cannot parse tpcc-mysql report line: {line!r}",
                fix="is this Percona-Lab tpcc-mysql? flushbench parses its tpcc_start output",
            )
        return None
    g = m.groups()
    others = {
        name: {"count": int(g[5 + 2 * i]), "max_ms": float(g[6 + 2 * i])}
        for i, name in enumerate(TXN_TYPES[1:])
    }
    return {
        "t": int(g[0]),
        "new_order": {
            "count": int(g[1]),
            "p95_ms": float(g[2]),
            "p99_ms": float(g[3]),
            "max_ms": float(g[4]),
        },
        **others,
    }


def tpmc_from_totals(totals: dict[str, dict[str, Any]], measure_s: float) -> float:
    """TpmC = (sc + lt of New-Order) × 60 / measured seconds (tpcc-mysql's own formula)."""
    no = totals["new_order"]
    return (no["sc"] + no["lt"]) * 60.0 / measure_s


class TpccMysqlParser(OutputParser):
    """Line parser for one ``tpcc_start`` run.

    Parameters
    ----------
    rampup_s:
        The ``-r`` given to tpcc_start; the ``[rampup]`` line it prints wins if present.
    """

    def __init__(self, rampup_s: float) -> None:
        self.rampup_s = float(rampup_s)
        self.measure_param_s: float | None = None
        self._measuring = False
        self._section: str | None = None
        self._seq = 0
        self._prev_t = 0
        self._totals: dict[str, dict[str, Any]] = {}
        self._measure_s: float | None = None
        self._tpmc_printed: float | None = None
        self._mix: dict[str, dict[str, Any]] = {}
        self._rt_ok: dict[str, dict[str, Any]] = {}
        self._check_kind: str | None = None

    def feed(self, line: str, read_ts: dt.datetime) -> IntervalRecord | None:
        """Consume one stdout line; return an :class:`IntervalRecord` for a report line."""
        stripped = line.strip()
        if not self._measuring:
            if stripped.startswith("Usage: tpcc_start"):
                # tpcc_start prints its usage and exits 0 on an option it does not know.
                raise WorkloadError(
                    f"tpcc_start rejected its options: {line!r}",
                    fix="use a Percona-Lab tpcc-mysql recent enough to accept -S (socket),"
                    " or give the sandbox a TCP port",
                )
            if m := _RAMPUP_RE.match(line):
                self.rampup_s = float(m.group(1))
            elif m := _MEASURE_RE.match(line):
                self.measure_param_s = float(m.group(1))
            elif stripped == "MEASURING START.":
                self._measuring = True
            return None
        if stripped.startswith("<"):
            self._section = stripped
            return None
        if self._section is None:
            fields = parse_interval_line(line)
            if fields is not None:
                return self._record(fields, read_ts)
            return None
        self._feed_final(line, stripped)
        return None

    def _record(self, f: dict[str, Any], read_ts: dt.datetime) -> IntervalRecord:
        self._seq += 1
        t = f["t"]
        interval = t - self._prev_t
        self._prev_t = t
        no = f["new_order"]
        return IntervalRecord(
            seq=self._seq,
            ts=read_ts,
            elapsed_s=self.rampup_s + t,
            interval_s=float(interval),
            phase="measure",
            primary_count=float(no["count"]),
            p95_ms=no["p95_ms"],
            p99_ms=no["p99_ms"],
            max_ms=no["max_ms"],
            errors=0.0,
            retries=0.0,
            detail={name: f[name] for name in TXN_TYPES[1:]},
        )

    def _feed_final(self, line: str, stripped: str) -> None:
        section = self._section or ""
        if section == "<Raw Results>":
            if m := _RAW_RE.match(line):
                idx = int(m.group(1))
                if idx < len(TXN_TYPES):
                    entry: dict[str, Any] = {
                        "sc": int(m.group(2)),
                        "lt": int(m.group(3)),
                        "rt": int(m.group(4)),
                        "fl": int(m.group(5)),
                    }
                    if m.group(6) is not None:
                        entry["avg_rt_ms"] = float(m.group(6))
                    self._totals[TXN_TYPES[idx]] = entry
            elif m := _IN_SEC_RE.match(line):
                self._measure_s = float(m.group(1))
        elif section.startswith("<Constraint Check>"):
            if stripped.startswith("[transaction percentage]"):
                self._check_kind = "mix"
            elif stripped.startswith("[response time"):
                self._check_kind = "rt"
            elif self._check_kind == "mix" and (m := _MIX_RE.match(line)):
                if m.group(1) in _MIX_NAMES:
                    self._mix[_MIX_NAMES[m.group(1)]] = {
                        "pct": float(m.group(2)),
                        "ok": m.group(3) == "OK",
                    }
            elif self._check_kind == "rt" and (m := _RT_RE.match(line)):
                if m.group(1) in _MIX_NAMES:
                    self._rt_ok[_MIX_NAMES[m.group(1)]] = {
                        "pct": float(m.group(2)),
                        "ok": m.group(3) == "OK",
                    }
        elif section == "<TpmC>" and (m := _TPMC_RE.match(line)):
            self._tpmc_printed = float(m.group(1))

    def summary(self) -> dict[str, Any] | None:
        """``{"measure_s", "tpmc", "tpmc_printed", "totals", "constraint_check"}`` once read.

        ``tpmc`` is computed from the parsed New-Order totals; ``tpmc_printed`` is what
        tpcc-mysql printed (they agree on an intact output).
        """
        if "new_order" not in self._totals:
            return None
        measure_s = self._measure_s or self.measure_param_s
        out: dict[str, Any] = {
            "measure_s": measure_s,
            "rampup_s": self.rampup_s,
            "tpmc": tpmc_from_totals(self._totals, measure_s) if measure_s else None,
            "tpmc_printed": self._tpmc_printed,
            "totals": {k: dict(v) for k, v in self._totals.items()},
        }
        if self._mix or self._rt_ok:
            out["constraint_check"] = {"mix_pct": self._mix, "response_time_ok_pct": self._rt_ok}
        return out


def parse_output(
    text: str, rampup_s: float, read_ts: dt.datetime
) -> tuple[list[IntervalRecord], dict[str, Any] | None]:
    """Parse a whole recorded ``tpcc_start`` output (tests, re-parsing evidence files)."""
    parser = TpccMysqlParser(rampup_s)
    records = [r for line in text.splitlines() if (r := parser.feed(line, read_ts)) is not None]
    return records, parser.summary()
