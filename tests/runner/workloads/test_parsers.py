"""Output parsers of the three drivers, on real recorded output (tests/fixtures/)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from core.errors import WorkloadError
from runner.workloads import sysbench_output, tpcc_mysql_output
from runner.workloads.tpcc_format import TpccJsonParser

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
READ_TS = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


# --- tpcc (Go driver, JSON lines) --------------------------------------------------------

TPCC_JSON = FIXTURES / "tpcc" / "run-json-hist-w1-c2-r2-l4-i2-mariadb10.11.jsonl"


def test_tpcc_json_intervals_and_summary() -> None:
    parser = TpccJsonParser()
    records = [r for line in _lines(TPCC_JSON) if (r := parser.feed(line, READ_TS))]
    assert [r.seq for r in records] == [1, 2, 3]
    assert [r.phase for r in records] == ["warmup", "measure", "measure"]
    assert [r.elapsed_s for r in records] == [2.0, 4.0, 6.0]
    first = records[0]
    # The driver's own timestamp is used, not the read time.
    assert first.ts == dt.datetime(2026, 11, 26, 6, 4, 50, 903299, tzinfo=dt.UTC)
    assert (first.primary_count, first.p95_ms, first.p99_ms, first.max_ms) == (
        231.0,
        28.288,
        42.239,
        78.205,
    )
    assert set(first.detail) == {"payment", "order_status", "delivery", "stock_level"}
    assert first.detail["payment"] == {"count": 231, "p95_ms": 10.303, "p99_ms": 18.047,
                                       "max_ms": 23.669}
    summary = parser.summary()
    assert summary is not None and "type" not in summary and summary["format"] == 1
    # The summary's New-Order totals are the measure-phase interval counts, and TpmC follows.
    measured = sum(r.primary_count for r in records if r.phase == "measure")
    no = summary["totals"]["new_order"]
    assert no["sc"] + no["lt"] == measured
    assert summary["tpmc"] == pytest.approx(measured * 60 / summary["measure_s"])
    assert not parser.interrupted()


@pytest.mark.parametrize(
    "line",
    [
        "panic: runtime error",
        '{"type":"interval","format":1,"seq":1}',
        '{"type":"bogus","format":1}',
        '{"type":"interval","format":1,"seq":1,"ts":"2026-01-01T00:00:00","elapsed_s":1,'
        '"interval_s":1,"phase":"warmup","new_order":{"count":1}}',
    ],
)
def test_tpcc_json_bad_line_quotes_the_line(line: str) -> None:
    with pytest.raises(WorkloadError) as info:
        TpccJsonParser().feed(line, READ_TS)
    assert line[:40] in str(info.value)


def test_tpcc_json_interrupted_flag() -> None:
    parser = TpccJsonParser()
    for line in _lines(TPCC_JSON):
        parser.feed(line.replace('"interrupted":false', '"interrupted":true'), READ_TS)
    assert parser.interrupted()


# --- tpcc-mysql (text) -------------------------------------------------------------------

TPCC_MYSQL_60 = FIXTURES / "tpcc-mysql" / "tpcc_start-w10-c16-60s-mariadb10.11.log"
TPCC_MYSQL_120 = FIXTURES / "tpcc-mysql" / "tpcc_start-w10-c16-mariadb10.11.log"


@pytest.mark.parametrize(
    ("path", "intervals", "tpmc"), [(TPCC_MYSQL_60, 6, 11259.0), (TPCC_MYSQL_120, 12, 10825.0)]
)
def test_tpcc_mysql_recorded_runs(path: Path, intervals: int, tpmc: float) -> None:
    records, summary = tpcc_mysql_output.parse_output(path.read_text(), 10, READ_TS)
    assert len(records) == intervals
    assert [r.seq for r in records] == list(range(1, intervals + 1))
    # tpcc-mysql prints nothing during ramp-up: every line is measured, elapsed = rampup + t.
    assert {r.phase for r in records} == {"measure"}
    assert [r.elapsed_s for r in records] == [10.0 + 10 * k for k in range(1, intervals + 1)]
    assert {r.interval_s for r in records} == {10.0}
    assert summary is not None
    assert summary["measure_s"] == intervals * 10
    # Computed from the parsed New-Order totals, and equal to what tpcc-mysql printed.
    no = summary["totals"]["new_order"]
    assert summary["tpmc"] == (no["sc"] + no["lt"]) * 60 / summary["measure_s"]
    assert summary["tpmc"] == pytest.approx(tpmc)
    assert summary["tpmc_printed"] == pytest.approx(tpmc)
    assert set(summary["totals"]) == set(tpcc_mysql_output.TXN_TYPES)


def test_tpcc_mysql_first_line_fields() -> None:
    records, summary = tpcc_mysql_output.parse_output(TPCC_MYSQL_60.read_text(), 10, READ_TS)
    r = records[0]
    assert (r.primary_count, r.p95_ms, r.p99_ms, r.max_ms) == (1939.0, 94.515, 133.353, 339.577)
    assert r.detail == {
        "payment": {"count": 1934, "max_ms": 166.987},
        "order_status": {"count": 193, "max_ms": 75.606},
        "delivery": {"count": 194, "max_ms": 347.783},
        "stock_level": {"count": 194, "max_ms": 430.195},
    }
    assert r.ts == READ_TS
    assert summary is not None
    assert summary["totals"]["new_order"] == {
        "sc": 9, "lt": 11250, "rt": 0, "fl": 0, "avg_rt_ms": 54.1
    }  # fmt: skip
    assert summary["totals"]["payment"]["lt"] == 9919
    check = summary["constraint_check"]
    assert check["mix_pct"]["payment"] == {"pct": 43.47, "ok": True}
    assert check["response_time_ok_pct"]["new_order"] == {"pct": 0.08, "ok": False}


def test_tpcc_mysql_interval_sum_matches_raw_results() -> None:
    # Each report line counts sc+lt New-Orders of its interval: they add up to the totals.
    records, summary = tpcc_mysql_output.parse_output(TPCC_MYSQL_60.read_text(), 10, READ_TS)
    assert summary is not None
    no = summary["totals"]["new_order"]
    assert sum(r.primary_count for r in records) == no["sc"] + no["lt"]


def test_tpcc_mysql_garbled_report_line_raises() -> None:
    parser = tpcc_mysql_output.TpccMysqlParser(10)
    parser.feed("MEASURING START.", READ_TS)
    with pytest.raises(WorkloadError, match="trx: 12, 95%: oops"):
        parser.feed("  10, trx: 12, 95%: oops", READ_TS)


def test_tpcc_mysql_usage_output_raises() -> None:
    with pytest.raises(WorkloadError, match="rejected its options"):
        tpcc_mysql_output.TpccMysqlParser(10).feed(
            "Usage: tpcc_start -h server_host -P port -d database_name", READ_TS
        )


def test_tpcc_mysql_no_summary_when_cut_short() -> None:
    text = "\n".join(_lines(TPCC_MYSQL_60)[:32])  # killed after a few report lines
    records, summary = tpcc_mysql_output.parse_output(text, 10, READ_TS)
    assert len(records) >= 1 and summary is None


# --- sysbench 1.0.20 (text) --------------------------------------------------------------

SB_RW = FIXTURES / "sysbench" / "oltp_read_write-t2x2000-c4-6s-i2-mariadb10.11.log"
SB_RO_P99 = FIXTURES / "sysbench" / "oltp_read_only-t2x2000-c2-5s-i1-p99-mariadb10.11.log"
SB_FAILED = FIXTURES / "sysbench" / "oltp_read_only-missing-table-mariadb10.11.log"


def test_sysbench_intervals_and_summary() -> None:
    records, summary = sysbench_output.parse_output(SB_RW.read_text(), 2, READ_TS)
    assert [r.seq for r in records] == [1, 2, 3]
    assert [r.elapsed_s for r in records] == [2.0, 4.0, 6.0]
    # The interval ending at the warmup's end is warmup; later ones are measured.
    assert [r.phase for r in records] == ["warmup", "measure", "measure"]
    first = records[0]
    assert first.primary_count == pytest.approx(1576.60 * 2)
    assert first.p95_ms == 4.18 and first.p99_ms is None
    assert first.retries == pytest.approx(0.50 * 2)
    assert first.detail["qps"] == 31546.95
    assert (
        first.detail["reads_per_s"],
        first.detail["writes_per_s"],
        first.detail["other_per_s"],
    ) == (22083.87, 6307.39, 3155.69)
    assert first.detail["err_per_s"] == 0.5 and first.detail["threads"] == 4
    assert summary is not None
    assert summary["transactions"] == 8416 and summary["transactions_per_s"] == 1401.90
    assert summary["queries_performed"] == {
        "read": 117908, "write": 33673, "other": 16838, "total": 168419
    }  # fmt: skip
    assert summary["ignored_errors"] == 6
    assert summary["total_time_s"] == 6.0026
    assert summary["latency_ms"]["p95"] == 4.91 and summary["latency_ms"]["max"] == 80.84
    assert summary["includes_warmup_s"] == 2
    # tps × interval over the run is close to the transaction total (tps is rounded to 0.01).
    assert sum(r.primary_count for r in records) == pytest.approx(8416, rel=0.01)


def test_sysbench_other_percentile_goes_to_p99() -> None:
    records, summary = sysbench_output.parse_output(SB_RO_P99.read_text(), 0, READ_TS)
    assert len(records) == 5 and {r.phase for r in records} == {"measure"}
    assert records[0].p99_ms == 3.49 and records[0].p95_ms is None
    assert summary is not None and "p99" in summary["latency_ms"]


def test_sysbench_failed_run_has_no_records_or_summary() -> None:
    records, summary = sysbench_output.parse_output(SB_FAILED.read_text(), 0, READ_TS)
    assert records == [] and summary is None


def test_sysbench_garbled_report_line_raises() -> None:
    with pytest.raises(WorkloadError, match=r"\[ 10s \] thds: x"):
        sysbench_output.parse_interval_line("[ 10s ] thds: x tps: nope")
