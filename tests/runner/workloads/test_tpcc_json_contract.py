"""The Go driver's JSON lines fuzzed line by line: every line breaking format 1 fails the run.

Each case takes the real recorded run (``run-json-hist-…``, format 1), changes one line and
feeds the whole output to the parser: it must raise one WorkloadError naming the line number and
the reason, quoting the line (bounded) — never accept the line, never raise anything else. A
line without the format version, or with another, names the binary as stale and the rebuild.
A real run with a driver printing such lines is tests/runner/run/test_hostile_driver_output.py.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.errors import WorkloadError
from runner.workloads.tpcc_format import TpccJsonParser
from store.latency_codec import decode

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tpcc"
GOOD = FIXTURES / "run-json-hist-w1-c2-r2-l4-i2-mariadb10.11.jsonl"
#: The same run from a binary older than the format version (no "format", no histograms).
OLDER_BINARY = FIXTURES / "run-json-w1-c2-r2-l4-i2-mariadb10.11.jsonl"
READ_TS = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
BINARY = Path("/opt/old/tpcc")
#: Lines of GOOD: 0 the layout, 1..3 the intervals (seq 1..3), 4 the summary.
LAYOUT, FIRST, SECOND, THIRD, SUMMARY = range(5)

Edit = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Edit:
    """Set ``a.b.c`` of the line's object to ``value``."""
    *parents, last = path.split(".")

    def edit(obj: dict[str, Any]) -> None:
        for key in parents:
            obj = obj[key]
        obj[last] = value
    return edit


def _drop(path: str) -> Edit:
    *parents, last = path.split(".")

    def edit(obj: dict[str, Any]) -> None:
        for key in parents:
            obj = obj[key]
        del obj[last]
    return edit


def _count(value: Any) -> Edit:
    """New-Order's count and its one bucket both ``value`` (so only the bound can refuse)."""
    def edit(obj: dict[str, Any]) -> None:
        obj["new_order"]["count"] = value
        obj["hist"]["new_order"] = [[obj["hist"]["new_order"][-1][0], value]]
    return edit


def _lines(line: int, edit: Edit | str | None) -> list[str]:
    """GOOD with line ``line`` changed by ``edit`` (replaced by the text ``edit``; left out
    for None)."""
    lines = GOOD.read_text().splitlines()
    if edit is None:
        del lines[line]
    elif isinstance(edit, str):
        lines[line] = edit
    else:
        obj = json.loads(lines[line])
        edit(obj)
        lines[line] = json.dumps(obj, separators=(",", ":"))  # NaN/Infinity as JSON allows
    return lines


def _feed(lines: list[str]) -> TpccJsonParser:
    parser = TpccJsonParser(BINARY)
    for line in lines:
        parser.feed(line, READ_TS)
    return parser


#: A fixed-rate interval's and summary's "rate" as the driver prints them.
RATE_IV = {"target_notpm": 600.0, "notpm": 588.0, "backlog": 2, "backlog_oldest_ms": 41.5,
           "below": False}
RATE_SUM = {"target_notpm": 600.0, "arrivals": "poisson", "seed": 2**63, "notpm": 590.0,
            "intervals": 3, "intervals_below": 1, "backlog_max": 2, "backlog_oldest_max_ms": 41.5}


