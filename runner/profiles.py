"""Server profiles (``configs/servers/NAME.yaml``) and the binaries they resolve to.

A profile says *which* mysqld to run: the Debian package's paths, or the ``basedir`` of an
unpacked binary tarball. :func:`resolve_server` turns it into a :class:`ResolvedServer` by
checking the binaries and asking ``mysqld --version`` which flavor and version it really is;
the knob table (:mod:`runner.knobs`) keys on that, never on what the profile claims.

Base my.cnf templates (``configs/mycnf/NAME.cnf``) are looked up here too, because they are
named the same way (a bare name or a path).
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from flushbench import paths
from flushbench.errors import ConfigError, PreflightError
from flushbench.validation import StrictModel, load_versioned
from runner.proc import run_checked

Flavor = Literal["mariadb", "mysql", "percona"]
InitKind = Literal["install_db", "initialize"]

#: Option-file sections a sandboxed mysqld reads (others, like [client], are ignored here).
SERVER_SECTIONS = ("mysqld", "server", "mariadb", "mariadbd")


class ServerProfile(StrictModel):
    """One server installation: Debian-style binary paths or a tarball ``basedir``."""

    version: Literal[1]
    name: Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][\w.-]*$")]
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

    @model_validator(mode="after")
    def _one_layout(self) -> ServerProfile:
        if self.basedir is None and self.mysqld is None:
            raise ValueError("give either `mysqld` (+ `install_db`) or `basedir`")
        if self.basedir is not None and (self.mysqld is not None or self.install_db is not None):
            raise ValueError("`basedir` and `mysqld`/`install_db` exclude each other — keep one")
        return self


def available_profiles() -> list[str]:
    """Names of the profiles in ``configs/servers`` (file stems), sorted."""
    if not paths.SERVER_PROFILES_DIR.is_dir():
        return []
    return sorted(p.stem for p in paths.SERVER_PROFILES_DIR.glob("*.yaml"))


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    listing = "available: " + (", ".join(choices) or "(none)")
    return f"did you mean '{close[0]}'? ({listing})" if close else listing


def profile_path(name_or_path: str, relative_to: Path | None = None) -> Path:
    """Where a profile lives: ``configs/servers/NAME.yaml`` for a bare name, else the path.

    Relative paths are tried against the current directory, then ``relative_to`` (the folder
    of the experiment file naming the profile).
    """
    if "/" in name_or_path or name_or_path.endswith((".yaml", ".yml")):
        path = Path(name_or_path).expanduser()
        if not path.is_absolute() and not path.exists() and relative_to is not None:
            alt = relative_to / path
            if alt.exists():
                return alt
        return path
    return paths.SERVER_PROFILES_DIR / f"{name_or_path}.yaml"


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
            raise ConfigError(
                f"unknown server profile '{name_or_path}'",
                where="server",
                fix=f"{_did_you_mean(name_or_path, available_profiles())}; profiles live in"
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
        """``mariadb-10.11``: flavor and major.minor, as used in messages."""
        return f"{self.flavor}-{self.version[0]}.{self.version[1]}"

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for running the binary (``LD_LIBRARY_PATH`` from ``lib_dirs``)."""
        env = dict(os.environ if base is None else base)
        if self.lib_dirs:
            extra = ":".join(str(p) for p in self.lib_dirs)
            env["LD_LIBRARY_PATH"] = extra + (
                ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""
            )
        return env


_VERSION_RE = re.compile(r"\bVer\s+(\d+)\.(\d+)\.(\d+)(\S*)")
_CACHE: dict[tuple[str, int, str], tuple[str, tuple[int, int, int]]] = {}


