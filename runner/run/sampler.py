"""The sampler: server counters and process/disk figures on absolute ticks.

Every ``interval`` seconds, on the absolute schedule ``t0 + k × interval`` (never drifting: a
slow sample does not push the next one back), one persistent connection reads
``SHOW GLOBAL STATUS`` (every numeric counter kept, zlib-compressed JSON, with the enabled
buffer flush counters of ``INNODB_METRICS`` beside them as ``INNODB_METRICS.<name>``, and on a
server without a binary-log byte counter the binary logs' size, ``BINARY_LOGS.file_bytes``), the
checkpoint figures and optionally the LOG section of ``SHOW ENGINE INNODB STATUS``; /proc gives
mysqld's RSS/VSZ, its RSS split (anonymous, file, shared memory), anonymous huge pages and
hugetlb pages held, its CPU, the driver's CPU, the context switches of both (every thread's,
``/proc/PID/task/TID/status``) and the datadir device's I/O counters — and, so
that a run disturbed by the rest of the machine can be told from a quiet one
(``runner/run/disturbance.py``), the whole host's CPU (``/proc/stat``: busy, idle, steal),
flushbench's own CPU, the storage bytes of mysqld, the driver and flushbench (``/proc/PID/io``)
and the throttle group's own counters.

Raw in, derived out: the sampler stores cumulative counters with the real time they were read;
``analysis/`` computes rates and ages. A tick that could not be sampled (the previous sample
overran its slot, the server is gone) is delivered as ``missed`` with the reason, never hidden.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_INT_RE = re.compile(r"^-?\d+$")
_FLOAT_RE = re.compile(r"^-?\d+\.\d*(?:[eE][-+]?\d+)?$")
_LSN_RE = re.compile(r"^Log sequence number\s+(\d+)(?:\s+(\d+))?\s*$", re.MULTILINE)
_CHECKPOINT_RE = re.compile(r"^Last checkpoint at\s+(\d+)(?:\s+(\d+))?\s*$", re.MULTILINE)
_DASHES_RE = re.compile(r"^-{3,}$")
#: The prefix of an ``INNODB_METRICS`` counter among the stored status counters.
METRIC_PREFIX = "INNODB_METRICS."
#: The enabled buffer-pool flush counters of ``INNODB_METRICS`` (MySQL 5.6+, MariaDB 10.0+):
#: which flush wrote a page (adaptive, background, sync = checkpoint-forced, LRU batch). Most
#: are disabled by default (``innodb_monitor_enable`` turns them on); a disabled counter is
#: left out, so a stored 0 is a counted 0. ``TIME_ENABLED``/``TIME_DISABLED`` are the columns
#: both families share (MySQL says ``STATUS``, MariaDB 10.5+ ``ENABLED``).
METRICS_QUERY = (
    "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS"
    " WHERE TIME_ENABLED IS NOT NULL AND TIME_DISABLED IS NULL"
    " AND (NAME LIKE 'buffer\\_flush\\_%' OR NAME LIKE 'buffer\\_LRU\\_%')"
)
#: Server error codes that say the server has no ``INNODB_METRICS`` (MySQL and XtraDB 5.5).
_NO_METRICS_TABLE = (1109, 1146)
#: The stored counter of the binary log's size: the sum of ``File_size`` over
#: ``SHOW BINARY LOGS``. Sampled only where ``SHOW GLOBAL STATUS`` has no
#: ``Binlog_bytes_written`` (MySQL, Percona Server) and the binary log is on: its growth is the
#: bytes the binary log wrote (a purge inside a run would shrink it; the ledger says so).
BINLOG_FILES_COUNTER = "BINARY_LOGS.file_bytes"
#: The server's answer to ``SHOW BINARY LOGS`` when ``log_bin`` is OFF (ER_NO_BINARY_LOGGING).
_NO_BINARY_LOGGING = (1381,)


@dataclass
class SampleRecord:
    """One sampler tick: exactly the columns of the store's ``samples`` table (less run_id).

    Timestamps are aware UTC. ``scheduled_ts`` is ``t0 + seq × interval``; ``ts`` is when the
    sample was actually read (None when missed).
    """

    seq: int
    scheduled_ts: dt.datetime
    ts: dt.datetime | None = None
    missed: bool = False
    miss_reason: str | None = None
    lsn: int | None = None
    checkpoint_lsn: int | None = None
    pages_dirty: int | None = None
    pages_data: int | None = None
    pages_free: int | None = None
    mysqld_rss_bytes: int | None = None
    mysqld_vsz_bytes: int | None = None
    mysqld_rss_anon_bytes: int | None = None
    mysqld_rss_file_bytes: int | None = None
    mysqld_rss_shmem_bytes: int | None = None
    mysqld_anon_hugepages_bytes: int | None = None
    mysqld_hugetlb_bytes: int | None = None
    mysqld_cpu_user_s: float | None = None
    mysqld_cpu_sys_s: float | None = None
    driver_cpu_user_s: float | None = None
    driver_cpu_sys_s: float | None = None
    mysqld_ctxsw_voluntary: int | None = None
    mysqld_ctxsw_involuntary: int | None = None
    driver_ctxsw_voluntary: int | None = None
    driver_ctxsw_involuntary: int | None = None
    disk_reads: int | None = None
    disk_writes: int | None = None
    disk_read_sectors: int | None = None
    disk_write_sectors: int | None = None
    host_cpu_busy_s: float | None = None
    host_cpu_idle_s: float | None = None
    host_cpu_steal_s: float | None = None
    tool_cpu_s: float | None = None
    own_io_read_bytes: int | None = None
    own_io_write_bytes: int | None = None
    group_read_ios: int | None = None
    group_write_ios: int | None = None
    group_read_bytes: int | None = None
    group_write_bytes: int | None = None
    collect_s: float | None = None
    status_z: bytes | None = None
    engine_log_z: bytes | None = None


# -- pure helpers (unit-tested without a server) -------------------------------------------------


def numeric_status(rows: Any) -> dict[str, int | float]:
    """Every numeric ``SHOW GLOBAL STATUS`` value as int or float (ON/OFF and text dropped)."""
    out: dict[str, int | float] = {}
    for name, value in rows:
        if value is None:
            continue
        text = value.decode() if isinstance(value, bytes) else str(value)
        if _INT_RE.match(text):
            out[name] = int(text)
        elif _FLOAT_RE.match(text):
            out[name] = float(text)
    return out


def metric_counters(rows: Any) -> dict[str, int | float]:
    """``INNODB_METRICS`` rows (name, count) as status counters named
    ``INNODB_METRICS.<name>`` (numbers only)."""
    return {f"{METRIC_PREFIX}{name}": value
            for name, value in numeric_status(rows).items()}


def binlog_file_bytes(rows: Any) -> int:
    """The bytes of every binary log file ``SHOW BINARY LOGS`` lists (its second column is
    ``File_size`` on MySQL, Percona Server and MariaDB alike)."""
    return sum(int(row[1]) for row in rows)


def compress_status(counters: dict[str, int | float]) -> bytes:
    """zlib of compact JSON (``{"name": number}``); ``decompress_status`` reverses it."""
    return zlib.compress(json.dumps(counters, separators=(",", ":")).encode(), 6)


def decompress_status(blob: bytes) -> dict[str, int | float]:
    """The counters stored in ``status_z``."""
    return json.loads(zlib.decompress(blob))


def _lsn_value(match: re.Match[str] | None) -> int | None:
    if match is None:
        return None
    if match.group(2) is not None:
        # MySQL 5.0/5.1 built-in InnoDB printed the 64-bit LSN as two 32-bit words "high low".
        return (int(match.group(1)) << 32) + int(match.group(2))
    return int(match.group(1))


def parse_engine_lsn(text: str) -> tuple[int | None, int | None]:
    """``(Log sequence number, Last checkpoint at)`` from ``SHOW ENGINE INNODB STATUS`` text.

    Handles the one-number form (MySQL 5.5+, MariaDB, Percona) and the two-word ``high low``
    form of MySQL 5.0/5.1's built-in InnoDB.
    """
    return _lsn_value(_LSN_RE.search(text)), _lsn_value(_CHECKPOINT_RE.search(text))


def engine_log_section(text: str) -> str | None:
    """The LOG section of ``SHOW ENGINE INNODB STATUS`` (between its header and the next)."""
    lines = text.splitlines()
    for i in range(1, len(lines) - 1):
        if (
            lines[i].strip() == "LOG"
            and _DASHES_RE.match(lines[i - 1].strip())
            and _DASHES_RE.match(lines[i + 1].strip())
        ):
            body = []
            for line in lines[i + 2 :]:
                if _DASHES_RE.match(line.strip()):
                    break
                body.append(line)
            return "\n".join(body)
    return None


def proc_memory(pid: int) -> tuple[int | None, int | None]:
    """``(VmRSS, VmSize)`` in bytes from ``/proc/PID/status`` (None for a gone process)."""
    rss = vsz = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmSize:"):
                    vsz = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None, None
    return rss, vsz


#: ``/proc/PID/status`` lines → :class:`SampleRecord` fields (values in kB there).
_STATUS_MEMORY = {
    "RssAnon:": "mysqld_rss_anon_bytes",
    "RssFile:": "mysqld_rss_file_bytes",
    "RssShmem:": "mysqld_rss_shmem_bytes",
    "HugetlbPages:": "mysqld_hugetlb_bytes",
}


def parse_memory_split(status: str, smaps_rollup: str | None) -> dict[str, int]:
    """mysqld's RSS split from the text of ``/proc/PID/status`` and ``smaps_rollup``.

    Returns the :class:`SampleRecord` memory fields found, in bytes: ``mysqld_rss_anon_bytes``
    (malloc'd memory and the buffer pool), ``mysqld_rss_file_bytes`` (mapped files: the
    binary, its libraries), ``mysqld_rss_shmem_bytes``, ``mysqld_hugetlb_bytes`` (hugetlbfs
    pages: ``large_pages``, not counted in VmRSS) and, from ``smaps_rollup``,
    ``mysqld_anon_hugepages_bytes`` (transparent huge pages backing anonymous memory, a part
    of RssAnon). A field the kernel does not print (older kernels) is left out.
    """
    out: dict[str, int] = {}
    for line in status.splitlines():
        field = _STATUS_MEMORY.get(line.split(maxsplit=1)[0]) if line.strip() else None
        if field is not None:
            out[field] = int(line.split()[1]) * 1024
    for line in (smaps_rollup or "").splitlines():
        if line.startswith("AnonHugePages:"):
            out["mysqld_anon_hugepages_bytes"] = int(line.split()[1]) * 1024
    return out


def proc_memory_split(pid: int) -> dict[str, int]:
    """:func:`parse_memory_split` of a live process (empty for a gone one).

    ``smaps_rollup`` (Linux 4.14+) walks the page tables of every mapping under mysqld's
    mmap lock: measured on a MariaDB 10.11 mariadbd holding ~480 MB (223 mappings) on the
    shared 2-core development VM, 8.6 ms of CPU per read (39 ms wall under load 54), against
    0.03 ms for ``status`` — small at one read per sampling interval, but a thread of mysqld
    that maps or unmaps memory meanwhile waits for it, so sample no faster than needed. On a
    kernel without it the huge-page figure is simply absent.
    """
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    try:
        rollup: str | None = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        rollup = None
    try:
        return parse_memory_split(status, rollup)
    except (ValueError, IndexError):
        return {}


def proc_cpu(pid: int) -> tuple[float | None, float | None]:
    """``(user, system)`` CPU seconds of a process from ``/proc/PID/stat`` (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None, None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = data[data.rfind(")") + 2 :].split()
    try:
        return int(fields[11]) / _CLK_TCK, int(fields[12]) / _CLK_TCK
    except (IndexError, ValueError):
        return None, None


def parse_ctx_switches(status: str) -> tuple[int, int] | None:
    """``(voluntary, involuntary)`` context switches from the text of a task's
    ``/proc/PID/task/TID/status`` (None where the kernel prints neither line)."""
    found: dict[str, int] = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            found[key] = int(value)
    if len(found) < 2:
        return None
    return found["voluntary_ctxt_switches"], found["nonvoluntary_ctxt_switches"]


def thread_ctx_switches(pid: int) -> dict[int, tuple[int, int]] | None:
    """Each live thread's :func:`parse_ctx_switches` (thread id → counts); None for a gone
    process. ``/proc/PID/status`` alone holds the main thread's counts only."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: dict[int, tuple[int, int]] = {}
    for tid in tids:
        try:
            counts = parse_ctx_switches(Path(f"/proc/{pid}/task/{tid}/status").read_text())
        except (OSError, ValueError):  # the thread ended between the listing and the read
            continue
        if counts is not None:
            out[int(tid)] = counts
    return out


class ProcessSwitches:
    """A process's cumulative context switches (voluntary, involuntary) over every thread it
    has had since the first read: the live threads' counts plus, for each thread gone since,
    the counts it had at the last read.

    The kernel keeps no whole-process figure a reader can see (``getrusage`` is the process's
    own), and threads come and go (MariaDB's InnoDB thread pool retires idle workers): a plain
    sum of the live threads would drop whenever one ended. Kept this way the figure never goes
    down; it misses only what a thread did between its last read and its end. A thread id the
    kernel reuses is told by its counts going down: the old thread's last counts are kept.
    """

    def __init__(self) -> None:
        self.pid: int | None = None
        self._last: dict[int, tuple[int, int]] = {}
        self._gone = (0, 0)

    def read(self, pid: int) -> tuple[int, int] | None:
        """The cumulative ``(voluntary, involuntary)`` of ``pid`` now (None for a gone
        process); a new pid starts a new count."""
        threads = thread_ctx_switches(pid)
        if threads is None:
            return None
        if pid != self.pid:
            self.pid, self._last, self._gone = pid, {}, (0, 0)
        gone_v, gone_i = self._gone
        for tid, (v, i) in self._last.items():
            now = threads.get(tid)
            if now is None or now[0] < v or now[1] < i:
                gone_v, gone_i = gone_v + v, gone_i + i
        self._gone, self._last = (gone_v, gone_i), threads
        return (gone_v + sum(v for v, _ in threads.values()),
                gone_i + sum(i for _, i in threads.values()))


def parse_proc_stat_cpu(text: str) -> tuple[float, float, float] | None:
    """``(busy, idle, steal)`` CPU seconds of the whole host from ``/proc/stat``'s ``cpu`` line.

    Fields: user nice system idle iowait irq softirq steal guest guest_nice (USER_HZ ticks,
    summed over every CPU). Busy is user + nice + system + irq + softirq (guest time is already
    inside user); idle is idle + iowait (iowait is idle time with I/O pending, not work).
    """
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "cpu":
            ticks = [int(v) for v in f[1:9]] + [0] * max(0, 8 - len(f[1:9]))
            user, nice, system, idle, iowait, irq, softirq, steal = ticks[:8]
            return ((user + nice + system + irq + softirq) / _CLK_TCK,
                    (idle + iowait) / _CLK_TCK, steal / _CLK_TCK)
    return None


def host_cpu() -> tuple[float, float, float] | None:
    """:func:`parse_proc_stat_cpu` of this host now (None where /proc/stat is unreadable)."""
    try:
        with open("/proc/stat") as f:
            return parse_proc_stat_cpu(f.read())
    except (OSError, ValueError):
        return None


def proc_io_bytes(pid: int) -> tuple[int, int] | None:
    """``(read_bytes, write_bytes − cancelled_write_bytes)`` of ``/proc/PID/io`` (all threads).

    Bytes the process made the storage layer read or write, buffered writes counted when they
    are dirtied (whoever writes them back) and O_DIRECT ones when issued; a truncated file's
    dirty pages never written are cancelled. None for a gone process or without permission.
    """
    try:
        with open(f"/proc/{pid}/io") as f:
            values = {k.strip(): int(v) for k, _, v in
                      (line.partition(":") for line in f) if v.strip()}
    except (OSError, ValueError):
        return None
    return (values.get("read_bytes", 0),
            values.get("write_bytes", 0) - values.get("cancelled_write_bytes", 0))


def block_device_of(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(major, minor)`` of the block device holding ``path``; None when there is none.

    tmpfs, overlayfs, btrfs subvolumes and other virtual file systems report an anonymous
    device (major 0), which has no ``/proc/diskstats`` line: that is ``None`` here.
    Partitions and device-mapper volumes have their own diskstats lines, used as they are.
    """
    try:
        st_dev = os.stat(path).st_dev
    except OSError:
        return None
    major, minor = os.major(st_dev), os.minor(st_dev)
    if major == 0:
        return None
    return major, minor


def parse_diskstats(text: str, major: int, minor: int) -> tuple[int, int, int, int] | None:
    """``(reads, writes, read sectors, written sectors)`` of one device in /proc/diskstats."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 10 and f[0] == str(major) and f[1] == str(minor):
            return int(f[3]), int(f[7]), int(f[5]), int(f[9])
    return None


def describe_device(device: tuple[int, int] | None) -> str:
    """``vda1 (254:1)`` for a device number, for messages and run metadata."""
    if device is None:
        return "none"
    try:
        name = Path(os.readlink(f"/sys/dev/block/{device[0]}:{device[1]}")).name
    except OSError:
        name = "?"
    return f"{name} ({device[0]}:{device[1]})"


# -- the sampler thread ------------------------------------------------------------------------


PidSource = int | Callable[[], int | None] | None


def _resolve_pid(source: PidSource) -> int | None:
    if source is None:
        return None
    if callable(source):
        return source()
    return source


class Sampler(threading.Thread):
    """Background sampler on absolute ticks ``t0 + k × interval``.

    Parameters
    ----------
    connect:
        Returns a new pymysql connection to the server (called once, and again only after
        a failed sample dropped the connection).
    mysqld_pid:
        mysqld's pid, or a callable returning it.
    driver_pid:
        The workload driver's pid, or a callable returning it (None until the driver starts).
    datadir:
        The server's datadir: its block device's /proc/diskstats line is sampled.
    interval:
        Seconds between ticks.
    engine_status:
        Keep the LOG section of ``SHOW ENGINE INNODB STATUS`` (compressed) with each sample.
    on_sample:
        Called with every :class:`SampleRecord`, missed ones included, from the sampler thread.
    group_counters:
        Returns the storage throttle group's counters (``read_ios``, ``write_ios``,
        ``read_bytes``, ``write_bytes``; :class:`runner.host.proof.IoCounters`), or None when
        the run has no throttle group.
    """

    def __init__(
        self,
        *,
        connect: Callable[[], Any],
        mysqld_pid: PidSource = None,
        driver_pid: PidSource = None,
        datadir: str | os.PathLike[str] | None = None,
        interval: float = 10.0,
        engine_status: bool = True,
        on_sample: Callable[[SampleRecord], None],
        group_counters: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(name="flushbench-sampler", daemon=True)
        if interval <= 0:
            raise ValueError("the sampling interval must be positive")
        self.connect = connect
        self.mysqld_pid = mysqld_pid
        self.driver_pid = driver_pid
        self.interval = float(interval)
        self.engine_status = engine_status
        self.on_sample = on_sample
        self.group_counters = group_counters
        #: A query that takes longer than this is a failed (missed) sample.
        self.read_timeout_s = max(3 * self.interval, 10.0)
        self.device = block_device_of(datadir) if datadir is not None else None
        self.t0: dt.datetime | None = None
        self.samples_taken = 0
        self.samples_missed = 0
        self.callback_failures = 0
        #: Why the first missed tick was missed (the run warning quotes it).
        self.first_miss_reason: str | None = None
        self._stop_event = threading.Event()
        self._conn: Any = None
        #: Seconds per step of the latest sample (named as in a miss reason).
        self._step_s: dict[str, float] = {}
        # None: not known yet; False: this server has no LSN status variables (use the fallback).
        self._status_has_lsn: bool | None = None
        # None: not asked yet; False: the server has no INNODB_METRICS (MySQL 5.5).
        self._has_metrics: bool | None = None
        # None: not asked yet; False: the binary log is off (nothing to size).
        self._has_binlog_files: bool | None = None
        #: Context switches of mysqld and of the driver, every thread's (ProcessSwitches).
        self._switches = {"mysqld": ProcessSwitches(), "driver": ProcessSwitches()}

    # -- schedule ------------------------------------------------------------------------------
    def run(self) -> None:
        """The tick loop (use :meth:`start`; :meth:`stop` ends it)."""
        t0_mono = time.monotonic()
        self.t0 = dt.datetime.now(dt.UTC)
        k = 0
        try:
            while not self._stop_event.is_set():
                delay = t0_mono + k * self.interval - time.monotonic()
                if delay > 0 and self._stop_event.wait(delay):
                    break
                tick_started = time.monotonic()
                # Woken late (beyond the wait's own jitter): the host did not run this thread.
                woke_late = max(tick_started - (t0_mono + k * self.interval), 0.0)
                record = self._sample(k)
                self._deliver(record)
                spent = time.monotonic() - tick_started
                k += 1
                # Ticks whose time passed while this sample ran are missed, and say why.
                reason = None
                while not self._stop_event.is_set() and (
                    t0_mono + k * self.interval < time.monotonic()
                ):
                    reason = reason or self._overrun_reason(record, spent, woke_late)
                    self._deliver(self._missed(k, reason))
                    k += 1
        finally:
            self._close()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop ticking and wait for the thread to end."""
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout)

    def scheduled(self, seq: int) -> dt.datetime:
        """The scheduled time of tick ``seq``: exactly ``t0 + seq × interval``."""
        assert self.t0 is not None
        return self.t0 + dt.timedelta(seconds=seq * self.interval)

    def missed_warning(self) -> str | None:
        """The run warning for missed ticks: how many of how many, and why the first was.

        A gap in the samples is a gap in every curve drawn from them (checkpoint age, dirty
        pages, RSS), and a reason such as "the host did not run it" qualifies the throughput
        too, so the run says so rather than leaving it to the samples table.
        """
        if not self.samples_missed:
            return None
        total = self.samples_missed + self.samples_taken
        return (f"{self.samples_missed} of {total} sampler ticks missed "
                f"(first: {self.first_miss_reason})")

    def _deliver(self, record: SampleRecord) -> None:
        if record.missed:
            self.samples_missed += 1
            if self.first_miss_reason is None:
                self.first_miss_reason = record.miss_reason
        else:
            self.samples_taken += 1
        try:
            self.on_sample(record)
        except Exception:  # the store may be busy; keep sampling, but say so
            self.callback_failures += 1
            log.exception("sampler: on_sample failed for sample %d", record.seq)

    def _overrun_reason(self, record: SampleRecord, spent: float, woke_late: float = 0.0) -> str:
        """Why the ticks after ``record`` were missed: which part of its tick ran long.

        A tick is waking up on time, reading the sample (``collect_s``, with its slowest step
        named: a query the server was slow to answer, or /proc blocked behind mysqld's memory
        map lock) and then storing it; any of the three can overrun the interval, and the
        researcher needs to know which. Waking late means the host did not run the sampler —
        and then not mysqld or the driver either (docs/domain.md § 3, host pauses).
        """
        collect = record.collect_s if record.collect_s is not None else 0.0
        store = max(spent - collect, 0.0)
        if woke_late > max(collect, store):
            return (f"the sampler woke {woke_late:.3f} s late for sample {record.seq} (reading it "
                    f"{collect:.3f} s, storing it {store:.3f} s): the host did not run it (CPU "
                    f"starvation or a paused VM), longer than the {self.interval:g} s interval")
        if store > collect:
            return (f"storing sample {record.seq} took {store:.3f} s (reading it {collect:.3f} s),"
                    f" longer than the {self.interval:g} s interval")
        steps = dict(self._step_s)
        slowest = max(steps, key=steps.__getitem__) if steps else None
        detail = ""
        if slowest is not None and steps[slowest] > 0.5 * collect:
            detail = f" ({slowest} {steps[slowest]:.3f} s)"
        return (f"sample {record.seq} took {collect:.3f} s{detail}, longer than the"
                f" {self.interval:g} s interval")

    def _missed(self, seq: int, reason: str, collect_s: float | None = None) -> SampleRecord:
        return SampleRecord(
            seq=seq,
            scheduled_ts=self.scheduled(seq),
            missed=True,
            miss_reason=reason,
            collect_s=collect_s,
        )

    # -- one sample ----------------------------------------------------------------------------
    def _sample(self, seq: int) -> SampleRecord:
        started = time.perf_counter()
        try:
            record = self.collect(seq)
        except Exception as exc:  # server gone, connection reset, timeout...
            self._close()
            return self._missed(
                seq, f"{type(exc).__name__}: {exc}", collect_s=time.perf_counter() - started
            )
        record.collect_s = time.perf_counter() - started
        return record

    def collect(self, seq: int) -> SampleRecord:
        """Read one sample now (raises when the server cannot be read)."""
        self._step_s = {}
        mark = time.perf_counter()

        def step(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            self._step_s[name] = self._step_s.get(name, 0.0) + now - mark
            mark = now

        if self._conn is None:
            self._conn = self.connect()
            if hasattr(self._conn, "_read_timeout"):
                # A hung (not dead) server must not hang the sampler: pymysql applies this
                # before every read; the caller's connect() has no read_timeout argument.
                self._conn._read_timeout = self._conn._write_timeout = self.read_timeout_s
            step("connecting")
        ts = dt.datetime.now(dt.UTC)
        with self._conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS")
            counters = numeric_status(cur.fetchall())
            step("SHOW GLOBAL STATUS")
            if self._has_metrics is not False:
                counters.update(self._metrics(cur))
                step("INNODB_METRICS")
            if self._has_binlog_files is not False and "Binlog_bytes_written" not in counters:
                counters.update(self._binlog_files(cur))
                step("SHOW BINARY LOGS")
            engine_text = None
            need_fallback = self._status_has_lsn is False or (
                self._status_has_lsn is None and _lsn_names(counters) is None
            )
            if self.engine_status or need_fallback:
                cur.execute("SHOW ENGINE INNODB STATUS")
                row = cur.fetchone()
                engine_text = row[2] if row else None
                if isinstance(engine_text, bytes):
                    engine_text = engine_text.decode("utf-8", "replace")
                step("SHOW ENGINE INNODB STATUS")
        if self._status_has_lsn is None:
            self._status_has_lsn = _lsn_names(counters) is not None

        record = SampleRecord(seq=seq, scheduled_ts=self.scheduled(seq), ts=ts)
        record.status_z = compress_status(counters)
        record.pages_dirty = _int(counters.get("Innodb_buffer_pool_pages_dirty"))
        record.pages_data = _int(counters.get("Innodb_buffer_pool_pages_data"))
        record.pages_free = _int(counters.get("Innodb_buffer_pool_pages_free"))
        names = _lsn_names(counters) if self._status_has_lsn else None
        if names is not None:
            record.lsn = _int(counters.get(names[0]))
            record.checkpoint_lsn = _int(counters.get(names[1]))
        elif engine_text:
            record.lsn, record.checkpoint_lsn = parse_engine_lsn(engine_text)
        if engine_text and self.engine_status:
            section = engine_log_section(engine_text)
            if section is not None:
                record.engine_log_z = zlib.compress(section.encode(), 6)

        mysqld, driver = self._proc_figures(record, step)
        self._host_figures(record, mysqld, driver)
        return record

    def _proc_figures(self, record: SampleRecord, step: Callable[[str], None]
                      ) -> tuple[int | None, int | None]:
        """mysqld's memory and CPU, the driver's CPU, both processes' context switches and the
        datadir's disk counters from ``/proc``; returns the pids read (mysqld, driver)."""
        mysqld = _resolve_pid(self.mysqld_pid)
        if mysqld is not None:
            record.mysqld_rss_bytes, record.mysqld_vsz_bytes = proc_memory(mysqld)
            step("/proc/PID/status")
            for name, value in proc_memory_split(mysqld).items():
                setattr(record, name, value)
            # smaps_rollup walks mysqld's mappings under its mmap lock: the step most likely to
            # wait on mysqld (see proc_memory_split).
            step("/proc/PID/smaps_rollup")
            record.mysqld_cpu_user_s, record.mysqld_cpu_sys_s = proc_cpu(mysqld)
            switches = self._switches["mysqld"].read(mysqld)
            if switches is not None:
                record.mysqld_ctxsw_voluntary, record.mysqld_ctxsw_involuntary = switches
        driver = _resolve_pid(self.driver_pid)
        if driver is not None:
            record.driver_cpu_user_s, record.driver_cpu_sys_s = proc_cpu(driver)
            switches = self._switches["driver"].read(driver)
            if switches is not None:
                record.driver_ctxsw_voluntary, record.driver_ctxsw_involuntary = switches
        # The CPU, then one small file per thread of each (mysqld: a few dozen).
        step("/proc/PID/stat, task/*/status")
        if self.device is not None:
            try:
                with open("/proc/diskstats") as f:
                    disk = parse_diskstats(f.read(), *self.device)
            except OSError:
                disk = None
            if disk is not None:
                (
                    record.disk_reads,
                    record.disk_writes,
                    record.disk_read_sectors,
                    record.disk_write_sectors,
                ) = disk
        return mysqld, driver

    def _host_figures(self, record: SampleRecord, mysqld: int | None, driver: int | None) -> None:
        """What the rest of the machine did: host CPU, our own CPU and I/O, the group's I/O.

        Read last and together, so the host's counters and ours span the same instant as
        closely as the sampler can make them (a few /proc reads: well under a millisecond).
        """
        cpu = host_cpu()
        if cpu is not None:
            record.host_cpu_busy_s, record.host_cpu_idle_s, record.host_cpu_steal_s = cpu
        user, system = proc_cpu(os.getpid())
        if user is not None and system is not None:
            record.tool_cpu_s = user + system
        own = [proc_io_bytes(pid) for pid in (mysqld, driver, os.getpid()) if pid is not None]
        if own and own[0] is not None and mysqld is not None:
            record.own_io_read_bytes = sum(o[0] for o in own if o is not None)
            record.own_io_write_bytes = sum(o[1] for o in own if o is not None)
        if self.group_counters is not None:
            try:
                group = self.group_counters()
            except (OSError, ValueError):  # the group is gone or unreadable: no figure, no miss
                group = None
            if group is not None:
                record.group_read_ios, record.group_write_ios = group.read_ios, group.write_ios
                record.group_read_bytes = group.read_bytes
                record.group_write_bytes = group.write_bytes

    def _metrics(self, cur: Any) -> dict[str, int | float]:
        """The enabled flush counters of ``INNODB_METRICS`` (:data:`METRICS_QUERY`); on the
        first tick, a server without the table is remembered and never asked again."""
        rows = _rows_unless_absent(cur, METRICS_QUERY, self._has_metrics, _NO_METRICS_TABLE)
        self._has_metrics = rows is not None
        return metric_counters(rows) if rows is not None else {}

    def _binlog_files(self, cur: Any) -> dict[str, int | float]:
        """:data:`BINLOG_FILES_COUNTER` from ``SHOW BINARY LOGS``; on the first tick, a server
        whose binary log is off is remembered and never asked again."""
        rows = _rows_unless_absent(cur, "SHOW BINARY LOGS", self._has_binlog_files,
                                   _NO_BINARY_LOGGING)
        self._has_binlog_files = rows is not None
        return {BINLOG_FILES_COUNTER: binlog_file_bytes(rows)} if rows is not None else {}

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # already broken; nothing to release
                pass
            self._conn = None


def _rows_unless_absent(cur: Any, query: str, known: bool | None,
                        absent: tuple[int, ...]) -> Any:
    """``query``'s rows, or None when the server answers with an error code of ``absent`` (it
    has no such table, its binary log is off) on the first tick (``known`` None: not asked
    yet). Any other failure, or that answer once the server has answered, raises: the tick is
    missed, as a failed ``SHOW GLOBAL STATUS`` is."""
    try:
        cur.execute(query)
    except Exception as exc:
        code = exc.args[0] if exc.args else None
        if known is None and code in absent:
            return None
        raise
    return cur.fetchall()


#: (current LSN, checkpoint LSN) status variables: MariaDB 10.x+ and XtraDB's, then MySQL
#: 8.0.30+'s (where SHOW ENGINE INNODB STATUS is the only other source).
LSN_STATUS = (("Innodb_lsn_current", "Innodb_lsn_last_checkpoint"),
              ("Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn"))


def _lsn_names(counters: dict[str, int | float]) -> tuple[str, str] | None:
    """The pair of :data:`LSN_STATUS` this server reports, or None."""
    return next((pair for pair in LSN_STATUS if pair[0] in counters and pair[1] in counters),
                None)


def _int(value: int | float | None) -> int | None:
    return None if value is None else int(value)
