"""scripts/build-server.sh refuses a system folder, and a folder that is not a 5.5 source tree,
before it reads the tree.

A directory source is hashed file by file (every file's content) to key the build; given
``/``, ``/usr`` or ``/proc`` that read never ends (``/proc`` has files without end) or takes
hours. The script refuses such folders by name, and checks the product (CMakeLists.txt,
VERSION at 5.5, sql/mysqld.cc) before hashing: the "hashing source" step is never reached.
Each call runs under the 30 s guard of :mod:`tests.support.hostile_binaries`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.paths import REPO_ROOT
from tests.support.hostile_binaries import guarded

SCRIPT = REPO_ROOT / "scripts" / "build-server.sh"
PROFILE_NAME = "pytest-system-folder"
PROFILE = REPO_ROOT / "configs" / "servers" / f"{PROFILE_NAME}.yaml"


def build(src: str, tmp_path: Path, home: Path | None = None) -> tuple[int, str]:
    env = {"BUILD_SERVER_CACHE": str(tmp_path / "cache"), "HOME": str(home or tmp_path)}
    return guarded([str(SCRIPT), "mysql-5.5", src, str(tmp_path / "prefix"), "--name",
                    PROFILE_NAME], tmp_path / "build.log", env=env)


def refused(code: int, out: str, tmp_path: Path) -> str:
    """The one line the script said; nothing read, cached, installed or written."""
    lines = [line for line in out.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1, out[-3000:]
    assert "hashing source" not in out
    assert not (tmp_path / "prefix").exists() and not (tmp_path / "cache").exists()
    assert not PROFILE.exists()
    return lines[0]


@pytest.mark.parametrize("src", ["/", "/usr", "/proc", "/proc/self", "/sys", "/dev", "/etc",
                                 "/var", "/tmp"])
def test_a_system_folder_is_refused_by_name(src: str, tmp_path: Path) -> None:
    code, out = build(src, tmp_path)
    line = refused(code, out, tmp_path)
    # /proc/self resolves to the script's own pid: only the start of the path is known.
    real = "/proc/" if src == "/proc/self" else f"{Path(src).resolve()})"
    assert line.startswith(f"build-server: {src} is a system folder ({real}"), line
    assert line.endswith("), not a source tree: give the folder of an unpacked MySQL,"
                         " MariaDB or Percona Server 5.5 source."), line


def test_the_home_folder_and_a_link_to_a_system_folder_are_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    code, out = build(str(home), tmp_path, home=home)
    assert "is a system folder" in refused(code, out, tmp_path)
    link = tmp_path / "looks-like-a-tree"
    link.symlink_to("/usr")
    code, out = build(str(link), tmp_path)
    assert f"{link} is a system folder (/usr)" in refused(code, out, tmp_path)


def test_a_folder_that_is_not_a_tree_is_refused_before_hashing(tmp_path: Path) -> None:
    """A large folder that is not a source tree (here: a 5.6 tree and a plain folder) is
    refused from the few files it lacks, without its files being read."""
    plain = tmp_path / "data"
    plain.mkdir()
    os.mkfifo(plain / "never-written")  # a hash that opened it would wait here for ever
    (plain / "big.bin").write_bytes(b"\0" * 1_000_000)
    code, out = build(str(plain), tmp_path)
    assert refused(code, out, tmp_path) == (
        f"build-server: {plain} is not a MySQL-family source tree (no CMakeLists.txt, VERSION,"
        " sql/mysqld.cc).")
    newer = tmp_path / "mysql-5.6"
    (newer / "sql").mkdir(parents=True)
    (newer / "sql" / "mysqld.cc").write_text("")
    (newer / "CMakeLists.txt").write_text("")
    (newer / "VERSION").write_text(
        "MYSQL_VERSION_MAJOR=5\nMYSQL_VERSION_MINOR=6\nMYSQL_VERSION_PATCH=51\n")
    code, out = build(str(newer), tmp_path)
    assert "is version 5.6.51, not the 5.5 that mysql-5.5 needs" in refused(code, out, tmp_path)
