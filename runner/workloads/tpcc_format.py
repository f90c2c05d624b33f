"""The contract of ``tpcc run --json``: format 1 of its lines, as strict models.

Every line the Go driver prints is one JSON object with ``"type"`` and ``"format": 1``
(docs/tpcc.md, "JSON output"): first a ``histogram_layout``, then one ``interval`` per report
interval, then one ``summary``. This module checks one line against the format; the order of the
lines (a layout first, consecutive ``seq``, nothing after the summary) and the histograms against
their layout are :class:`runner.workloads.tpcc.TpccJsonParser`'s.

Nothing the driver prints is trusted: every number is finite and non-negative, every count an
integer below 2^53 (an exact float, so NOTPM stays exact in the store), no type completes more
than :data:`RATE_MAX` transactions a second, latencies stay below :data:`MS_MAX`, a layout holds
at most :data:`core.latency.MAX_BUCKETS` buckets. Fields this flushbench does not know are ignored
(never stored); a field that changes meaning or goes away takes a new format version.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import quote
from core.latency import MAX_BUCKETS

#: The one version of the driver's JSON lines this flushbench reads (``"format"`` on each line).
FORMAT_VERSION = 1
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
    hist: Histograms

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