#: (case, line number changed, edit, the reason the error must give)
REFUSED: list[tuple[str, int, Edit | str | None, str]] = [
    # the issue's own cases
    ("count-nan", SECOND, _set("new_order.count", math.nan), "new_order.count"),
    ("count-negative", SECOND, _count(-15000), "new_order.count: Input should be greater than"),
    ("count-1e20", SECOND, _count(10**20), "new_order.count: Input should be less than or equal"),
    ("count-infinite", SECOND, _set("new_order.count", math.inf), "new_order.count"),
    ("count-float", SECOND, _set("new_order.count", 257.0), "valid integer"),
    ("count-string", SECOND, _set("new_order.count", "257"), "valid integer"),
    ("count-rate", SECOND, _count(10**15), "more than 10,000,000 transactions a second"),
    ("seq-1e30", SECOND, _set("seq", 10**30), "seq: Input should be less than"),
    ("seq-zero", FIRST, _set("seq", 0), "seq: Input should be greater than"),
    ("seq-skips", SECOND, _set("seq", 5), "need the next number"),
    ("seq-repeats", THIRD, _set("seq", 2), "need the next number"),
    ("max-infinite", SECOND, _set("new_order.max_ms", math.inf), "new_order.max_ms"),
    ("max-negative", SECOND, _set("payment.max_ms", -1.0), "payment.max_ms"),
    ("p95-above-p99", SECOND, _set("delivery.p95_ms", 1000.0), "does not hold"),
    ("p99-nan", SECOND, _set("stock_level.p99_ms", math.nan), "stock_level.p99_ms"),
    ("elapsed-nan", SECOND, _set("elapsed_s", math.nan), "elapsed_s"),
    ("elapsed-back", THIRD, _set("elapsed_s", 3.0), "no step back in time"),
    ("interval-zero", SECOND, _set("interval_s", 0.0), "interval_s"),
    ("interval-longer-than-elapsed", SECOND, _set("interval_s", 9.0), "longer than elapsed_s"),
    ("ts-words", SECOND, _set("ts", "yesterday"), "ts"),
    ("ts-no-zone", SECOND, _set("ts", "2026-11-26T06:04:52.902639"), "ts: String should"),
    ("ts-not-utc", SECOND, _set("ts", "0001-01-01T00:00:00+01:00"), "ts: String should"),
    ("ts-no-such-day", SECOND, _set("ts", "2026-13-45T06:04:52Z"), "month must be in 1..12"),
    ("phase-unknown", SECOND, _set("phase", "cooldown"), "phase"),
    ("retries-negative", SECOND, _set("retries", -1), "retries"),
    ("errors-infinite", SECOND, _set("errors", math.inf), "errors"),
    ("type-figures-missing", SECOND, _drop("payment"), "payment: Field required"),
    # histograms
    ("bucket-2^62", SECOND, _count(2**62), "new_order.count"),
    ("bucket-count-2^62", SECOND, _set("hist.new_order", [[400, 2**62]]), "hist.new_order.0.1"),
    ("bucket-index-outside", SECOND, _set("hist.new_order", [[9999, 257]]), "below 2304"),
    ("bucket-index-huge", SECOND, _set("hist.new_order", [[2**40, 257]]), "hist.new_order.0.0"),
    ("buckets-decreasing", SECOND, _set("hist.payment", [[300, 1], [200, 257]]), "increasing"),
    ("bucket-empty", SECOND, _set("hist.payment", [[300, 0]]), "hist.payment.0.1"),
    ("bucket-not-a-pair", SECOND, _set("hist.payment", [[300]]), "hist.payment.0"),
    ("buckets-not-a-list", SECOND, _set("hist.payment", "300:1"), "hist.payment"),
    ("buckets-do-not-add-up", SECOND, _set("hist.new_order", [[400, 1]]), "count is 257"),
    ("buckets-type-missing", SECOND, _drop("hist.delivery"), "hist.delivery: Field required"),
    ("hist-not-an-object", SECOND, _set("hist", [1, 2]), "hist"),
    ("hist-missing", SECOND, _drop("hist"), "hist: Field required"),
    ("max-outside-last-bucket", SECOND, _set("new_order.max_ms", 8.07), "max_ms 8.07"),
    # transactions in flight at the interval's end ("open")
    ("open-not-an-object", SECOND, _set("open", [1]), "open"),
    ("open-unknown-type", SECOND, _set("open", {"bogus": {}}), "open.bogus"),
    ("open-does-not-add-up", SECOND,
     _set("open", {"new_order": {"count": 3, "max_ms": 20000.0, "hist": [[1228, 1]]}}),
     "count is 3"),
    ("open-age-infinite", SECOND,
     _set("open", {"new_order": {"count": 1, "max_ms": math.inf, "hist": [[1228, 1]]}}),
     "open.new_order.max_ms"),
    # a fixed-rate interval's and summary's "rate" (docs/tpcc.md, "Fixed rate")
    ("rate-backlog-negative", SECOND, _set("rate", {**RATE_IV, "backlog": -1}), "rate.backlog"),
    ("rate-backlog-float", SECOND, _set("rate", {**RATE_IV, "backlog": 3.0}), "rate.backlog"),
    ("rate-oldest-infinite", SECOND, _set("rate", {**RATE_IV, "backlog_oldest_ms": math.inf}),
     "rate.backlog_oldest_ms"),
    ("rate-target-zero", SECOND, _set("rate", {**RATE_IV, "target_notpm": 0.0}),
     "rate.target_notpm"),
    ("rate-notpm-nan", SECOND, _set("rate", {**RATE_IV, "notpm": math.nan}), "rate.notpm"),
    ("rate-below-string", SECOND, _set("rate", {**RATE_IV, "below": "no"}), "rate.below"),
    ("rate-field-missing", SECOND, _set("rate", {"target_notpm": 600.0}),
     "rate.notpm: Field required"),
    ("rate-summary-arrivals", SUMMARY, _set("rate", {**RATE_SUM, "arrivals": "bursty"}),
     "rate.arrivals"),
    ("rate-summary-seed-2^64", SUMMARY, _set("rate", {**RATE_SUM, "seed": 2**64}), "rate.seed"),
    ("rate-summary-below-more", SUMMARY, _set("rate", {**RATE_SUM, "intervals_below": 4}),
     "intervals_below 4 is more than intervals 3"),
    # the layout
    ("layout-2^46-buckets", LAYOUT, _set("buckets", 2**46), "buckets: Input should be less"),
    ("layout-scheme", LAYOUT, _set("scheme", "hdr"), "scheme"),
    ("layout-unit", LAYOUT, _set("unit", "ns"), "unit"),
    ("layout-not-log-linear", LAYOUT, _set("exact_below_us", 100), "not log-linear"),
    ("layout-field-missing", LAYOUT, _drop("sub_buckets"), "sub_buckets: Field required"),
    ("layout-missing", LAYOUT, None, "an interval before the histogram_layout line"),
    ("layout-twice", FIRST,
     '{"type":"histogram_layout","format":1,"scheme":"log-linear","unit":"us",'
     '"exact_below_us":128,"sub_buckets":64,"buckets":2304,"relative_width":0.015625}',
     "a second histogram_layout line"),
    # the summary
    ("tpmc-negative", SUMMARY, _set("tpmc", -15000.0), "tpmc"),
    ("tpmc-nan", SUMMARY, _set("tpmc", math.nan), "tpmc"),
    ("tpmc-1e20", SUMMARY, _set("tpmc", 1e20), "tpmc"),
    ("totals-negative", SUMMARY, _set("totals.new_order.sc", -1), "totals.new_order.sc"),
    ("totals-type-missing", SUMMARY, _drop("totals.delivery"), "totals lacks delivery"),
    ("latency-infinite", SUMMARY, _set("latency.payment.max_ms", math.inf),
     "latency.payment.max_ms"),
    ("interrupted-string", SUMMARY, _set("interrupted", "yes"), "interrupted"),
    ("client-unknown", SUMMARY, _set("client", "odbc"), "client"),
    # lines that are no line of the format
    ("type-unknown", SECOND, _set("type", "bogus"), "unknown type 'bogus'"),
    ("not-an-object", SECOND, "[1, 2, 3]", "not an object"),
    ("not-json", SECOND, "panic: runtime error: index out of range", "Expecting value"),
    ("nested-deep", SECOND, "[" * 100_000 + "]" * 100_000, "recursion"),
    ("huge-integer-text", SECOND, '{"type":"interval","format":1,"seq":' + "9" * 5000 + "}",
     "integer"),
]


