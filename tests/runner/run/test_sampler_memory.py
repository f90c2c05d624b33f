"""mysqld's RSS split from /proc: parsed from recorded kernel output, and read live."""

from __future__ import annotations

import os
from pathlib import Path

from runner.run.sampler import parse_memory_split, proc_memory, proc_memory_split

PROC = Path(__file__).resolve().parents[2] / "fixtures" / "proc"


def _kb(text: str, key: str) -> int:
    line = next(ln for ln in text.splitlines() if ln.startswith(key + ":"))
    return int(line.split()[1]) * 1024


def test_split_of_a_recorded_mariadbd() -> None:
    """``/proc/PID/status`` and ``smaps_rollup`` of a MariaDB 10.11 mariadbd (kernel 6.x)."""
    status = (PROC / "mysqld-status.txt").read_text()
    rollup = (PROC / "mysqld-smaps_rollup.txt").read_text()
    split = parse_memory_split(status, rollup)
    assert split == {
        "mysqld_rss_anon_bytes": _kb(status, "RssAnon"),
        "mysqld_rss_file_bytes": _kb(status, "RssFile"),
        "mysqld_rss_shmem_bytes": _kb(status, "RssShmem"),
        "mysqld_hugetlb_bytes": _kb(status, "HugetlbPages"),
        "mysqld_anon_hugepages_bytes": _kb(rollup, "AnonHugePages"),
    }
    # The kernel's VmRSS is the sum of the three parts.
    parts = sum(split[k] for k in ("mysqld_rss_anon_bytes", "mysqld_rss_file_bytes",
                                   "mysqld_rss_shmem_bytes"))
    assert parts == _kb(status, "VmRSS")
    assert _kb(status, "VmSize") > 1000 * parts  # why VSZ never shares an axis with RSS


def test_split_without_smaps_rollup_or_with_an_old_kernel() -> None:
    status = "VmRSS:\t  1000 kB\nVmSize:\t 9000 kB\n"  # no RssAnon: before Linux 4.5
    assert parse_memory_split(status, None) == {}
    assert parse_memory_split("RssAnon:\t 12 kB\n", "AnonHugePages:  2048 kB\n") == {
        "mysqld_rss_anon_bytes": 12 * 1024, "mysqld_anon_hugepages_bytes": 2048 * 1024}


def test_live_split_of_this_process_adds_up_to_its_rss() -> None:
    split = proc_memory_split(os.getpid())
    rss, _ = proc_memory(os.getpid())
    assert rss is not None and split["mysqld_rss_anon_bytes"] > 0
    assert "mysqld_anon_hugepages_bytes" in split
    parts = sum(split[k] for k in ("mysqld_rss_anon_bytes", "mysqld_rss_file_bytes",
                                   "mysqld_rss_shmem_bytes"))
    # Two reads a moment apart of a live process: equal up to what it allocated in between.
    assert abs(parts - rss) <= 0.05 * rss


def test_gone_process_gives_nothing() -> None:
    assert proc_memory_split(2**22 + 7) == {}
