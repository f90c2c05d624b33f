"""Everything that can be checked before a server starts, checked at once.

:func:`preflight` resolves every server profile the cells use (the top-level ``server`` or a
cell's ``server`` knob), translates each cell's knobs for its own real binary, checks each
variable against that binary's option list, lets the binary parse every distinct option set
(``--verbose --help``, no server started) and checks the host: allocator
libraries, huge pages, free disk, workload drivers, connection limits. All problems are
collected and raised as one :class:`PreflightError`, one line each::

    experiments/x.yaml: matrix.io_capacity[0]: mariadb-10.11 says: option
    'innodb-io-capacity': unsigned value 50 adjusted to 100 — use a value in the server's range

The report it returns carries each cell's :class:`~runner.knobs.Translation`, which ``plan``
prints and the runner writes into my.cnf.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flushbench import paths
from flushbench.errors import ConfigError, FlushbenchError, PreflightError
from flushbench.flavors import DEFAULT_LOG_FILE_SIZE, redo_capacity, values_equal
from flushbench.units import format_size, parse_size
from flushbench.validation import close_matches
from runner import knobs as knobs_mod
from runner.disk import DiskNeed, disk_needed
from runner.host.capabilities import can_set_thp
from runner.knobs import Translation, translate_for_option_list, translate_partial
from runner.knobs import rules as knobs_rules
from runner.server.optionfiles import (
    SANDBOX_OWNED,
    base_config_path,
    read_mycnf,
    sandbox_problem,
)
from runner.server.options import dry_run, option_list, variables_in_message
from runner.server.profiles import ResolvedServer, load_profile, profile_path, resolve_server
from runner.spec import (
    CellSpec,
    DatasetSpec,
    ExperimentSpec,
    cell_server,
    expand,
    load_experiment,
)
from runner.workloads.registry import adapter_class, get_workload

#: Huge-page figures come from here (tests point it at a recorded copy).
MEMINFO = Path("/proc/meminfo")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")

#: ibdata, undo, temp tablespace and mysql.* tables of a fresh datadir.
DATADIR_OVERHEAD = 256 * 1024**2
#: Connections flushbench itself holds open during a run (sampler + control).
OWN_CONNECTIONS = 2
#: Extra huge pages beyond the buffer pool (InnoDB's other large-page allocations).
LARGE_PAGES_MARGIN = 1.05


@dataclass
class PreflightReport:
    """What preflight established: the server, base options and each cell's translation."""

    experiment: ExperimentSpec
    source: str
    cells: list[CellSpec]
    server: ResolvedServer
    base_config: Path
    base_options: dict[str, str]
    options: dict[str, str]
    translations: dict[str, Translation]
    dataset_bytes: int
    redo_bytes: int
    disk_needed: int
    disk_free: int | None
    notes: list[str] = field(default_factory=list)
    #: What the disk figure is made of (snapshot, live datadir, logs, kept datadirs).
    disk: DiskNeed | None = None
    #: The base config file's text, as the sandbox writes it under the cell's options.
    base_cnf_text: str = ""
    #: Every server the cells use, by profile name as the experiment writes it (the top-level
    #: ``server`` or a cell's ``server`` knob), with each one's option list. ``server`` and
    #: ``options`` above are the first cell's.
    servers: dict[str, ResolvedServer] = field(default_factory=dict)
    option_lists: dict[str, dict[str, str]] = field(default_factory=dict)

    def server_name(self, cell: CellSpec) -> str:
        """The profile name (or path) that runs ``cell``."""
        return cell_server(self.experiment, cell)

    def server_of(self, cell: CellSpec) -> ResolvedServer:
        """The resolved binary that runs ``cell``."""
        return self.servers.get(self.server_name(cell), self.server)

    def options_of(self, cell: CellSpec) -> dict[str, str]:
        """The option list of the binary that runs ``cell``."""
        return self.option_lists.get(self.server_name(cell), self.options)

    def servers_label(self) -> str:
        """``mariadb-10.11``, or ``2 servers: mariadb-debian (mariadb-10.11), mysql-5.5`` for
        one-line messages."""
        labels = [f"{name} ({srv.label})" if name != srv.label else name
                  for name, srv in self.servers.items()] or [self.server.label]
        if len(labels) == 1:
            return self.server.label
        return f"{len(labels)} servers: {', '.join(labels)}"

    @property
    def page_size(self) -> int:
        """InnoDB page size (base config, else the binary's default): part of a dataset key."""
        return self.page_size_for(self.options)

    def page_size_for(self, options: dict[str, str]) -> int:
        """The page size a server with this option list creates its datadir with."""
        text = self.base_options.get("innodb_page_size") or options.get("innodb_page_size")
        return _as_int(text) or 16384

    def server_options(self, cell: CellSpec) -> dict[str, str]:
        """The cell's my.cnf options on top of the base config (cell wins)."""
        return {**self.base_options, **self.translations[cell.key].server_options}


