"""The sampler: pure parsers, then ticks against a real MariaDB (absolute schedule, content,
a tick overrun and a server that goes away recorded as missed)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runner.run.sampler import (
    Sampler,
    SampleRecord,
    binlog_file_bytes,
    block_device_of,
    compress_status,
    decompress_status,
    engine_log_section,
    metric_counters,
    numeric_status,
    parse_ctx_switches,
    parse_diskstats,
    parse_engine_lsn,
)
from store.models import Sample
from tests.runner.workloads.conftest import (
    DbServer,
    initialize_template,
    mariadb_available,
    running_server,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MARIADB_STATUS = FIXTURES / "innodb-status" / "mariadb-10.11.19-under-tpcc.txt"


# --- pure helpers ------------------------------------------------------------------------


def test_sample_record_has_exactly_the_samples_columns() -> None:
    columns = {c.name for c in Sample.__table__.columns} - {"run_id"}
    assert {f.name for f in dataclasses.fields(SampleRecord)} == columns


def test_numeric_status_keeps_numbers_only() -> None:
    rows = [
        ("Uptime", "12"),
        ("Innodb_buffer_pool_pages_dirty", "1004"),
        ("Innodb_lsn_current", "18446744073709551615"),
        ("Compression", "OFF"),
        ("Ssl_cipher", ""),
        ("Rpl_status", "AUTH_MASTER"),
        ("Innodb_buffer_pool_load_status", b"Buffer pool(s) load completed"),
        ("Max_used_connections_time", "2026-11-21 04:00:00"),
        ("Innodb_checkpoint_age", None),
        ("Ssl_session_cache_size", "-1"),
        ("Some_ratio", "0.5"),
    ]
    assert numeric_status(rows) == {
        "Uptime": 12,
        "Innodb_buffer_pool_pages_dirty": 1004,
        "Innodb_lsn_current": 18446744073709551615,
        "Ssl_session_cache_size": -1,
        "Some_ratio": 0.5,
    }


def test_status_round_trips_through_compression() -> None:
    counters = {"Uptime": 12, "Some_ratio": 0.5}
    blob = compress_status(counters)
    assert decompress_status(blob) == counters
    assert b" " not in zlib.decompress(blob)  # compact JSON


def test_engine_lsn_mariadb_recorded() -> None:
    text = MARIADB_STATUS.read_text()
    assert parse_engine_lsn(text) == (134066234, 129156677)
    section = engine_log_section(text)
    assert section is not None
    assert section.splitlines()[0] == "Log sequence number 134066234"
    assert "Last checkpoint at  129156677" in section
    assert "BUFFER POOL" not in section and "---" not in section


# MySQL 5.5 prints the LSN as one 64-bit number ("Log sequence number " LSN_PF). MySQL 5.0 and
# the 5.1 built-in InnoDB printed it as two 32-bit words with "%lu %lu" (ut_dulint high, low).
# These snippets follow those printf formats.
MYSQL55_LOG = """\
---
LOG
---
Log sequence number 2419102581
Log flushed up to   2419102581
Last checkpoint at  2419096788
0 pending log writes, 0 pending chkp writes
----------------------
BUFFER POOL AND MEMORY
----------------------
"""
MYSQL50_LOG = """\
---
LOG
---
Log sequence number 3 2419102581
Log flushed up to   3 2419102581
Last checkpoint at  3 2419096788
0 pending log writes, 0 pending chkp writes
----------------------
"""


def test_engine_lsn_one_number_form() -> None:
    assert parse_engine_lsn(MYSQL55_LOG) == (2419102581, 2419096788)
    assert engine_log_section(MYSQL55_LOG) == (
        "Log sequence number 2419102581\nLog flushed up to   2419102581\n"
        "Last checkpoint at  2419096788\n0 pending log writes, 0 pending chkp writes"
    )


def test_engine_lsn_two_word_form() -> None:
    high = 3 << 32
    assert parse_engine_lsn(MYSQL50_LOG) == (high + 2419102581, high + 2419096788)


def test_engine_lsn_absent() -> None:
    assert parse_engine_lsn("no log here") == (None, None)
    assert engine_log_section("no log here") is None


DISKSTATS = """\
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 36495 7053 2210002 7558 19396 62072 3351336 14436 0 4304 22395 6205 26 405280 300
 259       1 nvme0n1p1 120 5 9000 10 340 20 27000 55 0 40 65
 253       2 dm-2 11 0 88 1 22 0 176 4 0 5 5
