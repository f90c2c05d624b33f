"""Each kind of check, without a server: when it applies, and the problem it words.

The experiments are real files validated by ``load_experiment``; translations are the real
``translate_partial`` of their cells. Host figures come from recorded files (``/proc/meminfo``,
a sysfs THP directory) or, for free disk and drop_caches, from :class:`HostFacts`'s ``known``
facts: the figure a check reads, stated instead of filling a disk.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from core.experiment.cells import expand
from core.experiment.loading import load_experiment
from runner.admission.checks import CheckContext, KeyPaths, Problem, run_checks
from runner.admission.checks_host import (
    Allocator,
    CpuPinning,
    Drivers,
    DropCaches,
    FreeDisk,
    StorageThrottle,
    TransparentHugePages,
    disk_figures,
)
from runner.admission.checks_server import Connections, IoCapacity, LargePages, MemoryAndPageSize
from runner.admission.doctor import as_row, host_checks
from runner.host import facts as facts_mod
from runner.host.capabilities import can_set_thp
from runner.host.facts import HostFacts
from runner.knobs import rules as knobs_rules
from runner.knobs import translate_partial
from runner.server.profiles import ResolvedServer, ServerProfile

MEMINFO = "MemTotal: {total} kB\nHugePages_Total: 4\nHugePages_Free: 4\nHugepagesize: 2048 kB\n"


def _server(flavor: str = "mariadb", version: tuple[int, int, int] = (10, 11, 6)) -> ResolvedServer:
    """A resolved binary as preflight holds it (the checks here read flavor and version)."""
    profile = ServerProfile(version=1, name="t", flavor=flavor, mysqld="/nonexistent/mysqld")
    return ResolvedServer(profile=profile, flavor=flavor, mysqld=Path("/nonexistent/mysqld"),
                          init_kind="install_db", version=version,
                          version_string=f"mysqld Ver {'.'.join(map(str, version))}")


def _context(tmp_path: Path, body: str, *, server: ResolvedServer | None = None,
             base: dict[str, str] | None = None, known: dict | None = None) -> CheckContext:
    """A preflight context for an experiment whose knobs are ``body``, narrowed to ``server``."""
    path = tmp_path / "e.yaml"
    path.write_text(textwrap.dedent("""\
        version: 1
        name: e
        base_config: small
        dataset: {workload: tpcc, warehouses: 1}
        workload: {driver: tpcc, connections: 4, duration: 60s}
        """) + textwrap.dedent(body))
    exp = load_experiment(path)
    cells = expand(exp, str(path))
    server = server or _server()
    keys = KeyPaths(exp, cells, str(path))
    translations = {c.key: translate_partial(c.knobs, server.flavor, server.version,
                                             where=keys.where(c))[0] for c in cells}
    host = HostFacts(tmp_path / "work", known=dict(known or {}))
    context = CheckContext(host=host, experiment=exp, source=str(path), cells=cells,
                           translations=translations, base=base or {},
                           base_path=tmp_path / "base.cnf", keys=keys,
                           servers={"mariadb-debian": server})
    return context.for_server(server, {"innodb_buffer_pool_size": "134217728",
                                       "max_connections": "151"}, cells)


def _lines(found: list[Problem]) -> list[str]:
    return [p.render() for p in found if not p.note]


def _notes(found: list[Problem]) -> list[str]:
    return [p.what for p in found if p.note]


def test_problem_renders_like_an_error() -> None:
    assert Problem("bad", "e.yaml: fixed.x", "use 1").render() == "e.yaml: fixed.x: bad — use 1"
    assert Problem("bad").render() == "bad"


def test_allocator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knobs_rules, "ALLOCATOR_LIB_DIRS", [tmp_path / "lib"])
    context = _context(tmp_path, "matrix: {allocator: [glibc, jemalloc]}\n")
    assert _lines(Allocator().check(context)) == [
        f"{context.source}: matrix.allocator[1]: allocator jemalloc: libjemalloc.so.2 not found"
        f" in {tmp_path / 'lib'} — apt-get install libjemalloc2"]
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libjemalloc.so.2").write_bytes(b"")
    assert Allocator().check(context) == []
    # doctor: one row per allocator, its library's path when present
    doctor = CheckContext(host=context.host)
    assert as_row(Allocator("jemalloc"), doctor).detail == str(tmp_path / "lib/libjemalloc.so.2")
    row = as_row(Allocator("tcmalloc"), doctor)
    assert (row.status, row.detail) == ("warn", "libtcmalloc_minimal.so.4 not found")


def test_transparent_huge_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_thp = tmp_path / "no-thp"
    no_thp.mkdir()
    monkeypatch.setattr(facts_mod, "can_set_thp", lambda: can_set_thp(no_thp))
    assert not TransparentHugePages().applies(_context(tmp_path, "fixed: {io_capacity: 200}\n"))
    context = _context(tmp_path, "fixed: {transparent_hugepages: never}\n")
    assert TransparentHugePages().applies(context)
    assert _lines(TransparentHugePages().check(context)) == [
        f"{context.source}: fixed.transparent_hugepages: transparent_hugepages cannot be set"
        " here: this kernel has no THP — drop transparent_hugepages from the experiment (this"
        " kernel has no THP)"]
    doctor = CheckContext(host=HostFacts(tmp_path))
    assert TransparentHugePages().applies(doctor)
    assert as_row(TransparentHugePages(), doctor).detail == "this kernel has no THP"


def test_storage_throttle(tmp_path: Path) -> None:
    assert not StorageThrottle().applies(_context(tmp_path, "fixed: {io_capacity: 200}\n"))
    context = _context(tmp_path, "fixed: {storage: {write_iops: 1000}}\n")
    assert StorageThrottle().applies(context)
    found = StorageThrottle().check(context)
    # Without O_DIRECT the kernel's writeback escapes a v1 throttle: advice, never a refusal.
    assert _notes(found) == [
        "fixed.storage: innodb_flush_method is the default: data pages go through the page"
        " cache and are written back by the kernel, which cgroup v1 does not throttle — use"
        " O_DIRECT for a meaningful storage profile (docs/storage.md)"]
    cap = context.host.throttle  # the real probe of this host's work directory
    assert _lines(found) == ([] if cap.ok else [
        f"{context.source}: fixed.storage: this host cannot emulate storage: {cap.detail}"
        + (f" — {cap.fix}" if cap.fix else "")])


def test_cpu_pinning(tmp_path: Path) -> None:
    assert CpuPinning().check(_context(tmp_path, "")) == []
    context = _context(tmp_path, "cpus: {mysqld: '4096'}\n")
    lines = _lines(CpuPinning().check(context))
    assert lines and lines[0].startswith(f"{context.source}: cpus.mysqld: ")
    assert "4096" in lines[0]
    assert as_row(CpuPinning("affinity"), CheckContext(host=context.host)).name == \
        "CPU pinning (affinity)"


def test_free_disk(tmp_path: Path) -> None:
    context = _context(tmp_path, "", known={"disk_free": 10 * 1024**2})
    [line] = _lines(FreeDisk().check(context))
    assert line.startswith(f"{context.source}: dataset: the queue needs ~")
    assert line.endswith("only 10M is free — free space, lower the scale, set FLUSHBENCH_WORK"
                         " to a bigger disk")
    assert FreeDisk().check(_context(tmp_path, "", known={"disk_free": 1024**4})) == []
    redo = _context(tmp_path, "matrix: {log_file_size: [48M, 100G]}\n",
                    known={"disk_free": 20 * 1024**3})
    [line] = _lines(FreeDisk().check(redo))
    assert line.startswith(f"{redo.source}: matrix.log_file_size[1]: 100G of redo does not fit")
    row = as_row(FreeDisk(), CheckContext(host=HostFacts(tmp_path, known={"disk_free": 1024})))
    assert (row.status, row.detail) == ("FAIL", f"{tmp_path}: 1K free")


@pytest.mark.parametrize(("flavor", "version", "files"), [
    ("mysql", (5, 5, 62), 2), ("mariadb", (5, 5, 44), 2), ("mariadb", (10, 2, 11), 2),
    ("mariadb", (10, 4, 34), 2), ("mariadb", (10, 5, 0), 1), ("mariadb", (11, 4, 5), 1)])
def test_disk_estimate_counts_the_servers_own_redo_files(
        tmp_path: Path, flavor: str, version: tuple[int, int, int], files: int) -> None:
    """A my.cnf that sets only the file size: MariaDB before 10.5 (as MySQL 5.5) writes two
    files of it (innodb_log_files_in_group's default, seen on 10.2.11 in docs/domain.md's
    table), 10.5+ one."""
    context = _context(tmp_path, "", server=_server(flavor, version),
                       base={"innodb_log_file_size": str(1024**3)})
    assert disk_figures(context).redo == files * 1024**3


def test_drivers(tmp_path: Path) -> None:
    context = _context(tmp_path, "")
    context.experiment.workload.binaries["tpc"] = "/bin/true"  # a typo of a binary name
    lines = _lines(Drivers().check(context))
    assert lines[0] == (f"{context.source}: workload.binaries.tpc: unknown driver binary name"
                        " — did you mean 'tpcc'?")


def test_drop_caches(tmp_path: Path) -> None:
    assert not DropCaches().applies(_context(tmp_path, ""))
    context = _context(tmp_path, "pre_run: {drop_caches: true}\n",
                       known={"drop_caches": False})
    assert DropCaches().applies(context)
    assert _notes(DropCaches().check(context)) == [
        "pre_run.drop_caches: /proc/sys/vm/drop_caches is not writable here; caches will not be"
        " dropped (the run logs a warning)"]
    assert _lines(DropCaches().check(context)) == []
    context.host.known["drop_caches"] = True
    assert DropCaches().check(context) == []


def test_io_capacity(tmp_path: Path) -> None:
    # The spec refuses io_capacity above io_capacity_max among knobs; the base config can't be.
    context = _context(tmp_path, "matrix: {io_capacity: [200, 3000]}\n",
                       base={"innodb_io_capacity_max": "2000"})
    assert IoCapacity().applies(context)
    assert _lines(IoCapacity().check(context)) == [
        f"{context.source}: matrix.io_capacity[1]: io_capacity 3000 exceeds io_capacity_max"
        " 2000 on mariadb-10.11: MariaDB silently lowers innodb_io_capacity to"
        " innodb_io_capacity_max at start (a warning in the error log) — raise io_capacity_max"
        " (knob or variables.innodb_io_capacity_max) or lower io_capacity"]
    alone = _context(tmp_path, "fixed: {io_capacity: 500}\n")
    assert _notes(IoCapacity().check(alone)) == [
        "innodb_io_capacity_max not set: mariadb-10.11 uses max(2 × io_capacity, 2000) = 2000"
        " for io_capacity 500"]
    old = _context(tmp_path, "fixed: {io_capacity: 500}\n", server=_server("mysql", (5, 5, 8)))
    assert not IoCapacity().applies(old)


def test_io_capacity_max_alone_below_the_servers_default(tmp_path: Path) -> None:
    """MySQL 9.7 (default io_capacity 10000) lowers io_capacity to an io_capacity_max set alone
    below it, as a started 9.7.4 did; the default comes from the binary's option list."""
    mysql9 = _server("mysql", (9, 7, 4))
    context = _context(tmp_path, "fixed: {io_capacity_max: 5000}\n", server=mysql9)
    context = context.for_server(mysql9, {"innodb_io_capacity": "10000"}, context.cells)
    assert _lines(IoCapacity().check(context)) == [
        f"{context.source}: fixed.io_capacity_max: io_capacity_max 5000 is below mysql-9.7's"
        " default io_capacity 10000: the server lowers innodb_io_capacity to 5000 at start —"
        " set io_capacity too (at most 5000)"]
    # A default the max covers (MariaDB's 200) is no problem.
    context = context.for_server(mysql9, {"innodb_io_capacity": "200"}, context.cells)
    assert IoCapacity().check(context) == []


