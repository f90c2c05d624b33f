"""Host checks shared by preflight and ``flushbench doctor``.

Each check reads the host through ``context.host`` (:class:`~runner.host.facts.HostFacts`).
With an experiment in the context it applies only when the experiment needs it and names the
key path that asked (``matrix.allocator[1]``, ``fixed.transparent_hugepages``…); without one
(``doctor``) it always applies and says what the host has or lacks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from core.errors import FlushbenchError
from core.experiment.cells import cell_server
from core.experiment.sections import DatasetSpec
from core.experiment.spec import CellSpec
from core.flavors import DEFAULT_LOG_FILE_SIZE, redo_capacity
from core.units import format_size
from core.validation import close_matches
from runner import knobs as knobs_mod
from runner.admission.checks import CheckContext, HostCheck, Problem
from runner.admission.disk import DiskNeed, disk_needed
from runner.host.capabilities import Capability
from runner.host.cpus import validate_cpus
from runner.host.facts import DROP_CACHES, human_size
from runner.knobs import rules as knobs_rules
from runner.workloads.registry import adapter_class, get_workload

#: ibdata, undo, temp tablespace and mysql.* tables of a fresh datadir.
DATADIR_OVERHEAD = 256 * 1024**2
#: Below this much free space in the work dir even the quickstart cannot run (``doctor``).
MIN_FREE_BYTES = 2 * 1024**3


def _capability_problem(cap: Capability) -> list[Problem]:
    """``doctor``'s reading of a capability: nothing, or its detail and fix."""
    return [] if cap.ok else [Problem(cap.detail, cap.where, cap.fix)]


class Allocator(HostCheck):
    """Each cell's allocator library exists (``doctor``: the library of ``allocator``)."""

    def __init__(self, allocator: str | None = None) -> None:
        self.allocator = allocator
        self.name = f"allocator {allocator}"

    def check(self, context: CheckContext) -> list[Problem]:
        if context.experiment is None:
            return [] if self._library() else [Problem(
                f"{knobs_mod.ALLOCATOR_LIBS[self.allocator]} not found",
                fix=f"apt-get install {knobs_mod.ALLOCATOR_PACKAGES[self.allocator]}")]
        out: list[Problem] = []
        for cell in context.cells:
            tr = context.translations.get(cell.key)
            lib = tr.allocator if tr is not None else knobs_mod.allocator_library(
                cell.knobs.get("allocator"))
            if lib is None or Path(lib).exists():
                continue
            name = cell.knobs.get("allocator", "")
            dirs = ", ".join(str(d) for d in knobs_rules.ALLOCATOR_LIB_DIRS)
            out.append(Problem(f"allocator {name}: {Path(lib).name} not found in {dirs}",
                               context.where(cell)("allocator"),
                               f"apt-get install {knobs_mod.ALLOCATOR_PACKAGES.get(name, name)}"))
        return out

    def _library(self) -> str | None:
        path = knobs_mod.allocator_library(self.allocator)
        return path if path is not None and Path(path).exists() else None

    def describe(self, context: CheckContext) -> str:
        return self._library() or ""


class TransparentHugePages(HostCheck):
    """A cell that sets transparent huge pages needs a host (and rights) that can set them."""

    name = "transparent huge pages"

    def applies(self, context: CheckContext) -> bool:
        return context.experiment is None or any(
            (tr := context.translations.get(c.key)) is not None and tr.thp for c in context.cells)

    def check(self, context: CheckContext) -> list[Problem]:
        cap = context.host.thp
        if context.experiment is None or cap.ok:
            return _capability_problem(cap)
        wanting = next(c for c in context.cells
                       if (tr := context.translations.get(c.key)) is not None and tr.thp)
        # The capability's own fix names the setting generically; name the knob instead.
        fix = ("run flushbench as root (it writes " + str(cap.where) + "/enabled), or drop "
               "transparent_hugepages from the experiment") if "writable" in cap.detail else (
            "drop transparent_hugepages from the experiment (this kernel has no THP)")
        return [Problem(f"transparent_hugepages cannot be set here: {cap.detail}",
                        context.where(wanting)("transparent_hugepages"), fix)]

    def describe(self, context: CheckContext) -> str:
        return context.host.thp.detail


