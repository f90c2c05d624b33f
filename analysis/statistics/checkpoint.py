"""InnoDB's maximum checkpoint age, from InnoDB's own rule, per flavor and version.

MariaDB reports it (status ``Innodb_checkpoint_max_age``); MySQL does not, and the raw redo
capacity overstates it (InnoDB keeps a safety margin and per-thread reserve). The rules below
were read in the server sources (cited per function; also in ``docs/statistics.md``):

- **MySQL 5.6 / 5.7** — ``storage/innobase/log/log0log.cc``, ``log_calc_max_ages()``:
  ``cap = (innodb_log_file_size − 2048) × innodb_log_files_in_group``; ``cap −= cap/10``;
  ``free = 4 pages × (10 + innodb_thread_concurrency) + 8 pages``;
  ``margin = cap − free``; ``margin −= margin/10``; ``max_checkpoint_age = margin``.
  (Read in the 5.7 source; 5.6 is assumed to be the same — not checked.)
- **MySQL 8.0.11 – 8.0.29** — ``storage/innobase/log/log0chkp.cc``, ``log_calc_max_ages()``:
  ``real = files × file_size − 2048 × files``; ``safety = min(real/10, 256 × 4 pages)``;
  ``writer = align512(real − safety)``; ``extra = align512(writer × 5 %)``;
  the limit at which user threads wait for a checkpoint (``lsn_capacity_for_free_check``)
  is ``writer − extra``.
- **MySQL 8.0.30+** — ``storage/innobase/log/log0files_capacity.cc``
  (``hard_logical_capacity_for_physical``, ``soft_logical_capacity_for_hard``) with
  ``innodb_redo_log_capacity`` = C, 32 files: ``lsn_cap = C × 30/32 − (31 × 2048 + 2 × 64 KiB)``;
  ``hard = align512(lsn_cap − align512_up(10 % × align_page(C/32)))``;
  ``soft = align512(hard × 95 %)``. User threads wait at ``soft`` minus a concurrency margin
  that depends on the running threads, so ``soft`` is an upper bound. Compared on MySQL 9.7.4
  (2026-11-28, ``innodb_monitor_enable=module_log``): ``INNODB_METRICS``' ``log_free_space`` +
  ``log_lsn_checkpoint_age`` equalled ``soft`` at a 256M capacity in two readings (ages 303546
  and 56148); at 64M and 1G the two counters were not read at the same LSN (the free space is
  refreshed by InnoDB's own threads) and their sum was 20 bytes above ``soft`` in the quietest
  reading, up to 56 KB off in others.
- **MariaDB 10.8+** — ``storage/innobase/log/log0log.cc``, ``log_t::set_capacity()``:
  ``cap = innodb_log_file_size − 12288``; ``cap −= cap/10``; ``margin = cap − 48 pages``;
  ``margin −= margin/10``. Checked on a real MariaDB 10.11.19 (2026-11-21): 100 MiB →
  84216915, 256 MiB → 216714978, equal to its ``Innodb_checkpoint_max_age``.
- **MariaDB 10.5 – 10.7** — the same rule with a 2048-byte header instead of 12288
  (one log file since 10.5); not checked against a server.
- **MariaDB ≤ 10.4** — the MySQL 5.6/5.7 rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from core.flavors import version_number

#: Redo log block size (OS_FILE_LOG_BLOCK_SIZE).
LOG_BLOCK = 512
#: Header bytes per log file before MySQL 8.0.30 / MariaDB 10.8 (LOG_FILE_HDR_SIZE).
LOG_FILE_HDR_SIZE = 4 * LOG_BLOCK
#: MariaDB 10.8+ log_t::START_OFFSET.
MARIADB_START_OFFSET = 12288
#: MySQL 8.0.30+: redo files the capacity is split into (LOG_N_FILES).
MYSQL_LOG_N_FILES = 32
#: MySQL 8.0.30+: LOG_EXTRA_SAFETY_MARGIN = 2 × UNIV_PAGE_SIZE_MAX.
MYSQL_EXTRA_SAFETY_MARGIN = 2 * 65536


@dataclass(frozen=True)
class CheckpointLimit:
    """Maximum checkpoint age in bytes and the rule that produced it."""

    bytes: float
    rule: str


def _num(variables: Mapping[str, object], name: str, default: float | None = None) -> float:
    value = variables.get(name, default)
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        if default is None:
            raise KeyError(f"variable {name} is missing or not a number: {value!r}") from None
        return float(default)


def _align_down(x: float, a: int) -> float:
    return float(int(x) // a * a)


def _align_up(x: float, a: int) -> float:
    return float(-(-int(math.ceil(x)) // a) * a)


def mysql57_max_age(file_size: float, n_files: float, page_size: float,
                    thread_concurrency: float = 0) -> float:
    """MySQL 5.6/5.7 ``log_sys->max_checkpoint_age`` (log0log.cc ``log_calc_max_ages``)."""
    cap = int((file_size - LOG_FILE_HDR_SIZE) * n_files)
    cap -= cap // 10
    free = int(4 * page_size * (10 + thread_concurrency) + 8 * page_size)
    margin = cap - free
    margin -= margin // 10
    return float(margin)


def mysql80_max_age(file_size: float, n_files: float, page_size: float) -> float:
    """MySQL 8.0.11–8.0.29 ``lsn_capacity_for_free_check`` (log0chkp.cc ``log_calc_max_ages``)."""
    real = file_size * n_files - LOG_FILE_HDR_SIZE * n_files
    safety = min(int(0.1 * real), int(256 * 4 * page_size))
    writer = _align_down(real - safety, LOG_BLOCK)
    extra = _align_down(writer * 0.05, LOG_BLOCK)
    return writer - extra


def mysql8030_max_age(capacity: float, page_size: float) -> float:
    """MySQL 8.0.30+ soft logical redo capacity (log0files_capacity.cc)."""
    overhead = (MYSQL_LOG_N_FILES - 1) * LOG_FILE_HDR_SIZE + MYSQL_EXTRA_SAFETY_MARGIN
    lsn_capacity = int(capacity * (MYSQL_LOG_N_FILES - 2) / MYSQL_LOG_N_FILES - overhead)
    file_size = _align_down(capacity / MYSQL_LOG_N_FILES, int(page_size))
    earlier = _align_up(math.ceil(0.10 * file_size), LOG_BLOCK)
    hard = _align_down(lsn_capacity - earlier, LOG_BLOCK)
    return _align_down(math.floor(hard * 0.95), LOG_BLOCK)


def mariadb_max_age(file_size: float, page_size: float, header: int) -> float:
    """MariaDB 10.5+ ``log_sys.max_checkpoint_age`` (log0log.cc ``log_t::set_capacity``)."""
    cap = int(file_size - header)
    cap -= cap // 10
    margin = cap - 48 * int(page_size)
    margin -= margin // 10
    return float(margin)


def max_checkpoint_age(
    flavor: str, version: str, variables: Mapping[str, object]
) -> CheckpointLimit:
    """InnoDB's maximum checkpoint age for this server, from its variables.

    Parameters
    ----------
    flavor:
        ``"mysql"`` (Percona Server too) or ``"mariadb"`` (case-insensitive).
    version:
        ``@@version``, e.g. ``"8.0.36"`` or ``"10.11.19-MariaDB"``.
    variables:
        SHOW GLOBAL VARIABLES values (strings or numbers): ``innodb_log_file_size``,
        ``innodb_log_files_in_group`` (default 2 on MySQL < 8.0.30, 1 on MariaDB 10.5+),
        ``innodb_redo_log_capacity`` (MySQL 8.0.30+), ``innodb_page_size`` (default 16384),
        ``innodb_thread_concurrency`` (default 0).

    Returns
    -------
    CheckpointLimit
        Bytes and the rule's name (``"mysql-5.7"``, ``"mysql-8.0.11"``, ``"mysql-8.0.30"``,
        ``"mariadb-10.8"``, ``"mariadb-10.5"``).

    Raises
    ------
    KeyError
        A variable the rule needs is missing.
    ValueError
        Unknown flavor or version string.
    """
    fl = flavor.strip().lower()
    ver = version_number(version)
    page = _num(variables, "innodb_page_size", 16384)
    if fl in ("mariadb", "mariadbd"):
        size = _num(variables, "innodb_log_file_size")
        if ver >= (10, 8, 0):
            return CheckpointLimit(mariadb_max_age(size, page, MARIADB_START_OFFSET),
                                   "mariadb-10.8")
        if ver >= (10, 5, 0):
            return CheckpointLimit(mariadb_max_age(size, page, LOG_FILE_HDR_SIZE),
                                   "mariadb-10.5")
        files = _num(variables, "innodb_log_files_in_group", 2)
        conc = _num(variables, "innodb_thread_concurrency", 0)
        return CheckpointLimit(mysql57_max_age(size, files, page, conc), "mysql-5.7")
    if fl in ("mysql", "percona", "percona-server"):
        if ver >= (8, 0, 30):
            if "innodb_redo_log_capacity" in variables:
                cap = _num(variables, "innodb_redo_log_capacity")
            else:
                cap = _num(variables, "innodb_log_file_size") * _num(
                    variables, "innodb_log_files_in_group", 2)
            return CheckpointLimit(mysql8030_max_age(cap, page), "mysql-8.0.30")
        size = _num(variables, "innodb_log_file_size")
        files = _num(variables, "innodb_log_files_in_group", 2)
        if ver >= (8, 0, 11):
            return CheckpointLimit(mysql80_max_age(size, files, page), "mysql-8.0.11")
        conc = _num(variables, "innodb_thread_concurrency", 0)
        return CheckpointLimit(mysql57_max_age(size, files, page, conc), "mysql-5.7")
    raise ValueError(f"unknown server flavor {flavor!r} (expected mysql or mariadb)")