def test_large_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO.format(total=24000000))
    monkeypatch.setattr(facts_mod, "MEMINFO", meminfo)
    assert LargePages().check(_context(tmp_path, "fixed: {buffer_pool_size: 256M}\n")) == []
    context = _context(tmp_path, "fixed: {large_pages: true, buffer_pool_size: 256M}\n")
    assert _lines(LargePages().check(context)) == [
        f"{context.source}: fixed.large_pages: large_pages needs 135 huge pages of 2M for a 256M"
        " buffer pool, 4 free (HugePages_Free × Hugepagesize = 8M) — run `sysctl -w"
        " vm.nr_hugepages=135` as root before the run"]
    row = as_row(LargePages(), CheckContext(host=HostFacts(tmp_path)))
    assert (row.status, row.detail) == ("ok", "4 of 4 free, 2048 kB each")


def test_memory_and_page_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO.format(total=1024 * 1024))
    monkeypatch.setattr(facts_mod, "MEMINFO", meminfo)
    assert MemoryAndPageSize().check(_context(tmp_path, "fixed: {buffer_pool_size: 256M}\n")) \
        == []
    context = _context(tmp_path, "fixed: {buffer_pool_size: 2G}\n"
                       "matrix: {variables: {innodb_page_size: [8192]}}\n"
                       "allow_variables: [innodb_page_size]\n")
    assert _lines(MemoryAndPageSize().check(context)) == [
        f"{context.source}: matrix.variables.innodb_page_size[0]: innodb_page_size is fixed when"
        " the dataset is created; a cell cannot change it — set innodb_page_size in the base"
        " config (datasets are keyed by page size)",
        f"{context.source}: fixed.buffer_pool_size: a 2G buffer pool is more than this machine's"
        " 1G of memory — use a smaller buffer_pool_size"]


