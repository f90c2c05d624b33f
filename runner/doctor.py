"""Environment checks for ``flushbench doctor``: what is installed, what is missing, the fix.

Each :class:`Check` is ``required`` (a run cannot work without it: exit 1 when it fails) or
optional (only some experiments need it: a sysbench sweep, an allocator, huge pages). Example
server profiles (``configs/servers/example-*.yaml``) describe servers that are usually not
installed; they are reported as information, never as failures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from flushbench import paths
from flushbench.errors import FlushbenchError
from runner import knobs as knobs_mod
from runner.preflight import DROP_CACHES, free_disk, human_size, read_meminfo
from runner.proc import is_root, run_checked
from runner.server.built import is_built_profile, rebuild_command
from runner.server.profiles import (
    available_profiles,
    load_profile,
    profile_path,
    resolve_server,
)
from runner.workloads.registry import adapters

#: Below this much free space in the work dir even the quickstart cannot run.
#: The driver experiments use when they name none: doctor requires it.
DEFAULT_DRIVER = "tpcc"
MIN_FREE_BYTES = 2 * 1024**3


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
        checks.append(Check("built servers", False, "none (MySQL 5.5, XtraDB 5.5 for the 2011"
                            " servers)", "scripts/build-server.sh mysql-5.5|xtradb-5.5 SRC"
                            " PREFIX (docs/servers.md)", required=False))
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


def _tool_checks() -> list[Check]:
    checks = []
    tpcc = paths.tpcc_binary()
    built = tpcc.is_file() and os.access(tpcc, os.X_OK)
    go = shutil.which("go")
    checks.append(Check("go toolchain", go is not None,
                        _first_line([go, "version"]) if go else "not on PATH",
                        None if go else "install Go 1.22+ (needed to build tpcc/bin/tpcc)",
                        required=not built))
    # Every registered driver says what it lacks; only the default one is required.
    for name, adapter in adapters().items():
        workload = adapter()
        missing = list(dict.fromkeys(workload.problems() + workload.load_problems()))
        what, _, fix = (missing[0].partition(" — ") if missing else ("", "", ""))
        checks.append(Check(f"driver {name}", not missing,
                            "run and load: " + ", ".join(str(b) for b in workload.found_binaries())
                            if not missing else what,
                            fix or None, required=name == DEFAULT_DRIVER))
    for name, lib in knobs_mod.ALLOCATOR_LIBS.items():
        path = knobs_mod.allocator_library(name)
        present = path is not None and Path(path).exists()
        checks.append(Check(f"allocator {name}", present,
                            path if present else f"{lib} not found",
                            None if present else
                            f"apt-get install {knobs_mod.ALLOCATOR_PACKAGES[name]}",
                            required=False))
    return checks


def _writable(directory: Path) -> bool:
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return os.access(probe, os.W_OK)


def _host_checks(work: Path, db: str | None) -> list[Check]:
    checks = []
    mem = read_meminfo()
    total, free_pages = mem.get("HugePages_Total", 0), mem.get("HugePages_Free", 0)
    size_kb = mem.get("Hugepagesize", 2048)
    checks.append(Check("huge pages", free_pages > 0,
                        f"{free_pages} of {total} free, {size_kb} kB each",
                        None if free_pages else "only for large_pages experiments:"
                        " sysctl -w vm.nr_hugepages=N (plan/validate compute N)",
                        required=False))
    free = free_disk(work)
    checks.append(Check("free disk in work dir", free is not None and free >= MIN_FREE_BYTES,
                        f"{work}: {human_size(free) if free is not None else 'unknown'} free",
                        "free space or set FLUSHBENCH_WORK to a bigger disk"))
    checks.append(Check("work dir writable", _writable(work), str(work),
                        "set FLUSHBENCH_WORK to a writable folder"))
    from store.db import resolve_url  # local: keeps doctor importable without the store

    url = resolve_url(db)
    if url.startswith("sqlite:///"):
        db_dir = Path(url.removeprefix("sqlite:///")).parent
        checks.append(Check("results db dir writable", _writable(db_dir), str(db_dir),
                            "use --db / FLUSHBENCH_DB to point at a writable path"))
    root = is_root()
    checks.append(Check("user", True,
                        "running as root: sandboxes start mysqld with --user=root" if root
                        else "not root: mysqld runs as this user; drop_caches needs root",
                        required=False))
    can_drop = os.access(DROP_CACHES, os.W_OK)
    checks.append(Check("drop_caches", can_drop,
                        f"{DROP_CACHES} {'writable' if can_drop else 'not writable'}",
                        None if can_drop else "run as root for pre_run.drop_caches",
                        required=False))
    return checks


def run_doctor(work: Path | None = None, db: str | None = None) -> list[Check]:
    """Run every environment check (a few subprocesses, < 1 s)."""
    work = work or paths.work_dir()
    return _profile_checks() + _tool_checks() + _host_checks(work, db) + _control_checks(work)


def _control_checks(work: Path) -> list[Check]:
    """What the host lets flushbench control: I/O throttling, THP, CPU pinning (optional)."""
    from runner.host.capabilities import host_capabilities

    return [Check(c.name, c.ok, c.detail, None if c.ok else c.fix, required=False)
            for c in host_capabilities(work)]
