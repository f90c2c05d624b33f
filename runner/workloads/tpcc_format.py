"""The contract of ``tpcc run --json``: format 1 of its lines as strict models, and its parser.

Every line the Go driver prints is one JSON object with ``"type"`` and ``"format": 1``
(docs/tpcc.md, "JSON output"): first a ``histogram_layout``, then one ``interval`` per report
interval, then one ``summary``. This module checks one line against the format; the order of the
lines (a layout first, consecutive ``seq``, nothing after the summary) and the histograms against
their layout are :class:`TpccJsonParser`'s.

Nothing the driver prints is trusted: every number is finite and non-negative, every count an
integer below 2^53 (an exact float, so NOTPM stays exact in the store), no type completes more
than :data:`RATE_MAX` transactions a second, latencies stay below :data:`MS_MAX`, a layout holds
at most :data:`core.latency.MAX_BUCKETS` buckets. Fields this flushbench does not know are ignored
(never stored); a field that changes meaning or goes away takes a new format version.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import WorkloadError, bounded, quote
from core.latency import MAX_BUCKETS
from runner.workloads.base import IntervalRecord, OutputParser
from runner.workloads.tpcc_histogram import (
    HistogramFormatError,
    HistogramLayout,
    TypeHistogram,
    type_histogram,
)
from store.latency_codec import encode as encode_latency
from store.latency_codec import open_code

#: The one version of the driver's JSON lines this flushbench reads (``"format"`` on each line).
FORMAT_VERSION = 1
#: How a driver printing another JSON format than this flushbench reads is brought up to date.
STALE_FIX = ("rebuild it from this checkout: scripts/setup.sh (or cd tpcc && go build -o"
             " bin/tpcc ./cmd/tpcc)")
#: Transaction types in the driver's JSON; New-Order is the primary count (NOTPM).
TXN_TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")
#: The largest count read: integers up to 2^53 - 1 are exact as floats (the store's columns).
COUNT_MAX = 2**53 - 1
#: No server completes ten million transactions of one type a second: a count above this rate
#: over its interval is not a measurement.
RATE_MAX = 10_000_000
#: A response time or average above 10^9 ms (11.6 days) is not one.
MS_MAX = 1e9
#: Seconds since the driver started, and an interval's length: at most 60 days (the driver
#: refuses phases longer than 30 days each).
SECONDS_MAX = 60 * 86400
#: The highest interval number: one a second for :data:`SECONDS_MAX`.
SEQ_MAX = SECONDS_MAX

Count = Annotated[int, Field(ge=0, le=COUNT_MAX)]
Ms = Annotated[float, Field(ge=0, le=MS_MAX, allow_inf_nan=False)]
Seconds = Annotated[float, Field(ge=0, le=SECONDS_MAX, allow_inf_nan=False)]


class _Strict(BaseModel):
    """Strict types (no "12" for 12, no 1.0 for a count, no true for a number); unknown fields
    ignored and dropped."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class Percentiles(_Strict):
    """``p95_ms``, ``p99_ms``, ``max_ms`` of one type: ordered as percentiles are."""

    p95_ms: Ms
    p99_ms: Ms
    max_ms: Ms

    @model_validator(mode="after")
    def _ordered(self) -> Percentiles:
        if not self.p95_ms <= self.p99_ms <= self.max_ms:
            raise ValueError(f"p95_ms {self.p95_ms} ≤ p99_ms {self.p99_ms} ≤ max_ms"
                             f" {self.max_ms} does not hold")
        return self


class TypeInterval(Percentiles):
    """One type's figures in an interval: completed transactions and their percentiles."""

    count: Count


class LayoutLine(_Strict):
    """``{"type":"histogram_layout","format":1,"scheme":"log-linear","unit":"us",...}``."""

    type: Literal["histogram_layout"]
    format: Literal[1]
    scheme: Literal["log-linear"]
    unit: Literal["us"]
    exact_below_us: Annotated[int, Field(ge=1, le=MAX_BUCKETS)]
    sub_buckets: Annotated[int, Field(ge=1, le=MAX_BUCKETS)]
    buckets: Annotated[int, Field(ge=2, le=MAX_BUCKETS)]
    relative_width: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


