"""The server's ``--verbose --help`` parse never touches the system server's datadir.

Even ``--help`` makes MariaDB 10.11 create and delete a file in its datadir and open its Aria
tables read-write, so a parse run with the compiled-in datadir (``/var/lib/mysql`` for
Debian's ``mariadbd``) writes into the datadir of a real server on the same host. The parse
gets a private temporary datadir instead (:mod:`runner.server.options`).

How it is checked, most faithful first:

- In a private mount namespace (``unshare --mount``: root), a fake system datadir — known
  files plus copies of the real one's Aria control file, log and ``mysql.plugin`` table when
  they are readable — is bind-mounted over ``/var/lib/mysql``, and the real ``flushbench
  validate`` and ``plan`` run there, with the current folder and ``HOME`` in a temporary
  folder. The real datadir is never exposed, and other test workers never see the fake. Every
  name, mode, size, mtime and SHA-256 in the fake must be unchanged afterwards (directories
  included: a file created and deleted again changes its directory's mtime), and inotify on
  its folders must have seen no event at all — not even an open for reading. A control runs
  the parse the way it was run before (``mariadbd --no-defaults --verbose --help``, no
  datadir) in the same setup and must be seen opening and changing the fake, so the method
  can fail.
- Where namespaces are not available, the real ``/var/lib/mysql`` is compared before and
  after :func:`option_list` and :func:`dry_run` (names, modes, sizes, mtimes; it is only read).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from runner.server import options
from runner.server.profiles import load_profile, resolve_server
from tests.support import system_tools

MARIADBD = Path("/usr/sbin/mariadbd")
#: Debian's mariadbd's compiled-in datadir (the control test shows the parse used it).
SYSTEM_DATADIR = Path("/var/lib/mysql")
FLUSHBENCH = str(Path(sys.executable).with_name("flushbench"))
#: Bind the fake over the system datadir in a private mount namespace, then run the command.
#: Without a /var/lib/mysql to mount on, a tmpfs over /var/lib holds the mount point.
IN_NAMESPACE = textwrap.dedent("""\
    set -e
    [ -d /var/lib/mysql ] || { mount -t tmpfs tmpfs /var/lib; mkdir /var/lib/mysql; }
    mount --bind "$1" /var/lib/mysql
    shift
    exec "$@"
    """)
EXPERIMENT = textwrap.dedent("""\
    version: 1
    name: isolation
    server: mariadb-debian
    base_config: small
    dataset: {workload: sysbench, tables: 1, table_size: 1000}
    workload: {driver: sysbench, test: oltp_read_only, connections: 4, warmup: 5s,
               duration: 60s, report_interval: 10s}
    matrix: {doublewrite: [true, false], io_capacity: [200, 400]}
    """)

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed"),
]


def snapshot(root: Path, *, contents: bool) -> dict[str, tuple[object, ...]]:
    """Each entry under ``root`` (itself included): mode, size, mtime and, if asked, SHA-256."""
    out: dict[str, tuple[object, ...]] = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        digest = (hashlib.sha256(path.read_bytes()).hexdigest()
                  if contents and path.is_file() and not path.is_symlink() else None)
        out[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


class Inotify:
    """Every inotify event on a set of folders (libc through ctypes: no extra package)."""

    ALL_EVENTS = 0xFFF
    NAMES = {0x1: "access", 0x2: "modify", 0x4: "attrib", 0x8: "close_write",
             0x10: "close_nowrite", 0x20: "open", 0x40: "moved_from", 0x80: "moved_to",
             0x100: "create", 0x200: "delete", 0x400: "delete_self", 0x800: "move_self"}

    def __init__(self, folders: list[Path]) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        self.folders: dict[int, Path] = {}
        for folder in folders:
            wd = self._libc.inotify_add_watch(self.fd, bytes(folder), self.ALL_EVENTS)
            assert wd >= 0, os.strerror(ctypes.get_errno())
            self.folders[wd] = folder

    def events(self) -> list[str]:
        """``folder/name: open, modify`` for each event read so far."""
        seen: list[str] = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            offset = 0
            while offset < len(buf):
                wd, mask, _cookie, size = struct.unpack_from("iIII", buf, offset)
                name = buf[offset + 16: offset + 16 + size].rstrip(b"\0").decode()
                kinds = ", ".join(v for k, v in self.NAMES.items() if mask & k)
                seen.append(f"{self.folders.get(wd, '?')}/{name}: {kinds}")
                offset += 16 + size

    def close(self) -> None:
        os.close(self.fd)


def _namespaces_work(probe: Path) -> str | None:
    """None when a private mount namespace with a bind mount works here, else why not."""
    if system_tools.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe.mkdir()
    try:
        proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               IN_NAMESPACE, "sh", str(probe), "true"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if proc.returncode == 0 else proc.stderr.strip() or f"exit {proc.returncode}"


@pytest.fixture
def fake_system_datadir(tmp_path: Path) -> Path:
    """A folder shaped like a system datadir, to be mounted over /var/lib/mysql."""
    reason = _namespaces_work(tmp_path / "probe")
    if reason is not None:
        pytest.skip(f"host_control(mount) unavailable: a private mount namespace: {reason}")
    fake = tmp_path / "system-datadir"
    (fake / "mysql").mkdir(parents=True)
    (fake / "known.txt").write_text("the system server's file\n")
    # The files a parse with the system datadir opened read-write, when this host has them.
    for name in ("aria_log_control", "aria_log.00000001", "mysql/plugin.frm",
                 "mysql/plugin.MAI", "mysql/plugin.MAD"):
        if os.access(SYSTEM_DATADIR / name, os.R_OK):
            shutil.copy2(SYSTEM_DATADIR / name, fake / name)
    return fake


def _run_with_fake(fake: Path, argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    (home / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(home / "tmp")}
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           IN_NAMESPACE, "sh", str(fake), *argv],
                          cwd=home, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def _watched(fake: Path, commands: list[list[str]], home: Path) -> tuple[list[str], list[str]]:
    """Run ``commands`` with ``fake`` as the system datadir: (inotify events, failures)."""
    watch = Inotify([fake, fake / "mysql"])
    failures = []
    try:
        for argv in commands:
            proc = _run_with_fake(fake, argv, home)
            if proc.returncode != 0:
                failures.append(f"{argv}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        return watch.events(), failures
    finally:
        watch.close()


@pytest.mark.host_control("mount")
def test_validate_and_plan_leave_the_system_datadir_byte_identical(
        fake_system_datadir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "x.yaml").write_text(EXPERIMENT)
    before = snapshot(fake_system_datadir, contents=True)
    events, failures = _watched(fake_system_datadir, [
        [FLUSHBENCH, "validate", "x.yaml"], [FLUSHBENCH, "plan", "x.yaml"]], home)
    assert failures == []
    assert events == []
    assert snapshot(fake_system_datadir, contents=True) == before
    assert list((home / "tmp").iterdir()) == []  # the parses' private folders are removed


@pytest.mark.host_control("mount")
def test_the_check_sees_a_parse_without_a_private_datadir(fake_system_datadir: Path,
                                                         tmp_path: Path) -> None:
    """The control: the parse as it was run before the fix is seen writing into the fake."""
    home = tmp_path / "home"
    home.mkdir()
    before = snapshot(fake_system_datadir, contents=True)
    user = ["--user=root"] if os.geteuid() == 0 else []
    events, failures = _watched(fake_system_datadir, [
        [str(MARIADBD), "--no-defaults", *user, "--verbose", "--help"]], home)
    assert failures == []
    assert any("create" in e for e in events), events  # the lower_case_table_names probe
    assert any("delete" in e for e in events), events
    assert snapshot(fake_system_datadir, contents=True) != before  # the datadir's mtime


def test_option_list_and_dry_run_leave_the_real_datadir_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without namespaces: the real /var/lib/mysql, only read, is the same after the parses."""
    if not SYSTEM_DATADIR.is_dir() or not os.access(SYSTEM_DATADIR, os.R_OK | os.X_OK):
        pytest.skip(f"{SYSTEM_DATADIR} is absent or unreadable here")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(options, "_LIST_CACHE", {})
    monkeypatch.setattr(options, "_DRY_CACHE", {})
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    server = resolve_server(load_profile("mariadb-debian"))
    before = snapshot(SYSTEM_DATADIR, contents=False)
    assert "innodb_io_capacity" in options.option_list(server)
    result = options.dry_run(server, {"innodb_io_capacity": "50", "datadir": str(SYSTEM_DATADIR)})
    assert any("innodb-io-capacity" in m for m in result.messages), result.messages
    # A datadir among the options under test does not send the parse back to it.
    assert result.values["datadir"] != f"{SYSTEM_DATADIR}/"
    assert snapshot(SYSTEM_DATADIR, contents=False) == before
    assert list(private.iterdir()) == []  # the parses' private folders are removed
