"""Everything that can be checked before a server starts, checked at once.

:func:`preflight` resolves every server profile the cells use (the top-level ``server`` or a
cell's ``server`` knob), reads the base config, translates each cell's knobs for its own real
binary (checking each variable against that binary's option list), then runs the checks
(:mod:`runner.admission.checks`): per server, the binary's own parse of every distinct option set
(``--verbose --help``, no server started), io_capacity, huge pages, memory and connections;
then the host: allocator libraries, transparent huge pages, the I/O throttle, CPU pinning,
free disk, workload drivers, drop_caches. All problems are collected and raised as one
:class:`PreflightError`, one line each, in that order::

    experiments/x.yaml: matrix.io_capacity[0]: mariadb-10.11 says: option
    'innodb-io-capacity': unsigned value 50 adjusted to 100 — use a value in the server's range

The report it returns carries each cell's :class:`~runner.knobs.Translation`, which ``plan``
prints and the runner writes into my.cnf.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core import paths
from core.errors import ConfigError, FlushbenchError, PreflightError
from core.experiment.cells import cell_server, expand
from core.experiment.loading import load_experiment
from core.experiment.queued import QueuedExperiment
from core.experiment.spec import CellSpec, ExperimentSpec
from core.experiment.storage import StorageSpec
from core.experiment.translation import Translation
from core.validation import close_matches, config_error_from
from core.yamlio import read_text_file
from runner.admission.checks import CheckContext, KeyPaths, Problem, as_int, run_checks
from runner.admission.checks_host import EXPERIMENT_CHECKS, disk_figures
from runner.admission.checks_host import dataset_bytes as dataset_bytes  # re-exported for callers
from runner.admission.checks_server import SERVER_CHECKS, TRANSLATION_CHECKS
from runner.admission.disk import DiskNeed
from runner.host.devices import resolve_device
from runner.host.facts import HostFacts
from runner.host.facts import human_size as human_size  # re-exported for callers
from runner.knobs import translate_for_option_list, translate_partial
from runner.server.optionfiles import (
    SANDBOX_OWNED,
    base_config_path,
    carried_redo_names,
    parse_mycnf,
    sandbox_problem,
)
from runner.server.options import option_list
from runner.server.profiles import (
    ResolvedServer,
    ServerProfile,
    load_profile,
    profile_path,
    resolve_server,
)


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
    #: The device a storage profile throttles (``/work on ext4 /dev/vda -> vda (254:0),
    #: disk``): where run datadirs are made; None when no cell has a storage profile.
    throttled_device: str | None = None

    def queued_files(self) -> dict[str, Any]:
        """The files the experiment named, as preflight read them: what the queue keeps.

        One server: ``server`` {name, profile}, as before servers were a knob (so the
        measurement hash of a one-server experiment did not change). Cells naming servers:
        ``servers``, name → {name, profile} for every server a cell uses, so editing any of
        those profiles makes a new measurement, as editing the one profile does.
        """
        files: dict[str, Any] = {
            "base_config": {"name": self.experiment.base_config, "text": self.base_cnf_text},
        }
        dumped = {name: {"name": name, "profile": srv.profile.model_dump(mode="json")}
                  for name, srv in self.servers.items()}
        if self.experiment.names_servers():
            files["servers"] = dumped
        else:
            files["server"] = next(iter(dumped.values()))
        return files

    def queued(self, *, files: dict[str, Any] | None = None) -> QueuedExperiment:
        """What to store of this preflighted experiment (``files``: default
        :meth:`queued_files`): each cell's translation with the binary it was checked on."""
        translations = {
            cell.key: QueuedExperiment.translation_entry(self.server_of(cell).version_string,
                                                         self.translations[cell.key])
            for cell in self.cells if cell.key in self.translations}
        return QueuedExperiment(self.experiment, self.source, self.cells, translations,
                                files if files is not None else self.queued_files())

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
        return as_int(text) or 16384

    def storage_label(self, cell: CellSpec) -> str:
        """The cell's emulated disk with its limits (``flash-2011 (r 2000 IOPS 13M/s, w 2000
        IOPS 10M/s)``), or ``the machine's disk (no limits)``."""
        storage = self.translations[cell.key].storage
        if not storage:
            return "the machine's disk (no limits)"
        return StorageSpec.model_validate(storage).label()

    def cpu_placement(self) -> str | None:
        """``mysqld on CPUs 0, driver on 1 (affinity)``, or None when nothing is pinned."""
        cpus = self.experiment.cpus
        parts = [f"{who} on CPUs {where}" for who, where in
                 (("mysqld", cpus.mysqld), ("driver", cpus.driver)) if where is not None]
        return f"{', '.join(parts)} ({cpus.method})" if parts else None

    def host_controls_summary(self) -> str | None:
        """One line naming each storage profile with its cell count, the device it
        throttles, and the CPU placement; None when the cells use neither."""
        counts: dict[str, int] = {}
        for cell in self.cells:
            label = self.storage_label(cell)
            counts[label] = counts.get(label, 0) + 1
        parts = []
        if self.throttled_device is not None:
            profiles = "; ".join(f"{label} for {n} of {len(self.cells)} cells"
                                 if n != len(self.cells) else f"{label} for every cell"
                                 for label, n in counts.items())
            parts.append(f"storage: {profiles}; throttles {self.throttled_device}")
        placement = self.cpu_placement()
        if placement is not None:
            parts.append(f"cpus: {placement}")
        return " · ".join(parts) or None

    def server_options(self, cell: CellSpec) -> dict[str, str]:
        """The cell's my.cnf options on top of the base config (cell wins)."""
        return {**self.base_options, **self.translations[cell.key].server_options}


