"""``flushbench server add`` refuses what is not a working server, in one sentence, writing nothing.

Each bad input — a folder that is not a server, a tarball built for another CPU, a jar with two
servers, a server that fails ``--help``, one whose install script fails, an archive that
would write outside its folder, a damaged one — gets exit code 2 and one ``error: PATH: … —
fix`` line naming the path, no traceback, no profile, and no unpacked tree left in the cache.
The stand-in binaries are shell scripts (tests/support/distributions.py); the servers that
work are tested in tests/runner/test_distributions_e2e.py.
"""

from __future__ import annotations

import io
import os
import platform
import tarfile
import zipfile
from pathlib import Path

import pytest

from core import paths
from tests.support.cli_runner import CliRun
from tests.support.distributions import (
    ANSWERS_HELP,
    ANSWERS_VERSION,
    REFUSES_HELP,
    elf_header,
    relocated_debian_tree,
    tree_files,
    write_jar,
    write_tarball,
    write_tree,
)

#: A CPU that is not this machine's: ARM64 on x86-64, x86-64 anywhere else.
OTHER_CPU, OTHER_CPU_NAME = ((183, "ARM64 (aarch64)") if platform.machine() == "x86_64"
                            else (62, "x86-64"))


def _cache_trees() -> list[Path]:
    folder = paths.cache_dir() / "distributions"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _refused(cli: CliRun, tmp_path: Path, source: Path, *fragments: str) -> str:
    """Run ``server add`` on ``source``; check the one-line refusal and that nothing stayed."""
    before = _cache_trees()
    profile = tmp_path / "profile.yaml"
    code, out, err = cli(["server", "add", "dist", str(source), "--profile", str(profile)])
    lines = err.strip().splitlines()
    assert code == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith(f"error: {source}: "), err
    assert "Traceback" not in err and " — " in lines[0], err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert not profile.exists()
    assert not (paths.SERVER_PROFILES_DIR / "dist.yaml").exists()
    assert _cache_trees() == before, "a refused archive's unpacked tree was left in the cache"
    return lines[0]


def test_a_folder_that_is_not_a_server(cli: CliRun, tmp_path: Path) -> None:
    folder = tmp_path / "not-a-server"
    write_tree(folder, {"README": b"hello\n", "lib/libfoo.so.1": b"\x7fELF"})
    _refused(cli, tmp_path, folder, "holds no server", "bin/mysqld or bin/mariadbd",
             "name a MySQL, MariaDB or Percona binary distribution")


def test_the_bin_folder_of_a_tree_names_its_parent(cli: CliRun, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "mariadb", tree_files(mysqld=ANSWERS_VERSION))
    _refused(cli, tmp_path, tree / "bin", f"name {tree}")


def test_a_file_that_is_no_archive(cli: CliRun, tmp_path: Path) -> None:
    notes = tmp_path / "mysqld-notes.txt"
    notes.write_text("not an archive\n")
    _refused(cli, tmp_path, notes, "not a directory, a tarball", "zip/jar")


def test_a_tarball_for_another_cpu(cli: CliRun, tmp_path: Path) -> None:
    files = tree_files(mysqld=elf_header(OTHER_CPU), binary="bin/mariadbd")
    tarball = write_tarball(tmp_path / "mariadb-11.4.5-linux-other.tar.gz", files,
                            top="mariadb-11.4.5-linux-other")
    _refused(cli, tmp_path, tarball, "mariadb-11.4.5-linux-other/bin/mariadbd is a 64-bit"
             f" {OTHER_CPU_NAME} binary", f"this machine is {platform.machine()}",
             f"use the distribution built for {platform.machine()}")


def test_a_jar_with_two_servers(cli: CliRun, tmp_path: Path) -> None:
    files = {f"a/{k}": v for k, v in tree_files(mysqld=ANSWERS_VERSION).items()}
    files |= {f"b/{k}": v for k, v in tree_files(mysqld=ANSWERS_VERSION,
                                                 binary="bin/mariadbd").items()}
    jar = write_jar(tmp_path / "two-servers.jar", files)
    _refused(cli, tmp_path, jar, "holds 2 server trees (a, b)", "unpack it",
             "on the tree you want")


def test_a_server_that_fails_its_help(cli: CliRun, tmp_path: Path) -> None:
    tarball = write_tarball(tmp_path / "broken.tar.gz",
                            tree_files(mysqld=ANSWERS_VERSION + REFUSES_HELP))
    _refused(cli, tmp_path, tarball, "server/bin/mysqld fails `--verbose --help`",
             "unknown option", "use a working server build")