class StorageThrottle(HostCheck):
    """A storage profile needs a host that can throttle the work directory's device."""

    name = "I/O throttle"

    def _limited(self, context: CheckContext) -> list[CellSpec]:
        return [c for c in context.cells if (tr := context.translations.get(c.key)) is not None
                and tr.storage]

    def applies(self, context: CheckContext) -> bool:
        return context.experiment is None or bool(self._limited(context))

    def check(self, context: CheckContext) -> list[Problem]:
        cap = context.host.throttle
        if context.experiment is None:
            return _capability_problem(cap)
        limited = self._limited(context)
        out: list[Problem] = []
        if not cap.ok:
            out.append(Problem(f"this host cannot emulate storage: {cap.detail}",
                               context.where(limited[0])("storage"), cap.fix))
        keys = context.keys
        assert keys is not None
        for cell in limited:
            method = context.options_of(cell).get("innodb_flush_method", "")
            if not method.upper().startswith("O_DIRECT"):
                out.append(Problem(
                    f"{keys.path(cell, 'storage')}: innodb_flush_method is {method or 'the'}"
                    " default: data pages go through the page cache and are written back by the"
                    " kernel, which cgroup v1 does not throttle — use O_DIRECT for a meaningful"
                    " storage profile (docs/storage.md)", note=True))
        return out

    def describe(self, context: CheckContext) -> str:
        return context.host.throttle.detail


class CpuPinning(HostCheck):
    """CPU lists must name online CPUs, and the pinning method must work here.

    ``doctor`` asks one instance per ``method``; preflight's takes the experiment's.
    """

    def __init__(self, method: str | None = None) -> None:
        self.method = method
        self.name = f"CPU pinning ({method})"

    def check(self, context: CheckContext) -> list[Problem]:
        exp = context.experiment
        if exp is None:
            return _capability_problem(context.host.pinning(str(self.method)))
        asked = [(k, v) for k in ("mysqld", "driver") if (v := getattr(exp.cpus, k)) is not None]
        out: list[Problem] = []
        for key, value in asked:
            try:
                validate_cpus(value, f"{context.source}: cpus.{key}")
            except FlushbenchError as exc:
                out.append(Problem(exc.render()))
        if asked:
            cap = context.host.pinning(exp.cpus.method)
            if not cap.ok:
                out.append(Problem(cap.detail, f"{context.source}: cpus.method", cap.fix))
        return out

    def describe(self, context: CheckContext) -> str:
        return context.host.pinning(str(self.method)).detail


def dataset_bytes(spec: DatasetSpec) -> int:
    """Estimated on-disk size of a loaded dataset (its loader's own estimate)."""
    return adapter_class(spec.effective_loader).dataset_bytes(spec)


@dataclass(frozen=True)
class DiskFigures:
    """What the queue needs in the work directory, and what is free there."""

    dataset: int
    redo: int
    need: DiskNeed
    free: int | None


def _redo_bytes(context: CheckContext, cells: list[CellSpec], flavor: str | None,
                version: tuple[int, ...] | None = None) -> int:
    """The largest total redo of any cell (base config when no knob sets it)."""
    best = 0
    for cell in cells:
        tr = context.translations.get(cell.key)
        opts = {**context.base, **(tr.server_options if tr else {})}
        total = redo_capacity(opts, flavor, version)
        if total is None:  # the server's default file size
            total = redo_capacity({**opts, "innodb_log_file_size": str(DEFAULT_LOG_FILE_SIZE)},
                                  flavor, version) or 0
        best = max(best, total)
    return best


def disk_figures(context: CheckContext) -> DiskFigures:
    """The dataset, the largest redo and the disk the whole queue needs (experiment context)."""
    exp = context.experiment
    assert exp is not None
    data = dataset_bytes(exp.dataset)
    redo = max((_redo_bytes(context, [c for c in context.cells if cell_server(exp, c) == name],
                            server.flavor, server.version)
                for name, server in context.servers.items()),
               default=_redo_bytes(context, context.cells, None))
    need = disk_needed(data + redo + DATADIR_OVERHEAD,
                       sum(exp.repetitions_of(c) for c in context.cells),
                       keep_datadirs=context.keep_datadirs)
    if len(context.servers) > 1:
        # A datadir is not portable between servers: one dataset snapshot per server.
        need = dataclasses.replace(need, snapshot=need.snapshot * len(context.servers))
    return DiskFigures(data, redo, need, context.host.disk_free)