@pytest.mark.parametrize(("line", "edit", "reason"), [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_a_line_breaking_the_format_fails_the_run_with_the_line_and_reason(
        line: int, edit: Edit | str | None, reason: str) -> None:
    lines = _lines(line, edit)
    with pytest.raises(WorkloadError) as info:
        _feed(lines)
    message = info.value.render()
    assert f"output line {line + 1} breaks its JSON format" in message
    assert reason.lower() in message.lower(), message
    assert repr(lines[line][:30])[1:-1] in message  # the line, quoted
    assert len(message) < 1500 and "\n" not in message  # bounded, one sentence


def test_a_line_after_the_summary_is_refused() -> None:
    lines = GOOD.read_text().splitlines()
    with pytest.raises(WorkloadError, match="output line 6 .*a interval line after the summary"):
        _feed([*lines, lines[THIRD]])


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_drop("format"), 'it has no "format"'),
        (_set("format", 2), "its format is 2"),
        (_set("format", "1"), "its format is '1'"),
        (_set("format", 1.0), "its format is 1.0"),
        (_set("format", True), "its format is True"),
        (_set("format", None), "its format is None"),
    ],
    ids=["missing", "newer", "string", "float", "bool", "null"],
)
@pytest.mark.parametrize("line", [LAYOUT, SECOND, SUMMARY])
def test_a_line_of_another_format_names_the_stale_binary(edit: Edit, said: str,
                                                         line: int) -> None:
    with pytest.raises(WorkloadError) as info:
        _feed(_lines(line, edit))
    message = info.value.render()
    assert message.startswith(f"{BINARY} prints another JSON format than this flushbench reads"
                              f" (line {line + 1}: {said}; this flushbench reads format 1)")
    assert "scripts/setup.sh" in message and "go build -o bin/tpcc ./cmd/tpcc" in message