"""


def test_diskstats_by_device_number() -> None:
    assert parse_diskstats(DISKSTATS, 254, 0) == (36495, 19396, 2210002, 3351336)
    assert parse_diskstats(DISKSTATS, 259, 1) == (120, 340, 9000, 27000)  # a partition
    assert parse_diskstats(DISKSTATS, 253, 2) == (11, 22, 88, 176)  # device-mapper
    assert parse_diskstats(DISKSTATS, 8, 0) is None


def test_block_device_of_virtual_filesystems_is_none() -> None:
    assert block_device_of("/proc") is None  # procfs: anonymous device, no diskstats line
    assert block_device_of("/no/such/path") is None
    if os.path.ismount("/dev/shm"):
        assert block_device_of("/dev/shm") is None  # tmpfs


# --- against a real server ---------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not mariadb_available():
        pytest.skip("MariaDB (mariadbd, mariadb-install-db) is not installed")
    return initialize_template(tmp_path_factory.mktemp("sampler-template"))


@pytest.fixture(scope="module")
def server(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbServer]:
    with running_server(template, tmp_path_factory.mktemp("sampler-server")) as srv:
        with srv.connect() as link, link.cursor() as cur:
            # Some dirty pages and redo so the figures are not all zero.
            cur.execute("CREATE DATABASE s")
            cur.execute("CREATE TABLE s.t (id INT PRIMARY KEY, v TEXT) ENGINE=InnoDB")
            cur.executemany(
                "INSERT INTO s.t VALUES (%s, REPEAT('x', 500))", [(i,) for i in range(2000)]
            )
        yield srv


def _collect(
    sampler: Sampler, records: list[SampleRecord], until: Callable[[], bool], limit_s: float = 30
) -> None:
    sampler.start()
    deadline = time.monotonic() + limit_s
    try:
        while not until() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sampler.stop()
    assert not sampler.is_alive()
    assert until(), f"sampler produced {len(records)} records: {records[-3:]}"


def _sampler(server: DbServer, records: list[SampleRecord], **kw: object) -> Sampler:
    args: dict = {
        "connect": server.connect,
        "mysqld_pid": server.pid,
        "datadir": server.datadir,
        "interval": 0.2,
        "on_sample": records.append,
    } | kw
    return Sampler(**args)


@pytest.mark.mysql
def test_ticks_on_the_absolute_schedule(server: DbServer) -> None:
    records: list[SampleRecord] = []
    sampler = _sampler(server, records)
    _collect(sampler, records, lambda: len(records) >= 6)
    assert [r.seq for r in records] == list(range(len(records)))
    for r in records:
        assert r.scheduled_ts == sampler.scheduled(r.seq)
        assert (r.scheduled_ts - sampler.t0).total_seconds() == pytest.approx(r.seq * 0.2)
        if not r.missed:
            assert r.ts is not None and r.ts >= r.scheduled_ts
            assert r.ts.utcoffset() is not None and r.ts.utcoffset().total_seconds() == 0
    assert sum(not r.missed for r in records) >= 1


@pytest.mark.mysql
def test_sample_content(server: DbServer) -> None:
    records: list[SampleRecord] = []
    driver_pid = os.getpid()  # any live process: its CPU time is read from /proc
    # mysqld's main thread before the sample: its counts only grow.
    main = parse_ctx_switches(Path(f"/proc/{server.pid}/status").read_text())
    sampler = _sampler(server, records, driver_pid=lambda: driver_pid)
    _collect(sampler, records, lambda: any(not r.missed for r in records))
    r = next(r for r in records if not r.missed)
    counters = decompress_status(r.status_z)
    assert len(counters) > 300
    assert all(isinstance(v, int | float) for v in counters.values())
    assert counters["Uptime"] >= 0
    assert r.pages_dirty == counters["Innodb_buffer_pool_pages_dirty"]
    assert r.pages_data == counters["Innodb_buffer_pool_pages_data"] > 0
    assert r.pages_free == counters["Innodb_buffer_pool_pages_free"]
    # MariaDB 10.11 has the LSN status variables (and Innodb_checkpoint_age).
    assert r.lsn == counters["Innodb_lsn_current"]
    assert r.checkpoint_lsn == counters["Innodb_lsn_last_checkpoint"]
    assert r.lsn >= r.checkpoint_lsn > 0
    assert counters["Innodb_checkpoint_age"] >= 0
    log_text = zlib.decompress(r.engine_log_z).decode()
    assert log_text.startswith("Log sequence number")
    assert r.mysqld_rss_bytes > 0 and r.mysqld_vsz_bytes >= r.mysqld_rss_bytes
    split = r.mysqld_rss_anon_bytes + r.mysqld_rss_file_bytes + r.mysqld_rss_shmem_bytes
    assert r.mysqld_rss_anon_bytes > 0
    assert abs(split - r.mysqld_rss_bytes) <= r.mysqld_rss_bytes / 20
    assert r.mysqld_anon_hugepages_bytes is not None and r.mysqld_hugetlb_bytes == 0
    assert r.mysqld_cpu_user_s is not None and r.mysqld_cpu_sys_s is not None
    assert r.driver_cpu_user_s is not None and r.driver_cpu_user_s > 0
    # Every thread's context switches: more than the main thread's alone.
    assert main is not None and r.mysqld_ctxsw_voluntary > main[0] > 0
    assert r.mysqld_ctxsw_involuntary is not None and r.driver_ctxsw_voluntary > 0
    assert r.collect_s is not None and r.collect_s > 0
    if block_device_of(server.datadir) is not None:
        assert r.disk_writes is not None and r.disk_write_sectors is not None
    else:
        assert r.disk_writes is None


def test_the_binary_logs_size_is_the_sum_of_their_file_sizes() -> None:
    # SHOW BINARY LOGS: MySQL 8.0+ adds an Encrypted column, MariaDB and 5.5 have two.
    assert binlog_file_bytes([("binlog.000001", 180, "No"), ("binlog.000002", 4096, "No")]) \
        == 4276
    assert binlog_file_bytes([(b"mysql-bin.000001", b"1024")]) == 1024
    assert binlog_file_bytes([]) == 0


def test_metric_counters_are_named_apart_from_the_status_counters() -> None:
    assert metric_counters([("buffer_flush_sync_total_pages", "12"), ("x", "ON")]) == {
        "INNODB_METRICS.buffer_flush_sync_total_pages": 12}


@pytest.mark.mysql
def test_only_enabled_flush_metrics_are_stored(server: DbServer) -> None:
    """MariaDB 10.11 enables its LRU batch counters by default, not the flush-list kinds: the
    enabled ones are stored beside the status counters, a disabled one is left out (its 0
    would read as "none")."""
    with server.connect() as link, link.cursor() as cur:
        cur.execute("SET GLOBAL innodb_monitor_disable = 'buffer_flush_sync_total_pages'")
    records: list[SampleRecord] = []
    _collect(_sampler(server, records), records, lambda: any(not r.missed for r in records))
    counters = decompress_status(next(r for r in records if not r.missed).status_z)
    assert "INNODB_METRICS.buffer_LRU_batch_flush_total_pages" in counters
    assert "INNODB_METRICS.buffer_flush_sync_total_pages" not in counters
    with server.connect() as link, link.cursor() as cur:
        cur.execute("SET GLOBAL innodb_monitor_enable = 'buffer_flush_sync_total_pages'")
    records = []
    _collect(_sampler(server, records), records, lambda: any(not r.missed for r in records))
    counters = decompress_status(next(r for r in records if not r.missed).status_z)
    assert counters["INNODB_METRICS.buffer_flush_sync_total_pages"] >= 0


@pytest.mark.mysql
def test_engine_status_off_keeps_lsn_from_status(server: DbServer) -> None:
    records: list[SampleRecord] = []
    sampler = _sampler(server, records, engine_status=False)
    _collect(sampler, records, lambda: any(not r.missed for r in records))
    r = next(r for r in records if not r.missed)
    assert r.engine_log_z is None
    assert r.lsn is not None and r.checkpoint_lsn is not None


@pytest.mark.mysql
def test_a_slow_sample_makes_the_next_ticks_missed(server: DbServer) -> None:
    records: list[SampleRecord] = []
    first = threading.Event()

    def slow_connect() -> object:
        if not first.is_set():
            first.set()
            time.sleep(0.5)  # the first sample overruns ticks 1 and 2 (at 0.2 s and 0.4 s)
        return server.connect()

    sampler = _sampler(server, records, connect=slow_connect)
    _collect(sampler, records, lambda: len(records) >= 4)
    assert [r.seq for r in records] == list(range(len(records)))
    assert not records[0].missed and records[0].collect_s >= 0.5
    for r in records[1:3]:
        assert r.missed and r.ts is None
        assert "sample 0 took" in r.miss_reason
        # The slow step is named with its duration (≥ the 0.5 s it slept; a loaded machine
        # adds to it, so no exact figure is asserted).
        step = re.search(r"\(connecting (\d+\.\d+) s\)", r.miss_reason)
        assert step and float(step.group(1)) >= 0.5, r.miss_reason
        assert "longer than the 0.2 s interval" in r.miss_reason
        assert r.scheduled_ts == sampler.scheduled(r.seq)
    # The run's warning counts the misses and quotes why the first one happened.
    warning = sampler.missed_warning()
    assert warning is not None
    assert warning.startswith(f"{sampler.samples_missed} of "
                              f"{sampler.samples_missed + sampler.samples_taken} sampler ticks")
    assert f"(first: {records[1].miss_reason})" in warning


@pytest.mark.mysql
def test_a_slow_store_is_not_blamed_on_the_sample(server: DbServer) -> None:
    """Storing a sample took four times as long as reading it: the reason says storing.

    The store's delay is set from the reading the sampler measured, so the comparison holds
    however slowly a loaded machine reads (a fixed 0.5 s once lost to a 0.5 s read)."""
    records: list[SampleRecord] = []

    def slow_store(record: SampleRecord) -> None:
        records.append(record)
        if record.seq == 0:
            time.sleep(max(0.5, 4 * (record.collect_s or 0.0)))

    sampler = _sampler(server, records, on_sample=slow_store)
    _collect(sampler, records, lambda: len(records) >= 4)
    assert not records[0].missed
    assert records[1].missed
    found = re.match(r"storing sample 0 took (\d+\.\d+) s \(reading it (\d+\.\d+) s\)",
                     records[1].miss_reason)
    assert found, records[1].miss_reason
    storing, reading = float(found.group(1)), float(found.group(2))
    assert reading == pytest.approx(records[0].collect_s, abs=0.001)
    assert storing >= 0.5 and reading < storing  # storing is blamed, not the sample


def test_overrun_reason_names_the_slowest_step_only_when_it_dominates() -> None:
    sampler = Sampler(connect=lambda: None, interval=5.0, on_sample=lambda r: None)
    assert sampler.missed_warning() is None  # nothing missed: no run warning
    record = SampleRecord(seq=12, scheduled_ts=dt.datetime.now(dt.UTC), collect_s=30.7)
    sampler._step_s = {"SHOW GLOBAL STATUS": 0.01, "/proc/PID/smaps_rollup": 30.6}
    assert sampler._overrun_reason(record, spent=30.75) == (
        "sample 12 took 30.700 s (/proc/PID/smaps_rollup 30.600 s), longer than the 5 s interval")
    # Woken 25 s late, then a quick sample: the host, not the sample, lost the ticks.
    record.collect_s = 0.036
    assert sampler._overrun_reason(record, spent=0.05, woke_late=25.0).startswith(
        "the sampler woke 25.000 s late for sample 12 (reading it 0.036 s, storing it 0.014 s)")
    sampler._step_s = {"SHOW GLOBAL STATUS": 3.0, "/proc/PID/smaps_rollup": 3.0}
    record.collect_s = 6.0
    assert sampler._overrun_reason(record, spent=6.1) == (
        "sample 12 took 6.000 s, longer than the 5 s interval")


@pytest.mark.mysql
def test_server_gone_is_recorded_as_missed(template: Path, tmp_path: Path) -> None:
    records: list[SampleRecord] = []
    with running_server(template, tmp_path / "gone") as srv:
        sampler = _sampler(srv, records)
        sampler.start()
        try:
            deadline = time.monotonic() + 30
            while not any(not r.missed for r in records) and time.monotonic() < deadline:
                time.sleep(0.05)
            srv.process.kill()
            srv.process.wait(30)
            deadline = time.monotonic() + 30
            while sum(r.missed for r in records) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            sampler.stop()
    assert not sampler.is_alive()
    assert any(not r.missed for r in records)
    gone = [r for r in records if r.missed]
    assert len(gone) >= 3  # it kept ticking after the server went away
    for r in gone:
        assert r.ts is None and r.miss_reason
        assert r.scheduled_ts == sampler.scheduled(r.seq)
    assert [r.seq for r in records] == list(range(len(records)))
