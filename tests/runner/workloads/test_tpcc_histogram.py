"""The Go driver's latency histograms: read from its JSON lines and merged.

The fixture ``run-json-hist-…`` is a real ``tpcc run --json -w1 -c2 -r2 -l4 -i2`` against
MariaDB 10.11 (format 1). A histogram that breaks the format fails the run: that table is
tests/runner/workloads/test_tpcc_json_contract.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from runner.workloads.tpcc_format import TXN_TYPES, TpccJsonParser
from runner.workloads.tpcc_histogram import (
    HistogramFormatError,
    HistogramLayout,
    merged_latency,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tpcc"
WITH_HIST = FIXTURES / "run-json-hist-w1-c2-r2-l4-i2-mariadb10.11.jsonl"
READ_TS = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def _parse(lines: list[str]) -> tuple[TpccJsonParser, list]:
    parser = TpccJsonParser()
    return parser, [r for line in lines if (r := parser.feed(line, READ_TS))]


def _ms(value: float | None) -> str:
    """A figure as the driver prints it (3 decimals)."""
    assert value is not None
    return f"{value:.3f}"


def test_merged_measure_intervals_give_the_drivers_window_percentiles() -> None:
    parser, records = _parse(WITH_HIST.read_text().splitlines())
    assert parser.layout == HistogramLayout(128, 64, 2304, 1 / 64)
    assert sorted(parser.histograms) == [r.seq for r in records] == [1, 2, 3]
    summary = parser.summary()
    assert summary is not None
    measured = [r.seq for r in records if r.phase == "measure"]
    for name in TXN_TYPES:
        got = merged_latency(parser.layout, (parser.histograms[s][name] for s in measured))
        want = summary["latency"][name]
        assert [_ms(got[k]) for k in ("p95_ms", "p99_ms", "max_ms")] == [
            _ms(want[k]) for k in ("p95_ms", "p99_ms", "max_ms")], name
    # The warmup interval is not in the window: with it, New-Order's maximum would differ.
    everything = merged_latency(parser.layout, (h["new_order"] for h in parser.histograms.values()))
    assert everything["max_ms"] != summary["latency"]["new_order"]["max_ms"]


def test_each_interval_merges_to_its_own_printed_percentiles() -> None:
    parser, records = _parse(WITH_HIST.read_text().splitlines())
    assert parser.layout is not None
    for record in records:
        got = merged_latency(parser.layout, [parser.histograms[record.seq]["new_order"]])
        assert (_ms(got["p95_ms"]), _ms(got["p99_ms"])) == (_ms(record.p95_ms), _ms(record.p99_ms))
        counts = sum(c for _, c in parser.histograms[record.seq]["new_order"].buckets)
        assert counts == record.primary_count


def test_layout_buckets_tile_the_microseconds_within_the_stated_width() -> None:
    layout = HistogramLayout(128, 64, 2304, 1 / 64)
    prev_high = 0
    for index in range(layout.buckets):
        low, high = layout.bounds_us(index)
        assert low == prev_high
        prev_high = high
        if index >= layout.exact_below_us:
            assert (high - low) / low <= layout.relative_width
    assert layout.bounds_us(127) == (127, 128) and layout.bounds_us(128) == (128, 130)


def test_layout_refuses_another_scheme() -> None:
    with pytest.raises(HistogramFormatError):
        HistogramLayout.from_line({"scheme": "hdr", "unit": "us"})


def test_layout_refuses_more_buckets_than_it_may_hold() -> None:
    with pytest.raises(HistogramFormatError):
        HistogramLayout.of(128, 64, 128 + 64 * 2**40)
