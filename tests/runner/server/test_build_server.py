"""scripts/build-server.sh against hostile sources, and the helpers behind it.

Each hostile source must end with one clear sentence and leave no profile and no PREFIX.
The checks run before any compiler does, so these tests take a second; the configure and
interrupt cases need cmake (skipped with the reason when it is missing). A real build is
exercised by tests/runner/test_servers_55.py on the servers built here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from core.paths import REPO_ROOT
from runner.server.built import is_built_profile, rebuild_command, write_atomically
from runner.server.profiles import ServerProfile
from runner.server.redo import effective_options, stale_redo_files
from tests.support import system_tools

SCRIPT = REPO_ROOT / "scripts" / "build-server.sh"
PROFILE_NAME = "pytest-hostile-build"
PROFILE = REPO_ROOT / "configs" / "servers" / f"{PROFILE_NAME}.yaml"


def fake_tree(root: Path, version: str = "5.5.62", xtradb: bool = False,
              cmake_body: str = "project(fake C)\n", percona: bool = False,
              wsrep: bool = False) -> Path:
    """A directory shaped like a MySQL source tree (nothing in it compiles).

    ``xtradb``: MariaDB's layout (storage/xtradb); ``percona``: Percona Server's (its knobs in
    storage/innobase's ha_innodb.cc, release 36.0); ``wsrep``: Percona XtraDB Cluster's
    Galera hooks (cmake/wsrep.cmake).
    """
    major, minor, patch = version.split(".")
    (root / "sql").mkdir(parents=True)
    (root / "sql" / "mysqld.cc").write_text("int main() { return 0; }\n")
    extra = "MYSQL_VERSION_EXTRA=-36.0\n" if percona else ""
    (root / "VERSION").write_text(
        f"MYSQL_VERSION_MAJOR={major}\nMYSQL_VERSION_MINOR={minor}\nMYSQL_VERSION_PATCH={patch}\n"
        + extra
    )
    (root / "CMakeLists.txt").write_text(f"cmake_minimum_required(VERSION 3.5)\n{cmake_body}")
    if xtradb:
        (root / "storage" / "xtradb" / "handler").mkdir(parents=True)
    if percona:
        handler = root / "storage" / "innobase" / "handler"
        handler.mkdir(parents=True)
        (handler / "ha_innodb.cc").write_text(
            "static MYSQL_SYSVAR_ENUM(adaptive_flushing_method, srv_adaptive_flushing_method,\n"
        )
    if wsrep:
        (root / "cmake").mkdir()
        (root / "cmake" / "wsrep.cmake").write_text("OPTION(WITH_WSREP \"wsrep\" ON)\n")
    return root


def build(kind: str, src: Path, prefix: Path, cache: Path,
          **popen: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BUILD_SERVER_CACHE": str(cache)}
    return subprocess.run([str(SCRIPT), kind, str(src), str(prefix), "--name", PROFILE_NAME],
                          capture_output=True, text=True, timeout=120, env=env, check=False)


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode != 0 and lines, proc
    assert len(lines) == 1, proc.stderr  # one clear sentence, no trace
    return lines[0]


@pytest.fixture(autouse=True)
def no_profile_left() -> None:
    assert not PROFILE.exists()
    yield
    leftover = PROFILE.exists()
    PROFILE.unlink(missing_ok=True)
    assert not leftover, "a failed build wrote a profile"


@pytest.mark.parametrize(
    ("kind", "make_src", "expected"),
    [
        ("mysql-5.5", lambda p: (p / "README").parent, "is not a MySQL-family source tree"),
        ("mysql-5.5", lambda p: fake_tree(p / "t", "5.6.51"), "not the 5.5 that mysql-5.5 needs"),
        ("mysql-5.5", lambda p: fake_tree(p / "t", xtradb=True), "use KIND xtradb-5.5"),
        ("xtradb-5.5", lambda p: fake_tree(p / "t"), "use KIND mysql-5.5"),
        ("plain-5.5", lambda p: fake_tree(p / "t"), "unknown KIND"),
        ("percona-5.5", lambda p: fake_tree(p / "t"), "has stock InnoDB (no Percona knobs in"
         " storage/innobase/handler/ha_innodb.cc): use KIND mysql-5.5."),
        ("percona-5.5", lambda p: fake_tree(p / "t", xtradb=True), "use KIND xtradb-5.5"),
        ("percona-5.5", lambda p: fake_tree(p / "t", "5.6.51", percona=True),
         "not the 5.5 that percona-5.5 needs"),
        ("mysql-5.5", lambda p: fake_tree(p / "t", percona=True), "use KIND percona-5.5"),
        ("xtradb-5.5", lambda p: fake_tree(p / "t", percona=True, wsrep=True),
         "use KIND percona-5.5"),
    ],
    ids=["not-a-tree", "wrong-version", "xtradb-as-mysql", "mysql-as-xtradb", "bad-kind",
         "mysql-as-percona", "mariadb-as-percona", "percona-5.6", "percona-as-mysql",
         "percona-as-xtradb"],
)
def test_wrong_source_is_one_sentence(kind: str, make_src, expected: str,
                                      tmp_path: Path) -> None:
    (tmp_path / "README").write_text("not a source tree\n")
    src = make_src(tmp_path)
    prefix = tmp_path / "prefix"
    line = error_line(build(kind, src, prefix, tmp_path / "cache"))
    assert line.startswith("build-server: ") and expected in line
    assert not prefix.exists()
    assert not list((tmp_path / "cache").glob("*"))  # nothing to resume, nothing kept


def test_tarball_of_the_wrong_product(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path / "mariadb-5.5.44", "5.5.44", xtradb=True)
    tarball = tmp_path / "mariadb-5.5.44.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(tree, arcname=tree.name)
    line = error_line(build("mysql-5.5", tarball, tmp_path / "prefix", tmp_path / "cache"))
    assert "carries Percona's XtraDB" in line and "use KIND xtradb-5.5" in line


def test_percona_tarball_as_mysql_names_percona(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path / "percona-server-5.5.39-36.0", "5.5.39", percona=True)
    tarball = tmp_path / "percona-server-5.5.39-36.0.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(tree, arcname=tree.name)
    line = error_line(build("mysql-5.5", tarball, tmp_path / "prefix", tmp_path / "cache"))
    assert "is Percona Server" in line and "use KIND percona-5.5" in line


def test_unreadable_tarball(tmp_path: Path) -> None:
    bogus = tmp_path / "mysql-5.5.62.tar.gz"
    bogus.write_bytes(b"this is not gzip")
    line = error_line(build("mysql-5.5", bogus, tmp_path / "prefix", tmp_path / "cache"))
    assert "cannot unpack" in line


def test_tree_configured_in_place_is_refused(tmp_path: Path) -> None:
    src = fake_tree(tmp_path / "t")
    (src / "CMakeCache.txt").write_text("# someone's in-source build\n")
    line = error_line(build("mysql-5.5", src, tmp_path / "prefix", tmp_path / "cache"))
    assert "in-source build" in line


def test_foreign_prefix_is_never_overwritten(tmp_path: Path) -> None:
    src = fake_tree(tmp_path / "t")
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "precious").write_text("mine")
    line = error_line(build("mysql-5.5", src, prefix, tmp_path / "cache"))
    assert "was not made by this script" in line
    assert (prefix / "precious").read_text() == "mine"


needs_cmake = pytest.mark.skipif(
    bool(system_tools.missing("cmake", "bison")),
    reason="cmake/bison not installed (scripts/build-server.sh installs them on first use)",
)


@pytest.mark.slow  # runs cmake: out of the fast lane
@needs_cmake
def test_tree_that_fails_to_configure(tmp_path: Path) -> None:
    src = fake_tree(tmp_path / "t", cmake_body='message(FATAL_ERROR "broken tree")\n')
    prefix = tmp_path / "prefix"
    line = error_line(build("mysql-5.5", src, prefix, tmp_path / "cache"))
    assert "cmake could not configure" in line and "build.log" in line
    assert not prefix.exists()


@pytest.mark.slow  # runs cmake: out of the fast lane
@needs_cmake
@pytest.mark.parametrize(("wsrep", "product"), [(False, "Percona Server"),
                                                (True, "Percona XtraDB Cluster")])
def test_percona_build_names_its_product(wsrep: bool, product: str, tmp_path: Path) -> None:
    """mysqld --version (the detected flavor) and @@version_comment read this comment."""
    src = fake_tree(tmp_path / "t", "5.5.39", percona=True, wsrep=wsrep, cmake_body=(
        'file(WRITE "${CMAKE_BINARY_DIR}/comment" "${COMPILATION_COMMENT}")\n'
        'message(FATAL_ERROR "stop after configuring")\n'))
    line = error_line(build("percona-5.5", src, tmp_path / "prefix", tmp_path / "cache"))
    assert "cmake could not configure" in line
    (comment,) = (tmp_path / "cache").glob("*/obj/comment")
    assert comment.read_text() == f"{product} (GPL), Release 36.0"


@pytest.mark.slow  # runs cmake: out of the fast lane
@needs_cmake
def test_what_cmake_writes_into_the_source_is_not_a_new_source(tmp_path: Path) -> None:
    """MySQL 5.5's cmake turns mysql-test/collections/X.in into X and X.done in the source
    tree on its first configure; the second call must still find the same build."""
    src = fake_tree(tmp_path / "t", "5.5.39", percona=True, cmake_body=(
        'file(WRITE "${CMAKE_SOURCE_DIR}/mysql-test/collections/default.release" "main.1")\n'
        'file(WRITE "${CMAKE_SOURCE_DIR}/mysql-test/collections/default.release.done" "x")\n'
        'message(FATAL_ERROR "stop after configuring")\n'))
    (src / "mysql-test" / "collections").mkdir(parents=True)
    (src / "mysql-test" / "collections" / "default.release.in").write_text("main.1\n")
    for _ in range(2):
        line = error_line(build("percona-5.5", src, tmp_path / "prefix", tmp_path / "cache"))
        assert "cmake could not configure" in line
    assert (src / "mysql-test" / "collections" / "default.release.done").is_file()
    assert len(list((tmp_path / "cache").iterdir())) == 1  # one key: the same build resumed
    # An edit of the source proper is still a new build.
    (src / "mysql-test" / "collections" / "default.release.in").write_text("main.2\n")
    error_line(build("percona-5.5", src, tmp_path / "prefix", tmp_path / "cache"))
    assert len(list((tmp_path / "cache").iterdir())) == 2


@pytest.mark.slow  # runs cmake: out of the fast lane
@needs_cmake
def test_interrupted_build_leaves_nothing(tmp_path: Path) -> None:
    # "Configuring" takes 60 s here: SIGTERM arrives in the middle of it.
    src = fake_tree(tmp_path / "t", cmake_body="execute_process(COMMAND sleep 60)\n")
    prefix = tmp_path / "prefix"
    env = {**os.environ, "BUILD_SERVER_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([str(SCRIPT), "mysql-5.5", str(src), str(prefix), "--name",
                             PROFILE_NAME], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "configuring" in line:
            break
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0] and "no profile written" in lines[0]
    assert not prefix.exists() and not list(tmp_path.glob("prefix.tmp.*"))
    # The cmake child was stopped with the script: no sleep of ours survives.
    out = subprocess.run(["pgrep", "-f", f"{src}"], capture_output=True, text=True)
    assert out.stdout.strip() == ""


# --- the Python helpers ------------------------------------------------------------------


def test_profile_is_written_atomically_and_recognized(tmp_path: Path) -> None:
    from runner.server.built import profile_text

    profile = ServerProfile(version=1, name="xtradb-5.5", flavor="mariadb",
                            basedir="/opt/x", description="5.5.44-MariaDB built from source")
    path = tmp_path / "xtradb-5.5.yaml"
    write_atomically(path, profile_text(profile, "xtradb-5.5", "/src/mariadb-5.5.44", "abc"))
    assert is_built_profile(path)
    assert rebuild_command(path) == "scripts/build-server.sh xtradb-5.5 /src/mariadb-5.5.44 /opt/x"
    assert [p.name for p in tmp_path.iterdir()] == ["xtradb-5.5.yaml"]  # no temporary left
    import yaml

    assert yaml.safe_load(path.read_text())["basedir"] == "/opt/x"
    assert not is_built_profile(REPO_ROOT / "configs" / "servers" / "mariadb-debian.yaml")


def _server55(flavor: str = "mysql", version: tuple[int, int, int] = (5, 5, 62)):
    from runner.server.profiles import ResolvedServer

    return ResolvedServer(ServerProfile(version=1, name="x", flavor=flavor, basedir="/x"),
                          flavor, Path("/x/bin/mysqld"), "install_db", version, "")


def test_stale_redo_files_only_when_the_shape_differs(tmp_path: Path) -> None:
    datadir = tmp_path / "data"
    datadir.mkdir()
    for i in range(2):
        (datadir / f"ib_logfile{i}").write_bytes(b"\0" * 5 * 1024 * 1024)
    defaults = {"innodb_log_file_size": "5242880", "innodb_log_files_in_group": "2"}
    server = _server55()
    assert stale_redo_files(server, datadir, {}, defaults) == []
    assert stale_redo_files(server, datadir, {"innodb_log_file_size": "5M"}, defaults) == []
    stale = stale_redo_files(server, datadir, {"innodb_log_file_size": "24M"}, defaults)
    assert [p.name for p in stale] == ["ib_logfile0", "ib_logfile1"]
    assert stale_redo_files(server, datadir, {"innodb_log_files_in_group": "3"}, defaults)
    # Servers that resize their redo themselves are left alone.
    assert stale_redo_files(_server55("mysql", (5, 6, 51)), datadir,
                            {"innodb_log_file_size": "24M"}, defaults) == []
    assert stale_redo_files(_server55("mariadb", (10, 11, 6)), datadir,
                            {"innodb_log_file_size": "24M"}, defaults) == []
    assert stale_redo_files(_server55("mariadb", (5, 5, 44)), datadir,
                            {"innodb_log_file_size": "24M"}, defaults)


def test_effective_options_last_one_wins(tmp_path: Path) -> None:
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\nport=1\n[mysqld]\ninnodb-log-file-size = 48M\nskip-name-resolve\n"
                   "# --- generated ---\n[mysqld]\ninnodb_log_file_size=24M\n")
    opts = effective_options(cnf)
    assert opts["innodb_log_file_size"] == "24M" and "port" not in opts
    assert opts["skip_name_resolve"] == ""


def test_doctor_lists_built_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core import paths
    from runner.admission import doctor
    from runner.server.built import profile_text

    monkeypatch.setattr(paths, "SERVER_PROFILES_DIR", tmp_path)
    checks = {c.name: c for c in doctor._profile_checks()}
    assert not checks["built servers"].ok and not checks["built servers"].required
    assert "scripts/build-server.sh" in (checks["built servers"].fix or "")

    gone = ServerProfile(version=1, name="mysql-5.5", flavor="mysql",
                         basedir=str(tmp_path / "removed-prefix"))
    write_atomically(tmp_path / "mysql-5.5.yaml",
                     profile_text(gone, "mysql-5.5", "/src/mysql-5.5.62", "k"))
    checks = {c.name: c for c in doctor._profile_checks()}
    built = checks["built server mysql-5.5"]
    assert (built.ok, built.required) == (False, False)  # optional: runs on MariaDB still work
    assert built.fix == (f"rebuild it: scripts/build-server.sh mysql-5.5 /src/mysql-5.5.62"
                         f" {tmp_path / 'removed-prefix'}")
    assert "built servers" not in checks


def fake_prefix(root: Path, comment: str, wsrep_provider: str | None = None) -> Path:
    """An installed 5.5 server whose ``mysqld`` is a shell script: ``--version`` names the
    build by ``comment``; ``--verbose --help`` lists ``wsrep_provider`` when given."""
    (root / "bin").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "scripts" / "mysql_install_db").write_text("#!/bin/sh\nexit 1\n")
    listed = f"wsrep-provider {wsrep_provider}\\n" if wsrep_provider is not None else ""
    mysqld = root / "bin" / "mysqld"
    mysqld.write_text(
        "#!/bin/sh\n"
        'case " $* " in\n'
        f"  *' --help '*) printf 'Variables (--variable-name=value)\\n{'-' * 20} ---\\n"
        f"innodb-doublewrite TRUE\\n{listed}\\n' ;;\n"
        f"  *) echo \"$0  Ver 5.5.39-36.0 for Linux on x86_64 ({comment})\" ;;\n"
        "esac\n"
    )
    for script in (mysqld, root / "scripts" / "mysql_install_db"):
        script.chmod(0o755)
    return root


def write_built_profile(kind: str, prefix: Path, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "python"), "-m", "runner.server.built", "--name",
         "p", "--kind", kind, "--prefix", str(prefix), "--profile", str(profile), "--source",
         "/src/pxc-5.5.39", "--key", "k"],
        capture_output=True, text=True, timeout=60, cwd=REPO_ROOT, check=False)


@pytest.mark.parametrize(
    ("kind", "comment", "provider", "expected"),
    [
        ("percona-5.5", "Source distribution", None,
         "Oracle MySQL, not the Percona Server that KIND percona-5.5 builds"),
        ("mysql-5.5", "Percona Server (GPL), Release 36.0", None,
         "Percona Server, not the Oracle MySQL that KIND mysql-5.5 builds"),
        ("percona-5.5", "Percona XtraDB Cluster (GPL), Release 36.0, wsrep_25.11",
         "/usr/lib/galera/libgalera_smm.so",
         "defaults to wsrep_provider=/usr/lib/galera/libgalera_smm.so: every sandbox would"
         " load a Galera library"),
    ],
    ids=["oracle-as-percona", "percona-as-mysql", "wsrep-provider-loaded"],
)
def test_installed_server_of_the_wrong_kind_gets_no_profile(
        kind: str, comment: str, provider: str | None, expected: str, tmp_path: Path) -> None:
    prefix = fake_prefix(tmp_path / "prefix", comment, provider)
    proc = write_built_profile(kind, prefix, tmp_path / "p.yaml")
    line = error_line(proc)
    assert line.startswith("build-server: the installed server does not work: ")
    assert expected in line
    assert not list(tmp_path.glob("*.yaml")) and not list(tmp_path.glob(".p.yaml*"))


@pytest.mark.parametrize(("comment", "provider", "inactive"), [
    ("Percona XtraDB Cluster (GPL), Release 36.0, wsrep_25.11", "none", True),
    ("Percona Server (GPL), Release 36.0", None, False),
], ids=["cluster-tree", "server-tree"])
def test_percona_profile_says_whether_wsrep_hooks_are_inactive(
        comment: str, provider: str | None, inactive: bool, tmp_path: Path) -> None:
    import yaml

    prefix = fake_prefix(tmp_path / "prefix", comment, provider)
    profile = tmp_path / "p.yaml"
    proc = write_built_profile("percona-5.5", prefix, profile)
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(profile.read_text())
    assert data["flavor"] == "percona" and data["basedir"] == str(prefix)
    assert data["description"].startswith("5.5.39-36.0 built from source (Percona Server's")
    assert ("wsrep hooks inactive (wsrep_provider=none)" in data["description"]) is inactive
    assert ("defaults to wsrep_provider=none" in profile.read_text()) is inactive
    assert rebuild_command(profile) == (
        f"scripts/build-server.sh percona-5.5 /src/pxc-5.5.39 {prefix}")


# --- argument checks: each refused in one sentence before any folder is made ----------------

def _fifo_src(tmp_path: Path) -> tuple[str, str]:
    os.mkfifo(tmp_path / "src")
    return str(tmp_path / "src"), str(tmp_path / "a" / "b" / "prefix")


def _versionless(tmp_path: Path) -> tuple[str, str]:
    src = fake_tree(tmp_path / "src")
    (src / "VERSION").write_text("")
    return str(src), str(tmp_path / "a" / "b" / "prefix")


#: (row id, SRC and PREFIX made in tmp_path, extra arguments, what the sentence says)
ARGUMENT_ROWS = [
    ("fifo-src", _fifo_src, [], "is a named pipe (FIFO), not a source directory or tarball"),
    ("dangling-link-src", lambda p: ((p / "src").symlink_to(p / "gone") and None)
     or (str(p / "src"), str(p / "a" / "b" / "prefix")), [], "a symbolic link to nothing"),
    ("version-without-numbers", _versionless, [], "names no MYSQL_VERSION_MAJOR"),
    ("prefix-inside-src",
     lambda p: (str(fake_tree(p / "src", percona=True)), str(p / "src" / "inst")), [],
     "lies inside SRC"),
    ("src-inside-prefix",
     lambda p: (str(fake_tree(p / "a" / "b" / "src", percona=True)), str(p / "a")), [],
     "lies inside PREFIX"),
    ("prefix-like-an-option", lambda p: (str(fake_tree(p / "src")), "-x"), [],
     "'-x' looks like an option"),
    ("src-like-an-option", lambda p: ("-x", str(p / "a" / "b" / "prefix")), [],
     "'-x' looks like an option"),
    ("shipped-profile-name", lambda p: (str(fake_tree(p / "src")), str(p / "a" / "b" / "p")),
     ["--name", "mariadb-debian"], "is a profile flushbench ships"),
    ("name-with-newline", lambda p: (str(fake_tree(p / "src")), str(p / "a" / "b" / "p")),
     ["--name", "x\nversion: 2"], "may hold only letters"),
]


@pytest.mark.parametrize(("make", "extra", "expected"), [r[1:] for r in ARGUMENT_ROWS],
                         ids=[r[0] for r in ARGUMENT_ROWS])
def test_arguments_are_checked_before_anything_is_made(make, extra: list[str], expected: str,
                                                       tmp_path: Path) -> None:
    shipped = {p.name: p.read_bytes() for p in (REPO_ROOT / "configs" / "servers").glob("*")}
    src, prefix = make(tmp_path)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    env = {**os.environ, "BUILD_SERVER_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([str(SCRIPT), "percona-5.5", src, prefix,
                           *(extra or ["--name", PROFILE_NAME])], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    line = error_line(proc)
    assert line.startswith("build-server: ") and expected in line, line
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before, "a folder was made"
    assert {p.name: p.read_bytes()
            for p in (REPO_ROOT / "configs" / "servers").glob("*")} == shipped