class FreeDisk(HostCheck):
    """The queue's datasets, datadirs and logs fit in the work directory."""

    name = "free disk in work dir"
    required = True

    def check(self, context: CheckContext) -> list[Problem]:
        free = context.host.disk_free
        if context.experiment is None:
            return [] if free is not None and free >= MIN_FREE_BYTES else [Problem(
                self.describe(context), fix="free space or set FLUSHBENCH_WORK to a bigger disk")]
        fig = disk_figures(context)
        if free is None or fig.need.total <= free:
            return []
        redo_cell = next((c for c in context.cells
                          if (v := c.knobs.get("log_file_size")) is not None and v == fig.redo),
                         None)
        if redo_cell is not None and fig.redo > free - 2 * fig.dataset:
            return [Problem(f"{format_size(fig.redo)} of redo does not fit: {context.work_dir}"
                            f" has {human_size(free)} free after a {human_size(2 * fig.dataset)}"
                            " dataset snapshot and working copy",
                            context.where(redo_cell)("log_file_size"),
                            "use a smaller log_file_size or set FLUSHBENCH_WORK to a bigger"
                            " disk")]
        return [Problem(f"the queue needs ~{human_size(fig.need.total)} in {context.work_dir}"
                        f" ({fig.need.describe()}), only {human_size(free)} is free",
                        f"{context.source}: dataset",
                        "free space, lower the scale, set FLUSHBENCH_WORK to a bigger disk"
                        + (", or drop --keep-datadirs" if context.keep_datadirs else ""))]

    def describe(self, context: CheckContext) -> str:
        free = context.host.disk_free
        return f"{context.work_dir}: {human_size(free) if free is not None else 'unknown'} free"


class Drivers(HostCheck):
    """The driver's and the loader's own binaries, and unknown binary names.

    ``doctor`` asks one instance per registered driver (``driver``), required for ``required``.
    """

    def __init__(self, driver: str | None = None, *, required: bool = False) -> None:
        self.driver = driver
        self.name = f"driver {driver}"
        self.required = required

    def check(self, context: CheckContext) -> list[Problem]:
        exp = context.experiment
        if exp is None:
            workload = adapter_class(str(self.driver))()
            missing = list(dict.fromkeys(workload.problems() + workload.load_problems()))
            what, _, fix = missing[0].partition(" — ") if missing else ("", "", "")
            return [Problem(what, fix=fix or None)] if missing else []
        binaries = exp.workload.binaries
        users = {exp.workload.driver: "workload.driver",
                 exp.dataset.effective_loader: "dataset.loader"}
        known = sorted({n for d in users for n in adapter_class(d).binary_names})
        out: list[Problem] = []
        for key in binaries:
            if key not in known:
                close = close_matches(key, known)
                out.append(Problem("unknown driver binary name",
                                   f"{context.source}: workload.binaries.{key}",
                                   f"did you mean '{close[0]}'?" if close else
                                   "use one of " + ", ".join(known)))
        driver = get_workload(exp.workload.driver, binaries)
        found = driver.problems()
        out += [Problem(line, f"{context.source}: workload.driver") for line in found]
        if not found:  # the binary runs: ask it about this experiment's settings
            out += [Problem(line, f"{context.source}: workload.client")
                    for line in driver.setting_problems(exp.workload)]
        if exp.dataset.effective_loader != exp.workload.driver or driver.load_problems() != \
                driver.problems():
            loader = get_workload(exp.dataset.effective_loader, binaries)
            out += [Problem(line, f"{context.source}: dataset.loader")
                    for line in loader.load_problems()]
        return out

    def describe(self, context: CheckContext) -> str:
        workload = adapter_class(str(self.driver))()
        return "run and load: " + ", ".join(str(b) for b in workload.found_binaries())


class DropCaches(HostCheck):
    """``pre_run.drop_caches`` needs a writable drop_caches (advice only: the run warns)."""

    name = "drop_caches"

    def applies(self, context: CheckContext) -> bool:
        exp = context.experiment
        return exp is None or bool(exp.pre_run.drop_caches)

    def check(self, context: CheckContext) -> list[Problem]:
        if context.host.can_drop_caches:
            return []
        if context.experiment is None:
            return [Problem(self.describe(context), fix="run as root for pre_run.drop_caches")]
        return [Problem(f"pre_run.drop_caches: {DROP_CACHES} is not writable here; caches will"
                        " not be dropped (the run logs a warning)", note=True)]

    def describe(self, context: CheckContext) -> str:
        state = "writable" if context.host.can_drop_caches else "not writable"
        return f"{DROP_CACHES} {state}"


#: Run once per experiment after every server's checks, in this order.
EXPERIMENT_CHECKS: tuple[HostCheck, ...] = (
    Allocator(), TransparentHugePages(), StorageThrottle(), CpuPinning(), FreeDisk(), Drivers(),
    DropCaches(),
)