class _Problems:
    """Ordered, de-duplicated problem lines, and the notes (advice) beside them."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.notes: list[str] = []

    def add(self, line: str) -> None:
        if line not in self.lines:
            self.lines.append(line)

    def error(self, where: str, what: str, fix: str | None = None) -> None:
        self.add(FlushbenchError(what, where=where, fix=fix).render())

    def extend_from(self, exc: FlushbenchError) -> None:
        for line in exc.problem_lines():
            self.add(line)

    def take(self, found: Iterable[Problem]) -> None:
        """What checks found: problems as lines, notes (once each) as notes."""
        for problem in found:
            if not problem.note:
                self.add(problem.render())
            elif problem.what not in self.notes:
                self.notes.append(problem.what)


def preflight(
    exp: ExperimentSpec,
    source: str,
    cells: list[CellSpec] | None = None,
    *,
    work_dir: Path | None = None,
    stored: dict[str, dict] | None = None,
    keep_datadirs: bool = False,
    progress: Callable[[int, int], None] | None = None,
    queued_files: Mapping[str, Any] | None = None,
) -> PreflightReport:
    """Check everything about an experiment that can be checked without starting a server.

    Resolve the servers → read the base config → translate each server's cells (and run that
    server's checks) → run the host checks; then raise every problem at once or report.

    Parameters
    ----------
    exp:
        The validated experiment.
    source:
        Its file path (for messages).
    cells:
        The expanded cells (expanded here when not given).
    work_dir:
        Where datasets and run directories go (default :func:`core.paths.work_dir`).
    progress:
        Told ``(done, total)`` after each of the binary's dry runs (one per distinct option
        set of the cells).
    keep_datadirs:
        Every run keeps its datadir (``--keep-datadirs``): the disk check counts them all.
    stored:
        Cell key → the translation stored when the experiment was queued
        (:meth:`core.experiment.queued.QueuedExperiment.translation_entry`). When the
        binary here is the one it was made for, a worker runs exactly that and skips the
        per-cell checks already done; host checks always run.
    queued_files:
        The base config and server profiles as the experiment was queued
        (:attr:`core.experiment.queued.QueuedExperiment.files`): read from the record instead
        of ``configs/`` or the paths the experiment names (a worker runs what was queued,
        not what the files hold now); the servers are still resolved and checked here.

    Returns
    -------
    PreflightReport
        Including each cell's translation.

    Raises
    ------
    ConfigError
        The matrix itself does not expand (from :func:`core.experiment.cells.expand`).
    PreflightError
        Every other problem, one line each (``.problems`` holds the list).
    """
    cells = cells if cells is not None else expand(exp, source)
    problems = _Problems()
    keys = KeyPaths(exp, cells, source)
    servers, option_lists = _resolve_servers(exp, cells, keys, queued_files, problems)
    base_path, base_text, base = _read_base_config(exp, source, servers, option_lists,
                                                   queued_files, problems)
    context = CheckContext(
        host=HostFacts(work_dir or paths.work_dir()), experiment=exp, source=source,
        cells=cells, base=base, base_path=base_path, base_text=base_text, keys=keys,
        servers=servers,
        option_lists=option_lists, keep_datadirs=keep_datadirs, progress=progress,
    )
    translations = _translate(context, stored, problems)
    problems.take(run_checks(EXPERIMENT_CHECKS, context))
    if problems.lines:
        n = len(problems.lines)
        raise PreflightError(
            f"{n} problem{'s' if n > 1 else ''} found before starting any server:\n  "
            + "\n  ".join(problems.lines),
            problems=problems.lines,
        )
    return _report(context, translations, problems.notes)


def _queued_profiles(queued_files: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Server name → its profile as queued (``servers``, or the one ``server``)."""
    entries = queued_files.get("servers") or {queued_files["server"]["name"]:
                                               queued_files["server"]}
    return {name: entry["profile"] for name, entry in entries.items()}