def human_size(n_bytes: float) -> str:
    """``1.3G``-style size for estimates (format_size is exact and would print raw bytes)."""
    n = float(n_bytes)
    for unit, factor in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= factor:
            return f"{n / factor:.1f}{unit}".replace(".0" + unit, unit)
    return f"{int(n)}B"


def dataset_bytes(spec: DatasetSpec) -> int:
    """Estimated on-disk size of a loaded dataset (its loader's own estimate)."""
    return adapter_class(spec.effective_loader).dataset_bytes(spec)


def read_meminfo(path: Path | None = None) -> dict[str, int]:
    """``/proc/meminfo`` as name → number (kB figures stay in kB, page counts as counts)."""
    out: dict[str, int] = {}
    try:
        text = (path or MEMINFO).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[name.strip()] = int(parts[0])
    return out


def free_disk(directory: Path) -> int | None:
    """Free bytes on the filesystem that holds (or would hold) ``directory``."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def _as_int(text: str | None) -> int | None:
    if text is None or text == "":
        return None
    try:
        return parse_size(text)
    except ValueError:
        try:
            return int(float(text))
        except ValueError:
            return None


def _is_on(text: str | None) -> bool:
    return text is not None and text.strip().lower() in {"", "1", "on", "true", "yes"}


class _Locator:
    """Maps (cell, knob) to the experiment key path that set it."""

    def __init__(self, exp: ExperimentSpec, cells: list[CellSpec], source: str) -> None:
        self.source = source
        self.fixed = exp.fixed.values()
        self.axes = exp.matrix.axes()
        self.n_product = len(cells) - len(exp.include)

    def path(self, cell: CellSpec, knob: str) -> str:
        field_name = f"variables.{knob[4:]}" if knob.startswith("var.") else knob
        if cell.position >= self.n_product:
            return f"include[{cell.position - self.n_product}].{field_name}"
        if knob in self.fixed:
            return f"fixed.{field_name}"
        if knob in self.axes:
            levels = self.axes[knob]
            value = cell.knobs.get(knob)
            index = next((i for i, v in enumerate(levels) if v == value), None)
            return f"matrix.{field_name}" + (f"[{index}]" if index is not None else "")
        if knob == "connections":
            return "workload.connections"
        return field_name

    def where(self, cell: CellSpec) -> Callable[[str], str]:
        # With servers per cell, a matrix key path alone does not say which server refused
        # the value: name the cell's server profile too.
        server = cell.knobs.get("server")
        suffix = f" (server {server})" if server is not None else ""
        return lambda knob: f"{self.source}: {self.path(cell, knob)}{suffix}"


class _Problems:
    """Ordered, de-duplicated problem lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        if line not in self.lines:
            self.lines.append(line)

    def error(self, where: str, what: str, fix: str | None = None) -> None:
        self.add(FlushbenchError(what, where=where, fix=fix).render())

    def extend_from(self, exc: FlushbenchError) -> None:
        for line in exc.problem_lines():
            self.add(line)


