"""Checks of one server's cells against its binary and this host, run once per server.

Each runs with a :class:`~runner.admission.checks.CheckContext` narrowed to one server
(:meth:`CheckContext.for_server`): ``context.server``, ``context.options`` (its option list)
and ``context.cells`` (the cells it runs). Cells whose knobs did not translate are skipped:
their problem is already reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from core.experiment.spec import CellSpec
from core.experiment.translation import Translation
from core.flavors import values_equal
from core.units import format_size
from runner import knobs as knobs_mod
from runner.admission.checks import CheckContext, HostCheck, Problem, as_int, is_on
from runner.host.facts import human_size
from runner.server.optionfiles import SANDBOX_OWNED
from runner.server.options import dry_run, variables_in_message
from runner.workloads.registry import adapter_class

#: Connections flushbench itself holds open during a run (sampler + control).
OWN_CONNECTIONS = 2
#: Extra huge pages beyond the buffer pool (InnoDB's other large-page allocations).
LARGE_PAGES_MARGIN = 1.05


def _translated(context: CheckContext) -> list[tuple[CellSpec, Translation]]:
    return [(c, tr) for c in context.cells if (tr := context.translations.get(c.key))]


class DryRuns(HostCheck):
    """Let the binary parse each distinct option set once; report complaints and silent changes.

    Cells that translate to the same options share one parse (a 10,000-cell matrix over two
    raw variables is a handful of parses); ``context.progress(done, total)`` is told after each.
    """

    name = "server's own parse"

    def check(self, context: CheckContext) -> list[Problem]:
        server = context.server
        assert server is not None
        distinct: dict[tuple[tuple[str, str], ...], tuple[CellSpec, Translation, dict]] = {}
        for cell, tr in _translated(context):
            # large_pages is left out: without huge pages mysqld warns about the host, which
            # the huge-page check reports with a fix. Unknown names were reported before.
            combined = {k: v for k, v in context.options_of(cell).items()
                        if k != "large_pages" and k in context.options and k not in SANDBOX_OWNED}
            distinct.setdefault(tuple(sorted(combined.items())), (cell, tr, combined))
        out: list[Problem] = []
        for index, (cell, tr, combined) in enumerate(distinct.values(), 1):
            result = dry_run(server, combined)
            if context.progress is not None:
                context.progress(index, len(distinct))
            where = context.where(cell)
            mentioned: set[str] = set()
            for message in result.messages:
                mentioned.update(variables_in_message(message))
                out.append(Problem(
                    f"{server.label} says: {message}", self._where(message, tr, where, context),
                    f"use a value in the server's range (see `{server.mysqld.name} --verbose"
                    " --help`)"))
            # Values the server changes without a word (rounding) would fail after start.
            for name, wanted in tr.server_options.items():
                got = result.values.get(name)
                if name in mentioned or got is None or name == "large_pages":
                    continue
                if as_int(wanted) is not None and as_int(got) is not None and not values_equal(
                        str(as_int(wanted)), got):
                    out.append(Problem(f"{server.label} would run with {name}={got}, not {wanted}",
                                       where(tr.origin.get(name, name)),
                                       "use a value the server keeps as given"))
        return out

    @staticmethod
    def _where(message: str, tr: Translation, where: Callable[[str], str],
               context: CheckContext) -> str:
        """The key path (or base config line) of the first variable the message names."""
        for name in variables_in_message(message):
            if name in tr.origin:
                return where(tr.origin[name])
            if name in context.base:
                return f"{context.base_path}: {name} (base config of {context.source})"
        return context.source


class IoCapacity(HostCheck):
    """io_capacity above io_capacity_max, wherever each of them was set (5.6 and later)."""

    name = "io_capacity"

    def applies(self, context: CheckContext) -> bool:
        server = context.server
        return server is not None and knobs_mod.family(server.flavor, server.version) != "5.5"

    def check(self, context: CheckContext) -> list[Problem]:
        server = context.server
        assert server is not None
        out: list[Problem] = []
        for cell, tr in _translated(context):
            opts = context.options_of(cell)
            io = as_int(opts.get("innodb_io_capacity"))
            mx = as_int(opts.get("innodb_io_capacity_max"))
            if io is None:
                default = as_int(context.options.get("innodb_io_capacity"))
                if mx is not None and default is not None and default > mx:
                    # MySQL 8.0+'s default is 10000: io_capacity_max alone below it lowers
                    # io_capacity too, a change no knob asked for.
                    origin = tr.origin.get("innodb_io_capacity_max")
                    where = (context.where(cell)(origin) if origin
                             else f"{context.base_path}: innodb_io_capacity_max")
                    out.append(Problem(
                        f"io_capacity_max {mx} is below {server.label}'s default io_capacity"
                        f" {default}: the server lowers innodb_io_capacity to {mx} at start",
                        where, f"set io_capacity too (at most {mx})"))
                continue
            if mx is None:
                auto = max(2 * io, 2000)
                out.append(Problem(f"innodb_io_capacity_max not set: {server.label} uses"
                                   f" max(2 × io_capacity, 2000) = {auto} for io_capacity {io}",
                                   note=True))
            elif io > mx:
                origin = tr.origin.get("innodb_io_capacity")
                where = (context.where(cell)(origin) if origin
                         else f"{context.base_path}: innodb_io_capacity")
                behaviour = ("MariaDB silently lowers innodb_io_capacity to"
                             " innodb_io_capacity_max at start (a warning in the error log)"
                             if server.flavor == "mariadb"
                             else "MySQL lowers innodb_io_capacity to innodb_io_capacity_max"
                             " at start (a warning in the error log; seen on 9.7)")
                out.append(Problem(f"io_capacity {io} exceeds io_capacity_max {mx} on"
                                   f" {server.label}: {behaviour}", where,
                                   "raise io_capacity_max (knob or"
                                   " variables.innodb_io_capacity_max) or lower io_capacity"))
        return out


class LargePages(HostCheck):
    """Enough free huge pages for each ``large_pages`` cell's buffer pool.

    Without an experiment (``doctor``): whether any huge page is free at all.
    """

    name = "huge pages"
    required = False

    def check(self, context: CheckContext) -> list[Problem]:
        mem = context.host.meminfo
        page = mem.get("Hugepagesize", 2048) * 1024
        free_pages = mem.get("HugePages_Free", 0)
        if context.experiment is None:
            return [] if free_pages else [Problem(
                self.describe(context), fix="only for large_pages experiments: sysctl -w"
                " vm.nr_hugepages=N (plan/validate compute N)")]
        out: list[Problem] = []
        for cell, tr in _translated(context):
            opts = context.options_of(cell)
            if not is_on(opts.get("large_pages")) or "large_pages" not in opts:
                continue
            pool = as_int(opts.get("innodb_buffer_pool_size")) or as_int(
                context.options.get("innodb_buffer_pool_size")) or 128 * 1024**2
            need_pages = math.ceil(pool * LARGE_PAGES_MARGIN / page)
            if free_pages >= need_pages:
                continue
            target = mem.get("HugePages_Total", 0) - free_pages + need_pages
            where = (context.where(cell)("large_pages") if "large_pages" in tr.origin
                     else f"{context.base_path}: large_pages")
            out.append(Problem(f"large_pages needs {need_pages} huge pages of {format_size(page)}"
                               f" for a {format_size(pool)} buffer pool, {free_pages} free"
                               " (HugePages_Free × Hugepagesize ="
                               f" {human_size(free_pages * page)})", where,
                               f"run `sysctl -w vm.nr_hugepages={target}` as root before the run"))
        return out

    def describe(self, context: CheckContext) -> str:
        mem = context.host.meminfo
        return (f"{mem.get('HugePages_Free', 0)} of {mem.get('HugePages_Total', 0)} free,"
                f" {mem.get('Hugepagesize', 2048)} kB each")


class MemoryAndPageSize(HostCheck):
    """A buffer pool larger than this machine's memory; a page size set per cell."""

    name = "memory and page size"

    def check(self, context: CheckContext) -> list[Problem]:
        total_kb = context.host.meminfo.get("MemTotal")
        out: list[Problem] = []
        for cell, tr in _translated(context):
            if "innodb_page_size" in tr.server_options:
                out.append(Problem(
                    "innodb_page_size is fixed when the dataset is created; a cell cannot"
                    " change it", context.where(cell)(tr.origin.get("innodb_page_size", "")),
                    "set innodb_page_size in the base config (datasets are keyed by page size)"))
            pool = as_int(context.options_of(cell).get("innodb_buffer_pool_size"))
            if pool is not None and total_kb and pool > total_kb * 1024:
                origin = tr.origin.get("innodb_buffer_pool_size")
                where = (context.where(cell)(origin) if origin
                         else f"{context.base_path}: innodb_buffer_pool_size")
                out.append(Problem(f"a {format_size(pool)} buffer pool is more than this"
                                   f" machine's {human_size(total_kb * 1024)} of memory", where,
                                   "use a smaller buffer_pool_size"))
        return out