def test_a_binary_older_than_the_format_is_named_on_its_first_line() -> None:
    with pytest.raises(WorkloadError, match=r"line 1: it has no \"format\".*stale"):
        _feed(OLDER_BINARY.read_text().splitlines())


def test_the_recorded_run_passes_untouched() -> None:
    parser = _feed(GOOD.read_text().splitlines())
    assert sorted(parser.histograms) == [1, 2, 3] and parser.summary() is not None


def test_the_transactions_in_flight_are_kept_as_open_types() -> None:
    """Two New-Orders waiting at interval 2's end, 20 s and 3 s old (buckets 1228 and 1051):
    kept beside that interval's histograms as ``open_new_order``, stored in its blob."""
    lines = _lines(SECOND, _set("open", {"new_order": {"count": 2, "max_ms": 20000.0,
                                                       "hist": [[1051, 1], [1228, 1]]}}))
    parser = TpccJsonParser(BINARY)
    records = [r for line in lines if (r := parser.feed(line, READ_TS)) is not None]
    kept = parser.histograms[2]["open_new_order"]
    assert kept.max_ms == 20000.0 and sum(c for _, c in kept.buckets) == 2
    assert "open_new_order" not in parser.histograms[1]
    _, types = decode(records[1].latency_z)
    assert types["open_new_order"] == (kept.buckets, 20000.0)


def test_a_fixed_rate_is_read_and_its_target_and_backlog_stored() -> None:
    """A fixed-rate run's "rate" members: the interval's target and backlog go to the row's
    detail (its achieved rate is its count), the summary's are kept whole; a closed loop's
    rows have none."""
    lines = GOOD.read_text().splitlines()
    for i in (FIRST, SECOND, THIRD):
        lines[i] = _lines(i, _set("rate", RATE_IV))[i]
    lines[SUMMARY] = _lines(SUMMARY, _set("rate", RATE_SUM))[SUMMARY]
    parser = TpccJsonParser(BINARY)
    records = [r for line in lines if (r := parser.feed(line, READ_TS)) is not None]
    assert [r.detail["rate"] for r in records] == [
        {"target_notpm": 600.0, "backlog": 2, "backlog_oldest_ms": 41.5}] * 3
    assert parser.summary()["rate"] == RATE_SUM  # type: ignore[index]
    closed = _feed(GOOD.read_text().splitlines())
    assert "rate" not in (closed.summary() or {})
    parser = TpccJsonParser(BINARY)
    assert all("rate" not in r.detail for line in GOOD.read_text().splitlines()
               if (r := parser.feed(line, READ_TS)) is not None)