def _server_where(message: str, translation: Translation, base: dict[str, str],
                  base_path: Path, where: Callable[[str], str], source: str) -> str:
    for name in variables_in_message(message):
        if name in translation.origin:
            return where(translation.origin[name])
        if name in base:
            return f"{base_path}: {name} (base config of {source})"
    return source


def preflight(
    exp: ExperimentSpec,
    source: str,
    cells: list[CellSpec] | None = None,
    *,
    work_dir: Path | None = None,
    stored: dict[str, dict] | None = None,
    keep_datadirs: bool = False,
    progress: Callable[[int, int], None] | None = None,
    profile_files: Mapping[str, Path] | None = None,
) -> PreflightReport:
    """Check everything about an experiment that can be checked without starting a server.

    Parameters
    ----------
    exp:
        The validated experiment.
    source:
        Its file path (for messages).
    cells:
        The expanded cells (expanded here when not given).
    work_dir:
        Where datasets and run directories go (default :func:`flushbench.paths.work_dir`).
    progress:
        Told ``(done, total)`` after each of the binary's dry runs (one per distinct option
        set of the cells).
    keep_datadirs:
        Every run keeps its datadir (``--keep-datadirs``): the disk check counts them all.
    stored:
        Cell key → the translation stored when the experiment was queued
        (:func:`stored_translation`). When the binary here is the one it was made for, a worker
        runs exactly that and skips the per-cell checks already done; host checks always run.
    profile_files:
        Server name (as the experiment or a cell writes it) → the profile file to read instead
        of ``configs/servers/NAME.yaml``: the copies of the profiles as queued.

    Returns
    -------
    PreflightReport
        Including each cell's translation.

    Raises
    ------
    ConfigError
        The matrix itself does not expand (from :func:`runner.spec.expand`).
    PreflightError
        Every other problem, one line each (``.problems`` holds the list).
    """
    cells = cells if cells is not None else expand(exp, source)
    work_dir = work_dir or paths.work_dir()
    problems = _Problems()
    notes: list[str] = []
    loc = _Locator(exp, cells, source)
    src_dir = Path(source).parent

    # -- server profiles and binaries: every server a cell names ---------------------------
    servers: dict[str, ResolvedServer] = {}
    option_lists: dict[str, dict[str, str]] = {}
    for name, first in _server_names(exp, cells).items():
        named_at = f"{source}: {loc.path(first, 'server')}"
        resolved = _resolve_server(name, src_dir, named_at, profile_files, problems)
        if resolved is None:
            continue
        try:
            option_lists[name] = option_list(resolved)
        except PreflightError as exc:
            problems.extend_from(exc)
            continue
        servers[name] = resolved

    # -- base config ----------------------------------------------------------------------------
    base_path = Path(exp.base_config)
    base: dict[str, str] = {}
    try:
        base_path = base_config_path(exp.base_config, relative_to=src_dir)
        base = read_mycnf(base_path)
    except ConfigError as exc:
        if exc.where == "base_config":
            problems.error(f"{source}: base_config", exc.what, exc.fix)
        else:
            for line in exc.problem_lines():
                problems.add(f"{line} (base config named by {source}: base_config)")
    allowed = frozenset(exp.allow_variables)
    for name, value in base.items():
        refusal = sandbox_problem(name, value, allowed)
        if refusal is not None:
            problems.error(f"{base_path}: {name} (base config of {source})", *refusal)
    for server_name, server in servers.items():
        options = option_lists[server_name]
        for name in base:
            if name not in options and name not in SANDBOX_OWNED:
                close = close_matches(name, options, n=3, cutoff=0.75)
                problems.error(f"{base_path}: {name} (base config of {source})",
                               f"not a variable of {server.label} (server {server_name})",
                               f"did you mean {', '.join(close)}?" if close else
                               "remove it or check `mysqld --verbose --help`")

    # -- per server, per cell: translation, option list, the server's own parse -----------------
    translations: dict[str, Translation] = {}
    partial: dict[str, Translation] = {}
    groups = {name: [c for c in cells if cell_server(exp, c) == name] for name in servers}
    for name, server in servers.items():
        group, options = groups[name], option_lists[name]
        reused = _reuse_stored(stored, server, group)
        if reused is not None:
            translations.update(reused)
            partial.update(reused)
        for cell in group if reused is None else ():
            where = loc.where(cell)
            tr, lines = translate_partial(cell.knobs, server.flavor, server.version, where=where,
                                          allowed=allowed,
                                          option_names=options or None)
            for line in lines:
                problems.add(line)
            # Check what did translate too, so one absent knob hides nothing else.
            partial[cell.key] = tr
            if not lines:
                translations[cell.key] = tr
            for line in translate_for_option_list(tr, options, label=server.label, where=where):
                problems.add(line)
        if reused is None:
            _dry_runs(server, group, partial, base, base_path, options, loc, source, problems,
                      progress)
            _io_capacity(server, group, partial, base, base_path, loc, problems, notes)
        # Host checks that read the binary's defaults (buffer pool, max_connections).
        _large_pages(group, partial, base, base_path, options, loc, problems)
        _memory_and_page_size(group, partial, base, base_path, options, loc, problems)
        _connections(exp, group, partial, base, options, loc, source, problems)

    # -- host: allocator, huge pages, connections, disk, drivers ---------------------------------
    _allocators(cells, partial, loc, problems)
    _thp(cells, partial, loc, problems)
    _storage(cells, partial, base, work_dir, loc, problems, notes)
    _cpus(exp, source, problems)
    data = dataset_bytes(exp.dataset)
    redo = max((_redo_bytes(groups[n], partial, base, srv) for n, srv in servers.items()),
               default=_redo_bytes(cells, partial, base, None))
    need = disk_needed(data + redo + DATADIR_OVERHEAD, sum(exp.repetitions_of(c) for c in cells),
                       keep_datadirs=keep_datadirs)
    if len(servers) > 1:
        # A datadir is not portable between servers: one dataset snapshot per server.
        need = dataclasses.replace(need, snapshot=need.snapshot * len(servers))
    disk_free = free_disk(work_dir)
    if disk_free is not None and need.total > disk_free:
        redo_cell = _redo_cell(cells, redo)
        if redo_cell is not None and redo > disk_free - 2 * data:
            problems.error(loc.where(redo_cell)("log_file_size"),
                           f"{format_size(redo)} of redo does not fit: {work_dir} has"
                           f" {human_size(disk_free)} free after a {human_size(2 * data)}"
                           " dataset snapshot and working copy",
                           "use a smaller log_file_size or set FLUSHBENCH_WORK to a bigger disk")
        else:
            problems.error(f"{source}: dataset",
                           f"the queue needs ~{human_size(need.total)} in {work_dir}"
                           f" ({need.describe()}), only {human_size(disk_free)} is free",
                           "free space, lower the scale, set FLUSHBENCH_WORK to a bigger disk"
                           + (", or drop --keep-datadirs" if keep_datadirs else ""))
    _drivers(exp, source, problems)
    if exp.pre_run.drop_caches and not os.access(DROP_CACHES, os.W_OK):
        notes.append(f"pre_run.drop_caches: {DROP_CACHES} is not writable here; caches will"
                     " not be dropped (the run logs a warning)")

    if problems.lines:
        n = len(problems.lines)
        raise PreflightError(
            f"{n} problem{'s' if n > 1 else ''} found before starting any server:\n  "
            + "\n  ".join(problems.lines),
            problems=problems.lines,
        )
    first = cell_server(exp, cells[0])  # no problems means every server resolved
    for tr in translations.values():
        for note in tr.notes:
            if note not in notes:
                notes.append(note)
    return PreflightReport(
        experiment=exp,
        source=source,
        cells=cells,
        server=servers[first],
        base_config=base_path,
        base_options=base,
        options=option_lists[first],
        translations=translations,
        dataset_bytes=data,
        redo_bytes=redo,
        disk_needed=need.total,
        disk=need,
        disk_free=disk_free,
        notes=notes,
        base_cnf_text=base_path.read_text(encoding="utf-8"),
        servers=servers,
        option_lists=option_lists,
    )


