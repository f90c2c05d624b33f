"""``intervals.latency_z``: the Go driver's histograms per interval, stored small and read back
exactly — from a real run's JSON lines (tests/fixtures/tpcc), one blob or thousands at once."""

from __future__ import annotations

import datetime as dt
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from core.latency import HistogramFormatError, HistogramLayout, dense_percentile_ms
from runner.workloads.tpcc import TpccJsonParser
from store.latency_codec import TXN_TYPES, decode, decode_type, encode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tpcc"
WITH_HIST = FIXTURES / "run-json-hist-w1-c2-r2-l4-i2-mariadb10.11.jsonl"
TS = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
LAYOUT = HistogramLayout.of(128, 64, 2304)


def _parsed(path: Path) -> tuple[TpccJsonParser, list]:
    parser = TpccJsonParser()
    return parser, [r for line in path.read_text().splitlines() if (r := parser.feed(line, TS))]


def test_every_interval_stores_its_histograms_and_reads_them_back_exactly() -> None:
    parser, records = _parsed(WITH_HIST)
    assert records and all(r.latency_z is not None for r in records)
    for record in records:
        layout, types = decode(record.latency_z)
        assert layout == parser.layout
        expected = parser.histograms[record.seq]
        assert set(types) == set(TXN_TYPES)
        for name, hist in expected.items():
            assert types[name] == (hist.buckets, hist.max_ms)


def test_a_blob_is_a_small_share_of_the_json_it_came_from() -> None:
    _, records = _parsed(WITH_HIST)
    lines = {json.loads(x)["seq"]: x for x in WITH_HIST.read_text().splitlines()
             if '"interval"' in x}
    for record in records:
        hist_text = json.dumps(json.loads(lines[record.seq])["hist"], separators=(",", ":"))
        assert len(record.latency_z) * 5 < len(hist_text)


def test_many_blobs_decode_at_once_and_a_bad_one_is_named_alone() -> None:
    parser, records = _parsed(WITH_HIST)
    good = [r.latency_z for r in records]
    truncated = zlib.compress(zlib.decompress(good[0])[:-3] + b"\x85")  # ends mid-number
    blobs = [good[0], None, b"not zlib", truncated, good[1], good[2]]
    seg = decode_type(blobs, "new_order")
    assert set(seg.problems) == {2, 3}
    assert seg.max_us.tolist()[1:4] == [-1, -1, -1]
    for position, record in ((0, records[0]), (4, records[1]), (5, records[2])):
        mine = seg.blob == position
        hist = parser.histograms[record.seq]["new_order"]
        assert list(zip(seg.index[mine].tolist(), seg.count[mine].tolist(),
                        strict=True)) == list(hist.buckets)
        assert seg.max_us[position] == round(hist.max_ms * 1000)


def test_merging_the_stored_measure_intervals_gives_the_drivers_summary() -> None:
    parser, records = _parsed(WITH_HIST)
    measure = [r for r in records if r.phase == "measure"]
    summary = parser.summary()["latency"]
    for name in TXN_TYPES:
        seg = decode_type([r.latency_z for r in measure], name)
        dense = np.bincount(seg.index, weights=seg.count, minlength=LAYOUT.buckets)
        top = seg.max_us.max() / 1000
        for q in (95, 99):
            assert f"{dense_percentile_ms(parser.layout, dense, top, q):.3f}" == \
                f"{summary[name][f'p{q}_ms']:.3f}"
        assert top == summary[name]["max_ms"]


@pytest.mark.parametrize("types, problem", [
    ({"refund": (((1, 2),), 1.0)}, "no type code"),
    ({"new_order": (((5, 1), (5, 2)), 1.0)}, "must increase"),
    ({"new_order": (((5, 1), (3, 2)), 1.0)}, "must increase"),
    ({"new_order": (((5, -1),), 1.0)}, "must not be negative"),
])
def test_encode_refuses_what_it_could_not_read_back(types, problem: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=problem):
        encode(LAYOUT, types)


def test_a_blob_of_another_format_or_layout_is_refused() -> None:
    blob = encode(LAYOUT, {"new_order": (((200, 3),), 0.5)})
    raw = bytearray(zlib.decompress(blob))
    raw[0] = 2  # a format this flushbench does not know
    with pytest.raises(HistogramFormatError, match="format 2"):
        decode(zlib.compress(bytes(raw)))
    raw[0], raw[1] = 1, 100  # exact_below_us not 2 × sub_buckets
    with pytest.raises(HistogramFormatError, match="not log-linear"):
        decode(zlib.compress(bytes(raw)))


def test_the_midpoints_array_is_each_buckets_midpoint() -> None:
    assert LAYOUT.midpoints_us.tolist() == [LAYOUT.midpoint_us(i)
                                            for i in range(LAYOUT.buckets)]


def test_numbers_of_every_length_read_back() -> None:
    """One to eight bytes per number: the vectorized reader against the writer."""
    from store.latency_codec import _leb128, _values

    rng = np.random.default_rng(7)
    values = np.concatenate([rng.integers(0, 1 << bits, 50) for bits in range(1, 56, 3)]
                            + [np.array([0, 127, 128, 16383, 16384, (1 << 56) - 1])])
    rng.shuffle(values)
    encoded = np.frombuffer(_leb128(values), dtype=np.uint8)
    assert _values(encoded).tolist() == values.tolist()
    with pytest.raises(HistogramFormatError, match="ends inside a number"):
        _values(np.r_[encoded, np.uint8(0x81)])  # a continuation byte last
    with pytest.raises(HistogramFormatError, match="longer than 8 bytes"):
        _values(np.r_[np.full(8, 0x80, dtype=np.uint8), np.uint8(1)])