class Connections(HostCheck):
    """The workload's connections plus flushbench's own within max_connections."""

    name = "connections"

    def check(self, context: CheckContext) -> list[Problem]:
        exp = context.experiment
        assert exp is not None
        out: list[Problem] = []
        most, why = adapter_class(exp.workload.driver).connection_limit()
        for cell, tr in _translated(context):
            conns = tr.connections or exp.workload.connections
            if most is not None and conns > most:
                out.append(Problem(f"{conns:,} connections: {why}", _connections_key(
                    context, cell, tr), f"use at most {most:,} connections"))
                continue
            limit = as_int(context.options_of(cell).get("max_connections")) or as_int(
                context.options.get("max_connections"))
            if limit is None or conns + OWN_CONNECTIONS <= limit:
                continue
            out.append(Problem(f"{conns} connections + {OWN_CONNECTIONS} of flushbench's exceed"
                               f" max_connections {limit}", _connections_key(context, cell, tr),
                               f"set variables.max_connections: {conns + OWN_CONNECTIONS + 8}"
                               " (fixed) or raise it in the base config"))
        return out


def _connections_key(context: CheckContext, cell: CellSpec, tr: Translation) -> str:
    """Where a cell's connections were written: its ``connections`` knob or the workload's."""
    return (context.where(cell)("connections") if tr.connections is not None
            else f"{context.source}: workload.connections")


#: Run per server, in this order, after its cells translated (the parse and io_capacity only
#: when the translations were made here, not replayed from the queue).
TRANSLATION_CHECKS: tuple[HostCheck, ...] = (DryRuns(), IoCapacity())
SERVER_CHECKS: tuple[HostCheck, ...] = (LargePages(), MemoryAndPageSize(), Connections())
