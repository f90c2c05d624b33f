"""Server profiles: loading, binary checks, flavor/version detection, base my.cnf files."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from core.errors import ConfigError, PreflightError
from core.flavors import parse_version
from runner.server.optionfiles import base_config_path, read_mycnf
from runner.server.profiles import available_profiles, load_profile, resolve_server

MARIADBD = Path("/usr/sbin/mariadbd")
INSTALL_DB = Path("/usr/bin/mariadb-install-db")
needs_mariadb = pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB not installed")


@pytest.mark.parametrize(
    ("text", "version", "flavor"),
    [
        ("/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64"
         " (Debian 12)", (10, 11, 19), "mariadb"),
        ("/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)",
         (8, 0, 36), None),
        ("/opt/ps/bin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL),"
         " Release 28, Revision 47601f19)", (8, 0, 36), "percona"),
        ("bin/mysqld  Ver 5.5.8 for linux2.6 on x86_64 (MySQL Community Server (GPL))",
         (5, 5, 8), None),
        ("bin/mysqld  Ver 5.5.8-beta20.0 for Linux on x86_64 (Percona Server (GPL), 20.0)",
         (5, 5, 8), "percona"),
    ],
)
def test_parse_version(text: str, version, flavor: str) -> None:
    assert parse_version(text) == (version, flavor)


def test_parse_version_without_version() -> None:
    with pytest.raises(ValueError):
        parse_version("mysqld: error while loading shared libraries: libaio.so.1")


def test_shipped_profiles() -> None:
    names = available_profiles()
    assert {"mariadb-debian", "example-mysql-tarball", "example-percona-tarball"} <= set(names)
    debian = load_profile("mariadb-debian")
    assert debian.flavor == "mariadb" and debian.mysqld == "/usr/sbin/mariadbd"
    assert load_profile("example-percona-tarball").basedir is not None


def test_unknown_profile_did_you_mean() -> None:
    with pytest.raises(ConfigError) as info:
        load_profile("mariadb-debain")
    assert "unknown server profile 'mariadb-debain'" in info.value.what
    assert "did you mean 'mariadb-debian'?" in info.value.fix
    assert "example-mysql-tarball" in info.value.fix


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("flavor: mariadb\n", "give either `mysqld` (+ `install_db`) or `basedir`"),
        ("flavor: mariadb\nmysqld: /x\nbasedir: /y\n", "exclude each other"),
        ("flavor: oracle\nmysqld: /x\n", "flavor"),
        ("flavor: mariadb\nmysqld: /x\nlibdirs: [/y]\n", "did you mean 'lib_dirs'?"),
    ],
)
def test_invalid_profiles(tmp_path: Path, body: str, fragment: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("version: 1\nname: p\n" + body)
    with pytest.raises(ConfigError) as info:
        load_profile(str(path))
    assert str(path) in info.value.render()
    assert fragment in info.value.render()


@needs_mariadb
def test_resolve_debian_mariadb() -> None:
    server = resolve_server(load_profile("mariadb-debian"))
    assert server.flavor == "mariadb"
    assert server.version >= (10, 5, 0)
    assert server.init_kind == "install_db"
    assert server.install_db == INSTALL_DB
    assert server.label == f"mariadb-{server.version[0]}.{server.version[1]}"
    assert "MariaDB" in server.version_string


@needs_mariadb
def test_example_profiles_do_not_resolve_here() -> None:
    for name in ("example-mysql-tarball", "example-percona-tarball"):
        with pytest.raises(PreflightError, match="basedir .* does not exist"):
            resolve_server(load_profile(name), name)


@needs_mariadb
def test_tarball_layout_with_basedir(tmp_path: Path) -> None:
    # An unpacked-tarball layout around the real binary: bin/mariadbd, scripts/…install-db.
    (tmp_path / "bin").mkdir()
    (tmp_path / "scripts").mkdir()
    os.symlink(MARIADBD, tmp_path / "bin" / "mariadbd")
    os.symlink(INSTALL_DB, tmp_path / "scripts" / "mariadb-install-db")
    profile = tmp_path / "tarball.yaml"
    profile.write_text(f"version: 1\nname: tarball\nflavor: mariadb\nbasedir: {tmp_path}\n"
                       f"lib_dirs: [{tmp_path}/lib]\n")
    server = resolve_server(load_profile(str(profile)), str(profile))
    assert server.mysqld == tmp_path / "bin" / "mariadbd"
    assert server.install_db == tmp_path / "scripts" / "mariadb-install-db"
    assert server.env({"PATH": "/bin"})["LD_LIBRARY_PATH"] == f"{tmp_path}/lib"


@needs_mariadb
def test_basedir_without_binary(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(f"version: 1\nname: p\nflavor: mysql\nbasedir: {tmp_path}\n")
    with pytest.raises(PreflightError, match="no executable bin/mysqld or bin/mariadbd"):
        resolve_server(load_profile(str(profile)), str(profile))


@needs_mariadb
def test_flavor_contradicted_by_binary(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(f"version: 1\nname: p\nflavor: mysql\nmysqld: {MARIADBD}\n")
    with pytest.raises(PreflightError) as info:
        resolve_server(load_profile(str(profile)), str(profile))
    assert f"{profile}: flavor" in info.value.render()
    assert "set `flavor: mariadb`" in info.value.render()


@needs_mariadb
def test_missing_install_db(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(f"version: 1\nname: p\nflavor: mariadb\nmysqld: {MARIADBD}\n"
                       f"install_db: {tmp_path}/nope\n")
    with pytest.raises(PreflightError, match="install_db binary .* is missing"):
        resolve_server(load_profile(str(profile)), str(profile))


def test_read_mycnf(tmp_path: Path) -> None:
    cnf = tmp_path / "x.cnf"
    cnf.write_text(
        "[mysqld]\n# comment\ninnodb-buffer-pool-size = 128M  # inline\nskip-name-resolve\n"
        "sql_mode = 'STRICT_TRANS_TABLES'\n[mariadbd]\ninnodb_io_capacity=400\n"
    )
    assert read_mycnf(cnf) == {
        "innodb_buffer_pool_size": "128M",
        "skip_name_resolve": "",
        "sql_mode": "STRICT_TRANS_TABLES",
        "innodb_io_capacity": "400",
    }


@pytest.mark.parametrize(("text", "message"), [
    ("[client]\nsocket = /tmp/nope\n", "section [client] is not allowed"),
    ("[client-server]\nport = 1\n", "section [client-server] is not allowed"),
    ("[galera]\nwsrep_on = ON\n", "section [galera] is not allowed"),
    ("[mysqld-10.11]\nport = 1\n", "section [mysqld-10.11] is not allowed"),
    ("innodb_io_capacity = 400\n", "outside a section"),
    ("[mysqld]\n!include /etc/mysql/my.cnf\n", "!include is not allowed"),
    ("[mysqld]\n!includedir /etc/mysql/conf.d\n", "!includedir is not allowed"),
    ("[mysqld]\ninnodb_io_capacity = 4'00\n", "has a quote, backslash"),
    ("[mysqld]\ninit_connect = \\x\n", "has a quote, backslash"),
    ("[mysqld]\ninnodb_io_capacity = 400\ninnodb-io-capacity = 500\n", "set twice"),
    ("[mysqld]\nbad name = 1\n", "is not a variable name"),
])
def test_read_mycnf_refuses_what_escapes_the_sandbox(tmp_path: Path, text: str,
                                                     message: str) -> None:
    cnf = tmp_path / "x.cnf"
    cnf.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        read_mycnf(cnf)
    assert f"{cnf}:" in err.value.render()


def test_base_configs() -> None:
    for name in ("small", "stability-2011", "sysbench"):
        options = read_mycnf(base_config_path(name))
        assert options["innodb_flush_method"] == "O_DIRECT"
        assert not {"datadir", "socket", "port"} & set(options)
    assert read_mycnf(base_config_path("small"))["innodb_buffer_pool_size"] == "128M"
    with pytest.raises(ConfigError, match="unknown base config 'smal'"):
        base_config_path("smal")


def test_the_version_text_is_the_version_line_alone(tmp_path: Path) -> None:
    """MariaDB 5.5 logs a timestamped note before its version line; the text that keys the
    server's datasets must not change from one call to the next (it did: a fresh XtraDB 5.5
    dataset was loaded by every flushbench process)."""
    from runner.server import profiles

    mysqld = tmp_path / "mysqld"
    mysqld.write_text("#!/bin/sh\n"
                      "echo \"$(date +%H:%M:%S.%N) [Note] $0 (mysqld 5.5.44-MariaDB) starting as"
                      " process $$ ...\" >&2\n"
                      "echo \"$0  Ver 5.5.44-MariaDB for Linux on x86_64 (Source distribution)\"\n")
    mysqld.chmod(0o755)
    texts = set()
    for _ in range(2):
        profiles._CACHE.clear()
        texts.add(profiles.version_text(mysqld, {"PATH": os.environ["PATH"]}, "p.yaml"))
    assert texts == {f"{mysqld}  Ver 5.5.44-MariaDB for Linux on x86_64 (Source distribution)"}


@pytest.mark.optional_tool  # the 5.5 servers are built by hand (scripts/build-server.sh)
def test_the_built_xtradb_keeps_one_version_text() -> None:
    from runner.server import profiles
    from tests.support.built_servers import built_server

    server = built_server("xtradb-5.5")
    profiles._CACHE.clear()
    again = built_server("xtradb-5.5")
    assert server.version_string == again.version_string
    assert "[Note]" not in server.version_string and " Ver 5.5." in server.version_string
