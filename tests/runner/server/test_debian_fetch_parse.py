"""``server fetch``'s pure parts: the mirror read from the system's sources, apt-cache's
dependency tree, and its refusals before anything is run (no network, no server)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.errors import FlushbenchError
from runner.server import debian_fetch
from runner.server.debian_fetch import PrivateApt, fetch_server, system_mirror
from tests.support.cli_runner import CliRun


def test_the_mirror_is_the_systems_debian_archive(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "a.sources").write_text(
        "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n")
    monkeypatch.setattr(debian_fetch, "SYSTEM_SOURCES", (tmp_path / "sources.list", parts))
    assert system_mirror() == "http://mirror.example/debian"
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://list.example/debian bookworm main\n")
    assert system_mirror() == "http://list.example/debian"  # sources.list is read first


def test_no_debian_archive_in_the_sources_is_one_sentence(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sources.list").write_text("deb https://packages.example/apt stable main\n")
    monkeypatch.setattr(debian_fetch, "SYSTEM_SOURCES", (tmp_path / "sources.list",))
    with pytest.raises(FlushbenchError, match="name no Debian archive"):
        system_mirror()


DEPENDS = """\
mysql-server-core
  Depends: libc6
 |Depends: libssl3t64
  Depends: libssl3
  Depends: <perl:any>
    perl
libc6
  Depends: libgcc-s1
<perl:any>
perl
  PreDepends: perl-base
"""


def test_the_dependency_tree_keeps_alternatives_and_providers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    apt = PrivateApt(tmp_path, "sid", "http://m/debian", "amd64")
    monkeypatch.setattr(apt, "run", lambda argv, **_: subprocess.CompletedProcess(
        argv, 0, DEPENDS, ""))
    graph = apt.depends(["mysql-server-core"])
    assert graph["mysql-server-core"] == [["libc6"], ["libssl3t64", "libssl3"],
                                          ["<perl:any>", "perl"]]
    assert graph["libc6"] == [["libgcc-s1"]] and graph["perl"] == [["perl-base"]]


def test_bad_names_and_another_architecture_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(debian_fetch, "host_architecture", lambda: "amd64")
    target = tmp_path / "p.yaml"
    for args, match in ((("x", "Bad;Name", "sid"), "is not a Debian package name"),
                        (("x", "mysql-server-core", "../etc"), "is not a Debian suite name"),
                        (("x y", "mysql-server-core", "sid"), "is not a profile name")):
        with pytest.raises(FlushbenchError, match=match):
            fetch_server(*args, profile_file=target, downloads=tmp_path / "d")
    with pytest.raises(FlushbenchError, match="a server for arm64 cannot run on this amd64"):
        fetch_server("x", "mysql-server-core", "sid", arch="arm64", profile_file=target,
                     downloads=tmp_path / "d")
    assert not target.exists() and not (tmp_path / "d").exists()


def test_the_command_line_refusal_is_one_line(cli: CliRun, tmp_path: Path) -> None:
    other = "arm64" if debian_fetch.host_architecture() != "arm64" else "amd64"
    code, out, err = cli(["server", "fetch", "x", "mysql-server-core", "--suite", "sid",
                          "--arch", other, "--profile", str(tmp_path / "p.yaml")])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (out, err)
    assert lines[0].startswith("error: --arch: a server for ") and " — " in lines[0]
    assert not (tmp_path / "p.yaml").exists()
