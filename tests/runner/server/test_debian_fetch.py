"""``flushbench server fetch`` against Debian's archive: the system's apt set-up is untouched,
and each refusal is one sentence that leaves no profile and no tree.

The packages and the suites' lists come from the download folder ``bash scripts/setup.sh
--test-servers`` filled (tests/support/debian_servers.py), so nothing is downloaded twice;
the test of the system's apt state runs apt-get update and a download in a fresh private
folder of its own, so that apt really runs while the system's files are watched.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import yaml

from core import paths
from core.errors import FlushbenchError
from runner.server import debian_fetch
from runner.server.debian_fetch import fetch_server
from tests.support.debian_servers import DOWNLOADS, fetched_profile

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

#: What a fetch must leave exactly as it was.
SYSTEM_APT = (Path("/etc/apt"), Path("/var/lib/apt/lists"), Path("/var/lib/dpkg/status"))


def _snapshot() -> dict[str, tuple]:
    """Every file and folder under :data:`SYSTEM_APT`: type, mode, size and sha256."""
    out: dict[str, tuple] = {}
    for top in SYSTEM_APT:
        entries = [top] if top.is_file() else [top, *sorted(top.rglob("*"))]
        for path in entries:
            st = path.lstat()
            if path.is_symlink():
                out[str(path)] = ("link", os.readlink(path))
            elif path.is_dir():
                out[str(path)] = ("dir", st.st_mode)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if os.access(
                    path, os.R_OK) else "unreadable"
                out[str(path)] = ("file", st.st_mode, st.st_size, digest)
    return out


def _trees() -> set[str]:
    """The trees (and partial ones) in this session's distributions folder."""
    folder = paths.cache_dir() / "distributions"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def test_a_fetch_leaves_the_systems_apt_untouched(tmp_path: Path) -> None:
    fetched_profile("mariadb-11.8")  # the shared downloads are there (else: skip, naming setup)
    before = _snapshot()
    # A fresh private folder: apt-get update and apt-get download really run.
    with pytest.raises(FlushbenchError, match="it is not a server package"):
        fetch_server("common", "mysql-common", "trixie", profile_file=tmp_path / "c.yaml",
                     downloads=tmp_path / "fresh")
    assert list((tmp_path / "fresh" / "apt").glob("*/lists/*_Packages*"))
    assert list((tmp_path / "fresh" / "debs").glob("mysql-common_*.deb"))
    # A whole fetch (closure, extraction, the server's checks) from the shared downloads.
    fetched = fetch_server("mariadb-11.8", "mariadb-server-core", "trixie",
                           profile_file=tmp_path / "m.yaml", downloads=DOWNLOADS)
    assert fetched.server.flavor == "mariadb" and fetched.server.version[:2] == (11, 8)
    assert _snapshot() == before
    profile = yaml.safe_load((tmp_path / "m.yaml").read_text())
    assert profile["fetched"]["suite"] == "trixie"
    assert {p["name"] for p in profile["fetched"]["packages"]} >= {
        "mariadb-server-core", "mariadb-client-core", "libc6"}
    # The tree's binaries run on its own loader; no library comes from this system.
    tree = Path(profile["basedir"]).parent
    assert not debian_fetch.foreign_libraries(tree / "usr/sbin/mariadbd", tree)


def test_another_architecture_is_refused_before_anything_runs(tmp_path: Path) -> None:
    other = "arm64" if debian_fetch.host_architecture() != "arm64" else "amd64"
    with pytest.raises(FlushbenchError, match=f"a server for {other} cannot run on this"):
        fetch_server("x", "mysql-server-core", "sid", arch=other,
                     profile_file=tmp_path / "x.yaml", downloads=tmp_path / "d")
    assert not (tmp_path / "x.yaml").exists() and not (tmp_path / "d").exists()


def test_a_suite_that_does_not_answer_is_one_sentence(tmp_path: Path) -> None:
    fetched_profile("mysql-9.7")  # the mirror answered setup
    trees = _trees()
    with pytest.raises(FlushbenchError) as caught:
        fetch_server("x", "mysql-server-core", "nosuchsuite", profile_file=tmp_path / "x.yaml",
                     downloads=tmp_path / "d")
    assert "the suite 'nosuchsuite' does not answer at http" in caught.value.what
    assert "\n" not in caught.value.render().strip()
    assert not (tmp_path / "x.yaml").exists() and _trees() == trees


def test_a_dependency_that_is_no_library_is_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """mysql-server-core names perl (its helper scripts'); were perl not left out, the
    closure would need it and the fetch stops before downloading the closure."""
    fetched_profile("mysql-9.7")
    monkeypatch.setattr(debian_fetch, "SCRIPT_ONLY", frozenset())
    trees = _trees()
    with pytest.raises(FlushbenchError, match=r"needs perl(-base)? \(through .*\), which is not a"
                       " library"):
        fetch_server("x", "mysql-server-core", "sid", profile_file=tmp_path / "x.yaml",
                     downloads=DOWNLOADS)
    assert not (tmp_path / "x.yaml").exists() and _trees() == trees


def test_a_full_disk_is_refused_before_the_download(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fetched_profile("mariadb-11.8")
    monkeypatch.setattr(debian_fetch, "DISK_RESERVE", 1 << 62)  # no disk has that much free
    trees = _trees()
    with pytest.raises(FlushbenchError, match=r"needs [\d,]+ MiB and the disk of .* has 0 MiB"
                       " to spare"):
        fetch_server("x", "mariadb-server-core", "trixie", profile_file=tmp_path / "x.yaml",
                     downloads=DOWNLOADS)
    assert not (tmp_path / "x.yaml").exists() and _trees() == trees