def _resolve_servers(exp: ExperimentSpec, cells: list[CellSpec], keys: KeyPaths,
                     queued_files: Mapping[str, Any] | None, problems: _Problems,
                     ) -> tuple[dict[str, ResolvedServer], dict[str, dict[str, str]]]:
    """Every server a cell names, resolved to its binary, and each one's option list."""
    servers: dict[str, ResolvedServer] = {}
    option_lists: dict[str, dict[str, str]] = {}
    src_dir = Path(keys.source).parent
    spelt: dict[Path, str] = {}  # profile file → the first name that reached it
    queued = _queued_profiles(queued_files) if queued_files else None
    for name, first in _server_names(exp, cells).items():
        named_at = f"{keys.source}: {keys.path(first, 'server')}"
        if queued is not None:  # one entry per name: spellings were checked when queued
            resolved = _resolve_queued_server(name, queued.get(name), named_at, problems)
        elif _spelt_twice(name, src_dir, named_at, spelt, problems):
            continue
        else:
            resolved = _resolve_server(name, src_dir, named_at, problems)
        if resolved is None:
            continue
        try:
            option_lists[name] = option_list(resolved)
        except PreflightError as exc:
            problems.extend_from(exc)
            continue
        servers[name] = resolved
    return servers, option_lists


def _read_base_config(exp: ExperimentSpec, source: str, servers: dict[str, ResolvedServer],
                      option_lists: dict[str, dict[str, str]],
                      queued_files: Mapping[str, Any] | None, problems: _Problems,
                      ) -> tuple[Path, str, dict[str, str]]:
    """The base config's path (as queued: its name), text and options; what the sandbox owns
    or no server knows refused."""
    base_path = Path(exp.base_config)
    text = ""
    base: dict[str, str] = {}
    try:
        if queued_files:
            queued = queued_files["base_config"]
            base_path = Path(f"{queued['name']} (as queued)")
            text = queued["text"]
        else:
            base_path = base_config_path(exp.base_config, relative_to=Path(source).parent)
            text = read_text_file(base_path, "base config")
        base = parse_mycnf(text, str(base_path))
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
        carried = carried_redo_names(options)  # MySQL 9: read as innodb_redo_log_capacity
        for name in base:
            if name not in options and name not in SANDBOX_OWNED and name not in carried:
                close = close_matches(name, options, n=3, cutoff=0.75)
                problems.error(f"{base_path}: {name} (base config of {source})",
                               f"not a variable of {server.label} (server {server_name})",
                               f"did you mean {', '.join(close)}?" if close else
                               "remove it or check `mysqld --verbose --help`")
    return base_path, text, base


def _translate(context: CheckContext, stored: dict[str, dict] | None,
               problems: _Problems) -> dict[str, Translation]:
    """Translate each server's cells (or replay the queued translations) and check them.

    Returns the complete translations; ``context.translations`` is given every cell's, partial
    ones too, so one absent knob hides no other problem from the checks. Each server's checks
    run right after its cells translate: problems read server by server.
    """
    exp = context.experiment
    assert exp is not None
    translations: dict[str, Translation] = {}
    partial: dict[str, Translation] = {}
    context.translations = partial
    allowed = frozenset(exp.allow_variables)
    for name, server in context.servers.items():
        group = [c for c in context.cells if cell_server(exp, c) == name]
        options = context.option_lists[name]
        reused = QueuedExperiment.reusable(stored, server.version_string, group)
        if reused is not None:
            translations.update(reused)
            partial.update(reused)
        for cell in group if reused is None else ():
            where = context.where(cell)
            tr, lines = translate_partial(cell.knobs, server.flavor, server.version, where=where,
                                          allowed=allowed, option_names=options or None)
            for line in lines:
                problems.add(line)
            partial[cell.key] = tr
            if not lines:
                translations[cell.key] = tr
            for line in translate_for_option_list(tr, options, label=server.label, where=where):
                problems.add(line)
        narrowed = context.for_server(server, options, group)
        if reused is None:  # replayed translations were checked when they were queued
            problems.take(run_checks(TRANSLATION_CHECKS, narrowed))
        # Host checks that read the binary's defaults (buffer pool, max_connections).
        problems.take(run_checks(SERVER_CHECKS, narrowed))
    return translations


