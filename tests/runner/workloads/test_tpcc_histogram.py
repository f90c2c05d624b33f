"""The Go driver's latency histograms: read from its JSON lines, merged, never a failed run.

The fixture ``run-json-hist-…`` is a real ``tpcc run --json -w1 -c2 -r2 -l4 -i2`` against
MariaDB 10.11; ``run-json-w1-…`` is the same run from a binary older than the histograms.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.workloads.tpcc import TXN_TYPES, TpccJsonParser
from runner.workloads.tpcc_histogram import (
    HistogramFormatError,
    HistogramLayout,
    merged_latency,
)
from store.latency_codec import decode

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tpcc"
WITH_HIST = FIXTURES / "run-json-hist-w1-c2-r2-l4-i2-mariadb10.11.jsonl"
OLDER_BINARY = FIXTURES / "run-json-w1-c2-r2-l4-i2-mariadb10.11.jsonl"
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
    assert parser.histogram_problem is None
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


def test_an_older_binary_parses_without_histograms() -> None:
    parser, records = _parse(OLDER_BINARY.read_text().splitlines())
    assert len(records) == 3 and parser.layout is None and parser.histograms == {}
    assert parser.histogram_problem is not None and "older" in parser.histogram_problem


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


def _lines_with(edit) -> list[str]:  # noqa: ANN001 - a small test helper
    """The fixture with interval 2's JSON object changed by ``edit``."""
    out = []
    for line in WITH_HIST.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("seq") == 2:
            edit(obj)
            line = json.dumps(obj)
        out.append(line)
    return out


def _set_new_order_buckets(value: object):  # noqa: ANN202
    def edit(obj: dict) -> None:
        obj["hist"]["new_order"] = value
    return edit


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (_set_new_order_buckets([[9999, 1]]), "below 2304"),
        (_set_new_order_buckets([[300, 1], [200, 1]]), "increasing"),
        (_set_new_order_buckets([[300, 0]]), "above 0"),
        (_set_new_order_buckets([[300]]), "pair"),
        (_set_new_order_buckets("300:1"), "not a list"),
        (_set_new_order_buckets([[300, 1]]), "count is"),
        (lambda obj: obj["hist"].pop("delivery"), "delivery"),
        (lambda obj: obj.update(hist=[1, 2]), "not an object"),
    ],
)
def test_a_malformed_histogram_loses_that_interval_only(edit, problem: str) -> None:  # noqa: ANN001
    parser, records = _parse(_lines_with(edit))
    assert [r.seq for r in records] == [1, 2, 3]
    assert sorted(parser.histograms) == [1, 3]
    assert parser.histogram_problem is not None
    assert "interval 2" in parser.histogram_problem and problem in parser.histogram_problem


def test_a_maximum_outside_the_last_bucket_is_refused() -> None:
    def edit(obj: dict) -> None:
        obj["new_order"]["max_ms"] = 0.001
    parser, _ = _parse(_lines_with(edit))
    assert 2 not in parser.histograms
    assert parser.histogram_problem is not None and "max_ms" in parser.histogram_problem


@pytest.mark.parametrize(
    "layout_line",
    [
        '{"type":"histogram_layout","scheme":"hdr","unit":"us"}',
        '{"type":"histogram_layout","scheme":"log-linear","unit":"ns","exact_below_us":128,'
        '"sub_buckets":64,"buckets":2304,"relative_width":0.015625}',
        '{"type":"histogram_layout","scheme":"log-linear","unit":"us","exact_below_us":100,'
        '"sub_buckets":64,"buckets":2304,"relative_width":0.015625}',
        '{"type":"histogram_layout","scheme":"log-linear","unit":"us"}',
    ],
)
def test_an_unreadable_layout_keeps_the_run_without_histograms(layout_line: str) -> None:
    lines = WITH_HIST.read_text().splitlines()
    parser, records = _parse([layout_line, *lines[1:]])
    assert len(records) == 3 and parser.layout is None and parser.histograms == {}
    assert parser.histogram_problem is not None
    assert "histogram_layout" in parser.histogram_problem


def test_layout_refuses_another_scheme() -> None:
    with pytest.raises(HistogramFormatError):
        HistogramLayout.from_line({"scheme": "hdr", "unit": "us"})


def _with_open(value: object) -> Callable[[dict], None]:
    def edit(obj: dict) -> None:
        obj["open"] = value
    return edit


def test_the_transactions_in_flight_are_kept_as_open_types() -> None:
    # Two New-Orders waiting at interval 2's end, 20 s and 3 s (buckets 1228 and 1051).
    parser, records = _parse(_lines_with(_with_open(
        {"new_order": {"count": 2, "max_ms": 20000.0, "hist": [[1051, 1], [1228, 1]]}})))
    assert parser.histogram_problem is None
    kept = parser.histograms[2]["open_new_order"]
    assert kept.max_ms == 20000.0 and sum(c for _, c in kept.buckets) == 2
    assert "open_new_order" not in parser.histograms[1]
    layout, types = decode(records[1].latency_z)
    assert types["open_new_order"] == (kept.buckets, 20000.0)


@pytest.mark.parametrize(("value", "problem"), [
    ({"new_order": {"count": 3, "max_ms": 20000.0, "hist": [[1228, 1]]}}, "count is"),
    ({"bogus": {}}, "keyed by transaction type"),
    ([1], "keyed by transaction type"),
])
def test_unreadable_in_flight_ages_keep_the_completed_histograms(value: object,
                                                                 problem: str) -> None:
    parser, _ = _parse(_lines_with(_with_open(value)))
    assert sorted(parser.histograms) == [1, 2, 3]
    assert not any(name.startswith("open_") for h in parser.histograms.values() for name in h)
    assert parser.histogram_problem is not None and "interval 2" in parser.histogram_problem
    assert problem in parser.histogram_problem