#: One type's non-empty buckets: ``[[index, count], ...]`` (checked against the layout later).
#: (A JSON pair is a list: the pair alone is read laxly, its two integers strictly.)
BucketList = Annotated[
    list[Annotated[tuple[Annotated[int, Field(strict=True, ge=0, lt=MAX_BUCKETS)],
                         Annotated[int, Field(strict=True, ge=1, le=COUNT_MAX)]],
                   Field(strict=False)]],
    Field(max_length=MAX_BUCKETS)]


class Histograms(_Strict):
    """An interval's ``hist``: every type's buckets."""

    new_order: BucketList
    payment: BucketList
    order_status: BucketList
    delivery: BucketList
    stock_level: BucketList


class OpenAges(_Strict):
    """One type's transactions still in flight when the interval ended: how many, the oldest
    one's age and the histogram of their ages (the layout's buckets; docs/tpcc.md)."""

    count: Count
    max_ms: Ms
    hist: BucketList


#: A rate in New-Orders a minute: the driver's --rate bound.
Notpm = Annotated[float, Field(ge=0, le=RATE_MAX * 60, allow_inf_nan=False)]


class RateInterval(_Strict):
    """A fixed-rate interval's ``rate``: the target, the New-Orders a minute completed, the
    scheduled starts due and not begun at its end (the backlog) and the oldest one's lateness,
    and whether it fell below 95 % of the target (docs/tpcc.md, "Fixed rate")."""

    target_notpm: Annotated[Notpm, Field(gt=0)]
    notpm: Notpm
    backlog: Count
    backlog_oldest_ms: Ms
    below: bool


class RateSummary(_Strict):
    """A fixed-rate summary's ``rate``: the target and its schedule, the phase's New-Orders a
    minute, its intervals and those below 95 %, the largest backlog and oldest lateness."""

    target_notpm: Annotated[Notpm, Field(gt=0)]
    arrivals: Literal["uniform", "poisson"]
    seed: Annotated[int, Field(ge=0, lt=2**64)]
    notpm: Notpm
    intervals: Annotated[int, Field(ge=0, le=SEQ_MAX)]
    intervals_below: Annotated[int, Field(ge=0, le=SEQ_MAX)]
    backlog_max: Count
    backlog_oldest_max_ms: Ms

    @model_validator(mode="after")
    def _below_counted(self) -> RateSummary:
        if self.intervals_below > self.intervals:
            raise ValueError(f"intervals_below {self.intervals_below} is more than intervals"
                             f" {self.intervals}")
        return self


class IntervalLine(_Strict):
    """``{"type":"interval","format":1,"seq":1,"ts":...,"new_order":{...},...,"hist":{...}}``."""

    type: Literal["interval"]
    format: Literal[1]
    seq: Annotated[int, Field(ge=1, le=SEQ_MAX)]
    #: RFC 3339 in UTC, as Go's RFC3339Nano prints it (``2026-11-26T06:04:52.902639281Z``).
    ts: Annotated[str, Field(pattern=r"^2\d{3}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")]
    elapsed_s: Seconds
    interval_s: Annotated[float, Field(gt=0, le=SECONDS_MAX, allow_inf_nan=False)]
    phase: Literal["warmup", "measure"]
    new_order: TypeInterval
    payment: TypeInterval
    order_status: TypeInterval
    delivery: TypeInterval
    stock_level: TypeInterval
    retries: Count
    errors: Count
    #: A fixed-rate run's schedule over the interval (absent: the closed loop).
    rate: RateInterval | None = None
    hist: Histograms
    #: Per type with transactions in flight at the interval's end (absent: none).
    open: dict[Literal[TXN_TYPES], OpenAges] = {}  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _plausible(self) -> IntervalLine:
        if self.interval_s > self.elapsed_s + 0.001:
            raise ValueError(f"interval_s {self.interval_s} is longer than elapsed_s"
                             f" {self.elapsed_s}")
        most = RATE_MAX * max(self.interval_s, 1.0)
        for name in TXN_TYPES:
            count = getattr(self, name).count
            if count > most:
                raise ValueError(f"{name}.count {count} in {self.interval_s} s is more than"
                                 f" {RATE_MAX:,} transactions a second")
        return self


class TypeTotals(_Strict):
    """One type's totals over the measurement phase (tpcc-mysql's sc/lt/rt/fl)."""

    sc: Count
    lt: Count
    rt: Count
    fl: Count
    avg_ms: Ms


