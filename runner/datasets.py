"""Datasets: load once per (workload, scale, server), snapshot after a clean shutdown, restore.

A snapshot is a directory ``<work>/datasets/<name>/`` holding ``data/`` (the datadir as the
server left it after a slow, clean shutdown), build evidence (``my.cnf``, ``mysqld.err``,
``initialize.log``) and ``manifest.json`` (the key, and every file's relative path, size and
sha256). It is built in ``<name>.partial`` and renamed into place only once the manifest is
written, so a crash can leave a ``.partial`` directory but never a snapshot that looks complete.
``<name>.lock`` (``flock``) keeps two processes from building the same dataset; the kernel drops
the lock when its holder dies, so a crashed build never blocks the next one.

The key names the server build (flavor, version, a hash of the binary's path and ``--version``
line): a datadir is not portable between servers (MariaDB 10.11's redo format and system
tables mean nothing to MySQL 5.5), so an experiment over several servers loads one snapshot per
server, and :func:`restore` refuses a snapshot of another server (``expect``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from core.errors import FlushbenchError
from core.units import format_size
from runner.connection import ConnectionInfo
from runner.proc import child
from runner.server import (
    MysqldSandbox,
    ResolvedServer,
    SandboxLayout,
    initialize_datadir,
    write_mycnf,
)
from runner.server.options import option_list

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
DEFAULT_PAGE_SIZE = 16384
_HASH_CHUNK = 1 << 20


class DatasetError(FlushbenchError):
    """A dataset cannot be built, found, or restored intact (damaged snapshot, disk full...)."""


@dataclass(frozen=True)
class DatasetKey:
    """What makes two datasets interchangeable.

    Parameters
    ----------
    workload:
        Workload name, e.g. ``tpcc`` or ``sysbench``.
    scale_label:
        Scale as the workload states it, e.g. ``w10`` or ``8x100000``.
    flavor, version_string:
        The server that wrote the datadir (a datadir is only safe to reuse on the same build).
    page_size:
        ``innodb_page_size`` in bytes (fixed when the datadir is created).
    """

    workload: str
    scale_label: str
    flavor: str
    version_string: str
    page_size: int = DEFAULT_PAGE_SIZE

    def __post_init__(self) -> None:
        # Accept "16384" as well as 16384: callers read page sizes from server variables.
        try:
            size = int(self.page_size)
        except (TypeError, ValueError):
            raise DatasetError(f"page_size {self.page_size!r} is not a number of bytes") from None
        object.__setattr__(self, "page_size", size)

    def dirname(self) -> str:
        """A stable, filesystem-safe directory name; a short hash keeps sanitized keys apart."""
        raw = json.dumps(asdict(self), sort_keys=True)
        digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
        page = f"{self.page_size // 1024}k" if self.page_size % 1024 == 0 else str(self.page_size)
        readable = "-".join(
            re.sub(r"[^A-Za-z0-9._-]+", "_", part).strip("._-") or "_"
            for part in (self.workload, self.scale_label, self.flavor, self.version_string)
        )
        return f"{readable}-p{page}-{digest}"[-200:]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetKey:
        """Rebuild a key from ``asdict`` output (as stored in ``manifest.json``)."""
        return cls(
            **{
                k: data[k]
                for k in ("workload", "scale_label", "flavor", "version_string", "page_size")
            }
        )


@dataclass(frozen=True)
class SnapshotFile:
    """One datadir file as recorded in the manifest (path relative to the datadir)."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Snapshot:
    """A complete dataset snapshot on disk."""

    path: Path
    key: DatasetKey
    files: tuple[SnapshotFile, ...]
    dirs: tuple[str, ...]
    manifest: dict[str, Any]

    @property
    def datadir(self) -> Path:
        """The snapshot's datadir (never start a server on it: restore a copy)."""
        return self.path / "data"

    @property
    def total_bytes(self) -> int:
        """Sum of the files' apparent sizes."""
        return sum(f.size for f in self.files)

    @classmethod
    def load(cls, path: Path) -> Snapshot:
        """Read ``path/manifest.json``.

        Raises
        ------
        DatasetError
            If the manifest is missing or unreadable (an incomplete or foreign directory).
        """
        path = Path(path)
        try:
            data = json.loads((path / MANIFEST).read_text())
            key = DatasetKey.from_dict(data["key"])
            files = tuple(
                SnapshotFile(f["path"], int(f["size"]), f["sha256"]) for f in data["files"]
            )
            dirs = tuple(data.get("dirs", ()))
        except FileNotFoundError:
            raise DatasetError(
                "snapshot has no manifest (incomplete build?)",
                str(path),
                "delete the directory; it will be rebuilt",
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise DatasetError(
                f"snapshot manifest is unreadable: {exc}",
                str(path / MANIFEST),
                "delete the snapshot; it will be rebuilt",
            ) from None
        if data.get("format") != MANIFEST_FORMAT:
            raise DatasetError(
                f"snapshot manifest format {data.get('format')!r} is unknown",
                str(path / MANIFEST),
                "delete the snapshot; it will be rebuilt",
            )
        return cls(path=path, key=key, files=files, dirs=dirs, manifest=data)


@dataclass(frozen=True)
class RestoreResult:
    """What :func:`restore` did."""

    target: Path
    files: int
    bytes: int
    copy_seconds: float
    verify_seconds: float
    verify: str


# --- hashing and verification -----------------------------------------------------------


def sha256_file(path: Path) -> str:
    """sha256 of a file, read in 1 MiB chunks (constant memory, releases the GIL)."""
    h = hashlib.sha256()
    buf = bytearray(_HASH_CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def _walk(root: Path) -> tuple[dict[str, int], list[str]]:
    """Regular files (relative path → size) and directories under ``root``."""
    files: dict[str, int] = {}
    dirs: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                raise DatasetError(
                    "datadir contains a symbolic link",
                    full,
                    "keep datasets self-contained (no symlinked tablespaces)",
                )
            dirs.append(os.path.normpath(os.path.join(rel_dir, d)))
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full) or not os.path.isfile(full):
                raise DatasetError(
                    "datadir contains something that is not a regular file",
                    full,
                    "remove it before snapshotting",
                )
            files[os.path.normpath(os.path.join(rel_dir, name))] = os.lstat(full).st_size
    return files, sorted(dirs)


def _hash_all(root: Path, rels: list[str]) -> dict[str, str]:
    # Threads: hashlib releases the GIL on large buffers, so several files hash in parallel.
    workers = max(1, min(len(rels), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        digests = pool.map(lambda r: sha256_file(root / r), rels)
        return dict(zip(rels, digests, strict=True))


def _compare(snapshot: Snapshot, datadir: Path, full: bool) -> None:
    found, found_dirs = _walk(datadir)
    recorded = {f.path: f for f in snapshot.files}
    fix = f"the snapshot is damaged: delete {snapshot.path} and rebuild it"
    missing_dirs = sorted(set(snapshot.dirs) - set(found_dirs))
    if missing_dirs:
        raise DatasetError(
            f"directory {missing_dirs[0]} of the manifest is missing",
            str(datadir / missing_dirs[0]),
            fix,
        )
    for rel in sorted(recorded):
        if rel not in found:
            raise DatasetError(f"file {rel} of the manifest is missing", str(datadir / rel), fix)
        if found[rel] != recorded[rel].size:
            raise DatasetError(
                f"file {rel} has {found[rel]} bytes, the manifest says {recorded[rel].size}",
                str(datadir / rel),
                fix,
            )
    extra = sorted(set(found) - set(recorded))
    if extra:
        raise DatasetError(
            f"file {extra[0]} is not in the manifest ({len(extra)} extra)",
            str(datadir / extra[0]),
            fix,
        )
    if full:
        digests = _hash_all(datadir, sorted(recorded))
        for rel in sorted(recorded):
            if digests[rel] != recorded[rel].sha256:
                raise DatasetError(
                    f"file {rel} differs from the manifest (sha256 {digests[rel][:12]}… "
                    f"!= {recorded[rel].sha256[:12]}…)",
                    str(datadir / rel),
                    fix,
                )


def verify_snapshot(snapshot: Snapshot, full: bool = True) -> None:
    """Check a snapshot's own datadir against its manifest (sizes; checksums when ``full``).

    Raises
    ------
    DatasetError
        Naming the first file that is missing, extra, or differs.
    """
    _compare(snapshot, snapshot.datadir, full)


# --- locking --------------------------------------------------------------------------


@contextlib.contextmanager
def _dataset_lock(lock_path: Path, wait_s: float) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                    raise DatasetError(
                        f"another process (pid {holder}) is building this dataset",
                        str(lock_path),
                        "wait for it to finish, then run again",
                    ) from None
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


# --- build ----------------------------------------------------------------------------


def datasets_dir(work_dir: Path) -> Path:
    """``<work>/datasets``."""
    return Path(work_dir) / "datasets"


def find_snapshot(key: DatasetKey, work_dir: Path) -> Snapshot | None:
    """The complete snapshot for ``key`` (manifest present, same key), or None."""
    path = datasets_dir(work_dir) / key.dirname()
    if not path.is_dir():
        return None
    try:
        snap = Snapshot.load(path)
    except DatasetError:
        return None
    return snap if snap.key == key else None


def _build_locked(
    key: DatasetKey,
    server: ResolvedServer,
    base_cnf_text: str,
    loader: Callable[[ConnectionInfo], None],
    work_dir: Path,
    server_options: Mapping[str, str],
    start_timeout: float,
    stop_timeout: float,
) -> Snapshot:
    root = datasets_dir(work_dir)
    final = root / key.dirname()
    partial = root / f"{key.dirname()}.partial"
    # We hold the lock, so any .partial is the remains of a crashed build.
    shutil.rmtree(partial, ignore_errors=True)
    layout = SandboxLayout(partial).create()
    options = dict(server_options)
    init_options: dict[str, str] = {}
    if key.page_size != DEFAULT_PAGE_SIZE:
        init_options["innodb_page_size"] = str(key.page_size)
        options.setdefault("innodb_page_size", str(key.page_size))
    started = time.monotonic()
    try:
        initialize_datadir(server, layout, options=init_options)
        write_mycnf(layout.cnf, base_cnf_text, options, layout,
                    option_names=option_list(server))
        with MysqldSandbox(server, layout) as sandbox:
            sandbox.start(timeout=start_timeout)
            load_started = time.monotonic()
            loader(sandbox.connection_info())
            load_seconds = time.monotonic() - load_started
            # Slow shutdown: purge and change-buffer merge finish now, not during a run.
            result = sandbox.stop(timeout=stop_timeout, slow=True)
            if not result.clean:
                raise DatasetError(
                    f"mysqld did not shut down cleanly after loading (exit code "
                    f"{result.exit_code}, killed={result.killed}); a snapshot needs a clean "
                    f"shutdown:\n{sandbox.error_log_tail(20)}",
                    str(layout.error_log),
                    "raise the stop timeout or check the error log",
                )
    finally:
        layout.cleanup()
    shutil.rmtree(layout.tmpdir, ignore_errors=True)
    files, dirs = _walk(layout.datadir)
    hash_started = time.monotonic()
    digests = _hash_all(layout.datadir, sorted(files))
    hash_seconds = time.monotonic() - hash_started
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": key.dirname(),
        "key": asdict(key),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "server": {
            "flavor": server.flavor,
            "mysqld": str(server.mysqld),
            "version": list(server.version),
            "version_string": getattr(server, "version_string", key.version_string),
        },
        "server_options": options,
        "load_seconds": round(load_seconds, 3),
        "build_seconds": round(time.monotonic() - started, 3),
        "hash_seconds": round(hash_seconds, 3),
        "total_bytes": sum(files.values()),
        "dirs": dirs,
        "files": [{"path": p, "size": files[p], "sha256": digests[p]} for p in sorted(files)],
    }
    tmp = partial / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    # Data and manifest reach the disk before the rename makes the snapshot look complete.
    os.sync()
    tmp.replace(partial / MANIFEST)
    if final.exists():
        old = root / f"{key.dirname()}.old"
        shutil.rmtree(old, ignore_errors=True)
        final.replace(old)
        partial.replace(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        partial.replace(final)
    return Snapshot.load(final)


def build_dataset(
    key: DatasetKey,
    server: ResolvedServer,
    base_cnf_text: str,
    loader: Callable[[ConnectionInfo], None],
    work_dir: Path,
    *,
    server_options: Mapping[str, str] | None = None,
    rebuild: bool = False,
    lock_wait: float = 0.0,
    start_timeout: float = 300.0,
    stop_timeout: float = 1800.0,
) -> Snapshot:
    """Initialize a datadir, load it with ``loader``, shut down cleanly and snapshot it.

    Parameters
    ----------
    key:
        Identifies the dataset; names its directory under ``<work_dir>/datasets``.
    server:
        The server build that creates and loads the datadir.
    base_cnf_text:
        my.cnf template text for the loading server.
    loader:
        Called with the sandbox's :class:`ConnectionInfo`; creates its schema and data.
    server_options:
        Extra ``[mysqld]`` options for loading (e.g. a larger buffer pool).
    rebuild:
        Replace an existing complete snapshot (the old one stays usable until the new one is
        renamed into place).
    lock_wait:
        Seconds to wait for another process building the same dataset.

    Returns
    -------
    Snapshot

    Raises
    ------
    DatasetError
        If a snapshot exists and ``rebuild`` is false, another process holds the lock, or the
        shutdown after loading was not clean. A failed build leaves ``<name>.partial`` as
        evidence; it is never mistaken for a snapshot and is removed by the next build.
    ServerError
        If initialization or the server fails.
    """
    root = datasets_dir(work_dir)
    with _dataset_lock(root / f"{key.dirname()}.lock", lock_wait):
        if not rebuild and (root / key.dirname()).exists():
            raise DatasetError(
                "a snapshot of this dataset already exists",
                str(root / key.dirname()),
                "use ensure_dataset to reuse it, or rebuild=True",
            )
        return _build_locked(
            key,
            server,
            base_cnf_text,
            loader,
            work_dir,
            dict(server_options or {}),
            start_timeout,
            stop_timeout,
        )


def ensure_dataset(
    key: DatasetKey,
    server: ResolvedServer,
    base_cnf_text: str,
    loader: Callable[[ConnectionInfo], None],
    work_dir: Path,
    *,
    server_options: Mapping[str, str] | None = None,
    lock_wait: float = 6 * 3600.0,
    start_timeout: float = 300.0,
    stop_timeout: float = 1800.0,
) -> Snapshot:
    """Return the complete snapshot for ``key``, building it first if there is none.

    A directory without a manifest, or whose manifest names another key, is rebuilt. When
    another process is building the same dataset, waits up to ``lock_wait`` seconds for it and
    then reuses its snapshot. Parameters as for :func:`build_dataset`.
    """
    snap = find_snapshot(key, work_dir)
    if snap is not None:
        return snap
    root = datasets_dir(work_dir)
    with _dataset_lock(root / f"{key.dirname()}.lock", lock_wait):
        snap = find_snapshot(key, work_dir)  # built by whoever held the lock before us
        if snap is not None:
            return snap
        return _build_locked(
            key,
            server,
            base_cnf_text,
            loader,
            work_dir,
            dict(server_options or {}),
            start_timeout,
            stop_timeout,
        )


# --- restore --------------------------------------------------------------------------


def _allocated_bytes(snapshot: Snapshot) -> int:
    # Blocks, not apparent sizes: cp keeps sparse files sparse.
    total = 0
    for f in snapshot.files:
        try:
            total += os.stat(snapshot.datadir / f.path).st_blocks * 512
        except FileNotFoundError:
            total += f.size
    return total


def _empty_dir(path: Path, remove_self: bool) -> None:
    if remove_self:
        shutil.rmtree(path, ignore_errors=True)
        return
    for entry in list(path.iterdir()) if path.is_dir() else []:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()


#: How often a running copy checks its abort event and its timeout (seconds).
COPY_POLL_S = 0.5


def wait_copy(
    proc: subprocess.Popen,
    timeout: float | None,
    abort: threading.Event | None,
) -> tuple[int | None, str, str | None]:
    """Wait for a copy process: ``(exit code or None, stderr, None | "timeout" | "abort")``.

    ``communicate`` is retried in short slices (which loses no output) so that an abort
    request or the timeout is noticed within :data:`COPY_POLL_S` seconds. The caller's
    ``child`` block stops the process when it was not finished.
    """
    started = time.monotonic()
    while True:
        try:
            _, err = proc.communicate(timeout=COPY_POLL_S)
            return proc.returncode, err or "", None
        except subprocess.TimeoutExpired:
            if abort is not None and abort.is_set():
                return None, "", "abort"
            if timeout is not None and time.monotonic() - started > timeout:
                return None, "", "timeout"


def restore(
    snapshot: Snapshot,
    target_datadir: Path,
    verify: Literal["sizes", "full"] = "sizes",
    check_space: bool = True,
    timeout: float | None = None,
    abort: threading.Event | None = None,
    expect: DatasetKey | None = None,
) -> RestoreResult:
    """Copy a snapshot's datadir into an empty ``target_datadir`` and verify the copy.

    Uses ``cp -a --reflink=auto`` (instant on btrfs/XFS, a plain copy elsewhere). File sizes
    are always checked against the manifest; sha256 too when ``verify="full"``.

    Parameters
    ----------
    check_space:
        Refuse before copying when the target filesystem has less free space than the
        snapshot occupies. A disk that fills during the copy is reported either way.
    timeout:
        Seconds allowed for the copy (None: no limit).
    abort:
        Set by another thread to stop the copy early (a worker that lost its lease must not
        go on copying tens of GB for a run that is no longer its own); checked every
        :data:`COPY_POLL_S` seconds.
    expect:
        The key of the dataset the run needs (its server's flavor, version and build): a
        snapshot written by another server is refused before anything is copied. A datadir is
        not portable between servers — MySQL 5.5 cannot open MariaDB 10.11's redo log or
        system tables — so an experiment over several servers has one snapshot per server.

    Raises
    ------
    DatasetError
        If the snapshot is not the expected one, the target is not empty, the disk is full
        (names the target and its free space; the partial copy is removed), ``cp`` fails,
        or a file differs from the manifest (named; the copy is removed).
    """
    if verify not in ("sizes", "full"):
        raise ValueError(f"verify must be 'sizes' or 'full', got {verify!r}")
    target, created, needed, free_before = _restore_target(snapshot, target_datadir, expect,
                                                           check_space)
    argv = ["cp", "-a", "--reflink=auto", "-T", str(snapshot.datadir), str(target)]
    started = time.monotonic()
    with child(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        code, err, stopped = wait_copy(proc, timeout, abort)
    copy_seconds = time.monotonic() - started
    if code != 0:
        raise _copy_failure(snapshot, target, created, code, err, stopped, needed=needed,
                            free_before=free_before, copy_seconds=copy_seconds,
                            timeout=timeout)
    # The copy's dirty pages reach the disk now, not during the measured run: left to the
    # kernel's writeback they land in the window as I/O no process owns (tens of MiB/s on the
    # datadir's device), competing with mysqld's flushing and read as a disturbance.
    os.sync()
    copy_seconds = time.monotonic() - started
    verify_started = time.monotonic()
    try:
        _compare(snapshot, target, full=(verify == "full"))
    except DatasetError as exc:
        _empty_dir(target, remove_self=created)
        raise DatasetError(
            exc.what + "; the restored copy was removed", exc.where, exc.fix
        ) from None
    return RestoreResult(
        target=target,
        files=len(snapshot.files),
        bytes=snapshot.total_bytes,
        copy_seconds=copy_seconds,
        verify_seconds=time.monotonic() - verify_started,
        verify=verify,
    )


def _restore_target(snapshot: Snapshot, target_datadir: Path, expect: DatasetKey | None,
                    check_space: bool) -> tuple[Path, bool, int, int]:
    """Refuse another server's snapshot, a target that is not empty, too little free space.

    Returns the target (absolute), whether it did not exist yet (a failed copy removes it
    then), the bytes the copy needs and the bytes free before it.
    """
    if expect is not None and snapshot.key != expect:
        raise DatasetError(
            f"snapshot {snapshot.path.name} was written by {snapshot.key.flavor}"
            f" {snapshot.key.version_string}, not by the run's server ({expect.flavor}"
            f" {expect.version_string}): a datadir only opens on the server build that wrote it",
            str(snapshot.path),
            "let the run load its own server's dataset"
            " (runner.admission.run_context.ensure_experiment_dataset)",
        )
    target = Path(target_datadir).absolute()
    created = not target.exists()
    if not created and (not target.is_dir() or any(target.iterdir())):
        raise DatasetError(
            "restore target is not an empty directory",
            str(target),
            "restore into a new run directory",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    needed = _allocated_bytes(snapshot)
    fs_probe = target if target.exists() else target.parent
    free_before = shutil.disk_usage(fs_probe).free
    if check_space and needed > free_before:
        raise DatasetError(
            f"not enough disk space to restore {snapshot.path.name}: it needs "
            f"{format_size(needed)} ({needed} bytes), {format_size(free_before)} "
            f"({free_before} bytes) are free",
            str(target),
            "free space on that filesystem or point the work directory elsewhere",
        )
    return target, created, needed, free_before


def _copy_failure(snapshot: Snapshot, target: Path, created: bool, code: int | None, err: str,
                  stopped: str, *, needed: int, free_before: int, copy_seconds: float,
                  timeout: float | None) -> DatasetError:
    """Remove the partial copy; return the error that says why the copy stopped."""
    free_now = shutil.disk_usage(target if target.exists() else target.parent).free
    _empty_dir(target, remove_self=created)
    if stopped == "abort":
        return DatasetError(
            f"the copy was stopped after {copy_seconds:.1f} s (asked to abort); the"
            " partial copy was removed",
            str(target),
            "nothing to do if the run was taken over; otherwise restore again",
        )
    if code is None:
        return DatasetError(
            f"copying the snapshot took longer than {timeout:.0f} s; the "
            "partial copy was removed",
            str(target),
            "raise the timeout",
        )
    if "No space left on device" in err or os.strerror(errno.ENOSPC) in err:
        return DatasetError(
            f"disk full while restoring {snapshot.path.name} ({format_size(needed)} "
            f"needed, {format_size(free_before)} free before the copy, "
            f"{format_size(free_now)} when it failed); the partial copy was removed",
            str(target),
            "free space on that filesystem or point the work directory elsewhere",
        )
    return DatasetError(
        f"cp exited with code {code}: {err.strip()[-500:]}; the partial copy was removed",
        str(target),
        "check permissions and the filesystem",
    )
