"""Server profiles (``configs/servers/NAME.yaml``) and the binaries they resolve to.

A profile says *which* mysqld to run: the Debian package's paths, or the ``basedir`` of an
unpacked binary tarball. :func:`resolve_server` turns it into a :class:`ResolvedServer` by
checking the binaries and asking ``mysqld --version`` which flavor and version it really is;
the knob table (:mod:`runner.knobs`) keys on that, never on what the profile claims.

Every invocation of a profile's binaries (``--version``, ``--help`` dry runs, datadir
initialization, the server itself) runs in :meth:`ResolvedServer.env`, so a profile's
``lib_dirs`` applies to all of them.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from core import paths
from core.errors import ConfigError, PreflightError, quote
from core.filecheck import same_file
from core.flavors import Flavor, parse_version, server_label, uses_initialize
from core.validation import StrictModel, did_you_mean, load_versioned
from runner.proc import run_checked

InitKind = Literal["install_db", "initialize"]

#: A profile name: ASCII letters, digits, '.', '_' and '-', starting with a letter or digit
#: (it becomes a file name and a word in experiment files; no newline, no other script).
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
NAME_MAX = 80


class DebianPackage(StrictModel):
    """One package a fetched server came from (``flushbench server fetch``)."""

    name: Annotated[str, Field(min_length=1, max_length=100)]
    version: Annotated[str, Field(min_length=1, max_length=100)]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class FetchedFrom(StrictModel):
    """Where a fetched server came from: the Debian suite, its mirror, every package."""

    suite: str
    mirror: str
    architecture: str
    packages: list[DebianPackage]


class ServerProfile(StrictModel):
    """One server installation: Debian-style binary paths or a tarball ``basedir``."""

    version: Literal[1]
    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN)]
    flavor: Flavor
    description: str = ""
    #: Path of mysqld/mariadbd (package installs). Mutually exclusive with ``basedir``.
    mysqld: str | None = None
    #: Path of mariadb-install-db / mysql_install_db (package installs of MariaDB, MySQL <5.7).
    install_db: str | None = None
    #: Root of an unpacked binary tarball (bin/mysqld or bin/mariadbd inside).
    basedir: str | None = None
    #: Extra shared-library directories (LD_LIBRARY_PATH) for old tarballs.
    lib_dirs: list[str] = Field(default_factory=list)
    #: Set by ``flushbench server fetch``: the suite and packages the tree was extracted from.
    fetched: FetchedFrom | None = None

    @model_validator(mode="after")
    def _one_layout(self) -> ServerProfile:
        if self.basedir is None and self.mysqld is None:
            raise ValueError("give either `mysqld` (+ `install_db`) or `basedir`")
        if self.basedir is not None and (self.mysqld is not None or self.install_db is not None):
            raise ValueError("`basedir` and `mysqld`/`install_db` exclude each other — keep one")
        return self


#: Profile names ``scripts/build-server.sh KIND`` writes by default (one per KIND).
BUILDABLE = ("mysql-5.5", "xtradb-5.5", "percona-5.5")
#: The profiles the repository ships (configs/servers, tracked by git; a test keeps this list
#: equal to them): ``server add`` and ``build-server.sh`` never write over one.
SHIPPED_PROFILES = ("mariadb-debian", "example-mysql-tarball", "example-percona-tarball")


def is_profile_name(name: str) -> bool:
    """Whether ``name`` is a valid profile name (:data:`NAME_PATTERN`, at most 80 characters)."""
    return len(name) <= NAME_MAX and re.fullmatch(NAME_PATTERN[1:-1], name) is not None


def shipped_profile(target: Path) -> str | None:
    """The name of the shipped profile that writing ``target`` would replace, or None.

    ``target`` is compared by its folder (links resolved) and name, and by file identity, so
    neither a relative path, a symlink nor a hard link to a shipped profile gets past.
    """
    shipped = [paths.SERVER_PROFILES_DIR / f"{name}.yaml" for name in SHIPPED_PROFILES]
    try:
        folder = target.absolute().parent.resolve()
    except OSError:
        folder = target.absolute().parent
    for path in shipped:
        if folder == path.parent.resolve() and target.name == path.name:
            return path.stem
        if same_file(target, path):
            return path.stem
    return None


def available_profiles() -> list[str]:
    """Names of the profiles in ``configs/servers`` (file stems), sorted."""
    return paths.names_in(paths.SERVER_PROFILES_DIR, ".yaml")


def profile_path(name_or_path: str, relative_to: Path | None = None) -> Path:
    """Where a profile lives: ``configs/servers/NAME.yaml`` for a bare name, else the path.

    Relative paths are tried against the current directory, then ``relative_to`` (the folder
    of the experiment file naming the profile).
    """
    return paths.named_file(name_or_path, paths.SERVER_PROFILES_DIR, (".yaml", ".yml"),
                            relative_to)


def load_profile(name_or_path: str, relative_to: Path | None = None) -> ServerProfile:
    """Read and validate a server profile by name or path.

    Raises
    ------
    ConfigError
        Unknown name (with the available profiles and a did-you-mean), a missing file, or an
        invalid profile (file, key path and message per problem).
    """
    path = profile_path(name_or_path, relative_to)
    if not path.exists():
        if path.parent == paths.SERVER_PROFILES_DIR and "/" not in name_or_path:
            if name_or_path in BUILDABLE:
                raise ConfigError(
                    f"server profile '{name_or_path}' is not built on this machine",
                    where="server",
                    fix=f"build it: scripts/build-server.sh {name_or_path} SRC PREFIX"
                    " (SRC: your source tree or tarball; see docs/servers.md)",
                )
            raise ConfigError(
                f"unknown server profile {quote(name_or_path)}",
                where="server",
                fix=f"{did_you_mean(name_or_path, available_profiles())}; profiles live in"
                f" {paths.SERVER_PROFILES_DIR}",
            )
        raise ConfigError("server profile file not found", where=str(path), fix="check the path")
    return load_versioned(path, ServerProfile, "server profile")


@dataclass(frozen=True)
class ResolvedServer:
    """A profile whose binaries exist, with the flavor and version the binary reports."""

    profile: ServerProfile
    flavor: Flavor
    mysqld: Path
    #: ``install_db`` (mariadb-install-db / mysql_install_db) or ``initialize``
    #: (``mysqld --initialize-insecure``, MySQL/Percona 5.7+).
    init_kind: InitKind
    version: tuple[int, int, int]
    version_string: str
    install_db: Path | None = None
    basedir: Path | None = None
    lib_dirs: tuple[Path, ...] = field(default_factory=tuple)

    @property
    def label(self) -> str:
        """``mariadb-10.11``, ``mysql-8.0.36``: as used in messages (:func:`server_label`)."""
        return server_label(self.flavor, self.version)

    def start_args(self) -> list[str]:
        """Command-line options every start of this server gets before its my.cnf's.

        ``--basedir`` for a tree, and for MySQL/Percona 8.0+ ``--secure-file-priv=`` (a
        package build's compiled-in ``/var/lib/mysql-files`` does not exist outside its
        package, and the server refuses to start without it) and ``--mysqlx=OFF`` (the X
        plugin listens on port 33060 and a socket in ``/run/mysqld`` — two sandboxes would
        contend for them, and no benchmark here speaks the X protocol).
        """
        args = [f"--basedir={self.basedir}"] if self.basedir else []
        if self.flavor != "mariadb" and self.version >= (8, 0, 0):
            args += ["--secure-file-priv=", "--mysqlx=OFF"]
        return args

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for every run of this server's binaries (``lib_dirs`` applied).

        ``LD_LIBRARY_PATH`` gets the profile's ``lib_dirs`` in front of what ``base`` (default:
        this process's environment) has.
        """
        env = dict(os.environ if base is None else base)
        if self.lib_dirs:
            extra = ":".join(str(p) for p in self.lib_dirs)
            env["LD_LIBRARY_PATH"] = extra + (
                ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""
            )
        return env