class SummaryLine(_Strict):
    """``{"type":"summary","format":1,"measure_s":...,"tpmc":...,"totals":{...},...}``."""

    type: Literal["summary"]
    format: Literal[1]
    measure_s: Seconds
    tpmc: Annotated[float, Field(ge=0, le=RATE_MAX * 60, allow_inf_nan=False)]
    totals: dict[Literal[TXN_TYPES], TypeTotals]  # type: ignore[valid-type]
    retries: Count
    errors: Count
    interrupted: bool
    client: Literal["go", "libmariadb"] | None = None
    #: A fixed-rate run's measurement phase against its target (absent: the closed loop).
    rate: RateSummary | None = None
    latency: dict[Literal[TXN_TYPES], Percentiles]  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _every_type(self) -> SummaryLine:
        for what in ("totals", "latency"):
            if missing := [n for n in TXN_TYPES if n not in getattr(self, what)]:
                raise ValueError(f"{what} lacks {', '.join(missing)}")
        return self


Line = LayoutLine | IntervalLine | SummaryLine
_MODELS: dict[str, type[LayoutLine] | type[IntervalLine] | type[SummaryLine]] = {
    "histogram_layout": LayoutLine, "interval": IntervalLine, "summary": SummaryLine}


class StaleFormat(ValueError):
    """A line without ``"format"``, or with another version than :data:`FORMAT_VERSION`."""


