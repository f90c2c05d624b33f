"""A server profile's ``lib_dirs`` reach every run of its binary: --version, --help, the server.

The binary is a copy of Debian's mariadbd rewritten (patchelf) to need a library under a name
only the profile's ``lib_dirs`` provides — like an old tarball that ships its own libraries.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from core.errors import PreflightError
from runner.server import MysqldSandbox, SandboxLayout, write_mycnf
from runner.server.options import dry_run, option_list
from runner.server.profiles import ServerProfile, resolve_server
from tests.conftest import MARIADB_INSTALL_DB, MARIADBD, TEST_BASE_CNF
from tests.support import system_tools

pytestmark = pytest.mark.mysql


@pytest.fixture
def tarball(tmp_path: Path) -> Path:
    """``opt/bin/mariadbd`` needing ``libfbtestz.so.1``, which only ``opt/lib`` has."""
    if system_tools.which("patchelf") is None:
        pytest.fail("patchelf is not installed — run `make setup`")
    base = tmp_path / "opt"
    (base / "bin").mkdir(parents=True)
    (base / "lib").mkdir()
    shutil.copy2(MARIADBD, base / "bin" / "mariadbd")
    libz = next(Path(line.split("=>")[1].split()[0]) for line in subprocess.run(
        ["ldd", str(MARIADBD)], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.strip().startswith("libz.so.1"))
    shutil.copy2(libz, base / "lib" / "libfbtestz.so.1")
    subprocess.run(["patchelf", "--replace-needed", "libz.so.1", "libfbtestz.so.1",
                    str(base / "bin" / "mariadbd")], check=True)
    return base


def _profile(base: Path, lib_dirs: list[str]) -> ServerProfile:
    return ServerProfile(version=1, name="old-tarball", flavor="mariadb",
                         mysqld=str(base / "bin" / "mariadbd"),
                         install_db=str(MARIADB_INSTALL_DB), lib_dirs=lib_dirs)


def test_without_lib_dirs_the_binary_cannot_run(tarball: Path) -> None:
    with pytest.raises(PreflightError, match="lib_dirs"):
        resolve_server(_profile(tarball, []))


def test_lib_dirs_reach_version_help_dry_runs_and_the_server(
    tarball: Path, initialized_datadir: Path, tmp_path: Path
) -> None:
    server = resolve_server(_profile(tarball, [str(tarball / "lib")]))
    assert server.version >= (10, 5, 0)
    assert "innodb_io_capacity" in option_list(server)
    assert dry_run(server, {"innodb_io_capacity": "50"}).messages  # the server's own parse
    layout = SandboxLayout(tmp_path / "run").create()
    subprocess.run(["cp", "-a", str(initialized_datadir), str(layout.datadir)], check=True)
    write_mycnf(layout.cnf, TEST_BASE_CNF, {"innodb_io_capacity": "300"}, layout)
    with MysqldSandbox(server, layout) as sandbox:
        sandbox.start()
        assert sandbox.global_variables()["innodb_io_capacity"] == "300"
        maps = Path(f"/proc/{sandbox.pid}/maps").read_text()
        assert str(tarball / "lib" / "libfbtestz.so.1") in maps
    layout.cleanup()