_CACHE: dict[tuple[str, int, str], str] = {}
#: ``mysqld --version`` answers in ~40 ms; a binary silent for this long is not a server.
VERSION_TIMEOUT_S = 10


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


#: Where a tarball keeps its datadir install script, newest layout first.
INSTALL_DB_CANDIDATES = (
    "scripts/mariadb-install-db",
    "bin/mariadb-install-db",
    "scripts/mysql_install_db",
    "bin/mysql_install_db",
)
#: Where a tarball keeps its server binary.
MYSQLD_CANDIDATES = ("bin/mariadbd", "bin/mysqld", "sbin/mysqld")


def find_install_db(basedir: Path) -> Path | None:
    """The datadir install script inside an unpacked tarball, or None."""
    return next(
        (basedir / c for c in INSTALL_DB_CANDIDATES if (basedir / c).is_file()), None
    )


def _absolute(path: str) -> Path:
    """A profile's path as an absolute one (``~`` expanded; a relative one from the current
    folder): the probes run in temporary folders, where a relative path names nothing."""
    return Path(os.path.abspath(Path(path).expanduser())) if path else Path(path)


def _locate(profile: ServerProfile, where: str) -> tuple[Path, Path | None, Path | None]:
    """(mysqld, install_db or None, basedir or None) — checked to exist and be executable."""
    fix_pkg = (
        "install the server (apt-get install mariadb-server) or fix the path in the profile"
        if profile.flavor == "mariadb"
        else "unpack the binary tarball there or fix the path in the profile"
    )
    if profile.basedir is None:
        mysqld = _absolute(profile.mysqld or "")
        if not _executable(mysqld):
            raise PreflightError(
                f"mysqld binary {mysqld} is missing or not executable",
                where=f"{where}: mysqld",
                fix=fix_pkg,
            )
        install_db = _absolute(profile.install_db) if profile.install_db else None
        if install_db is not None and not _executable(install_db):
            raise PreflightError(
                f"install_db binary {install_db} is missing or not executable",
                where=f"{where}: install_db",
                fix=fix_pkg,
            )
        return mysqld, install_db, None
    basedir = _absolute(profile.basedir)
    if not basedir.is_dir():
        raise PreflightError(
            f"basedir {basedir} does not exist", where=f"{where}: basedir", fix=fix_pkg
        )
    mysqld = next((basedir / c for c in MYSQLD_CANDIDATES if _executable(basedir / c)), None)
    if mysqld is None:
        raise PreflightError(
            f"no executable bin/mysqld or bin/mariadbd under {basedir}",
            where=f"{where}: basedir",
            fix="point basedir at the top folder of the unpacked tarball",
        )
    return mysqld, find_install_db(basedir), basedir