def read_line(obj: Any) -> Line:
    """One decoded JSON line, checked against format :data:`FORMAT_VERSION`.

    Raises
    ------
    StaleFormat
        When the line has no ``format`` or another one (a binary older or newer than this
        flushbench); the message says which.
    ValueError
        When it is not an object, its ``type`` is unknown or a field breaks the format; the
        message names the first field and why (bounded).
    """
    if not isinstance(obj, dict):
        raise ValueError(f"a JSON {type(obj).__name__}, not an object")
    if "format" not in obj:
        raise StaleFormat("it has no \"format\"")
    version = obj["format"]
    if type(version) is not int or version != FORMAT_VERSION:
        raise StaleFormat(f"its format is {quote(version, 40)}")
    model = _MODELS.get(obj.get("type"))  # type: ignore[arg-type]
    if model is None:
        raise ValueError(f"unknown type {quote(obj.get('type'), 60)}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(_first_error(exc)) from None


def _first_error(exc: ValidationError) -> str:
    """The first problem of a validation, as ``field.path: message (got value)``."""
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "the line"
    got = f" (got {quote(err['input'], 60)})" if "input" in err and err["loc"] else ""
    return f"{where}: {err['msg']}{got}"


def parse_ts(text: str) -> dt.datetime:
    """An RFC 3339 timestamp (Go's RFC3339Nano; nanoseconds truncated) as aware UTC."""
    ts = dt.datetime.fromisoformat(text)
    if ts.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no time zone")
    return ts.astimezone(dt.UTC)


class TpccJsonParser(OutputParser):
    """Line parser for ``tpcc run --json``: every line must keep format 1 (:func:`read_line`).

    Besides the interval records it keeps the latency histograms: :attr:`layout` (from the
    ``histogram_layout`` line) and :attr:`histograms` (interval ``seq`` → type → buckets and
    exact maximum). The lines come in the format's order: the layout first, intervals numbered
    1, 2, 3… with a growing ``elapsed_s``, the summary last. Any line that breaks the format —
    a field, a bound, the order, a histogram that does not add up to its count — fails the run
    with that line quoted and the reason; a line without format 1 names the binary as stale.
    """

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary
        self._summary: dict[str, Any] | None = None
        self.layout: HistogramLayout | None = None
        self.histograms: dict[int, dict[str, TypeHistogram]] = {}
        self._line_no = 0
        self._seq = 0
        self._elapsed_s = 0.0

    def feed(self, line: str, read_ts: dt.datetime) -> IntervalRecord | None:
        """Consume one line; return a record for an ``interval`` object.

        Raises
        ------
        WorkloadError
            When the line is not a format-1 JSON object or breaks the format: the message
            quotes the line (bounded) and says why, or names the stale binary.
        """
        self._line_no += 1
        if not line.strip():
            return None
        try:
            return self._take(read_line(json.loads(line)))
        except StaleFormat as exc:
            binary = self.binary or "the tpcc driver"
            raise WorkloadError(
                f"{binary} prints another JSON format than this flushbench reads (line"
                f" {self._line_no}: {exc}; this flushbench reads format {FORMAT_VERSION}):"
                f" the binary is stale",
                fix=STALE_FIX,
            ) from None
        except (ValueError, RecursionError, OverflowError) as exc:  # HistogramFormatError too
            raise WorkloadError(
                f"the tpcc driver's output line {self._line_no} breaks its JSON format"
                f" ({bounded(str(exc), 300)}): {quote(line, 300)}",
                fix="the driver or the server misbehaved: see the driver's stdout and stderr"
                " in the run's evidence; " + STALE_FIX,
            ) from None

    def _take(self, parsed: Line) -> IntervalRecord | None:
        """One checked line in its place: the layout, an interval's record, or the summary."""
        if self._summary is not None:
            raise ValueError(f"a {parsed.type} line after the summary")
        if isinstance(parsed, LayoutLine):
            if self.layout is not None or self._seq:
                raise ValueError("a second histogram_layout line")
            self.layout = HistogramLayout.from_line(parsed.model_dump())
            return None
        if isinstance(parsed, SummaryLine):
            self._summary = parsed.model_dump(exclude={"type"}, exclude_none=True)
            return None
        if self.layout is None:
            raise ValueError("an interval before the histogram_layout line")
        if parsed.seq != self._seq + 1 or parsed.elapsed_s < self._elapsed_s:
            raise ValueError(f"interval seq {parsed.seq} at elapsed_s {parsed.elapsed_s} after"
                             f" seq {self._seq} at {self._elapsed_s}: need the next number and"
                             " no step back in time")
        types = {name: _type_histogram(parsed, name, self.layout) for name in TXN_TYPES}
        types.update({open_code(name): _open_histogram(parsed, name, self.layout)
                      for name in parsed.open})
        record = _record(parsed)
        self._seq, self._elapsed_s = parsed.seq, parsed.elapsed_s
        self.histograms[parsed.seq] = types
        blob = encode_latency(self.layout, {name: (h.buckets, h.max_ms)
                                            for name, h in types.items()})
        return dataclasses.replace(record, latency_z=blob)

    def summary(self) -> dict[str, Any] | None:
        """The driver's ``summary`` object (without ``type``, checked), once printed."""
        return self._summary

    def interrupted(self) -> bool:
        """The driver's own ``interrupted`` flag (it stops early on SIGTERM)."""
        return bool(self._summary and self._summary.get("interrupted"))


def _type_histogram(line: IntervalLine, name: str, layout: HistogramLayout) -> TypeHistogram:
    """Type ``name``'s histogram of the interval, checked against the layout and its count."""
    figures = getattr(line, name)
    buckets = [list(pair) for pair in getattr(line.hist, name)]
    try:
        return type_histogram(buckets, figures.max_ms, figures.count, layout)
    except HistogramFormatError as exc:
        raise HistogramFormatError(f"hist.{name}: {exc}") from None


def _open_histogram(line: IntervalLine, name: str, layout: HistogramLayout) -> TypeHistogram:
    """The ages of type ``name``'s transactions in flight at the interval's end, checked like a
    histogram of completed ones (stored beside them as ``open_<type>``)."""
    ages = line.open[name]
    try:
        return type_histogram([list(pair) for pair in ages.hist], ages.max_ms, ages.count, layout)
    except HistogramFormatError as exc:
        raise HistogramFormatError(f"open.{name}: {exc}") from None


def _record(line: IntervalLine) -> IntervalRecord:
    """The store's row of a checked interval line."""
    no = line.new_order
    return IntervalRecord(
        seq=line.seq,
        ts=parse_ts(line.ts),
        elapsed_s=line.elapsed_s,
        interval_s=line.interval_s,
        phase=line.phase,
        primary_count=float(no.count),
        p95_ms=no.p95_ms,
        p99_ms=no.p99_ms,
        max_ms=no.max_ms,
        errors=float(line.errors),
        retries=float(line.retries),
        detail={**{name: {"count": t.count, "p95_ms": t.p95_ms, "p99_ms": t.p99_ms,
                          "max_ms": t.max_ms}
                   for name in TXN_TYPES[1:] for t in [getattr(line, name)]},
                # The achieved rate is primary_count / interval_s: the target and the queue
                # are what a fixed-rate interval adds (rate_target_notpm, rate_backlog…).
                **({"rate": {"target_notpm": line.rate.target_notpm,
                             "backlog": line.rate.backlog,
                             "backlog_oldest_ms": line.rate.backlog_oldest_ms}}
                   if line.rate is not None else {})},
    )