def _server_names(exp: ExperimentSpec, cells: list[CellSpec]) -> dict[str, CellSpec]:
    """Every server profile the cells use, in cell order, with the first cell using it."""
    out: dict[str, CellSpec] = {}
    for cell in cells:
        out.setdefault(cell_server(exp, cell), cell)
    return out


def _resolve_server(name: str, src_dir: Path, named_at: str,
                    profile_files: Mapping[str, Path] | None,
                    problems: _Problems) -> ResolvedServer | None:
    """The binary of one server profile, or None with the problem added.

    ``named_at`` is ``file: key path`` of the key that named it (``server``,
    ``matrix.server[1]``, ``include[0].server``); ``profile_files`` maps a name to the
    profile as it was queued (a worker runs what was queued, not what the file holds now).
    """
    path = profile_files.get(name) if profile_files else None
    try:
        profile = load_profile(str(path) if path else name, relative_to=src_dir)
        return resolve_server(profile, str(path or profile_path(name, src_dir)))
    except ConfigError as exc:
        if exc.where == "server":  # unknown or not built: the fix names the build command
            problems.error(named_at, exc.what, exc.fix)
        else:
            for line in exc.problem_lines():
                problems.add(f"{line} (profile named by {named_at})")
    except PreflightError as exc:
        problems.add(f"{exc.render()} (profile named by {named_at})")
    return None