def test_a_server_whose_install_script_fails(cli: CliRun, tmp_path: Path) -> None:
    jar = write_jar(tmp_path / "no-install.jar",
                    tree_files(mysqld=ANSWERS_VERSION + ANSWERS_HELP + "exit 1\n"))
    _refused(cli, tmp_path, jar, "mysql_install_db could not create a datadir",
             "FATAL ERROR: Could not find ./bin/my_print_defaults",
             "use the complete binary distribution")


def test_a_tree_without_its_install_script(cli: CliRun, tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "half", tree_files(mysqld=ANSWERS_VERSION, install=None))
    _refused(cli, tmp_path, folder, "mariadb 10.2.11 creates its datadir with an install"
             " script", "scripts has no mariadb-install-db or mysql_install_db",
             "with its scripts/ folder")


def test_a_folder_whose_mysqld_is_not_executable(cli: CliRun, tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "noexec", tree_files(mysqld=ANSWERS_VERSION))
    (folder / "bin" / "mysqld").chmod(0o644)
    _refused(cli, tmp_path, folder, "bin/mysqld is not executable", "chmod +x")


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_an_archive_member_outside_its_folder(cli: CliRun, tmp_path: Path, kind: str) -> None:
    escape = tmp_path / "escaped"
    name = f"../../../../../../../../..{escape}"
    if kind == "tar":
        archive = tmp_path / "evil.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            info = tarfile.TarInfo(name)
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
    else:
        archive = tmp_path / "evil.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr(name, b"evil")
    _refused(cli, tmp_path, archive, "use the server's own distribution archive")
    assert not escape.exists()


def test_a_damaged_tarball(cli: CliRun, tmp_path: Path) -> None:
    whole = write_tarball(tmp_path / "whole.tar.gz",
                          tree_files(mysqld=os.urandom(200_000), binary="bin/mysqld"))
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole.read_bytes()[:60_000])
    _refused(cli, tmp_path, cut, "cannot be read", "download it again")


def test_an_existing_profile_is_kept_without_replace(cli: CliRun, tmp_path: Path) -> None:
    profile = tmp_path / "mine.yaml"
    profile.write_text("version: 1\n")
    code, _, err = cli(["server", "add", "mine", str(tmp_path), "--profile", str(profile)])
    assert code == 2 and f"error: {profile}: a server profile already exists" in err
    assert "--replace" in err and profile.read_text() == "version: 1\n"


def test_a_name_that_is_no_profile_name(cli: CliRun, tmp_path: Path) -> None:
    code, _, err = cli(["server", "add", "../up", str(tmp_path)])
    assert code == 2 and "error: NAME: '../up' is not a profile name" in err


@pytest.mark.mysql
def test_add_writes_the_named_profile_and_check_judges_every_level(
        cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A working tree (Debian's MariaDB relocated, needing its own lib/): ``server add NAME``
    writes configs/servers/NAME.yaml, and ``server check NAME`` prints a verdict per level."""
    profiles = tmp_path / "servers"
    profiles.mkdir()
    monkeypatch.setattr(paths, "SERVER_PROFILES_DIR", profiles)
    tree = relocated_debian_tree(tmp_path / "mariadb-relocated")
    code, out, err = cli(["server", "add", "relocated", str(tree)])
    assert code == 0, err
    assert f"wrote {profiles / 'relocated.yaml'}" in out
    assert f"lib_dirs  {tree / 'lib'}" in out and "install-db created a datadir" in out
    code, out, err = cli(["server", "check", "relocated"])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("relocated: mariadb-10.11 (10.11.")
    rows = {tuple(line.split()[:3]): line for line in lines[2:-1]}
    assert len(rows) == 21
    assert rows[("flush_neighbor_pages", "none", "applied")].endswith("innodb_flush_neighbors=0")
    assert rows[("log_file_size", "64M", "applied")].endswith("innodb_log_file_size=67108864")
    assert "related: innodb_buffer_pool_size" in rows[("buffer_pool_instances", "1", "absent")]
    assert lines[-1].startswith("21 knob levels: 14 applied, 7 absent")
    code, _, err = cli(["server", "check", "relocatd"])
    assert code == 2 and "unknown server profile 'relocatd'" in err and "relocated" in err
