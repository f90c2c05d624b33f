"""Server profiles for servers built from source by ``scripts/build-server.sh``.

The script calls ``python -m runner.server.built`` as its very last step. The profile is
checked before it is written: the installed ``bin/mysqld`` must run and report a 5.5 version,
its flavor comes from ``mysqld --version`` (MariaDB 5.5 with XtraDB says ``MariaDB``, a
Percona Server build says ``Percona`` in the compilation comment the script sets, Oracle's
says neither) and must be the one the KIND names, and
:func:`runner.server.profiles.resolve_server` must accept it. A binary with Galera's wsrep
hooks (Percona XtraDB Cluster) must default to ``wsrep_provider=none``, so that every sandbox
it starts replicates nothing (experiments may not set ``wsrep_*`` unless they list it in
``allow_variables``). The YAML is written to a temporary file and renamed, so a reader never
sees half a profile.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import yaml

from core.errors import FlushbenchError
from core.flavors import parse_version
from runner.server.options import option_list
from runner.server.profiles import (
    ResolvedServer,
    ServerProfile,
    resolve_server,
    shipped_profile,
    version_text,
)

#: First line of every profile this module writes; :func:`is_built_profile` looks for it.
MARKER = "# Written by scripts/build-server.sh"

#: The build command a skipped test or a missing profile names.
BUILD_HINT = "scripts/build-server.sh {kind} SRC ~/.cache/flushbench/servers/{kind}"

#: KIND → (the flavor ``mysqld --version`` must reveal, the engine named in the description).
KINDS: dict[str, tuple[str | None, str]] = {
    "mysql-5.5": (None, "InnoDB"),
    "xtradb-5.5": ("mariadb", "XtraDB"),
    "percona-5.5": ("percona", "Percona Server's XtraDB"),
}
#: The product each detected flavor is, for messages.
PRODUCTS: dict[str | None, str] = {None: "Oracle MySQL", "mariadb": "MariaDB",
                                   "percona": "Percona Server"}
#: What Galera's hooks default to when no replication library is loaded.
NO_WSREP_PROVIDER = "none"


def profile_text(profile: ServerProfile, kind: str, source: str, key: str) -> str:
    """The YAML of a built server's profile, with a header saying how to rebuild it."""
    header = (
        f"{MARKER} on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC (build key {key}).\n"
        f"# Source: {source}\n"
        f"# Rebuild: scripts/build-server.sh {kind} {source} {profile.basedir}\n"
        "# Machine-specific (it names this machine's PREFIX): not meant to be committed.\n"
    )
    if "wsrep" in profile.description:
        header += ("# Galera's wsrep hooks are compiled in and inactive: the binary defaults to"
                   " wsrep_provider=none\n# (checked at build time); experiments may not set"
                   " wsrep_* unless allow_variables lists it.\n")
    body = profile.model_dump(exclude_defaults=True, exclude_none=True)
    body = {"version": 1, **{k: v for k, v in body.items() if k != "version"}}
    return header + yaml.safe_dump(body, sort_keys=False)


def build_profile(name: str, kind: str, prefix: Path) -> ServerProfile:
    """Check the installed server under ``prefix`` and describe it as a profile.

    Raises
    ------
    FlushbenchError
        The binary does not run, is not 5.5, is not the product ``kind`` names, defaults to
        a wsrep provider, or the profile does not resolve.
    """
    mysqld = prefix / "bin" / "mysqld"
    text = version_text(mysqld, dict(os.environ), str(mysqld))
    version, detected = parse_version(text)
    if version[:2] != (5, 5):
        raise FlushbenchError(f"{mysqld} reports {text!r}, not a 5.5 server", str(mysqld))
    wanted, engine = KINDS[kind]
    if detected != wanted:
        raise FlushbenchError(
            f"--version says {text.split(' Ver ', 1)[-1]!r}: {PRODUCTS[detected]}, not the"
            f" {PRODUCTS[wanted]} that KIND {kind} builds", str(mysqld))
    description = f"{text.split('Ver', 1)[-1].split()[0]} built from source ({engine})"
    profile = ServerProfile(version=1, name=name, flavor=detected or "mysql",
                            description=description, basedir=str(prefix))
    if wsrep_hooks(resolve_server(profile, str(prefix))):
        description += "; wsrep hooks inactive (wsrep_provider=none)"
        profile = profile.model_copy(update={"description": description})
    return profile


def wsrep_hooks(server: ResolvedServer) -> bool:
    """Whether the binary carries Galera's wsrep hooks (they must default to no provider).

    Raises
    ------
    FlushbenchError
        The binary would load a replication library by default.
    """
    default = option_list(server).get("wsrep_provider")
    if default is None:
        return False
    if default != NO_WSREP_PROVIDER:
        raise FlushbenchError(
            f"{server.mysqld} defaults to wsrep_provider={default}: every sandbox would load a"
            " Galera library", str(server.mysqld))
    return True


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_built_profile(path: Path) -> bool:
    """Whether a profile file was written by ``scripts/build-server.sh``."""
    try:
        with path.open() as fh:
            return fh.readline().startswith(MARKER)
    except OSError:
        return False


def rebuild_command(path: Path) -> str | None:
    """The ``# Rebuild:`` command in a built profile's header, or None."""
    try:
        for line in path.read_text().splitlines()[:6]:
            if line.startswith("# Rebuild: "):
                return line.removeprefix("# Rebuild: ").strip()
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``scripts/build-server.sh``: write ``--profile`` for ``--prefix``."""
    parser = argparse.ArgumentParser(prog="python -m runner.server.built")
    parser.add_argument("--name", required=True)
    parser.add_argument("--kind", required=True, choices=sorted(KINDS))
    parser.add_argument("--prefix", required=True, type=Path)
    parser.add_argument("--profile", required=True, type=Path)
    parser.add_argument("--source", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    shipped = shipped_profile(args.profile)
    if shipped is not None:  # the script refuses it first; this holds without git too
        print(f"build-server: {args.profile} is the profile {shipped!r} that flushbench ships;"
              " it is never replaced: choose another --name.", file=sys.stderr)
        return 1
    try:
        profile = build_profile(args.name, args.kind, args.prefix)
    except FlushbenchError as exc:
        print(f"build-server: the installed server does not work: {exc}", file=sys.stderr)
        return 1
    write_atomically(args.profile, profile_text(profile, args.kind, args.source, args.key))
    return 0


if __name__ == "__main__":
    sys.exit(main())
