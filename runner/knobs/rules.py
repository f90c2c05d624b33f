"""The per-flavor rules that turn one knob value into server variables (docs/domain.md §2).

The knob table (:mod:`core.experiment.knob_table`) declares the knobs; :data:`KNOB_RULES` here
gives each its rule, which writes to a :class:`Builder` for one cell and one server.

An experiment says ``log_file_size: 4000M`` (the *total* redo size) and
``flush_neighbor_pages: area``; what goes into my.cnf depends on the server. Where a knob's
variable was renamed or exists only in some engines, the binary's own option list
(``mysqld --verbose --help``, passed in as ``option_names``) decides; flavor and version
decide only when no list is given:

=====================  =======================  ===========================  =====================
knob                   MariaDB 10.5+            MySQL/Percona 5.6–8.0.29     8.0.30+ / 5.5
=====================  =======================  ===========================  =====================
log_file_size (total)  innodb_log_file_size     file_size × files_in_group   redo_log_capacity /
                                                (2 files)                    2 files, < 4G (5.5)
flush_neighbor_pages   innodb_flush_neighbors   innodb_flush_neighbors       XtraDB 5.5: flush_
                       0/1/2                    0/1/2                        neighbor_pages; MySQL
                                                                             5.5: area built in
change_buffering       innodb_change_buffering  innodb_change_buffering      innodb_change_buffering
                       (absent from 11.0)
adaptive_checkpoint    absent                   Percona: cleaner_lsn_age_    XtraDB 5.5: adaptive_
                                                factor; MySQL: absent        flushing_method (5.5.8:
                                                                             adaptive_checkpoint)
=====================  =======================  ===========================  =====================

The table of what each real binary accepts is generated into docs/domain.md by
tests/runner/server/test_servers_55.py.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from core import flavors
from core.errors import ConfigError
from core.experiment.translation import Translation
from core.units import format_size, parse_size

MiB = 1024**2
GiB = 1024**3

#: Where Debian puts the allocator libraries (tests monkeypatch this list).
ALLOCATOR_LIB_DIRS: list[Path] = [
    Path(f"/usr/lib/{platform.machine()}-linux-gnu"),
    Path("/usr/lib64"),
    Path("/usr/lib"),
    Path("/usr/local/lib"),
]
ALLOCATOR_LIBS = {"jemalloc": "libjemalloc.so.2", "tcmalloc": "libtcmalloc_minimal.so.4"}
ALLOCATOR_PACKAGES = {"jemalloc": "libjemalloc2", "tcmalloc": "libtcmalloc-minimal4"}

#: Redo limits (total bytes) by family, from each server's documentation.
REDO_LIMITS = {
    "mysql-5.5": 4 * GiB - 1,  # combined size of the log files must be < 4 GB
    "5.6": 512 * GiB,  # innodb_log_file_size × innodb_log_files_in_group <= 512G
    "8.0.30": 128 * GiB,  # innodb_redo_log_capacity
}


def family(flavor: str, version: tuple[int, ...]) -> str:
    """The knob-table column (:func:`core.flavors.family`), as a :class:`ConfigError`.

    Raises
    ------
    ConfigError
        For MySQL/Percona older than 5.5.
    """
    try:
        return flavors.family(flavor, version)
    except ValueError as exc:
        raise ConfigError(str(exc), where="server", fix="use MySQL/Percona 5.5 or later") from None


def allocator_library(name: str | None) -> str | None:
    """Path of the allocator library to preload (first existing in ALLOCATOR_LIB_DIRS).

    glibc (or None) → None. When the library is nowhere, the path in the first directory is
    returned and preflight reports it missing.
    """
    if name in (None, "glibc"):
        return None
    lib = ALLOCATOR_LIBS[name]
    for directory in ALLOCATOR_LIB_DIRS:
        if (directory / lib).exists():
            return str(directory / lib)
    return str(ALLOCATOR_LIB_DIRS[0] / lib)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _onoff(value: bool) -> str:
    return "ON" if value else "OFF"


def raw_value_text(value: Any) -> str:
    """A raw variable's value as my.cnf text (booleans as ON/OFF, 60.0 as 60)."""
    if isinstance(value, bool):
        return _onoff(value)
    if isinstance(value, float):
        return _num(value)
    return str(value)


