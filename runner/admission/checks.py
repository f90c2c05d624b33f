"""Checks as objects: what a check sees (:class:`CheckContext`), what it says (:class:`Problem`).

A check answers two questions: :meth:`HostCheck.applies` (does this experiment, or this
``flushbench doctor`` run, need it at all?) and :meth:`HostCheck.check` (what is wrong, each
problem with where, what and fix). Preflight runs them with an experiment in the context and
turns the problems into one :class:`~core.errors.PreflightError`; ``doctor`` runs the
host checks without one (``context.experiment is None``) and prints a row per check. The checks
themselves live in :mod:`runner.admission.checks_host` (the host: allocators, huge pages, THP, I/O
throttle, CPU pinning, disk, drivers, drop_caches) and :mod:`runner.admission.checks_server` (each
server's cells against its binary: its own parse, io_capacity, memory, connections).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import FlushbenchError
from core.experiment.spec import CellSpec, ExperimentSpec
from core.experiment.translation import Translation
from core.units import parse_size
from runner.host.facts import HostFacts
from runner.server.profiles import ResolvedServer


@dataclass(frozen=True)
class Problem:
    """One thing a check found: ``where: what — fix``, or advice (``note``) that never fails."""

    what: str
    where: str | None = None
    fix: str | None = None
    #: Advice printed with the plan (``notes``), not a reason to refuse the experiment.
    note: bool = False

    def render(self) -> str:
        """The one line users read (the same rendering as :class:`FlushbenchError`)."""
        return FlushbenchError(self.what, where=self.where, fix=self.fix).render()


def as_int(text: str | None) -> int | None:
    """A server option's value as a number (``128M`` → bytes), None when it is not one."""
    if text is None or text == "":
        return None
    try:
        return parse_size(text)
    except ValueError:
        try:
            return int(float(text))
        except ValueError:
            return None


def is_on(text: str | None) -> bool:
    """Whether a boolean server option's value switches it on (a bare ``large_pages`` does)."""
    return text is not None and text.strip().lower() in {"", "1", "on", "true", "yes"}


class KeyPaths:
    """Maps (cell, knob) to the experiment key path that set it, for problem lines."""

    def __init__(self, exp: ExperimentSpec, cells: list[CellSpec], source: str) -> None:
        self.source = source
        self.fixed = exp.fixed.values()
        self.axes = exp.matrix.axes()
        self.n_product = len(cells) - len(exp.include)

    def path(self, cell: CellSpec, knob: str) -> str:
        """``matrix.io_capacity[0]``, ``fixed.large_pages``, ``include[1].allocator``…"""
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
        """``knob → "file: key path"`` for one cell (its server named when cells differ)."""
        # With servers per cell, a matrix key path alone does not say which server refused
        # the value: name the cell's server profile too.
        server = cell.knobs.get("server")
        suffix = f" (server {server})" if server is not None else ""
        return lambda knob: f"{self.source}: {self.path(cell, knob)}{suffix}"


@dataclass
class CheckContext:
    """Everything a check may read. Without an experiment it is ``flushbench doctor``'s.

    Preflight fills the experiment part once, then hands each server's checks a copy narrowed
    to that server (:meth:`for_server`): ``server``, ``options`` and ``cells`` are then that
    server's binary, option list and the cells it runs.
    """

    host: HostFacts
    experiment: ExperimentSpec | None = None
    source: str = ""
    cells: list[CellSpec] = field(default_factory=list)
    #: Cell key → its translation, also partial ones (one absent knob hides nothing else).
    translations: Mapping[str, Translation] = field(default_factory=dict)
    base: Mapping[str, str] = field(default_factory=dict)
    base_path: Path = Path()
    #: The base config's text, as the sandbox writes it under each cell's options.
    base_text: str = ""
    keys: KeyPaths | None = None
    #: Profile name → resolved binary, and → its option list (every server that resolved).
    servers: Mapping[str, ResolvedServer] = field(default_factory=dict)
    option_lists: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    keep_datadirs: bool = False
    #: Told ``(done, total)`` after each of a binary's dry runs.
    progress: Callable[[int, int], None] | None = None
    server: ResolvedServer | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    #: ``flushbench doctor``'s results database (``--db``), None for the default.
    db: str | None = None

    @property
    def work_dir(self) -> Path:
        """Where datasets and run directories go."""
        return self.host.work_dir

    def for_server(self, server: ResolvedServer, options: Mapping[str, str],
                   cells: list[CellSpec]) -> CheckContext:
        """This context narrowed to one server, its option list and the cells it runs."""
        return dataclasses.replace(self, server=server, options=options, cells=cells)

    def options_of(self, cell: CellSpec) -> dict[str, str]:
        """The cell's my.cnf options on top of the base config (cell wins); {} untranslated."""
        tr = self.translations.get(cell.key)
        return {**self.base, **tr.server_options} if tr is not None else {}

    def where(self, cell: CellSpec) -> Callable[[str], str]:
        """``knob → "file: key path"`` for one cell."""
        assert self.keys is not None, "a check with cells runs with an experiment"
        return self.keys.where(cell)


class HostCheck:
    """One check: :meth:`applies` says whether it concerns this context, :meth:`check` runs it.

    ``name`` and ``required`` are what ``flushbench doctor`` shows; :meth:`describe` is its
    ``detail`` when the check passes.
    """

    name: str = ""
    required: bool = False

    def applies(self, context: CheckContext) -> bool:
        """Whether this context needs the check (default: always)."""
        return True

    def check(self, context: CheckContext) -> list[Problem]:
        """Every problem found, in the order users should read them."""
        raise NotImplementedError

    def describe(self, context: CheckContext) -> str:
        """What was found when nothing is wrong (``doctor``'s detail column)."""
        return ""


def run_checks(checks: Iterable[HostCheck], context: CheckContext) -> list[Problem]:
    """The problems of every check that applies, in the checks' order."""
    out: list[Problem] = []
    for check in checks:
        if check.applies(context):
            out.extend(check.check(context))
    return out
