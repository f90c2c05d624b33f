"""Environment checks for ``flushbench doctor``: what is installed, what is missing, the fix.

Each :class:`Check` is ``required`` (a run cannot work without it: exit 1 when it fails) or
optional (only some experiments need it: a sysbench sweep, an allocator, huge pages). Example
server profiles (``configs/servers/example-*.yaml``) describe servers that are usually not
installed; they are reported as information, never as failures.

The host rows come from the same check objects preflight runs (:mod:`runner.admission.checks_host`,
:mod:`runner.admission.checks_server`), asked without an experiment: :func:`as_row` turns a check's
first problem, or what it found, into a row.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core import import_names, paths
from core.errors import FlushbenchError
from runner import knobs as knobs_mod
from runner.admission.checks import CheckContext, HostCheck, Problem
from runner.admission.checks_host import (
    Allocator,
    CpuPinning,
    Drivers,
    DropCaches,
    FreeDisk,
    StorageThrottle,
    TransparentHugePages,
)
from runner.admission.checks_server import LargePages
from runner.host.facts import HostFacts, writable
from runner.proc import is_root, run_checked
from runner.server.built import is_built_profile, rebuild_command
from runner.server.profiles import (
    available_profiles,
    load_profile,
    profile_path,
    resolve_server,
)
from runner.workloads.registry import adapters

#: The driver experiments use when they name none: doctor requires it.
DEFAULT_DRIVER = "tpcc"


@dataclass(frozen=True)
class Check:
    """One environment check."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    required: bool = True

    @property
    def status(self) -> str:
        """``ok``, ``FAIL`` (required and failing) or ``warn`` (optional and failing)."""
        if self.ok:
            return "ok"
        return "FAIL" if self.required else "warn"


def _first_line(argv: list[str]) -> str:
    try:
        proc = run_checked(argv, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run: {exc}"
    return ((proc.stdout or proc.stderr).strip().splitlines() or [""])[0]


def _profile_checks() -> list[Check]:
    checks = []
    built_any = False
    for name in available_profiles():
        example = name.startswith("example-")
        if is_built_profile(profile_path(name)):
            built_any = True
            checks.append(_built_check(name))
            continue
        try:
            server = resolve_server(load_profile(name), str(profile_path(name)))
        except FlushbenchError as exc:
            if example:
                checks.append(Check(f"server profile {name}", False,
                                    f"not installed (example profile): {exc.what}",
                                    "copy it to a new name and point it at a real install",
                                    required=False))
            else:
                checks.append(Check(f"server profile {name}", False, exc.what, exc.fix))
            continue
        checks.append(Check(f"server profile {name}", True,
                            f"{server.mysqld}: {server.version_string.split(' for ')[0]}",
                            required=not example))
        if server.install_db is not None:
            checks.append(Check(f"{server.install_db.name} ({name})", True,
                                str(server.install_db), required=not example))
    if not built_any:
        checks.append(Check("built servers", False, "none (MySQL 5.5, XtraDB 5.5, Percona"
                            " Server 5.5 for the 2011 servers)", "scripts/build-server.sh"
                            " mysql-5.5|xtradb-5.5|percona-5.5 SRC PREFIX (docs/servers.md)",
                            required=False))
    return checks


def _built_check(name: str) -> Check:
    """A profile written by scripts/build-server.sh: optional, with its prefix and version."""
    path = profile_path(name)
    try:
        server = resolve_server(load_profile(name), str(path))
    except FlushbenchError as exc:
        return Check(f"built server {name}", False, exc.what,
                     f"rebuild it: {rebuild_command(path) or 'scripts/build-server.sh'}",
                     required=False)
    version = server.version_string.split("Ver", 1)[-1].split()[0]
    return Check(f"built server {name}", True,
                 f"{server.basedir} ({server.label}, {version})", required=False)


def _go_check() -> Check:
    """The Go toolchain: required only while tpcc/bin/tpcc is not built."""
    tpcc = paths.tpcc_binary()
    built = tpcc.is_file() and os.access(tpcc, os.X_OK)
    go = shutil.which("go")
    return Check("go toolchain", go is not None,
                 _first_line([go, "version"]) if go else "not on PATH",
                 None if go else "install Go 1.22+ (needed to build tpcc/bin/tpcc)",
                 required=not built)


class _WorkDirWritable(HostCheck):
    name = "work dir writable"
    required = True

    def check(self, context: CheckContext) -> list[Problem]:
        return [] if writable(context.work_dir) else [Problem(
            str(context.work_dir), fix="set FLUSHBENCH_WORK to a writable folder")]

    def describe(self, context: CheckContext) -> str:
        return str(context.work_dir)


class _ResultsDirWritable(HostCheck):
    """A SQLite results file's folder must be writable (server databases are not checked)."""

    name = "results db dir writable"
    required = True

    def _dir(self, context: CheckContext) -> Path | None:
        from store.bundles import is_bundle_path  # local: keeps doctor importable without
        from store.db import resolve_url  # the store

        if context.db is not None and is_bundle_path(context.db):
            return None  # a study bundle is only read: nothing is written beside it
        url = resolve_url(context.db)
        return Path(url.removeprefix("sqlite:///")).parent if url.startswith("sqlite:///") \
            else None

    def applies(self, context: CheckContext) -> bool:
        return self._dir(context) is not None

    def check(self, context: CheckContext) -> list[Problem]:
        db_dir = self._dir(context)
        return [] if db_dir is None or writable(db_dir) else [Problem(
            str(db_dir), fix="use --db / FLUSHBENCH_DB to point at a writable path")]

    def describe(self, context: CheckContext) -> str:
        return str(self._dir(context))


class _User(HostCheck):
    """Who flushbench runs as (information: both work, with different powers)."""

    name = "user"

    def check(self, context: CheckContext) -> list[Problem]:
        return []

    def describe(self, context: CheckContext) -> str:
        return ("running as root: sandboxes start mysqld with --user=root" if is_root()
                else "not root: mysqld runs as this user; drop_caches needs root")


def host_checks() -> list[HostCheck]:
    """The host checks ``doctor`` runs, in the order it prints them (drivers first)."""
    return [
        *(Drivers(name, required=name == DEFAULT_DRIVER) for name in adapters()),
        *(Allocator(name) for name in knobs_mod.ALLOCATOR_LIBS),
        LargePages(), FreeDisk(), _WorkDirWritable(), _ResultsDirWritable(), _User(),
        DropCaches(),
        # What the host lets flushbench control around one mysqld (optional).
        StorageThrottle(), TransparentHugePages(), CpuPinning("affinity"), CpuPinning("cpuset"),
    ]


def as_row(check: HostCheck, context: CheckContext) -> Check:
    """One host check as doctor's row: its first problem, or what it found."""
    problems = check.check(context)
    if problems:
        return Check(check.name, False, problems[0].what, problems[0].fix,
                     required=check.required)
    return Check(check.name, True, check.describe(context), required=check.required)


def _import_names_check() -> Check:
    """flushbench's five generic import names are its own in this environment."""
    found = import_names.clashes()
    if found:
        return Check("import names", False, found[0], None)
    return Check("import names", True,
                 f"{', '.join(import_names.IMPORT_NAMES)}: flushbench's own "
                 f"({import_names.ROOT})")


def run_doctor(work: Path | None = None, db: str | None = None) -> list[Check]:
    """Run every environment check (a few subprocesses, < 1 s)."""
    context = CheckContext(host=HostFacts(work or paths.work_dir()), db=db)
    return [*_profile_checks(), _go_check(), _import_names_check(),
            *(as_row(c, context) for c in host_checks() if c.applies(context))]