def stored_translation(server: ResolvedServer, translation: Translation) -> dict:
    """What the queue keeps per cell: the translation and the binary it was checked against."""
    return {"server_version": server.version_string, **dataclasses.asdict(translation)}


def _reuse_stored(stored: dict[str, dict] | None, server: ResolvedServer,
                  cells: list[CellSpec]) -> dict[str, Translation] | None:
    """The stored translations, when every cell has one made for this very binary."""
    if not stored:
        return None
    out = {}
    for cell in cells:
        entry = dict(stored.get(cell.key) or {})
        if entry.pop("server_version", None) != server.version_string:
            return None
        try:
            out[cell.key] = Translation(**entry)
        except TypeError:  # stored by an older flushbench: check it all again
            return None
    return out


def _dry_runs(server: ResolvedServer, cells: list[CellSpec], translations: dict[str, Translation],
              base: dict[str, str], base_path: Path, options: dict[str, str], loc: _Locator,
              source: str, problems: _Problems,
              progress: Callable[[int, int], None] | None = None) -> None:
    """Let the binary parse each distinct option set once; report complaints and silent changes.

    Cells that translate to the same options share one parse (a 10,000-cell matrix over two
    raw variables is a handful of parses); ``progress(done, total)`` is told after each one.
    """
    distinct: dict[tuple[tuple[str, str], ...], tuple[CellSpec, Translation, dict]] = {}
    for cell in cells:
        tr = translations.get(cell.key)
        if tr is None:
            continue
        # large_pages is left out: without huge pages mysqld warns about the host, which the
        # huge-page check reports with a fix. Unknown names were reported above.
        combined = {
            k: v for k, v in {**base, **tr.server_options}.items()
            if k != "large_pages" and k in options and k not in SANDBOX_OWNED
        }
        distinct.setdefault(tuple(sorted(combined.items())), (cell, tr, combined))
    for index, (cell, tr, combined) in enumerate(distinct.values(), 1):
        result = dry_run(server, combined)
        if progress is not None:
            progress(index, len(distinct))
        where = loc.where(cell)
        mentioned: set[str] = set()
        for message in result.messages:
            mentioned.update(variables_in_message(message))
            problems.error(
                _server_where(message, tr, base, base_path, where, source),
                f"{server.label} says: {message}",
                f"use a value in the server's range (see `{server.mysqld.name} --verbose --help`)",
            )
        # Values the server changes without a word (rounding) would fail after start.
        for name, wanted in tr.server_options.items():
            got = result.values.get(name)
            if name in mentioned or got is None or name == "large_pages":
                continue
            if _as_int(wanted) is not None and _as_int(got) is not None and not values_equal(
                str(_as_int(wanted)), got
            ):
                problems.error(where(tr.origin.get(name, name)),
                               f"{server.label} would run with {name}={got}, not {wanted}",
                               "use a value the server keeps as given")


