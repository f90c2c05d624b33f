"""The system commands the test suite uses, and where each one comes from.

Every test that looks for a command on this machine asks :func:`which` (or :func:`missing`),
never :func:`shutil.which` directly, and every absolute ``/usr/…/bin`` path a test names is a
command of this table too. ``tests/test_setup_installs_tools.py`` holds the table to
``scripts/setup.sh``: a command the tests need is installed by set-up (its Debian package is in
set-up's list), or it is one of :data:`OPTIONAL`, which no package registry ships and the README
names with the command that provides it. A fresh machine then has every tool a test needs
after the README's test command has run its set-up — the rule a missing ``bison`` once broke.
"""

from __future__ import annotations

import shutil

#: Command → the Debian package ``scripts/setup.sh`` installs for it.
FROM_SETUP: dict[str, str] = {
    # The servers and clients under test.
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "mysqld": "mariadb-server",
    "mariadb": "mariadb-client",
    "sysbench": "sysbench",
    # The throwaway PostgreSQL clusters of the results-store tests.
    "pg_config": "postgresql",
    "initdb": "postgresql",
    "pg_ctl": "postgresql",
    "pg_dump": "postgresql",
    # The report's screenshot test.
    "chromium": "chromium",
    "chromium-browser": "chromium",
    # Building the Go driver when the checkout has no build.
    "go": "golang-go",
    # A server binary that needs a profile's lib_dirs.
    "patchelf": "patchelf",
    # scripts/build-server.sh's tests configure a tree with cmake (its build dependencies).
    "cmake": "cmake",
    "bison": "bison",
    "make": "make",
    "gcc": "gcc",
    "g++": "g++",
    # Host checks: test filesystems, device-mapper throttles, an unprivileged user, immutable files.
    "losetup": "mount",
    "mount": "mount",
    "addpart": "util-linux",
    "setpriv": "util-linux",
    "unshare": "util-linux",
    "mkfs.ext4": "e2fsprogs",
    "chattr": "e2fsprogs",
    "dmsetup": "dmsetup",
    # The shell and tools scripts/pinned.sh runs with (its tests lay a PATH without git).
    "bash": "bash",
    "dirname": "coreutils",
    "basename": "coreutils",
    "env": "coreutils",
    "cp": "coreutils",
}

#: Command → how to get it. No registry ships these; the README lists each as optional, and
#: the tests that need them carry the ``optional_tool`` marker (they skip, saying so).
OPTIONAL: dict[str, str] = {
    "tpcc_start": "scripts/build-tpcc-mysql.sh SRC_DIR (tpcc-mysql's source)",
    "tpcc_load": "scripts/build-tpcc-mysql.sh SRC_DIR (tpcc-mysql's source)",
}


def _known(name: str) -> None:
    if name not in FROM_SETUP and name not in OPTIONAL:
        raise KeyError(
            f"{name!r} is not in tests/support/system_tools.py: add it to FROM_SETUP with its"
            " Debian package (and the package to scripts/setup.sh), or to OPTIONAL"
        )


def which(name: str) -> str | None:
    """The path of command ``name`` on PATH, or ``None``; ``name`` must be in the table."""
    _known(name)
    return shutil.which(name)


def missing(*names: str) -> list[str]:
    """The commands among ``names`` that are not on PATH (each must be in the table)."""
    return [name for name in names if which(name) is None]