def _report(context: CheckContext, translations: dict[str, Translation],
            notes: list[str]) -> PreflightReport:
    """The report of an experiment without problems (so every server resolved)."""
    exp = context.experiment
    assert exp is not None
    for tr in translations.values():
        for note in tr.notes:
            if note not in notes:
                notes.append(note)
    first = cell_server(exp, context.cells[0])
    disk = disk_figures(context)
    return PreflightReport(
        experiment=exp,
        source=context.source,
        cells=context.cells,
        server=context.servers[first],
        base_config=context.base_path,
        base_options=dict(context.base),
        options=dict(context.option_lists[first]),
        translations=translations,
        dataset_bytes=disk.dataset,
        redo_bytes=disk.redo,
        disk_needed=disk.need.total,
        disk=disk.need,
        disk_free=disk.free,
        notes=notes,
        base_cnf_text=context.base_text,
        servers=dict(context.servers),
        option_lists={k: dict(v) for k, v in context.option_lists.items()},
        throttled_device=(resolve_device(context.host.work_dir).describe()
                          if any(tr.storage for tr in translations.values()) else None),
    )


def _server_names(exp: ExperimentSpec, cells: list[CellSpec]) -> dict[str, CellSpec]:
    """Every server profile the cells use, in cell order, with the first cell using it."""
    out: dict[str, CellSpec] = {}
    for cell in cells:
        out.setdefault(cell_server(exp, cell), cell)
    return out


def _spelt_twice(name: str, src_dir: Path, named_at: str, spelt: dict[Path, str],
                 problems: _Problems) -> bool:
    """Whether ``name`` reaches a profile file an earlier name reached (``mariadb-debian`` and
    ``configs/servers/mariadb-debian.yaml``, or ``./x.yaml`` and ``x.yaml``): that would be
    two servers with identical cells, each measured. Refused, naming both spellings."""
    path = profile_path(name, src_dir)
    if not path.exists():
        return False  # _resolve_server says what is missing
    identity = path.resolve()
    other = spelt.setdefault(identity, name)
    if other == name:
        return False
    problems.error(named_at, f"'{name}' and '{other}' are one server profile ({identity}),"
                   " spelt two ways: its cells would be measured twice as two servers",
                   f"write it one way (e.g. '{other}') everywhere the experiment names it")
    return True


def _resolve_server(name: str, src_dir: Path, named_at: str,
                    problems: _Problems) -> ResolvedServer | None:
    """The binary of one server profile, or None with the problem added.

    ``named_at`` is ``file: key path`` of the key that named it (``server``,
    ``matrix.server[1]``, ``include[0].server``).
    """
    try:
        profile = load_profile(name, relative_to=src_dir)
        return resolve_server(profile, str(profile_path(name, src_dir)))
    except ConfigError as exc:
        if exc.where == "server":  # unknown or not built: the fix names the build command
            problems.error(named_at, exc.what, exc.fix)
        else:
            for line in exc.problem_lines():
                problems.add(f"{line} (profile named by {named_at})")
    except PreflightError as exc:
        problems.add(f"{exc.render()} (profile named by {named_at})")
    return None


def _resolve_queued_server(name: str, stored: dict[str, Any] | None, named_at: str,
                           problems: _Problems) -> ResolvedServer | None:
    """The binary of one server profile as the experiment was queued with it (the record's
    copy, never the file), or None with the problem added."""
    where = f"server profile {name!r} as queued"
    if stored is None:
        problems.error(named_at, f"the queued record holds no profile of server {name!r}",
                       "queue the experiment again (`flushbench queue add FILE`)")
        return None
    try:
        return resolve_server(ServerProfile.model_validate(stored), where)
    except ValidationError as exc:
        for line in config_error_from(exc, where).problem_lines():
            problems.add(f"{line} (profile named by {named_at})")
    except PreflightError as exc:
        problems.add(f"{exc.render()} (profile named by {named_at})")
    return None


def validate_file(path: str | Path, *, work_dir: Path | None = None,
                  progress: Callable[[int, int], None] | None = None) -> PreflightReport:
    """Load, expand and preflight one experiment file (what ``flushbench validate`` does)."""
    exp = load_experiment(path)
    cells = expand(exp, str(path))
    return preflight(exp, str(path), cells, work_dir=work_dir, progress=progress)

