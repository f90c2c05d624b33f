"""A server from a Debian suite as a profile: ``flushbench server fetch NAME PACKAGE --suite S``.

Debian's newer suites ship today's servers (MySQL 9.x in unstable, MariaDB 11.8 in Debian 13),
built against a newer glibc than an older Debian host has. :func:`fetch_server` brings one here
without touching the system's package manager:

1. apt-get and apt-cache run under a private configuration (``APT_CONFIG`` naming a file in
   flushbench's cache): its own sources list (the suite, on the Debian mirror the system's own
   sources name), lists, archive cache and an empty dpkg status, and an empty configuration
   folder instead of ``/etc/apt/apt.conf.d``. ``/etc/apt``, ``/var/lib/apt/lists`` and
   ``/var/lib/dpkg/status`` are only read (the keyring, the mirror's address).
2. The server package is downloaded first and must hold ``usr/sbin/mysqld`` or
   ``usr/sbin/mariadbd``; then its dependency closure (``apt-cache depends --recurse``),
   which may hold only libraries, the server's own packages (its source's) and ``*-common``
   configuration packages. Perl, which only the packages' helper scripts use, is left out.
3. Each ``.deb`` is downloaded once into the cache (apt checks it against the suite's signed
   index; its sha256 is recorded), and all are extracted with ``dpkg-deb -x`` into a folder
   that is renamed into ``<cache>/distributions/`` when complete.
4. Every executable in the tree's ``usr/bin`` and ``usr/sbin`` gets the tree's own loader as its
   interpreter and the tree's library folders as its ``DT_RPATH`` (patchelf), so the binaries
   run with the suite's glibc on this host and are still ordinary programs (``/proc/PID/exe`` is
   mysqld, no environment needed). Every library a server binary loads must then come from the
   tree.
5. ``server add``'s checks run on the tree (:func:`runner.server.distributions.add_distribution`:
   ``--version``, ``--verbose --help``, a datadir created in a temporary folder), and the
   profile is written with a ``fetched`` block: the suite, the mirror, and each package's name,
   version and sha256.

Every refusal is one sentence naming what and the fix, and leaves no profile and no partial tree.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core import paths
from core.errors import ConfigError, PreflightError, bounded
from core.yamlio import dump_yaml
from runner.proc import run_checked
from runner.server.built import write_atomically
from runner.server.distributions import add_distribution, profile_target
from runner.server.profiles import DebianPackage, FetchedFrom, ResolvedServer, ServerProfile

#: First line of every profile this module writes.
MARKER = "# Written by `flushbench server fetch`"
#: Free space a fetch leaves on the cache's disk (the runs need the rest).
DISK_RESERVE = 1024**3
#: What the system's own sources are read from (never written).
SYSTEM_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
#: Settings of the system's apt that the private one keeps: how this host reaches a mirror
#: (proxies) and whether it accepts a mirror's old Release file (a snapshot mirror's dates).
INHERITED = ("Acquire::Check-Valid-Until", "Acquire::Check-Date", "Acquire::http::Proxy",
             "Acquire::https::Proxy", "Acquire::ftp::Proxy")
#: An index download or a package download: generous for a slow mirror.
APT_TIMEOUT_S = 900
#: The suite's lists are fetched again when older than this (a fetch names "today's" version).
LISTS_MAX_AGE_S = 24 * 3600
#: Server binaries, as a Debian package lays them out.
SERVER_BINARIES = ("usr/sbin/mysqld", "usr/sbin/mariadbd")
#: Packages a server package names that only its helper scripts use (mysqld_safe's perl
#: tools, mariadb-upgrade's…): never loaded by the server, so not fetched.
SCRIPT_ONLY = frozenset({"perl", "perl-base", "perl:any"})
#: Packages fetched with a server package: MariaDB's install script runs my_print_defaults,
#: which Debian ships in the client's core package (built from the same source).
COMPANIONS = {"mariadb-server-core": ("mariadb-client-core",)}
_SUITE_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,40}$")
_PACKAGE_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,80}$")
_LIB_SECTIONS = ("libs", "oldlibs")


@dataclass(frozen=True)
class FetchedServer:
    """What ``server fetch`` wrote: the profile, the server it resolves to, what it fetched."""

    profile_path: Path
    server: ResolvedServer
    fetched: FetchedFrom
    #: The tree was extracted by this call (False: an earlier fetch's tree was reused).
    extracted: bool
    download_bytes: int


Say = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


# --- the private apt -----------------------------------------------------------------------


def host_architecture() -> str:
    """dpkg's name for this machine's architecture (``amd64``)."""
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


def system_mirror() -> str:
    """The Debian archive URL the system's own sources name (read, never written).

    The first ``deb`` source whose URL ends in ``/debian`` (not the security archive), from
    ``/etc/apt/sources.list`` and ``/etc/apt/sources.list.d/*.list|*.sources``.

    Raises
    ------
    PreflightError
        No source names a Debian archive.
    """
    for uri in _source_uris():
        if uri.rstrip("/").endswith("/debian"):
            return uri.rstrip("/")
    raise PreflightError(
        "the system's apt sources name no Debian archive (a URL ending in /debian)",
        where="/etc/apt/sources.list*",
        fix="run this on a Debian host whose apt sources name a Debian mirror")


def _source_uris() -> Iterable[str]:
    files: list[Path] = []
    for entry in SYSTEM_SOURCES:
        if entry.is_dir():
            files += sorted(p for p in entry.iterdir() if p.suffix in (".list", ".sources"))
        elif entry.is_file():
            files.append(entry)
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if path.suffix == ".sources":  # deb822: "URIs:" lines of stanzas whose Types has deb
            for stanza in re.split(r"\n\s*\n", text):
                types = re.search(r"^Types:(.*)$", stanza, re.M | re.I)
                if types and "deb" in types.group(1).split() and not re.search(
                        r"^Enabled:\s*no", stanza, re.M | re.I):
                    for m in re.finditer(r"^URIs:\s*(.+)$", stanza, re.M | re.I):
                        yield from m.group(1).split()
        else:
            for line in text.splitlines():
                words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
                if len(words) >= 2 and words[0] == "deb":
                    yield words[1]


def system_settings() -> dict[str, str]:
    """The :data:`INHERITED` settings of the system's apt (``apt-config dump``, read only)."""
    env = {k: v for k, v in os.environ.items() if k != "APT_CONFIG"}
    proc = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, env=env,
                          timeout=60)
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r'^(\S+) "([^"]*)";$', line)
        if m and m.group(1) in INHERITED:
            found[m.group(1)] = m.group(2)
    return found


class PrivateApt:
    """apt-get and apt-cache for one suite, with every path they write in ``root``.

    ``root`` holds ``apt.conf`` (passed as ``APT_CONFIG``, read before anything else, so
    ``/etc/apt/apt.conf.d`` is replaced by the empty ``conf.d``), ``sources.list``, ``lists/``,
    ``cache/``, an empty dpkg ``status`` and the empty preference folders.
    """

    def __init__(self, root: Path, suite: str, mirror: str, arch: str) -> None:
        self.root, self.suite, self.mirror, self.arch = root, suite, mirror, arch
        self.lists = root / "lists"

    def prepare(self) -> None:
        """Write the private configuration (idempotent)."""
        for sub in ("lists/partial", "cache/archives/partial", "conf.d", "preferences.d",
                    "sourceparts.d", "trusted.gpg.d"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        status = self.root / "status"
        if not status.exists():
            status.write_text("")
        signed = f" [signed-by={DEBIAN_KEYRING}]" if DEBIAN_KEYRING.is_file() else ""
        (self.root / "sources.list").write_text(f"deb{signed} {self.mirror} {self.suite} main\n")
        r = self.root
        settings = {
            "Dir::Etc::parts": r / "conf.d",
            "Dir::Etc::main": "/dev/null",
            "Dir::Etc::sourcelist": r / "sources.list",
            "Dir::Etc::sourceparts": r / "sourceparts.d",
            "Dir::Etc::preferences": r / "preferences",
            "Dir::Etc::preferencesparts": r / "preferences.d",
            "Dir::Etc::trustedparts": r / "trusted.gpg.d",
            "Dir::State": r,
            "Dir::State::Lists": r / "lists",
            "Dir::State::status": r / "status",
            "Dir::State::extended_states": r / "extended_states",
            "Dir::Cache": r / "cache",
            "Dir::Log": r / "log",
            "APT::Architecture": self.arch,
            "APT::Architectures": self.arch,
            "APT::Install-Recommends": "false",
            "Acquire::Languages": "none",
            "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled": "false",
            "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled": "false",
            "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled": "false",
            "Debug::NoLocking": "true",  # the private folders are this process's alone
        }
        settings.update(system_settings())
        if os.geteuid() == 0:
            # As root apt drops to the _apt user, who cannot write a folder of root's cache.
            settings["APT::Sandbox::User"] = "root"
        (self.root / "apt.conf").write_text(
            "".join(f'{key} "{value}";\n' for key, value in settings.items()))

    def run(self, argv: list[str], *, cwd: Path | None = None,
            timeout: float = APT_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Run an apt command under the private configuration (output captured)."""
        env = {**os.environ, "APT_CONFIG": str(self.root / "apt.conf"), "LC_ALL": "C",
               "DEBIAN_FRONTEND": "noninteractive"}
        return run_checked(argv, timeout=timeout, env=env, cwd=cwd)

    def lists_fresh(self) -> bool:
        """Whether the suite's package list is here and younger than a day."""
        found = list(self.lists.glob(f"*_dists_{self.suite}_main_binary-{self.arch}_Packages*"))
        return bool(found) and all(
            datetime.now(UTC).timestamp() - p.stat().st_mtime < LISTS_MAX_AGE_S for p in found)

    def update(self) -> None:
        """``apt-get update`` of the suite's index (unless fresh).

        Raises
        ------
        PreflightError
            The suite does not answer (unknown suite, mirror unreachable, bad signature).
        """
        if self.lists_fresh():
            return
        try:
            proc = self.run(["apt-get", "-q", "update"])
            output = proc.stdout + proc.stderr
            failed = proc.returncode != 0 or re.search(r"^(E:|W: Failed to fetch)", output, re.M)
        except subprocess.TimeoutExpired:
            output, failed = f"no answer within {APT_TIMEOUT_S} s", True
        if failed or not list(self.lists.glob(f"*_dists_{self.suite}_*Packages*")):
            reason = next((line for line in output.splitlines()
                           if line.startswith(("E:", "W:", "Err"))), output.strip()[-200:])
            raise PreflightError(
                f"the suite {self.suite!r} does not answer at {self.mirror}: "
                f"{bounded(reason, 200)}", where="--suite",
                fix="name a suite the Debian archive has (unstable, sid, trixie, forky…) and"
                " check that the mirror is reachable")

    def show(self, packages: list[str]) -> dict[str, dict[str, str]]:
        """The candidate stanza of each package: name → fields (absent names left out)."""
        proc = self.run(["apt-cache", "show", "--no-all-versions", *packages], timeout=120)
        found: dict[str, dict[str, str]] = {}
        for stanza in re.split(r"\n\s*\n", proc.stdout):
            fields = dict(re.findall(r"^([A-Za-z0-9-]+):[ \t]*(.*)$", stanza, re.M))
            if "Package" in fields:
                found.setdefault(fields["Package"], fields)
        return found

    def depends(self, packages: list[str]) -> dict[str, list[list[str]]]:
        """Each package of the recursive closure → its dependency groups (alternatives).

        A virtual package (``<perl:any>``) maps to its providers as one group of alternatives.
        """
        proc = self.run(["apt-cache", "depends", "--recurse", "--no-recommends",
                         "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                         "--no-enhances", *packages], timeout=300)
        graph: dict[str, list[list[str]]] = {}
        current: list[list[str]] | None = None
        pending: list[str] = []  # an alternative group being read ("|Depends:" lines)
        last_virtual: list[str] | None = None
        for line in proc.stdout.splitlines():
            if not line.startswith(" "):
                current = graph.setdefault(line.strip(), [])
                pending, last_virtual = [], None
                continue
            m = re.match(r"^\s*(\|?)(Pre)?Depends:\s*(\S+)", line)
            if m and current is not None:
                name = m.group(3)
                pending.append(name)
                last_virtual = pending if name.startswith("<") else None
                if not m.group(1):
                    current.append(pending)
                    pending = []
                continue
            if last_virtual is not None and line.startswith("    ") and line.strip():
                last_virtual.append(line.strip())  # a provider of the virtual package
        return graph


# --- the fetch -----------------------------------------------------------------------------


def fetch_server(name: str, package: str, suite: str, *, arch: str | None = None,
                 profile_file: Path | None = None, replace: bool = False,
                 downloads: Path | None = None, say: Say = _quiet) -> FetchedServer:
    """Fetch a server package and its libraries from a Debian suite and write its profile.

    Parameters
    ----------
    name:
        The profile's name (``configs/servers/NAME.yaml`` unless ``profile_file`` is given).
    package:
        The server package, e.g. ``mysql-server-core`` or ``mariadb-server-core``.
    suite:
        The Debian suite or codename (``unstable``, ``sid``, ``trixie``).
    arch:
        The architecture (default and only choice: this machine's).
    replace:
        Overwrite an existing profile file.
    downloads:
        Where the private apt state and the downloaded packages are kept (default
        ``<cache>/debian``); the tree goes to ``<cache>/distributions`` either way.
    say:
        Receives one line per step (progress for the command line).

    Raises
    ------
    FlushbenchError
        One sentence naming what and the fix; nothing is written and no partial tree is left.
    """
    target = profile_target(name, profile_file, replace)
    if not _PACKAGE_RE.match(package):
        raise ConfigError(f"{package!r} is not a Debian package name", where="PACKAGE",
                          fix="name the server's package, e.g. mysql-server-core")
    if not _SUITE_RE.match(suite):
        raise ConfigError(f"{suite!r} is not a Debian suite name", where="--suite",
                          fix="name a suite such as unstable, sid or trixie")
    host = host_architecture()
    if arch is not None and arch != host:
        raise PreflightError(
            f"a server for {arch} cannot run on this {host} machine", where="--arch",
            fix=f"leave --arch out (this machine's {host} is fetched)")
    mirror = system_mirror()
    cache = paths.cache_dir()
    downloads = downloads or cache / "debian"
    apt = PrivateApt(downloads / "apt" / f"{suite}-{host}", suite, mirror, host)
    apt.prepare()
    debs = downloads / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    # One fetch at a time per download folder: apt's own locks are off in the private state.
    with (downloads / "fetch.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _fetch_locked(name, package, suite, apt, debs, target, profile_file, say)


def _fetch_locked(name: str, package: str, suite: str, apt: PrivateApt, debs: Path,
                  target: Path, profile_file: Path | None, say: Say) -> FetchedServer:
    host, mirror = apt.arch, apt.mirror
    say(f"reading the {suite} index from {mirror}")
    apt.update()
    roots = [package, *COMPANIONS.get(package, ())]
    stanzas = apt.show(roots)
    if package not in stanzas:
        raise PreflightError(
            f"the suite {suite!r} has no package {package!r} for {host}", where="PACKAGE",
            fix="check the name (apt-cache policy, packages.debian.org) or name another suite")
    _check_is_server(apt, stanzas[package], debs, suite)
    closure = _closure(apt, roots, package, stanzas[package].get("Source", package), suite)
    fields = apt.show(sorted(closure))
    packages = [fields[p] for p in sorted(closure)]
    tree_name = f"debian-{suite}-{package}-{_safe(stanzas[package]['Version'])}"
    final = paths.cache_dir() / "distributions" / tree_name
    download = sum(int(p.get("Size", 0)) for p in packages
                   if not _cached(debs, p))
    say(f"{package} {stanzas[package]['Version']} from {suite}: {len(packages)} packages,"
        f" {download / 1024**2:.0f} MiB to download")
    _check_space(debs, download, "downloading the packages")
    files = [_download(apt, debs, p) for p in packages]
    record = FetchedFrom(
        suite=suite, mirror=mirror, architecture=host,
        packages=[DebianPackage(name=p["Package"], version=p["Version"],
                                sha256=p["SHA256"]) for p in packages])
    extracted = False
    if not (final / ".flushbench-fetched").is_file():
        installed = sum(int(p.get("Installed-Size", 0)) * 1024 for p in packages)
        _check_space(final.parent, installed, "extracting the packages")
        say(f"extracting into {final}")
        _extract(files, final)
        extracted = True
    try:
        for binary in SERVER_BINARIES:
            foreign = foreign_libraries(final / binary, final) if (final / binary).is_file() else []
            if foreign:
                raise PreflightError(
                    f"{binary} loads {', '.join(foreign[:3])} from this system, not from the"
                    " fetched tree", where=str(final),
                    fix="report it: the suite's closure misses a library package")
        say("checking the server: --version, --verbose --help, a datadir in a temporary folder")
        with tempfile.TemporaryDirectory(prefix="flushbench-fetch-") as tmp:
            added = add_distribution(name, final, profile_file=Path(tmp) / "p.yaml")
        server = added.server
        version = server.version_string.split("Ver", 1)[-1].split()[0]
        profile = server.profile.model_copy(update={
            "fetched": record,
            "description": f"{server.flavor} {version} from Debian {suite} ({package})"})
        write_atomically(target, profile_text(profile, package, profile_file))
    except BaseException:
        if extracted:
            shutil.rmtree(final, ignore_errors=True)
        raise
    return FetchedServer(target, added.server, record, extracted, download)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", text)


def _deb_name(fields: dict[str, str]) -> str:
    return f"{fields['Package']}_{_safe(fields['Version'])}_{fields['Architecture']}.deb"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _cached(debs: Path, fields: dict[str, str]) -> Path | None:
    path = debs / _deb_name(fields)
    return path if path.is_file() and _sha256(path) == fields.get("SHA256") else None


def _download(apt: PrivateApt, debs: Path, fields: dict[str, str]) -> Path:
    """The package's .deb in the download cache, fetched when missing; sha256 checked."""
    have = _cached(debs, fields)
    if have is not None:
        return have
    name, version = fields["Package"], fields["Version"]
    with tempfile.TemporaryDirectory(prefix=".dl-", dir=debs) as tmp:
        try:
            proc = apt.run(["apt-get", "-q", "download", f"{name}={version}"], cwd=Path(tmp))
            failed = proc.returncode != 0
            output = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            failed, output = True, f"no answer within {APT_TIMEOUT_S} s"
        got = sorted(Path(tmp).glob("*.deb"))
        if failed or len(got) != 1:
            if "No space left" in output:
                _check_space(debs, int(fields.get("Size", 0)) + DISK_RESERVE, "downloading")
            reason = next((line for line in output.splitlines() if line.startswith(("E:", "Err"))),
                          output.strip()[-200:])
            raise PreflightError(f"apt-get could not download {name} {version}:"
                                 f" {bounded(reason, 200)}", where=apt.mirror,
                                 fix="check that the mirror is reachable, then run the command"
                                 " again (what was downloaded is kept)")
        if _sha256(got[0]) != fields["SHA256"]:
            raise PreflightError(f"{got[0].name} does not match the suite's index (sha256)",
                                 where=apt.mirror, fix="run the command again")
        path = debs / _deb_name(fields)
        os.replace(got[0], path)
    return path


def _check_is_server(apt: PrivateApt, fields: dict[str, str], debs: Path, suite: str) -> None:
    """Refuse a package that holds no server binary (before its closure is fetched)."""
    _check_space(debs, int(fields.get("Size", 0)), "downloading the package")
    deb = _download(apt, debs, fields)
    listing = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True,
                             text=True, timeout=120).stdout
    members = {line.split()[5].removeprefix("./") for line in listing.splitlines()
               if len(line.split()) >= 6}
    if not members.intersection(SERVER_BINARIES):
        raise PreflightError(
            f"{fields['Package']} ({suite}) holds no usr/sbin/mysqld or usr/sbin/mariadbd:"
            " it is not a server package", where="PACKAGE",
            fix="name the server's package (mysql-server-core, mariadb-server-core)")


def _closure(apt: PrivateApt, roots: list[str], package: str, source: str,
             suite: str) -> set[str]:
    """The packages to fetch: ``roots`` and what they depend on, through libraries only.

    Followed: libraries (section libs/oldlibs), packages of the server's own source, ``*-common``
    configuration packages (architecture ``all``), and a package built from the same source as
    the library that needs it (libssl's OpenSSL provider). Left out: :data:`SCRIPT_ONLY`.

    Raises
    ------
    PreflightError
        A dependency is none of these (a server that needs a service, a shell tool…).
    """
    graph = apt.depends(roots)
    known = set(graph)
    info = apt.show(sorted(n for n in known if not n.startswith("<")))

    def pick(group: list[str]) -> str | None:
        for name in group:
            if name.startswith("<"):
                continue
            if name in SCRIPT_ONLY or name.split(":")[0] in SCRIPT_ONLY:
                return None
            if name in info:
                return name
        if any(n.strip("<>") in SCRIPT_ONLY for n in group):
            return None
        raise PreflightError(
            f"{package} ({suite}) depends on {' | '.join(group)}, which the suite does not"
            " have for this machine", where="PACKAGE",
            fix="name another suite (the suite is mid-transition)")

    chosen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in chosen:
            continue
        chosen.add(name)
        parent = info.get(name, {})
        for group in graph.get(name, []):
            dep = pick(group)
            if dep is None or dep in chosen:
                continue
            fields = info[dep]
            own = fields.get("Source", dep).split()[0] == source
            library = fields.get("Section", "").split("/")[-1] in _LIB_SECTIONS
            common = dep.endswith("-common") and fields.get("Architecture") == "all"
            same = (parent.get("Section", "").split("/")[-1] in _LIB_SECTIONS
                    and fields.get("Source", dep).split()[0]
                    == parent.get("Source", name).split()[0])
            if not (own or library or common or same):
                raise PreflightError(
                    f"{package} ({suite}) needs {dep} (through {name}), which is not a"
                    " library: a fetched server may bring only its libraries",
                    where="PACKAGE",
                    fix="name the server's core package (mysql-server-core,"
                    " mariadb-server-core), which needs no services or tools")
            todo.append(dep)
    return chosen


def _check_space(folder: Path, needed: int, what: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if needed > free - DISK_RESERVE:
        raise PreflightError(
            f"{what} needs {needed / 1024**2:,.0f} MiB and the disk of {folder} has"
            f" {max(free - DISK_RESERVE, 0) / 1024**2:,.0f} MiB to spare (1 GiB kept free)",
            where=str(folder),
            fix="free space there or set FLUSHBENCH_CACHE_DIR to a larger disk")


def _extract(files: list[Path], final: Path) -> None:
    """``dpkg-deb -x`` every package into a temporary folder, make its binaries use the
    tree's loader and libraries, then rename it to ``final``."""
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        for deb in files:
            proc = subprocess.run(["dpkg-deb", "-x", str(deb), str(work)], capture_output=True,
                                  text=True, timeout=600)
            if proc.returncode != 0:
                if "No space left" in proc.stderr:
                    raise PreflightError(
                        f"the disk of {final.parent} filled while extracting {deb.name}",
                        where=str(final.parent),
                        fix="free space there or set FLUSHBENCH_CACHE_DIR to a larger disk")
                raise PreflightError(f"dpkg-deb could not extract {deb.name}:"
                                     f" {bounded(proc.stderr.strip(), 200)}", where=str(deb),
                                     fix="delete it and run the command again")
        relocate(work, final)
        (work / ".flushbench-fetched").write_text(
            "".join(f"{deb.name}\n" for deb in files))
        shutil.rmtree(final, ignore_errors=True)
        os.rename(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _is_program(path: Path) -> bool:
    """An ELF file with a program interpreter (a dynamically linked executable)."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as handle:
        head = handle.read(64)
    if head[:4] != b"\x7fELF" or head[4] != 2:
        return False
    proc = subprocess.run(["patchelf", "--print-interpreter", str(path)], capture_output=True,
                          text=True, timeout=60)
    return proc.returncode == 0 and bool(proc.stdout.strip())


def library_folders(root: Path) -> list[Path]:
    """The tree's folders holding shared libraries (``lib*/<triplet>``, ``usr/lib*/…``)."""
    found = {p.parent for pattern in ("lib*/*.so*", "lib*/*/*.so*", "usr/lib*/*.so*",
                                      "usr/lib*/*/*.so*")
             for p in root.glob(pattern)}
    return sorted(f for f in found if "plugin" not in f.parts)


def relocate(work: Path, final: Path) -> None:
    """Point the tree's programs at its own loader and libraries, as they will live at
    ``final`` (the tree is built at ``work`` and renamed afterwards).

    ``DT_RPATH`` rather than ``DT_RUNPATH`` (``--force-rpath``): an executable's RPATH is
    searched for every library the process loads, its libraries' own dependencies included,
    while RUNPATH covers only its direct needs — the suite's libcurl would then load this
    host's older libnghttp2.

    Raises
    ------
    PreflightError
        The tree has no loader (the closure holds no libc6), or patchelf fails.
    """
    loaders = sorted(p for p in work.rglob("ld-linux*.so*") if p.is_file())
    if not loaders:
        raise PreflightError("the packages hold no dynamic loader (ld-linux*.so)",
                             where=str(final), fix="the closure must include libc6")
    loader = final / loaders[0].relative_to(work)
    rpath = ":".join(str(final / f.relative_to(work)) for f in library_folders(work))
    for folder in ("usr/sbin", "usr/bin"):
        for program in sorted((work / folder).glob("*")):
            if not _is_program(program):
                continue
            proc = subprocess.run(["patchelf", "--set-interpreter", str(loader),
                                   "--force-rpath", "--set-rpath", rpath, str(program)],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                raise PreflightError(f"patchelf could not relocate {program.name}:"
                                     f" {bounded(proc.stderr.strip(), 200)}",
                                     where=str(final), fix="install patchelf 0.14 or newer")


def foreign_libraries(binary: Path, root: Path) -> list[str]:
    """Libraries ``binary`` loads from outside ``root`` (empty when the tree serves all).

    Asked of the binary's own loader (``LD_TRACE_LOADED_OBJECTS``), as a run would load them.
    """
    proc = subprocess.run([str(binary)], env={"LD_TRACE_LOADED_OBJECTS": "1", "PATH": "/usr/bin"},
                          capture_output=True, text=True, timeout=60)
    foreign = []
    for line in proc.stdout.splitlines():
        m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if m and not Path(m.group(1)).resolve().is_relative_to(root.resolve()):
            foreign.append(m.group(1))
    return foreign


def profile_text(profile: ServerProfile, package: str, profile_file: Path | None) -> str:
    """The YAML of a fetched server's profile, with a header saying how to fetch it again
    (written by :func:`core.yamlio.dump_yaml`, as ``server add``'s)."""
    fetched = profile.fetched
    assert fetched is not None
    elsewhere = (f" --profile {shlex.quote(os.path.abspath(profile_file))}"
                 if profile_file is not None else "")
    comments = [
        f"{MARKER.removeprefix('# ')} on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        f"Source: {package} from Debian {fetched.suite} ({fetched.mirror})",
        f"Re-create: flushbench server fetch {profile.name} {package} --suite {fetched.suite}"
        f"{elsewhere} --replace",
        "Machine-specific (it names this machine's folders): not meant to be committed.",
    ]
    body = profile.model_dump(exclude_defaults=True, exclude_none=True)
    body = {"version": 1, **{k: v for k, v in body.items() if k != "version"}}
    return dump_yaml(body, comments)