def parse_version(text: str) -> tuple[tuple[int, int, int], str]:
    """(version tuple, detected flavor or "") from ``mysqld --version`` output.

    ``mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64`` gives
    ``((10, 11, 19), "mariadb")``; a Percona build says "Percona" in its suffix or comment.
    """
    m = _VERSION_RE.search(text)
    if not m:
        raise ValueError(f"no version in {text.strip()!r}")
    version = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    lowered = text.lower()
    flavor = "mariadb" if "mariadb" in lowered else "percona" if "percona" in lowered else ""
    return version, flavor


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _locate(profile: ServerProfile, where: str) -> tuple[Path, Path | None, Path | None]:
    """(mysqld, install_db or None, basedir or None) — checked to exist and be executable."""
    fix_pkg = (
        "install the server (apt-get install mariadb-server) or fix the path in the profile"
        if profile.flavor == "mariadb"
        else "unpack the binary tarball there or fix the path in the profile"
    )
    if profile.basedir is None:
        mysqld = Path(profile.mysqld or "")
        if not _executable(mysqld):
            raise PreflightError(
                f"mysqld binary {mysqld} is missing or not executable",
                where=f"{where}: mysqld",
                fix=fix_pkg,
            )
        install_db = Path(profile.install_db) if profile.install_db else None
        if install_db is not None and not _executable(install_db):
            raise PreflightError(
                f"install_db binary {install_db} is missing or not executable",
                where=f"{where}: install_db",
                fix=fix_pkg,
            )
        return mysqld, install_db, None
    basedir = Path(profile.basedir).expanduser()
    if not basedir.is_dir():
        raise PreflightError(
            f"basedir {basedir} does not exist", where=f"{where}: basedir", fix=fix_pkg
        )
    candidates = [basedir / "bin" / "mariadbd", basedir / "bin" / "mysqld",
                  basedir / "sbin" / "mysqld"]
    mysqld = next((c for c in candidates if _executable(c)), None)
    if mysqld is None:
        raise PreflightError(
            f"no executable bin/mysqld or bin/mariadbd under {basedir}",
            where=f"{where}: basedir",
            fix="point basedir at the top folder of the unpacked tarball",
        )
    install_candidates = [
        basedir / "scripts" / "mariadb-install-db",
        basedir / "bin" / "mariadb-install-db",
        basedir / "scripts" / "mysql_install_db",
        basedir / "bin" / "mysql_install_db",
    ]
    install_db = next((c for c in install_candidates if c.is_file()), None)
    return mysqld, install_db, basedir


def _init_kind(flavor: str, version: tuple[int, int, int], install_db: Path | None) -> InitKind:
    # MySQL/Percona 5.7 and later create a datadir with `mysqld --initialize-insecure`
    # (mysql_install_db is deprecated there); MariaDB and 5.5/5.6 need the install script.
    if flavor != "mariadb" and version >= (5, 7, 0):
        return "initialize"
    return "install_db"


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
    lib_dirs = tuple(Path(p) for p in profile.lib_dirs)
    stat = mysqld.stat()
    key = (str(mysqld.resolve()), stat.st_mtime_ns, ":".join(profile.lib_dirs))
    if key not in _CACHE:
        env = dict(os.environ)
        if lib_dirs:
            env["LD_LIBRARY_PATH"] = ":".join(str(p) for p in lib_dirs)
        try:
            proc = run_checked([mysqld, "--version"], timeout=30, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PreflightError(
                f"cannot run `{mysqld} --version`: {exc}", where=f"{source}: mysqld"
            ) from None
        text = (proc.stdout or "") + (proc.stderr or "")
        try:
            version, detected = parse_version(text)
        except ValueError:
            raise PreflightError(
                f"`{mysqld} --version` printed no version (exit {proc.returncode}):"
                f" {text.strip()[:200]!r}",
                where=f"{source}: mysqld",
                fix="check that the binary runs (missing shared libraries? set lib_dirs)",
            ) from None
        _CACHE[key] = (text.strip(), version)
    version_string, version = _CACHE[key]
    _, detected = parse_version(version_string)
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
    init_kind = _init_kind(flavor, version, install_db)
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


# --- base my.cnf templates ------------------------------------------------------------------


def available_base_configs() -> list[str]:
    """Names of the base my.cnf templates in ``configs/mycnf``."""
    if not paths.MYCNF_DIR.is_dir():
        return []
    return sorted(p.stem for p in paths.MYCNF_DIR.glob("*.cnf"))


def base_config_path(name_or_path: str, relative_to: Path | None = None) -> Path:
    """``configs/mycnf/NAME.cnf`` for a bare name, else the path (raises if missing)."""
    if "/" in name_or_path or name_or_path.endswith(".cnf"):
        path = Path(name_or_path).expanduser()
        if not path.is_absolute() and not path.exists() and relative_to is not None:
            path = relative_to / path
        if not path.is_file():
            raise ConfigError(
                f"base config file {path} not found", where="base_config", fix="check the path"
            )
        return path
    path = paths.MYCNF_DIR / f"{name_or_path}.cnf"
    if not path.is_file():
        raise ConfigError(
            f"unknown base config '{name_or_path}'",
            where="base_config",
            fix=_did_you_mean(name_or_path, available_base_configs()),
        )
    return path


def read_mycnf(path: Path) -> dict[str, str]:
    """The server options of an option file (``[mysqld]``-like sections), names underscored.

    Flags without a value (``skip-name-resolve``) map to ``""``. Later lines win, as in mysqld.
    """
    out: dict[str, str] = {}
    section = ""
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise ConfigError(f"bad section header {line!r}", where=f"{path}:{lineno}")
            section = line[1:-1].strip().lower()
            continue
        if line.startswith("!"):
            raise ConfigError(
                "!include directives are not supported in base configs",
                where=f"{path}:{lineno}",
                fix="inline the options",
            )
        if section not in SERVER_SECTIONS:
            continue
        name, sep, value = line.partition("=")
        name = name.strip().lower().replace("-", "_")
        value = value.split("#", 1)[0].strip() if sep else ""
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[name] = value
    return out
