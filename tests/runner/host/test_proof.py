"""Achieved rates and the verdict, on hand-made counter text (the parsers) and numbers."""

from __future__ import annotations

import os

import pytest

from core.experiment.storage import StorageSpec
from runner.host.proof import (
    IoCounters,
    achieved,
    judge,
    parse_io_stat,
    parse_v1_counters,
    read_proc_io,
)

V1_SERVICED = """\
254:0 Read 2
254:0 Write 600
254:0 Sync 602
254:0 Async 0
254:0 Discard 0
254:0 Total 602
7:0 Write 9
Total 611
"""
V1_BYTES = """\
254:0 Read 90112
254:0 Write 2457600
254:0 Total 2547712
Total 2547712
"""


def test_parse_v1_counters_picks_the_device() -> None:
    c = parse_v1_counters(V1_SERVICED, V1_BYTES, "254:0")
    assert c == IoCounters(read_ios=2, write_ios=600, read_bytes=90112, write_bytes=2457600)
    assert parse_v1_counters(V1_SERVICED, V1_BYTES, "7:0") == IoCounters(write_ios=9)
    assert parse_v1_counters("Total 0\n", "Total 0\n", "254:0") == IoCounters()


def test_parse_io_stat() -> None:
    text = (
        "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
        "254:0 rbytes=90112 wbytes=2457600 rios=22 wios=600 dbytes=0 dios=0\n"
    )
    assert parse_io_stat(text, "254:0") == IoCounters(22, 600, 90112, 2457600)
    assert parse_io_stat(text, "9:9") == IoCounters()


def test_achieved_rates_and_backwards_counters() -> None:
    rates = achieved(IoCounters(10, 100, 0, 0), IoCounters(10, 1100, 4096, 4096000), 5.0)
    assert rates.write_iops == 200.0
    assert rates.write_bps == 819200.0
    assert rates.read_iops == 0.0
    with pytest.raises(ValueError, match="backwards"):
        achieved(IoCounters(write_ios=5), IoCounters(write_ios=4), 1.0)
    with pytest.raises(ValueError, match="positive"):
        achieved(IoCounters(), IoCounters(), 0)


SPEC = StorageSpec(write_iops=1000, write_bandwidth="16M")


def test_verdict_fails_with_evidence_when_writes_exceed_the_limit() -> None:
    # 12 s at 1,180 write IOPS against a 1,000 limit: +18 %.
    v = judge(SPEC, IoCounters(), IoCounters(write_ios=14160, write_bytes=14160 * 4096), 12.0)
    assert v.status == "exceeded" and not v.ok
    assert "write_iops: 1,180/s measured vs 1,000 limit (+18.0 %)" in v.reason
    assert "write_bandwidth" not in v.reason  # 4.6 MiB/s is within 16M
    assert v.as_record()["io_limit_verdict"] == "exceeded"


def test_verdict_holds_within_tolerance() -> None:
    v = judge(SPEC, IoCounters(), IoCounters(write_ios=10900, write_bytes=1), 10.0)
    assert v.status == "held" and v.ok
    assert {c.name: round(c.ratio, 2) for c in v.checks}["write_iops"] == 1.09


def test_verdict_does_not_judge_short_windows_or_little_io() -> None:
    short = judge(SPEC, IoCounters(), IoCounters(write_ios=3000), 1.0)  # 3x over, 1 s
    assert short.status == "not_judged" and short.ok
    idle = judge(SPEC, IoCounters(), IoCounters(write_ios=20), 10.0)
    assert idle.status == "not_judged"
    assert "too little I/O" in idle.reason


def test_verdict_without_limits() -> None:
    v = judge(StorageSpec(), IoCounters(), IoCounters(write_ios=10**6), 10.0)
    assert v.status == "unlimited" and v.checks == ()


def test_read_proc_io_of_this_process() -> None:
    values = read_proc_io(os.getpid())
    assert {"read_bytes", "write_bytes", "cancelled_write_bytes"} <= set(values)