def test_connections(tmp_path: Path) -> None:
    assert Connections().check(_context(tmp_path, "")) == []
    context = _context(tmp_path, "matrix: {connections: [4, 200]}\n")
    assert _lines(Connections().check(context)) == [
        f"{context.source}: matrix.connections[1]: 200 connections + 2 of flushbench's exceed"
        " max_connections 151 — set variables.max_connections: 210 (fixed) or raise it in the"
        " base config"]
    base = _context(tmp_path, "", base={"max_connections": "3"})
    assert _lines(Connections().check(base)) == [
        f"{base.source}: workload.connections: 4 connections + 2 of flushbench's exceed"
        " max_connections 3 — set variables.max_connections: 14 (fixed) or raise it in the base"
        " config"]


def test_run_checks_keeps_order_and_skips_what_does_not_apply(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             ) -> None:
    monkeypatch.setattr(knobs_rules, "ALLOCATOR_LIB_DIRS", [tmp_path / "lib"])
    context = _context(tmp_path, "fixed: {allocator: jemalloc}\npre_run: {drop_caches: true}\n",
                       known={"disk_free": 1024, "drop_caches": False})
    found = run_checks([DropCaches(), FreeDisk(), StorageThrottle(), Allocator()], context)
    assert [p.note for p in found] == [True, False, False]
    assert "the queue needs" in found[1].what and "allocator jemalloc" in found[2].what


def test_doctor_runs_the_host_checks_without_an_experiment(tmp_path: Path) -> None:
    context = CheckContext(host=HostFacts(tmp_path, known={"drop_caches": False}),
                           db=str(tmp_path / "r.sqlite"))
    rows = {c.name: as_row(c, context) for c in host_checks() if c.applies(context)}
    assert rows["drop_caches"].detail == "/proc/sys/vm/drop_caches not writable"
    assert rows["drop_caches"].fix == "run as root for pre_run.drop_caches"
    assert rows["results db dir writable"].ok
    assert rows["driver tpcc"].required and not rows["driver sysbench"].required
    server_db = CheckContext(host=context.host, db="postgresql://h/db")
    assert "results db dir writable" not in {c.name for c in host_checks()
                                             if c.applies(server_db)}
