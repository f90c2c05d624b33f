"""The pieces of ``server add``: finding the tree, the CPU check, unpacking once, library folders.

The refusals as a user sees them are tests/cli/test_server_verbs.py; the two MariaDB jars end to
end are tests/runner/test_distributions_e2e.py. Here: the search's bounds, what an unpack
writes and reuses, the ELF check against headers of real CPUs, the execute bits an archive
without modes gets, the library folder a binary needs (Debian's mariadbd rewritten to need a
library only the tree has, then a datadir created with it), and the help-text reading that
finds the variables a server ignores.
"""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from core import paths
from core.errors import PreflightError
from runner.knobs.translate import translate_partial
from runner.server import archives
from runner.server.distributions import (
    _HOST_ELF,
    SEARCH_DEPTH,
    add_distribution,
    elf_mismatch,
    find_server_trees,
    make_runnable,
)
from runner.server.options import parse_descriptions
from runner.server.profiles import load_profile, resolve_server
from tests.conftest import MARIADBD
from tests.support.distributions import (
    ANSWERS_VERSION,
    elf_header,
    relocated_debian_tree,
    tree_files,
    write_jar,
    write_tarball,
    write_tree,
)


def test_trees_are_found_down_to_the_search_depth(tmp_path: Path) -> None:
    deep = tmp_path / Path(*["d"] * SEARCH_DEPTH)
    too_deep = tmp_path / "x" / Path(*["d"] * SEARCH_DEPTH)
    for root in (deep, too_deep, tmp_path / "a"):
        write_tree(root, tree_files(mysqld=ANSWERS_VERSION))
    # The tree's own folders are not searched again: a nested copy is not a second server.
    write_tree(tmp_path / "a" / "mysql-test" / "inner", tree_files(mysqld=ANSWERS_VERSION))
    assert find_server_trees(tmp_path) == [tmp_path / "a", deep]


def test_mariadbs_mysqld_link_is_the_same_tree(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "t", tree_files(mysqld=ANSWERS_VERSION, binary="bin/mariadbd"))
    (tree / "bin" / "mysqld").symlink_to("mariadbd")
    assert find_server_trees(tmp_path) == [tree]


def test_a_huge_folder_ends_the_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("runner.server.distributions.SEARCH_LIMIT", 5)
    for i in range(10):
        (tmp_path / f"f{i}").mkdir()
    with pytest.raises(PreflightError, match="among the first 5 folders"):
        find_server_trees(tmp_path)


@pytest.mark.parametrize(("machine", "bits", "name"), [
    (183, 64, "ARM64 (aarch64)"), (21, 64, "PowerPC 64"), (243, 64, "RISC-V")])
def test_another_cpus_binary_is_named(tmp_path: Path, machine: int, bits: int,
                                      name: str) -> None:
    binary = tmp_path / "mysqld"
    binary.write_bytes(elf_header(machine))
    host = platform.machine()
    if (machine, 2) == _HOST_ELF.get(host):
        assert elf_mismatch(binary) is None  # this machine's own CPU
    else:
        assert elf_mismatch(binary) == f"a {bits}-bit {name} binary, and this machine is {host}"


def test_this_cpus_binary_and_a_script_pass(tmp_path: Path) -> None:
    assert elf_mismatch(MARIADBD) is None
    script = tmp_path / "mysqld"
    script.write_text("#!/bin/sh\n")
    assert elf_mismatch(script) is None


def test_an_archive_is_unpacked_once_per_content(tmp_path: Path) -> None:
    files = tree_files(mysqld=ANSWERS_VERSION)
    jar = write_jar(tmp_path / "server.jar", files)
    first, made = archives.unpack(jar)
    assert made and first.parent == paths.cache_dir() / "distributions"
    assert (first / "bin" / "mysqld").read_bytes() == files["bin/mysqld"]
    again, made_again = archives.unpack(jar)
    assert (again, made_again) == (first, False)
    (tmp_path / "other").mkdir()
    other = write_jar(tmp_path / "other" / "server.jar", {**files, "NOTE": b"different"})
    assert archives.unpack(other)[0] != first  # same name, other bytes: its own folder
    assert not list(first.parent.glob(".*.tmp-*")), "a temporary unpack folder was left"