def version_text(mysqld: Path, env: dict[str, str], where: str) -> str:
    """``mysqld --version``'s version line (cached per binary, mtime and environment).

    Raises
    ------
    PreflightError
        The binary cannot run or prints no version.
    """
    key = (str(mysqld.resolve()), mysqld.stat().st_mtime_ns, env.get("LD_LIBRARY_PATH", ""))
    if key not in _CACHE:
        try:
            proc = run_checked([mysqld, "--version"], timeout=VERSION_TIMEOUT_S, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = (f"it did not answer within {VERSION_TIMEOUT_S} s (killed)"
                      if isinstance(exc, subprocess.TimeoutExpired) else exc.strerror or exc)
            raise PreflightError(
                f"cannot run `{mysqld} --version`: {reason}", where=f"{where}: mysqld",
                fix="check that the profile names a mysqld or mariadbd binary",
            ) from None
        text = ((proc.stdout or "") + (proc.stderr or "")).strip()
        try:
            parse_version(text)
        except ValueError:
            raise PreflightError(
                f"`{mysqld} --version` printed no version (exit {proc.returncode}):"
                f" {text[:200]!r}",
                where=f"{where}: mysqld",
                fix="check that the binary runs (missing shared libraries? set lib_dirs)",
            ) from None
        # MariaDB 5.5 logs "261124  3:34:40 [Note] ... starting as process 2477 ..." before
        # its version line: keep the version line alone, or the text (and the dataset key
        # hashed from it) would differ on every call.
        versioned = [line.strip() for line in text.splitlines() if " Ver " in line]
        _CACHE[key] = versioned[-1] if versioned else text
    return _CACHE[key]


def resolve_server(profile: ServerProfile, source: str = "<profile>") -> ResolvedServer:
    """Check the profile's binaries and detect the real flavor and version.

    Parameters
    ----------
    profile:
        The loaded profile.
    source:
        Where the profile came from (file path), for messages.

    Raises
    ------
    PreflightError
        A binary is missing or not executable, ``--version`` fails, or the binary's flavor
        contradicts the profile (a MySQL profile pointing at mariadbd).
    """
    mysqld, install_db, basedir = _locate(profile, source)
    lib_dirs = tuple(_absolute(p) for p in profile.lib_dirs)
    probe = ResolvedServer(profile, profile.flavor, mysqld, "install_db", (0, 0, 0), "",
                           lib_dirs=lib_dirs)
    version_string = version_text(mysqld, probe.env(), source)
    version, detected = parse_version(version_string)
    flavor: Flavor = profile.flavor
    if detected == "mariadb" and profile.flavor != "mariadb":
        raise PreflightError(
            f"profile says flavor {profile.flavor} but {mysqld} is MariaDB ({version_string})",
            where=f"{source}: flavor",
            fix="set `flavor: mariadb`",
        )
    if profile.flavor == "mariadb" and detected != "mariadb":
        raise PreflightError(
            f"profile says flavor mariadb but {mysqld} reports {version_string!r}",
            where=f"{source}: flavor",
            fix="set `flavor: mysql` or `flavor: percona`",
        )
    if detected == "percona":
        flavor = "percona"  # a Percona build has Percona's extra variables even if called mysql
    init_kind: InitKind = "initialize" if uses_initialize(flavor, version) else "install_db"
    if init_kind == "install_db" and install_db is None:
        raise PreflightError(
            f"{flavor} {'.'.join(map(str, version))} needs an install script to create a datadir,"
            " and none was found",
            where=f"{source}: {'basedir' if basedir else 'install_db'}",
            fix="set `install_db` (e.g. /usr/bin/mariadb-install-db) or use a complete tarball",
        )
    return ResolvedServer(
        profile=profile,
        flavor=flavor,
        mysqld=mysqld,
        init_kind=init_kind,
        version=version,
        version_string=version_string,
        install_db=install_db,
        basedir=basedir,
        lib_dirs=lib_dirs,
    )


def resolve_binary(
    mysqld: Path | str, install_db: Path | str | None = None, basedir: Path | str | None = None
) -> ResolvedServer:
    """Describe a server binary without a profile file (tests, bench scripts).

    The flavor is what ``--version`` says (MariaDB, Percona; otherwise MySQL); everything
    else is :func:`resolve_server`'s work on an in-memory profile.
    """
    mysqld = Path(mysqld)
    if basedir is None and not _executable(mysqld):
        raise PreflightError("mysqld binary not found", str(mysqld), "install the server")
    env = dict(os.environ)
    if basedir is not None:
        found = next((Path(basedir) / c for c in MYSQLD_CANDIDATES
                      if _executable(Path(basedir) / c)), mysqld)
        mysqld = found
    _, detected = parse_version(version_text(mysqld, env, str(mysqld)))
    layout = (
        {"basedir": str(basedir)}
        if basedir is not None
        else {"mysqld": str(mysqld), "install_db": str(install_db) if install_db else None}
    )
    profile = ServerProfile(version=1, name="local", flavor=detected or "mysql", **layout)
    return resolve_server(profile, str(mysqld))