def raw_expected(value: Any) -> str:
    if isinstance(value, bool):
        return _onoff(value)
    if isinstance(value, float):
        return _num(value)
    text = str(value)
    if text[-1:].upper() in {"K", "M", "G", "T"}:
        try:
            return str(parse_size(text))
        except ValueError:
            return text
    return text


class Builder:
    """Collects one cell's server options and problems; the knob table's rules write to it."""

    def __init__(
        self,
        flavor: str,
        version: tuple[int, ...],
        where: Callable[[str], str],
        option_names: Iterable[str] | None,
        related: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.flavor = flavor
        self.version = tuple(version[:3])
        self.family = family(flavor, version)
        self.label = flavors.server_label(flavor, version)
        self.where = where
        self.option_names = set(option_names) if option_names is not None else None
        self.related = dict(related or {})
        self.out = Translation()
        self.problems: list[ConfigError] = []

    def set(self, knob: str, name: str, value: str, expected: str | None = None) -> None:
        self.out.server_options[name] = value
        self.out.expected[name] = value if expected is None else expected
        self.out.origin[name] = knob

    def fail(self, knob: str, what: str, fix: str | None) -> None:
        self.problems.append(ConfigError(what, where=self.where(knob), fix=fix))

    def absent(self, knob: str, value: Any, related: Iterable[str] = ()) -> None:
        rel = [r for r in related if self.option_names is None or r in self.option_names]
        if not rel:
            rel = list(self.related.get(knob, ()))
            if self.option_names is not None:
                rel = [r for r in rel if r in self.option_names]
        text = f"; related: {', '.join(rel)}" if rel else "; no related variable exists"
        self.fail(
            knob,
            f"{knob}={raw_value_text(value)} is absent on {self.label}{text}",
            f"drop {knob} for this server, or use a server that has it",
        )

    def switch_text(self, value: bool) -> str:
        """A boolean as my.cnf text: ``ON``/``OFF``, but ``1``/``0`` on 5.5.

        MySQL 5.5.62 ignores ``innodb_doublewrite=OFF`` at start ("ignoring option
        '--innodb-doublewrite' due to invalid value 'OFF'") and keeps the default; it takes
        ``0``/``1`` (checked with ``mysqld --verbose --help``).
        """
        if self.family == "5.5":
            return "1" if value else "0"
        return _onoff(value)

    def has(self, name: str, default: bool) -> bool:
        return name in self.option_names if self.option_names is not None else default

    @property
    def double_pct(self) -> bool:
        # innodb_max_dirty_pages_pct became a double in MySQL 5.7 and MariaDB 10.x; the 5.5
        # engines (MySQL 5.5, XtraDB 5.5 in MariaDB 5.5) take whole percents.
        if self.flavor == "mariadb":
            return self.version >= (10, 0)
        return self.version >= (5, 7)


def _pct(b: Builder, knob: str, name: str, value: float) -> None:
    if b.double_pct:
        b.set(knob, name, _num(value), f"{value:.6f}")
    elif float(value).is_integer():
        b.set(knob, name, str(int(value)))
    else:
        b.fail(knob, f"{knob}={value} on {b.label}: {name} takes whole percents", "use an integer")


def _redo(b: Builder, total: int) -> None:
    knob = "log_file_size"
    if total % MiB:
        b.fail(knob, f"log_file_size {total} bytes is not a whole number of MiB", "use e.g. 2000M")
        return
    fam = b.family
    if fam == "mariadb":
        # One redo file since 10.5; the server accepts any size (verified: 600T parses), so
        # the only limit is disk space, which preflight checks.
        b.set(knob, "innodb_log_file_size", str(total))
        return
    if fam == "8.0.30":
        limit = REDO_LIMITS["8.0.30"]
        if total > limit:
            b.fail(
                knob,
                f"log_file_size {format_size(total)} exceeds {b.label}'s limit:"
                f" innodb_redo_log_capacity <= {format_size(limit)}",
                f"use at most {format_size(limit)}",
            )
            return
        if total < 8 * MiB:
            b.fail(knob, f"innodb_redo_log_capacity must be >= 8M on {b.label}", "use 8M or more")
            return
        b.set(knob, "innodb_redo_log_capacity", str(total))
        return
    # Two files in a group, as in the 2011 study (2 × 2000M = 4000M of redo).
    if total % (2 * MiB):
        b.fail(
            knob,
            f"log_file_size {format_size(total)} (total) does not split into 2 whole-MiB files",
            "use an even number of MiB",
        )
        return
    if fam == "5.5" and b.flavor == "mysql":
        limit = REDO_LIMITS["mysql-5.5"]
    else:
        limit = REDO_LIMITS["5.6"]
    if total > limit:
        b.fail(
            knob,
            f"log_file_size {format_size(total)} exceeds {b.label}'s limit: innodb_log_file_size"
            f" × innodb_log_files_in_group must stay"
            f" {'below 4G' if limit < 4 * GiB else 'at most 512G'}",
            f"use at most {format_size((limit // (2 * MiB)) * 2 * MiB)} (total of both files)"
            + (" or Percona Server / MySQL 5.6+ for larger logs" if limit < 4 * GiB else ""),
        )
        return
    b.set(knob, "innodb_log_file_size", str(total // 2))
    b.set(knob, "innodb_log_files_in_group", "2")


_NEIGHBORS = {"none": "0", "cont": "1", "area": "2"}
#: Percona's 5.5 spelling of the knob (XtraDB 5.5: Percona Server 5.5, MariaDB 5.5).
PERCONA_NEIGHBORS = "innodb_flush_neighbor_pages"
#: XtraDB 5.5's name for adaptive_checkpoint from Percona 5.5.10 on, and its values.
FLUSHING_METHOD = flavors.FLUSHING_METHOD
FLUSHING_METHOD_VALUES = {"none": "native", "estimate": "estimate", "keep_average": "keep_average"}
#: Percona 5.5.8's (and 5.1's) name, whose values are the knob's own.
OLD_CHECKPOINT = "innodb_adaptive_checkpoint"
OLD_CHECKPOINT_VALUES = ("none", "reflex", "estimate", "keep_average")
#: Percona 5.6+'s nearest equivalent.
LSN_AGE_FACTOR = "innodb_cleaner_lsn_age_factor"


def _neighbors(b: Builder, value: str) -> None:
    """The binary's option list decides the spelling; without it, flavor and family do."""
    knob = "flush_neighbor_pages"
    percona_55 = b.flavor == "percona" and b.family == "5.5"
    if b.has(PERCONA_NEIGHBORS, percona_55):
        b.set(knob, PERCONA_NEIGHBORS, value)
    elif b.has("innodb_flush_neighbors", b.family != "5.5"):
        b.set(knob, "innodb_flush_neighbors", _NEIGHBORS[value])
    elif value == "area":
        # MySQL 5.5's buf_flush_try_neighbors always flushes the whole area.
        b.out.notes.append(f"flush_neighbor_pages=area is {b.label}'s built-in behaviour")
    else:
        b.absent(knob, value)


def _mariadb_ignores(b: Builder) -> bool:
    """MariaDB 10.2 lists XtraDB's innodb_cleaner_lsn_age_factor but ignores it.

    10.2 replaced XtraDB with InnoDB 5.7 and kept the variable so old option files still
    start: its ``--help`` says "Deprecated and ignored" (checked on 10.2.11); 10.3 dropped it.
    Setting it parses and shows in SHOW GLOBAL VARIABLES, so only this rule can say it is
    absent.
    """
    return b.flavor == "mariadb" and b.version >= (10, 2)


def _adaptive_checkpoint(b: Builder, value: str) -> None:
    """Which variable exists in the binary decides (Percona 5.5.8, XtraDB 5.5, Percona 5.6+).

    Without an option list: Percona 5.5 up to 5.5.8 has the old name, later 5.5 the new one,
    Percona 5.6+ innodb_cleaner_lsn_age_factor, everything else none of them.
    """
    knob = "adaptive_checkpoint"
    percona = b.flavor == "percona"
    p55 = percona and b.family == "5.5"
    if b.has(OLD_CHECKPOINT, p55 and b.version <= (5, 5, 8)):
        if value not in OLD_CHECKPOINT_VALUES:
            b.fail(knob, f"adaptive_checkpoint={value} is not a value on {b.label}"
                   f" ({OLD_CHECKPOINT})", "use none, reflex, estimate or keep_average")
            return
        b.set(knob, OLD_CHECKPOINT, value)
    elif b.has(FLUSHING_METHOD, p55 and b.version > (5, 5, 8)):
        # Percona renamed it in 5.5.10: none became "native", reflex was dropped.
        if value not in FLUSHING_METHOD_VALUES:
            b.fail(knob, f"adaptive_checkpoint={value} is not a value on {b.label}"
                   f" ({FLUSHING_METHOD})", "use none, estimate or keep_average")
            return
        b.set(knob, FLUSHING_METHOD, FLUSHING_METHOD_VALUES[value])
    elif b.has(LSN_AGE_FACTOR, percona and b.family != "5.5") and not _mariadb_ignores(b):
        if value not in ("legacy", "high_checkpoint"):
            b.fail(knob, f"adaptive_checkpoint={value} is not a value on {b.label}"
                   f" ({LSN_AGE_FACTOR})", "use legacy or high_checkpoint")
            return
        b.set(knob, LSN_AGE_FACTOR, value)
    else:
        b.absent(knob, value)


def flushing_method_note(b: Builder) -> None:
    """Say when XtraDB 5.5's flushing method is set but cannot act
    (:func:`core.flavors.inert_flushing_method`: the one rule, which the scorecard applies to
    what each run recorded)."""
    method = flavors.inert_flushing_method(b.out.server_options)
    if method is None:
        return
    b.out.notes.append(
        f"adaptive_checkpoint={method} acts only while innodb_adaptive_flushing is ON on"
        f" {b.label}: with adaptive_flushing off, pages are flushed only by"
        " max_dirty_pages_pct and the redo's async/sync points (srv0srv.c's master thread)"
        " — set adaptive_flushing: on for the method to act")


# --- one rule per knob: (builder, validated value) → server options or a problem ------------


def switch(variable: str) -> Callable[[Builder, str, Any], None]:
    """A knob that is one ON/OFF variable on every flavor."""

    def rule(b: Builder, knob: str, value: Any) -> None:
        b.set(knob, variable, b.switch_text(value), _onoff(value))

    return rule


def plain(variable: str) -> Callable[[Builder, str, Any], None]:
    """A knob that is one variable with the same value text on every flavor."""

    def rule(b: Builder, knob: str, value: Any) -> None:
        b.set(knob, variable, str(value))

    return rule


def percent(variable: str, *, absent_on_55: bool = False) -> Callable[[Builder, str, Any], None]:
    """A percentage variable (a double from MySQL 5.7 and MariaDB 10).

    ``absent_on_55``: the variable appeared in 5.6; the binary's option list decides when it
    is known, the family otherwise.
    """

    def rule(b: Builder, knob: str, value: Any) -> None:
        if absent_on_55 and not b.has(variable, b.family != "5.5"):
            b.absent(knob, value)
        else:
            _pct(b, knob, variable, value)

    return rule


def io_capacity_max(b: Builder, knob: str, value: int) -> None:
    """innodb_io_capacity_max (5.6+, MariaDB 10): the binary's option list decides."""
    if not b.has("innodb_io_capacity_max", b.family != "5.5"):
        b.absent(knob, value)
    else:
        b.set(knob, "innodb_io_capacity_max", str(value))


def log_file_size(b: Builder, knob: str, value: int) -> None:
    """The total redo size, split per flavor (see the module's table)."""
    _redo(b, value)


def change_buffering(b: Builder, knob: str, value: str) -> None:
    """innodb_change_buffering (none … all) where the engine still has a change buffer.

    MariaDB 11.0 removed the change buffer and its variable; the binary's option list decides,
    the version when none is given.
    """
    if not b.has("innodb_change_buffering",
                 not (b.flavor == "mariadb" and b.version >= (11, 0))):
        b.absent(knob, value)
    else:
        b.set(knob, "innodb_change_buffering", value)


def flush_neighbor_pages(b: Builder, knob: str, value: str) -> None:
    """none/cont/area → innodb_flush_neighbors 0/1/2 (Percona 5.5: its own enum)."""
    _neighbors(b, value)


def adaptive_checkpoint(b: Builder, knob: str, value: str) -> None:
    """Percona's checkpoint age control; absent on MySQL and MariaDB."""
    _adaptive_checkpoint(b, value)


def buffer_pool_instances(b: Builder, knob: str, value: int) -> None:
    """Removed in MariaDB 10.5 (one instance); 10.11 only warns "does nothing now"."""
    if b.family == "mariadb":
        b.absent(knob, value)
    else:
        b.set(knob, "innodb_buffer_pool_instances", str(value))


def flush_method(b: Builder, knob: str, value: str) -> None:
    """innodb_flush_method; O_DIRECT_NO_FSYNC appeared in 5.6.7."""
    if b.family == "5.5" and value == "O_DIRECT_NO_FSYNC":
        b.fail(knob, f"flush_method=O_DIRECT_NO_FSYNC is absent on {b.label} (added in 5.6.7)",
               "use O_DIRECT")
    else:
        b.set(knob, "innodb_flush_method", value)


def large_pages(b: Builder, knob: str, value: bool) -> None:
    """large_pages, and the sandbox is told to check that huge pages are really held."""
    b.set(knob, "large_pages", b.switch_text(value), _onoff(value))
    b.out.large_pages = value


def transparent_hugepages(b: Builder, knob: str, value: str) -> None:
    """Host side: THP mode set around the mysqld start (any flavor, no server variable)."""
    b.out.thp = value


def allocator(b: Builder, knob: str, value: str) -> None:
    """Client side: the library mysqld is started with in ``LD_PRELOAD``."""
    b.out.allocator = allocator_library(value)


def storage(b: Builder, knob: str, value: Any) -> None:
    """Host side: the I/O limits put on mysqld's datadir device for the server's whole life."""
    from core.experiment.storage import resolve_storage

    spec = resolve_storage(value)
    b.out.storage = spec.model_dump() if spec.limited else None


def connections(b: Builder, knob: str, value: int) -> None:
    """Client side: the driver's connection count."""
    b.out.connections = value


def rate(b: Builder, knob: str, value: float) -> None:
    """Client side: the Go tpcc driver's fixed rate (``--rate``)."""
    b.out.rate = value


def server(b: Builder, knob: str, value: str) -> None:
    """Runner side: which server profile runs the cell. Preflight resolved it to the binary
    this builder translates for, so nothing reaches my.cnf (docs/servers.md, "Several
    servers in one experiment")."""


#: A knob's rule: writes the value's server variables for the builder's flavor, or a problem.
Rule = Callable[[Builder, str, Any], None]

#: Knob name → its rule, one for every knob of :data:`core.experiment.knob_table.KNOBS`.
KNOB_RULES: dict[str, Rule] = {
    "server": server,
    "doublewrite": switch("innodb_doublewrite"),
    "max_dirty_pages_pct": percent("innodb_max_dirty_pages_pct"),
    "max_dirty_pages_pct_lwm": percent("innodb_max_dirty_pages_pct_lwm", absent_on_55=True),
    "io_capacity": plain("innodb_io_capacity"),
    "io_capacity_max": io_capacity_max,
    "log_file_size": log_file_size,
    "flush_neighbor_pages": flush_neighbor_pages,
    "change_buffering": change_buffering,
    "adaptive_flushing": switch("innodb_adaptive_flushing"),
    "adaptive_checkpoint": adaptive_checkpoint,
    "buffer_pool_size": plain("innodb_buffer_pool_size"),
    "buffer_pool_instances": buffer_pool_instances,
    "flush_log_at_trx_commit": plain("innodb_flush_log_at_trx_commit"),
    "flush_method": flush_method,
    "allocator": allocator,
    "large_pages": large_pages,
    "transparent_hugepages": transparent_hugepages,
    "connections": connections,
    "rate": rate,
    "storage": storage,
}
