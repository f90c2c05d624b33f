"""``flushbench server add`` / ``server check`` against hostile input, one table per cause.

Each row builds its input itself in a fresh folder (cheaply: sparse files, repeated tar
headers, zip records written by hand), runs the real entry point in this process and checks:
exit 2, one ``error:`` line naming the input as the user gave it (never a cache folder), no
traceback, no profile, the cache exactly as it was — and, for archives, that nothing was
unpacked at all (extraction is watched: a refused archive never reaches it).

- Cause 2: what PATH is (a FIFO, a device) and the archive caps (a sparse multi-GB member,
  several making over 4 GiB, 300,000 members, a zip declaring 20,000, an encrypted member, a
  FIFO mode, a lying size, no server in the listing).
- Cause 3: a script posing as a server (an install step that makes no system tables, one that
  fakes them but a server that never starts, one that never ends, a daemon left behind).
- Cause 4: names and paths with newlines; the shipped profiles never replaced.
- Cause 5a: one deadline over every probe of ``server check``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from core import paths
from core.yamlio import dump_yaml
from runner.server import archives, distributions, knob_check
from runner.server.profiles import SHIPPED_PROFILES, ServerProfile
from tests.support.cli_runner import CliRun
from tests.support.distributions import (
    ANSWERS_HELP,
    ANSWERS_VERSION,
    FAILING_INSTALL,
    tree_files,
    write_tarball,
    write_tree,
)

GiB = 1024**3
#: A fake server: answers --version and --help as MariaDB 10.2.11 would, starts nothing.
FAKE_MYSQLD = ANSWERS_VERSION + ANSWERS_HELP + "exit 0\n"
SERVER_FILES = tree_files(mysqld=FAKE_MYSQLD)


def _cache_trees() -> list[str]:
    folder = paths.cache_dir() / "distributions"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def no_extraction(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every member extraction is recorded: a refused archive must have none."""
    seen: list[str] = []
    real_extract, real_copy = tarfile.TarFile.extract, archives._copy_member

    def extract(self: tarfile.TarFile, member: tarfile.TarInfo, *args: object,
                **kwargs: object) -> None:
        seen.append(member.name)
        real_extract(self, member, *args, **kwargs)

    def copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, *args: object) -> None:
        seen.append(info.filename)
        real_copy(archive, info, *args)

    monkeypatch.setattr(tarfile.TarFile, "extract", extract)
    monkeypatch.setattr(archives, "_copy_member", copy)
    return seen


