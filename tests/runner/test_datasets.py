"""Dataset snapshots with a real MariaDB: build, reuse, lock, restore, damage, disk full."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from core.paths import tpcc_binary
from runner.connection import ConnectionInfo
from runner.datasets import (
    DatasetError,
    DatasetKey,
    Snapshot,
    build_dataset,
    ensure_dataset,
    find_snapshot,
    restore,
    sha256_file,
    verify_snapshot,
)
from runner.proc import child
from runner.server import MysqldSandbox, SandboxLayout, write_mycnf

ROWS = 3000


def small_loader(info: ConnectionInfo) -> None:
    """A few thousand rows in fbtest.t: enough to make real tablespace pages."""
    conn = pymysql.connect(**info.pymysql_kwargs(), autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE fbtest")
            cur.execute("CREATE TABLE fbtest.t (id INT PRIMARY KEY, pad VARCHAR(100))")
            cur.executemany(
                "INSERT INTO fbtest.t VALUES (%s, %s)",
                [(i, f"row-{i:06d}" * 5) for i in range(ROWS)],
            )
    finally:
        conn.close()


def _key(server, workload: str = "unit", scale: str = "r3000") -> DatasetKey:
    return DatasetKey(workload, scale, server.flavor, server.version_string)


def _count_rows(server, datadir: Path, run_dir: Path, base_cnf: str) -> int:
    layout = SandboxLayout(run_dir, datadir=datadir).create()
    write_mycnf(layout.cnf, base_cnf, {}, layout)
    try:
        with MysqldSandbox(server, layout) as sandbox:
            sandbox.start(timeout=60)
            with sandbox.connect() as conn, conn.cursor() as cur:
                cur.execute("SELECT COUNT(*), SUM(id) FROM fbtest.t")
                count, total = cur.fetchone()
            assert total == sum(range(ROWS))
        assert sandbox.stop_result is not None and sandbox.stop_result.clean
        return count
    finally:
        layout.cleanup()


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("work")


@pytest.fixture(scope="module")
def snapshot(mariadb_server, base_cnf_text, work_dir) -> Snapshot:
    return build_dataset(
        _key(mariadb_server), mariadb_server, base_cnf_text, small_loader, work_dir
    )


# --- keys (no server) -------------------------------------------------------------------


def test_dataset_key_names_are_stable_and_safe() -> None:
    key = DatasetKey("tpcc", "w10", "mariadb", "10.11.19-MariaDB-0+deb12u1", 16384)
    assert (
        key.dirname()
        == DatasetKey("tpcc", "w10", "mariadb", "10.11.19-MariaDB-0+deb12u1", 16384).dirname()
    )
    assert key.dirname().startswith("tpcc-w10-mariadb-10.11.19-MariaDB-0_deb12u1-p16k-")
    # A page size read from SHOW VARIABLES (a string) names the same dataset.
    assert DatasetKey("tpcc", "w10", "mariadb", "10.11.19-MariaDB-0+deb12u1", "16384") == key
    odd = DatasetKey("../x", "a/b c", "mysql", "8.0.36", 8192)
    assert "/" not in odd.dirname() and ".." not in odd.dirname() and " " not in odd.dirname()
    # Keys that sanitize to the same text still get different directories.
    assert DatasetKey("w", "a/b", "m", "1").dirname() != DatasetKey("w", "a_b", "m", "1").dirname()
    assert (
        key.dirname()
        != DatasetKey("tpcc", "w10", "mariadb", "10.11.19-MariaDB-0+deb12u1", 8192).dirname()
    )


def test_connection_info_hides_password() -> None:
    info = ConnectionInfo(socket=Path("/tmp/s.sock"), password="s3cret", database="tpcc")
    assert "s3cret" not in repr(info) and "s3cret" not in str(info)
    assert info.pymysql_kwargs()["password"] == "s3cret"
    assert info.client_env() == {"MYSQL_PWD": "s3cret"}
    assert ConnectionInfo().client_env() == {}


# --- build and reuse -----------------------------------------------------------------


@pytest.mark.mysql
def test_snapshot_manifest_lists_every_file(snapshot: Snapshot, mariadb_server) -> None:
    manifest = json.loads((snapshot.path / "manifest.json").read_text())
    assert manifest["key"] == {
        "workload": "unit",
        "scale_label": "r3000",
        "flavor": "mariadb",
        "version_string": mariadb_server.version_string,
        "page_size": 16384,
    }
    on_disk = {
        str(p.relative_to(snapshot.datadir)): p.stat().st_size
        for p in snapshot.datadir.rglob("*")
        if p.is_file()
    }
    assert on_disk == {f.path: f.size for f in snapshot.files}
    assert "fbtest/t.ibd" in on_disk and "ibdata1" in on_disk
    for f in snapshot.files:
        if f.path in ("fbtest/t.ibd", "ibdata1"):
            assert sha256_file(snapshot.datadir / f.path) == f.sha256
    assert "Shutdown complete" in (snapshot.path / "mysqld.err").read_text()
    assert not (snapshot.path.parent / f"{snapshot.path.name}.partial").exists()
    verify_snapshot(snapshot, full=True)


@pytest.mark.mysql
def test_ensure_dataset_reuses_the_snapshot(
    snapshot, mariadb_server, base_cnf_text, work_dir
) -> None:
    def must_not_load(info: ConnectionInfo) -> None:
        raise AssertionError("the dataset was rebuilt instead of reused")

    again = ensure_dataset(
        _key(mariadb_server), mariadb_server, base_cnf_text, must_not_load, work_dir
    )
    assert again.path == snapshot.path and again.files == snapshot.files
    with pytest.raises(DatasetError, match="already exists"):
        build_dataset(_key(mariadb_server), mariadb_server, base_cnf_text, must_not_load, work_dir)


@pytest.mark.mysql
def test_incomplete_or_foreign_directories_are_not_snapshots(
    snapshot, mariadb_server, work_dir
) -> None:
    root = snapshot.path.parent
    # A crashed build leaves only <name>.partial, and the final name without a manifest.
    other = _key(mariadb_server, scale="other")
    (root / f"{other.dirname()}.partial" / "data").mkdir(parents=True)
    assert find_snapshot(other, work_dir) is None
    (root / other.dirname() / "data").mkdir(parents=True)
    assert find_snapshot(other, work_dir) is None
    # A manifest written for another key does not count either.
    (root / other.dirname() / "manifest.json").write_text(
        (snapshot.path / "manifest.json").read_text()
    )
    assert find_snapshot(other, work_dir) is None
    assert find_snapshot(_key(mariadb_server), work_dir) == snapshot


@pytest.mark.mysql
def test_lock_keeps_a_second_builder_out(mariadb_server, base_cnf_text, tmp_path) -> None:
    key = _key(mariadb_server, scale="locked")
    lock = tmp_path / "datasets" / f"{key.dirname()}.lock"
    lock.parent.mkdir(parents=True)
    holder = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.pwrite(fd, b'%d' % os.getpid(), 0)\n"
        "print('locked', flush=True)\n"
        "time.sleep(60)\n"
    )
    with child([sys.executable, "-c", holder, str(lock)]) as proc:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(DatasetError, match=rf"another process \(pid {proc.pid}\)"):
            build_dataset(key, mariadb_server, base_cnf_text, small_loader, tmp_path, lock_wait=0.5)
    assert not (tmp_path / "datasets" / key.dirname()).exists()


@pytest.mark.mysql
def test_failed_load_leaves_no_snapshot(mariadb_server, base_cnf_text, tmp_path) -> None:
    key = _key(mariadb_server, scale="broken")

    def broken_loader(info: ConnectionInfo) -> None:
        small_loader(info)
        raise RuntimeError("loader crashed halfway")

    with pytest.raises(RuntimeError, match="halfway"):
        build_dataset(key, mariadb_server, base_cnf_text, broken_loader, tmp_path)
    assert find_snapshot(key, tmp_path) is None
    assert not (tmp_path / "datasets" / key.dirname()).exists()
    assert (tmp_path / "datasets" / f"{key.dirname()}.partial" / "mysqld.err").exists()


# --- restore -------------------------------------------------------------------------


@pytest.mark.mysql
def test_restore_is_identical_and_starts(snapshot, mariadb_server, base_cnf_text, tmp_path) -> None:
    target = tmp_path / "run" / "data"
    result = restore(snapshot, target, verify="full")
    assert result.files == len(snapshot.files) and result.bytes == snapshot.total_bytes
    for f in snapshot.files:
        assert (target / f.path).stat().st_size == f.size
    assert sha256_file(target / "fbtest" / "t.ibd") == next(
        f.sha256 for f in snapshot.files if f.path == "fbtest/t.ibd"
    )
    assert _count_rows(mariadb_server, target, tmp_path / "run", base_cnf_text) == ROWS
    with pytest.raises(DatasetError, match="not an empty directory"):
        restore(snapshot, target)


@pytest.fixture
def damaged_copy(snapshot: Snapshot, tmp_path: Path) -> Snapshot:
    """A private copy of the snapshot (the shared one stays intact)."""
    copy = tmp_path / "snap"
    subprocess.run(["cp", "-a", str(snapshot.path), str(copy)], check=True)
    return Snapshot.load(copy)


@pytest.mark.mysql
def test_tampered_file_is_detected(damaged_copy: Snapshot, tmp_path: Path) -> None:
    victim = damaged_copy.datadir / "fbtest" / "t.ibd"
    with open(victim, "r+b") as f:  # same size, one byte changed
        f.seek(20000)
        byte = f.read(1)
        f.seek(20000)
        f.write(bytes([byte[0] ^ 0xFF]))
    # Sizes alone cannot see a flipped byte; the full check names the file.
    restore(damaged_copy, tmp_path / "sizes-only", verify="sizes")
    target = tmp_path / "full"
    with pytest.raises(DatasetError) as info:
        restore(damaged_copy, target, verify="full")
    assert "fbtest/t.ibd differs from the manifest" in str(info.value)
    assert not target.exists()
    with pytest.raises(DatasetError, match="fbtest/t.ibd differs"):
        verify_snapshot(damaged_copy, full=True)


@pytest.mark.mysql
def test_truncated_file_is_detected_by_sizes(damaged_copy: Snapshot, tmp_path: Path) -> None:
    victim = damaged_copy.datadir / "mysql" / "db.MAI"
    os.truncate(victim, victim.stat().st_size - 1)
    with pytest.raises(DatasetError, match=r"mysql/db.MAI has \d+ bytes, the manifest says"):
        restore(damaged_copy, tmp_path / "t", verify="sizes")
    assert not (tmp_path / "t").exists()


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 20 MiB tmpfs (needs root and permission to mount; skipped otherwise)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.mysql
@pytest.mark.host_control("mount")
def test_restore_refuses_when_space_is_short(snapshot, small_tmpfs) -> None:
    assert snapshot.total_bytes > 20 * 1024 * 1024, "snapshot too small to overflow the tmpfs"
    with pytest.raises(DatasetError) as info:
        restore(snapshot, small_tmpfs)
    message = str(info.value)
    assert "not enough disk space" in message and str(small_tmpfs) in message
    assert "free" in message
    assert list(small_tmpfs.iterdir()) == []


@pytest.mark.mysql
@pytest.mark.host_control("mount")
def test_disk_full_during_copy_is_reported_and_cleaned(snapshot, small_tmpfs) -> None:
    # Skip the up-front check, as when another writer fills the disk during the copy: cp itself
    # hits ENOSPC.
    target = small_tmpfs / "data"
    with pytest.raises(DatasetError) as info:
        restore(snapshot, target, check_space=False)
    message = str(info.value)
    assert "disk full while restoring" in message and str(target) in message
    assert "free before the copy" in message
    assert not target.exists() and list(small_tmpfs.iterdir()) == []


# --- the real TPC-C driver -------------------------------------------------------------


@pytest.mark.mysql
@pytest.mark.skipif(not tpcc_binary().is_file(), reason="tpcc/bin/tpcc is not built")
def test_tpcc_driver_dataset(mariadb_server, base_cnf_text, tmp_path) -> None:
    def tpcc_loader(info: ConnectionInfo) -> None:
        done = subprocess.run(
            [
                str(tpcc_binary()),
                "load",
                "-S",
                str(info.socket),
                "-d",
                "tpcc",
                "-u",
                info.user,
                "-w",
                "1",
            ],
            env={**os.environ, **info.client_env()},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]

    key = DatasetKey("tpcc", "w1", mariadb_server.flavor, mariadb_server.version_string)
    snap = build_dataset(key, mariadb_server, base_cnf_text, tpcc_loader, tmp_path)
    names = {f.path for f in snap.files}
    for table in (
        "warehouse",
        "district",
        "customer",
        "history",
        "new_orders",
        "orders",
        "order_line",
        "item",
        "stock",
    ):
        assert f"tpcc/{table}.ibd" in names
    target = tmp_path / "restored"
    restore(snap, target, verify="sizes")
    layout = SandboxLayout(tmp_path / "run", datadir=target).create()
    write_mycnf(layout.cnf, base_cnf_text, {}, layout)
    with MysqldSandbox(mariadb_server, layout) as sandbox:
        sandbox.start(timeout=60)
        with sandbox.connect("tpcc") as conn, conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM warehouse")
            assert cur.fetchone()[0] == 1
            cur.execute("SELECT COUNT(*) FROM item")
            assert cur.fetchone()[0] == 100000
    layout.cleanup()


def test_a_running_copy_stops_soon_after_an_abort() -> None:
    """A lost lease must not wait for a 50 GB copy: the wait notices the event within a slice."""
    import subprocess
    import threading

    from runner.datasets import COPY_POLL_S, wait_copy
    from runner.proc import child

    abort = threading.Event()
    threading.Timer(0.3, abort.set).start()
    with child(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        code, _, stopped = wait_copy(proc, None, abort)
        assert proc.poll() is None  # returned while the "copy" was still running
    assert (code, stopped) == (None, "abort")
    assert COPY_POLL_S <= 1
    with child(["sh", "-c", "echo oops >&2; exit 3"], stdout=subprocess.DEVNULL,
               stderr=subprocess.PIPE) as proc:
        assert wait_copy(proc, None, threading.Event()) == (3, "oops\n", None)
    with child(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        assert wait_copy(proc, 0.2, None)[2] == "timeout"