def _io_capacity(server: ResolvedServer, cells: list[CellSpec],
                 translations: dict[str, Translation], base: dict[str, str], base_path: Path,
                 loc: _Locator, problems: _Problems, notes: list[str]) -> None:
    """io_capacity above io_capacity_max, wherever each of them was set."""
    if knobs_mod.family(server.flavor, server.version) == "5.5":
        return
    for cell in cells:
        tr = translations.get(cell.key)
        if tr is None:
            continue
        opts = {**base, **tr.server_options}
        io = _as_int(opts.get("innodb_io_capacity"))
        mx = _as_int(opts.get("innodb_io_capacity_max"))
        if io is None:
            continue
        if mx is None:
            auto = max(2 * io, 2000)
            note = (f"innodb_io_capacity_max not set: {server.label} uses max(2 × io_capacity,"
                    f" 2000) = {auto} for io_capacity {io}")
            if note not in notes:
                notes.append(note)
            continue
        if io > mx:
            origin = tr.origin.get("innodb_io_capacity")
            where = loc.where(cell)(origin) if origin else f"{base_path}: innodb_io_capacity"
            behaviour = ("MariaDB silently lowers innodb_io_capacity to innodb_io_capacity_max"
                         " at start (a warning in the error log)" if server.flavor == "mariadb"
                         else "MySQL refuses an io_capacity above io_capacity_max")
            problems.error(where, f"io_capacity {io} exceeds io_capacity_max {mx} on"
                           f" {server.label}: {behaviour}",
                           "raise io_capacity_max (knob or variables.innodb_io_capacity_max) or"
                           " lower io_capacity")


def _allocators(cells: list[CellSpec], translations: dict[str, Translation], loc: _Locator,
                problems: _Problems) -> None:
    for cell in cells:
        tr = translations.get(cell.key)
        lib = tr.allocator if tr is not None else knobs_mod.allocator_library(
            cell.knobs.get("allocator"))
        if lib is None or Path(lib).exists():
            continue
        name = cell.knobs.get("allocator", "")
        dirs = ", ".join(str(d) for d in knobs_rules.ALLOCATOR_LIB_DIRS)
        problems.error(loc.where(cell)("allocator"),
                       f"allocator {name}: {Path(lib).name} not found in {dirs}",
                       f"apt-get install {knobs_mod.ALLOCATOR_PACKAGES.get(name, name)}")


def _large_pages(cells: list[CellSpec], translations: dict[str, Translation], base: dict[str, str],
                 base_path: Path, options: dict[str, str], loc: _Locator,
                 problems: _Problems) -> None:
    mem = None
    for cell in cells:
        tr = translations.get(cell.key)
        if tr is None:
            continue
        opts = {**base, **tr.server_options}
        if not _is_on(opts.get("large_pages")) or "large_pages" not in opts:
            continue
        mem = mem if mem is not None else read_meminfo()
        pool = _as_int(opts.get("innodb_buffer_pool_size")) or _as_int(
            options.get("innodb_buffer_pool_size")) or 128 * 1024**2
        page = mem.get("Hugepagesize", 2048) * 1024
        free_pages = mem.get("HugePages_Free", 0)
        need_pages = math.ceil(pool * LARGE_PAGES_MARGIN / page)
        if free_pages >= need_pages:
            continue
        target = mem.get("HugePages_Total", 0) - free_pages + need_pages
        where = (loc.where(cell)("large_pages") if "large_pages" in tr.origin
                 else f"{base_path}: large_pages")
        problems.error(where,
                       f"large_pages needs {need_pages} huge pages of {format_size(page)} for a"
                       f" {format_size(pool)} buffer pool, {free_pages} free"
                       f" (HugePages_Free × Hugepagesize = {human_size(free_pages * page)})",
                       f"run `sysctl -w vm.nr_hugepages={target}` as root before the run")