def test_zip_without_modes_gets_execute_bits_only_where_binaries_live(tmp_path: Path) -> None:
    jar = write_jar(tmp_path / "server.jar", {**tree_files(mysqld=ANSWERS_VERSION),
                                              "lib/libx.so.1": b"x"})
    tree, _ = archives.unpack(jar)
    assert not (tree / "bin" / "mysqld").stat().st_mode & 0o111  # as the jar had it
    make_runnable(tree)
    assert (tree / "bin" / "mysqld").stat().st_mode & 0o111
    assert (tree / "scripts" / "mysql_install_db").stat().st_mode & 0o111
    assert not (tree / "lib" / "libx.so.1").stat().st_mode & 0o111
    assert not (tree / "share" / "english" / "errmsg.sys").stat().st_mode & 0o111


def test_a_tarball_keeps_its_modes(tmp_path: Path) -> None:
    tarball = write_tarball(tmp_path / "s.tar.gz", tree_files(mysqld=ANSWERS_VERSION))
    tree, _ = archives.unpack(tarball)
    assert (tree / "server" / "bin" / "mysqld").stat().st_mode & 0o777 == 0o755


def test_the_help_text_names_the_variables_a_server_ignores() -> None:
    text = """\
  --innodb-cleaner-lsn-age-factor[=name]
                      Deprecated and ignored; only exists to allow easier
                      upgrade from earlier XtraDB versions.. One of: LEGACY,
  --innodb-flush-neighbors[=#]
                      Set to 0 (don't flush neighbors from buffer pool), 1
  -a, --ansi          Use ANSI SQL syntax instead of MySQL syntax.
  --innodb-log-spin-wait-delay[=#]
                      Deprecated parameter with no effect

Variables (--variable-name=value)
innodb-flush-neighbors 1
"""
    described = parse_descriptions(text)
    assert described["innodb_cleaner_lsn_age_factor"].startswith("Deprecated and ignored; only")
    assert described["ansi"] == "Use ANSI SQL syntax instead of MySQL syntax."
    assert "flush contiguous" not in described["innodb_flush_neighbors"]  # one line given
    assert set(described) == {"innodb_cleaner_lsn_age_factor", "innodb_flush_neighbors", "ansi",
                              "innodb_log_spin_wait_delay"}


@pytest.mark.parametrize("level", ["legacy", "high_checkpoint"])
def test_adaptive_checkpoint_is_absent_on_mariadb_10_2(level: str) -> None:
    """10.2 lists innodb_cleaner_lsn_age_factor but its help says it is ignored."""
    names = {"innodb_cleaner_lsn_age_factor", "innodb_adaptive_flushing",
             "innodb_adaptive_flushing_lwm"}
    tr, problems = translate_partial({"adaptive_checkpoint": level}, "mariadb", (10, 2, 11),
                                     option_names=names)
    assert tr.server_options == {}
    assert problems and "is absent on mariadb-10.2" in problems[0]
    assert "innodb_adaptive_flushing_lwm" in problems[0]
    tr, problems = translate_partial({"adaptive_checkpoint": level}, "percona", (8, 0, 36),
                                     option_names=names)
    assert tr.server_options == {"innodb_cleaner_lsn_age_factor": level} and not problems


@pytest.fixture
def tree_needing_its_library(tmp_path: Path) -> Path:
    """Debian's MariaDB as a relocatable tree whose mariadbd needs a library only its lib/ has."""
    return relocated_debian_tree(tmp_path / "mariadb-relocated")


@pytest.mark.mysql
def test_the_library_folder_a_binary_needs_becomes_lib_dirs(tree_needing_its_library: Path,
                                                            tmp_path: Path) -> None:
    added = add_distribution("relocated", tree_needing_its_library,
                             profile_file=tmp_path / "relocated.yaml")
    assert added.server.lib_dirs == (tree_needing_its_library / "lib",)
    assert not added.unpacked  # a folder is used where it is
    again = resolve_server(load_profile(str(tmp_path / "relocated.yaml")))
    assert again.basedir == tree_needing_its_library and again.version >= (10, 5, 0)
    assert again.lib_dirs == (tree_needing_its_library / "lib",)


@pytest.mark.mysql
def test_a_library_nobody_has_is_named(tree_needing_its_library: Path, tmp_path: Path) -> None:
    (tree_needing_its_library / "lib" / "libfbtestz.so.1").unlink()
    with pytest.raises(PreflightError) as raised:
        add_distribution("relocated", tree_needing_its_library,
                         profile_file=tmp_path / "relocated.yaml")
    assert "needs the shared library libfbtestz.so.1, which neither this system nor the" \
           " distribution has" in raised.value.what
    assert not (tmp_path / "relocated.yaml").exists()