def refused(cli: CliRun, folder: Path, source: str, *fragments: str,
            extra: tuple[str, ...] = ()) -> str:
    """``server add dist SOURCE``: one ``error: SOURCE: …`` line, nothing written or left."""
    before = _cache_trees()
    profile = folder / "profile.yaml"
    code, out, err = cli(["server", "add", "dist", source, "--profile", str(profile), *extra])
    lines = err.strip().splitlines()
    assert code == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith(f"error: {source}: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    assert str(paths.cache_dir()) not in lines[0], "the error names the cache, not the input"
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert not profile.exists()
    assert _cache_trees() == before, "a refused archive left something in the cache"
    return lines[0]


# --- cause 2: PATH and archive caps ---------------------------------------------------------

def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def _gnu_tar(folder: Path, name: str, members: dict[str, int]) -> Path:
    """A .tar.gz made by GNU tar --sparse of sparse files (``name → size``) and a server."""
    src = write_tree(folder / "src" / "server", SERVER_FILES)
    for member, size in members.items():
        (src / member).parent.mkdir(parents=True, exist_ok=True)
        _sparse(src / member, size)
    out = folder / name
    subprocess.run(["tar", "--sparse", "-czf", str(out), "-C", str(src.parent), "server"],
                   check=True)
    shutil.rmtree(folder / "src")
    return out


def _tar_of_headers(folder: Path, count: int, name: str = "server/bin/empty") -> Path:
    """A .tar.gz of ``count`` empty members (one header repeated: built in no time)."""
    header = tarfile.TarInfo(name).tobuf(tarfile.GNU_FORMAT)
    path = folder / "many.tar.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(header * count + bytes(1024))
    return path


def _gzip_bomb(folder: Path) -> Path:
    """6 members of 1,000 MiB of zeros in 6 MB: gzip members concatenated (one compressed
    MiB of zeros repeated), so it is built in no time."""
    zero = gzip.compress(bytes(1 << 20), compresslevel=9)
    path = folder / "bomb.tar.gz"
    with path.open("wb") as out:
        for index in range(6):
            info = tarfile.TarInfo(f"server/bin/part{index}")
            info.size = 1000 * (1 << 20)
            out.write(gzip.compress(info.tobuf(tarfile.GNU_FORMAT)) + zero * 1000)
        out.write(gzip.compress(bytes(1024)))
    return path


def _zip_bomb(folder: Path) -> Path:
    """A deflated member of 200 MiB of zeros (200 KB in the zip), under every size cap."""
    path = folder / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in SERVER_FILES.items():
            archive.writestr(f"server/{name}", data)
        with archive.open("server/lib/zeros", "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(200):
                member.write(chunk)
    return path


def _zip_bytes(entries: list[tuple[zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return buffer.getvalue()


def _zip_declaring(folder: Path, count: int) -> Path:
    """A zip whose central directory repeats one record ``count`` times (as its end record
    declares), all naming the same local entry."""
    data = _zip_bytes([(zipfile.ZipInfo("server/bin/mysqld"), b"")])
    end = data.rindex(b"PK\x05\x06")
    cd_size, cd_offset = struct.unpack("<II", data[end + 12:end + 20])
    record = data[cd_offset:cd_offset + cd_size]
    body = data[:cd_offset] + record * count
    eocd = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(record) * count,
                       cd_offset, 0)
    path = folder / "declares.zip"
    path.write_bytes(body + eocd)
    return path


def _encrypted_zip(folder: Path) -> Path:
    """A zip of a server tree whose mysqld member has the 'encrypted' flag set."""
    data = bytearray(_zip_bytes([(zipfile.ZipInfo(f"server/{n}"), b) for n, b in
                                 SERVER_FILES.items()]))
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at >= 0:
            data[at + flag_at] |= 0x1
            at = data.find(signature, at + 4)
    path = folder / "encrypted.zip"
    path.write_bytes(bytes(data))
    return path


def _fifo_mode_zip(folder: Path) -> Path:
    info = zipfile.ZipInfo("server/share/pipe")
    info.create_system = 3
    info.external_attr = (stat.S_IFIFO | 0o644) << 16
    entries = [(zipfile.ZipInfo(f"server/{n}"), b) for n, b in SERVER_FILES.items()]
    path = folder / "fifo-mode.zip"
    path.write_bytes(_zip_bytes([*entries, (info, b"")]))
    return path


def _lying_zip(folder: Path) -> Path:
    """A stored member whose central directory says 10 bytes and that holds 1 MiB."""
    info = zipfile.ZipInfo("server/bin/mysqld")
    data = bytearray(_zip_bytes([(info, b"\0" * (1 << 20))]))
    at = data.find(b"PK\x01\x02")
    data[at + 24:at + 28] = struct.pack("<I", 10)  # uncompressed size in the directory
    path = folder / "lying.zip"
    path.write_bytes(bytes(data))
    return path


def _no_server_tar(folder: Path) -> Path:
    files = {"share/english/errmsg.sys": b"x", "bin/mysql": b"#!/bin/sh\n"}
    return write_tarball(folder / "client-only.tar.gz", files)


def _device_member_tar(folder: Path) -> Path:
    path = folder / "device.tar"
    with tarfile.open(path, "w") as archive:
        for name, data in SERVER_FILES.items():
            info = tarfile.TarInfo(f"server/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        device = tarfile.TarInfo("server/dev/zero")
        device.type, device.devmajor, device.devminor = tarfile.CHRTYPE, 1, 5
        archive.addfile(device)
    return path


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.tar.gz")
    return folder / "pipe.tar.gz"


#: (row id, how the input is made, fragments of the refusal)
CAUSE2: list[tuple[str, Callable[[Path], Path | str], tuple[str, ...]]] = [
    ("fifo", _fifo, ("is a named pipe (FIFO)",)),
    ("dev-zero", lambda _: "/dev/zero", ("is a device",)),
    ("dev-urandom", lambda _: "/dev/urandom", ("is a device",)),
    ("sparse-5GiB-member", lambda f: _gnu_tar(f, "sparse.tar.gz", {"lib/big": 5 * GiB}),
     ("unpacks to 5,368,709,120 bytes", "over the 1 GiB")),
    ("members-over-4GiB", lambda f: _gnu_tar(f, "bomb.tar.gz",
                                             {f"lib/part{i}": 1000 * 1024**2 for i in range(5)}),
     ("unpacks to over 4 GiB",)),
    ("gzip-bomb-6x1000MiB", _gzip_bomb, ("expands more than 50-fold", "compression bomb")),
    ("zip-bomb-200MiB", _zip_bomb, ("expands more than 50-fold", "'server/lib/zeros'")),
    ("300k-members", lambda f: _tar_of_headers(f, 300_000), ("more than 15,000 members",)),
    ("16k-members", lambda f: _tar_of_headers(f, 16_000), ("more than 15,000 members",)),
    ("zip-declaring-20k", lambda f: _zip_declaring(f, 20_000), ("more than 15,000 members",)),
    ("encrypted-zip", _encrypted_zip, ("is encrypted",)),
    ("fifo-mode-zip", _fifo_mode_zip, ("'server/share/pipe' is a device, FIFO or socket",)),
    ("device-member-tar", _device_member_tar, ("unsafe member",)),
    ("lying-zip-size", _lying_zip, ("cannot be read",)),
    ("no-server-listed", _no_server_tar, ("holds no server", "nothing was unpacked")),
]


@pytest.mark.parametrize(("make", "fragments"), [row[1:] for row in CAUSE2],
                         ids=[row[0] for row in CAUSE2])
def test_cause2_what_path_is_and_the_archive_caps(
        cli: CliRun, tmp_path: Path, no_extraction: list[str],
        make: Callable[[Path], Path | str], fragments: tuple[str, ...]) -> None:
    source = str(make(tmp_path))
    refused(cli, tmp_path, source, *fragments)
    if not source.endswith("lying.zip"):  # the lie shows only while the member is copied
        assert no_extraction == [], "the archive was unpacked before it was refused"


def test_an_abandoned_unpack_folder_is_removed(cli: CliRun, tmp_path: Path) -> None:
    """A killed flushbench's temporary folder goes at the next unpack (its pid is gone)."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    folder = paths.cache_dir() / "distributions" / f".x-0123.tmp-{dead.pid}"
    (folder / "bin").mkdir(parents=True)
    alive = folder.with_name(f".y-0123.tmp-{os.getpid()}")
    alive.mkdir()
    try:
        code, _, err = cli(["server", "add", "dist", str(_no_server_tar(tmp_path))])
        assert code == 2 and "holds no server" in err, err
        assert not folder.exists() and alive.exists()
    finally:
        shutil.rmtree(alive, ignore_errors=True)


def test_a_real_sized_jar_listing_passes_the_caps(tmp_path: Path) -> None:
    """The caps leave room: 147 members of 366 MB (MariaDB 11.4.5's jar) pass the counting."""
    totals = archives._Totals("jar", budget=10 * GiB)
    for index in range(146):
        totals.add(f"m{index}", 355_000)
    totals.add("lib/big", 314 * 1024**2)
    assert totals.members == 147


# --- cause 3: a script is no server ----------------------------------------------------------

#: Install scripts: each answers --help, then does something short of a real install.
DOES_NOTHING = 'case "$*" in *--help*) echo "Usage: mysql_install_db"; exit 0;; esac\nexit 0\n'
FAKES_TABLES = ('case "$*" in *--help*) echo "Usage: mysql_install_db"; exit 0;; esac\n'
                'for a in "$@"; do case $a in --datadir=*) d=${a#--datadir=};; esac; done\n'
                'mkdir -p "$d/mysql" && : > "$d/mysql/user.frm" && : > "$d/mysql/user.MYD"\n')
NEVER_ENDS = ('case "$*" in *--help*) echo "Usage: mysql_install_db"; exit 0;; esac\n'
              'exec sleep 600\n')


def _daemon_install(pid_file: Path) -> str:
    return ('case "$*" in *--help*) echo "Usage: mysql_install_db"; exit 0;; esac\n'
            f'sleep 600 & echo $! > {pid_file}\nexit 0\n')


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot), None if it is gone or a zombie:
    with the pid, it names one process (the kernel reuses pids; pid_max is 32,768 here)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def _alive(pid: int, started: str | None = None) -> bool:
    """Whether ``pid`` is alive (and, ``started`` given, still the process that started then)."""
    now = _started(pid)
    return now is not None and (started is None or now == started)


def _outlives_its_kill(pid: int, started: str | None = None) -> bool:
    """Whether ``pid`` (the process that started at ``started``, when known) is still alive
    well after `server add` killed it.

    SIGKILL to the script's group is sent before `server add` returns; the kernel ends the
    process when it next runs, which on two busy cores can be a moment later (seen in
    fresh-clone checks): it is given until a deadline, long past any such delay, to be gone.
    """
    deadline = time.monotonic() + 10
    while _alive(pid, started) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _alive(pid, started)


@pytest.mark.parametrize(("install", "fragments"), [
    (DOES_NOTHING, ("mysql_install_db exited 0 but the datadir it made holds no system tables",)),
    (FAKES_TABLES, ("does not start on the datadir its install step made",)),
    (NEVER_ENDS, ("took over 3 s altogether",)),
], ids=["install-does-nothing", "fake-tables-no-server", "install-never-ends"])
@pytest.mark.parametrize("kind", ["folder", "tarball"])
def test_cause3_a_script_is_no_server(cli: CliRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      install: str, fragments: tuple[str, ...], kind: str) -> None:
    monkeypatch.setattr(distributions, "PROBE_DEADLINE_S", 3)
    files = tree_files(mysqld=FAKE_MYSQLD, install=install)
    source = (write_tree(tmp_path / "fake", files) if kind == "folder"
              else write_tarball(tmp_path / "fake.tar.gz", files))
    refused(cli, tmp_path, str(source), *fragments)


def test_cause3_a_daemon_from_the_install_script_does_not_outlive_add(
        cli: CliRun, tmp_path: Path) -> None:
    pid_file = tmp_path / "daemon.pid"
    files = tree_files(mysqld=FAKE_MYSQLD, install=_daemon_install(pid_file))
    refused(cli, tmp_path, str(write_tree(tmp_path / "fake", files)), "holds no system tables")
    pid = int(pid_file.read_text())
    assert not _outlives_its_kill(pid), "the install script's background process outlived" \
        " server add"


def test_a_relative_path_reaches_every_probe(cli: CliRun, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``server add dist fake`` from the tree's parent: --help runs (in its temporary folder)
    and the refusal is the install script's own, naming ``fake`` as given."""
    write_tree(tmp_path / "fake", tree_files(mysqld=FAKE_MYSQLD, install=FAILING_INSTALL))
    monkeypatch.chdir(tmp_path)
    refused(cli, tmp_path, "fake", "could not create a datadir", "my_print_defaults")


# --- cause 4: names, paths and the shipped profiles ------------------------------------------

@pytest.mark.parametrize("name", ["mariadb\n", "a\nversion: 2", "maria db", "é-server",
                                  "x" * 81, "../up", "a/b", ""])
def test_cause4_a_bad_name_is_refused_before_path_is_touched(cli: CliRun, tmp_path: Path,
                                                             name: str) -> None:
    """The name is checked first: the PATH here is a FIFO, which any probe would hang on."""
    fifo = _fifo(tmp_path)
    code, out, err = cli(["server", "add", name, str(fifo), "--profile",
                          str(tmp_path / "p.yaml")])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: NAME: "), (out, err)
    assert "is not a profile name" in lines[0] and "Traceback" not in err
    assert not (tmp_path / "p.yaml").exists()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("replace", [False, True], ids=["plain", "--replace"])
@pytest.mark.parametrize("how", ["name", "profile-path", "relative-path", "symlink"])
def test_cause4_a_shipped_profile_is_never_replaced(cli: CliRun, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    how: str, replace: bool) -> None:
    shipped = paths.SERVER_PROFILES_DIR / "mariadb-debian.yaml"
    before = {n: _sha(paths.SERVER_PROFILES_DIR / f"{n}.yaml") for n in SHIPPED_PROFILES}
    fifo = _fifo(tmp_path)  # never reached: the target is refused first
    args = ["server", "add", "mariadb-debian" if how == "name" else "mine", str(fifo)]
    if how == "profile-path":
        args += ["--profile", str(shipped)]
    elif how == "relative-path":
        monkeypatch.chdir(paths.SERVER_PROFILES_DIR)
        args += ["--profile", "./mariadb-debian.yaml"]
    elif how == "symlink":
        (tmp_path / "link.yaml").symlink_to(shipped)
        args += ["--profile", str(tmp_path / "link.yaml")]
    code, _, err = cli([*args, *(["--replace"] if replace else [])])
    assert code == 2 and "that flushbench ships; it is never replaced" in err, err
    assert len(err.strip().splitlines()) == 1
    assert {n: _sha(paths.SERVER_PROFILES_DIR / f"{n}.yaml") for n in SHIPPED_PROFILES} == before


@pytest.mark.parametrize("source", [
    "/tmp/x\nbasedir: /evil\nflavor: mysql",
    "/tmp/a # b\r\n---\n- list",
    "/tmp/sep\u2028version: 2\x85name: y",
    "/tmp/'quoted' \"both\" $(rm -rf /)",
])
def test_cause4_a_path_cannot_inject_into_the_profile(tmp_path: Path, source: str) -> None:
    """The profile of a distribution at a hostile path reads back as exactly its data, and
    every header line is one comment."""
    profile = ServerProfile(version=1, name="dist", flavor="mariadb", basedir=source + "/tree",
                            description=f"10.2.11 binary distribution ({Path(source).name})")
    text = distributions.profile_text(profile, Path(source), tmp_path / ("p\n" + "x.yaml"))
    data = yaml.safe_load(text)
    assert data == {"version": 1, **profile.model_dump(exclude_defaults=True,
                                                        exclude_none=True)}
    header = text.split("version: 1\n", 1)[0]
    assert all(line.startswith("# ") for line in header.splitlines()), header
    assert len(header.splitlines()) == 4


def test_dump_yaml_refuses_what_does_not_read_back() -> None:
    with pytest.raises(ValueError):
        dump_yaml({"a": float("nan")})  # nan != nan: the read-back check itself is live


# --- cause 5a: one deadline over the probes of `server check` --------------------------------

def test_cause5_server_check_ends_at_its_deadline(cli: CliRun, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each --help of this binary takes 2 s, under the 20 s a single probe may: without one
    deadline over all of them, 21 knob levels would take 45 s."""
    slow = ANSWERS_VERSION + "sleep 2\n" + ANSWERS_HELP + "exit 0\n"
    tree = write_tree(tmp_path / "slow", tree_files(mysqld=slow, install=DOES_NOTHING))
    profile = tmp_path / "slow.yaml"
    profile.write_text(f"version: 1\nname: slow\nflavor: mariadb\nbasedir: {tree}\n")
    monkeypatch.setattr(knob_check, "CHECK_DEADLINE_S", 5)
    code, out, err = cli(["server", "check", str(profile)])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (out, err)
    assert lines[0].startswith(f"error: {profile}: ") and "took over 5 s altogether" in lines[0]


def test_sigterm_during_add_leaves_no_tree_and_no_process(tmp_path: Path) -> None:
    """``timeout`` stops a command with SIGTERM: ``server add`` of a tarball whose install
    script never ends, stopped while that script runs, removes its unpacked tree and kills
    the script (exit 130), as on Ctrl-C."""
    pid_file = tmp_path / "install.pid"
    install = ('case "$*" in *--help*) echo "Usage: mysql_install_db"; exit 0;; esac\n'
               f'echo $$ > {pid_file}\nexec sleep 600\n')
    source = write_tarball(tmp_path / "hangs.tar.gz",
                           tree_files(mysqld=FAKE_MYSQLD, install=install))
    before = _cache_trees()
    env = {**os.environ, "FLUSHBENCH_CACHE_DIR": str(paths.cache_dir())}
    proc = subprocess.Popen([sys.executable, "-c", "from flushbench.cli import main; main()",
                             "server", "add", "dist",
                             str(source), "--profile", str(tmp_path / "p.yaml")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # the install script has started (a minute at most, no timing)
            if pid_file.is_file() and pid_file.read_text().strip():
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        install_pid = int(pid_file.read_text())
        # Which process it is: once it has ended, its pid may go to another (a check of the
        # whole suite once found pid 5401 alive right after `server add` returned).
        install_started = _started(install_pid)
        assert install_started is not None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert _cache_trees() == before
    assert not _outlives_its_kill(install_pid, install_started)
    assert not (tmp_path / "p.yaml").exists()


def test_errors_name_the_member_not_the_cache(cli: CliRun, tmp_path: Path) -> None:
    """An install script that names itself in its failure: the refusal names it by its path
    in the archive (``server/scripts/mysql_install_db``), never by its unpacked copy."""
    install = ('case "$*" in *--help*) echo "Usage: mysql_install_db"; exit 0;; esac\n'
               'echo "FATAL ERROR: $0 found no my_print_defaults" >&2\nexit 1\n')
    source = write_tarball(tmp_path / "names-itself.tar.gz",
                           tree_files(mysqld=FAKE_MYSQLD, install=install))
    refused(cli, tmp_path, str(source),
            "FATAL ERROR: server/scripts/mysql_install_db found no my_print_defaults")


def test_a_relative_basedir_reaches_every_probe_of_check(cli: CliRun, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``basedir: fake`` in a profile, from the tree's parent: every --help parse runs (in its
    own temporary folder) and ``server check`` judges each level instead of blaming the
    binary."""
    write_tree(tmp_path / "fake", tree_files(mysqld=FAKE_MYSQLD, install=DOES_NOTHING))
    profile = tmp_path / "rel.yaml"
    profile.write_text("version: 1\nname: rel\nflavor: mariadb\nbasedir: fake\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(["server", "check", "rel.yaml"])
    assert code == 0, err
    assert f"— {tmp_path / 'fake' / 'bin' / 'mysqld'}" in out.splitlines()[0]
    assert out.splitlines()[-1].startswith("21 knob levels: "), out


def test_a_distributions_test_suite_is_listed_but_never_unpacked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MariaDB's binary tarballs carry mysql-test/ (25,000+ files) in the tree: those members
    count against the listing's cap only, so such a tarball passes where 20,000 files of the
    server itself would not, and none of them is written."""
    from core.errors import PreflightError
    from runner.server import archives

    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "mariadb-bintar.tar.gz"
    with tarfile.open(path, "w:gz") as out:
        for name, data in [("mariadb-x/bin/mariadbd", b"\x7fELF"), ("mariadb-x/share/a", b"")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
        for index in range(archives.MAX_MEMBERS + 5_000):
            out.addfile(tarfile.TarInfo(f"mariadb-x/mysql-test/t/case{index}.test"))
    tree, made = archives.unpack(path)
    assert made
    assert (tree / "mariadb-x" / "bin" / "mariadbd").read_bytes() == b"\x7fELF"
    assert not (tree / "mariadb-x" / "mysql-test").exists()
    assert archives.skipped("mariadb-x/mysql-test/t/a.test")
    totals = archives._Totals("x.tar.gz", budget=1 << 40)  # noqa: SLF001 - the cap itself
    for _ in range(archives.MAX_LISTED):
        assert not totals.add("x/mysql-test/t/a.test", 0)
    with pytest.raises(PreflightError, match="lists more than 200,000 members"):
        totals.add("x/mysql-test/t/a.test", 0)
    assert not archives.skipped("mariadb-x/bin/mysql-test-run")