def _memory_and_page_size(cells: list[CellSpec], translations: dict[str, Translation],
                          base: dict[str, str], base_path: Path, options: dict[str, str],
                          loc: _Locator, problems: _Problems) -> None:
    """A buffer pool larger than this machine's memory; a page size set per cell."""
    total_kb = read_meminfo().get("MemTotal")
    for cell in cells:
        tr = translations.get(cell.key)
        if tr is None:
            continue
        if "innodb_page_size" in tr.server_options:
            problems.error(loc.where(cell)(tr.origin.get("innodb_page_size", "")),
                           "innodb_page_size is fixed when the dataset is created; a cell"
                           " cannot change it",
                           "set innodb_page_size in the base config (datasets are keyed by"
                           " page size)")
        pool = _as_int({**base, **tr.server_options}.get("innodb_buffer_pool_size"))
        if pool is not None and total_kb and pool > total_kb * 1024:
            origin = tr.origin.get("innodb_buffer_pool_size")
            where = (loc.where(cell)(origin) if origin
                     else f"{base_path}: innodb_buffer_pool_size")
            problems.error(where, f"a {format_size(pool)} buffer pool is more than this"
                           f" machine's {human_size(total_kb * 1024)} of memory",
                           "use a smaller buffer_pool_size")
def _thp(cells: list[CellSpec], translations: dict[str, Translation], loc: _Locator,
         problems: _Problems) -> None:
    """A cell that sets transparent huge pages needs a host (and rights) that can set them."""
    wanting = [c for c in cells if (tr := translations.get(c.key)) is not None and tr.thp]
    if not wanting:
        return
    cap = can_set_thp()
    if not cap.ok:
        # The capability's own fix names the setting generically; name the knob instead.
        fix = ("run flushbench as root (it writes " + str(cap.where) + "/enabled), or drop "
               "transparent_hugepages from the experiment") if "writable" in cap.detail else (
            "drop transparent_hugepages from the experiment (this kernel has no THP)")
        problems.error(loc.where(wanting[0])("transparent_hugepages"),
                       f"transparent_hugepages cannot be set here: {cap.detail}", fix)


def _storage(cells: list[CellSpec], translations: dict[str, Translation], base: dict[str, str],
             work_dir: Path, loc: _Locator, problems: _Problems, notes: list[str]) -> None:
    """A storage profile needs a host that can throttle the work directory's device."""
    from runner.host.capabilities import can_throttle

    limited = [c for c in cells if (translations.get(c.key) or Translation()).storage]
    if not limited:
        return
    capability = can_throttle(work_dir)
    if not capability.ok:
        problems.error(loc.where(limited[0])("storage"),
                       f"this host cannot emulate storage: {capability.detail}", capability.fix)
    for cell in limited:
        method = {**base, **translations[cell.key].server_options}.get("innodb_flush_method",
                                                                        "")
        if not method.upper().startswith("O_DIRECT"):
            note = (f"{loc.path(cell, 'storage')}: innodb_flush_method is {method or 'the'}"
                    " default: data pages go through the page cache and are written back"
                    " by the kernel, which cgroup v1 does not throttle — use O_DIRECT for a"
                    " meaningful storage profile (docs/storage.md)")
            if note not in notes:
                notes.append(note)


def _cpus(exp: ExperimentSpec, source: str, problems: _Problems) -> None:
    """CPU lists must name online CPUs, and the pinning method must work here."""
    from runner.host.capabilities import can_pin_cpus
    from runner.host.cpus import validate_cpus

    cpus = exp.cpus
    asked = [(k, getattr(cpus, k)) for k in ("mysqld", "driver")]
    asked = [(k, v) for k, v in asked if v is not None]
    for key, value in asked:
        try:
            validate_cpus(value, f"{source}: cpus.{key}")
        except FlushbenchError as exc:
            problems.add(exc.render())
    if asked:
        capability = can_pin_cpus(cpus.method)
        if not capability.ok:
            problems.error(f"{source}: cpus.method", capability.detail, capability.fix)


def _connections(exp: ExperimentSpec, cells: list[CellSpec], translations: dict[str, Translation],
                 base: dict[str, str], options: dict[str, str], loc: _Locator, source: str,
                 problems: _Problems) -> None:
    for cell in cells:
        tr = translations.get(cell.key)
        if tr is None:
            continue
        conns = tr.connections or exp.workload.connections
        opts = {**base, **tr.server_options}
        limit = _as_int(opts.get("max_connections")) or _as_int(options.get("max_connections"))
        if limit is None or conns + OWN_CONNECTIONS <= limit:
            continue
        where = (loc.where(cell)("connections") if tr.connections is not None
                 else f"{source}: workload.connections")
        problems.error(where,
                       f"{conns} connections + {OWN_CONNECTIONS} of flushbench's exceed"
                       f" max_connections {limit}",
                       f"set variables.max_connections: {conns + OWN_CONNECTIONS + 8} (fixed) or"
                       " raise it in the base config")


def _redo_bytes(cells: list[CellSpec], translations: dict[str, Translation], base: dict[str, str],
                server: ResolvedServer | None) -> int:
    """The largest total redo of any cell (base config when no knob sets it)."""
    flavor = server.flavor if server is not None else None
    best = 0
    for cell in cells:
        tr = translations.get(cell.key)
        opts = {**base, **(tr.server_options if tr else {})}
        total = redo_capacity(opts, flavor)
        if total is None:  # the server's default file size
            total = redo_capacity({**opts, "innodb_log_file_size": str(DEFAULT_LOG_FILE_SIZE)},
                                  flavor) or 0
        best = max(best, total)
    return best


def _redo_cell(cells: list[CellSpec], redo: int) -> CellSpec | None:
    """The cell whose log_file_size knob sets the largest redo (None: the base config does)."""
    for cell in cells:
        value = cell.knobs.get("log_file_size")
        if value is not None and value == redo:
            return cell
    return None


def _drivers(exp: ExperimentSpec, source: str, problems: _Problems) -> None:
    """The driver's and the loader's own preflight (binaries), and unknown binary names."""
    binaries = exp.workload.binaries
    users = {exp.workload.driver: "workload.driver", exp.dataset.effective_loader: "dataset.loader"}
    known = sorted({n for d in users for n in adapter_class(d).binary_names})
    for key in binaries:
        if key not in known:
            close = close_matches(key, known)
            problems.error(f"{source}: workload.binaries.{key}", "unknown driver binary name",
                           f"did you mean '{close[0]}'?" if close else
                           "use one of " + ", ".join(known))
    driver = get_workload(exp.workload.driver, binaries)
    for line in driver.problems():
        problems.error(f"{source}: workload.driver", line)
    if exp.dataset.effective_loader != exp.workload.driver or driver.load_problems() != \
            driver.problems():
        loader = get_workload(exp.dataset.effective_loader, binaries)
        for line in loader.load_problems():
            problems.error(f"{source}: dataset.loader", line)


def validate_file(path: str | Path, *, work_dir: Path | None = None,
                  progress: Callable[[int, int], None] | None = None) -> PreflightReport:
    """Load, expand and preflight one experiment file (what ``flushbench validate`` does)."""
    exp = load_experiment(path)
    cells = expand(exp, str(path))
    return preflight(exp, str(path), cells, work_dir=work_dir, progress=progress)

