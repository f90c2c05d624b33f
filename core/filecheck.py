"""The one check of every file flushbench opens: what it is, before it is opened.

Opening a FIFO blocks until someone writes to it, reading ``/dev/zero`` never ends, a
directory cannot be read as a file, and a 4 GB file named as an experiment is a mistake. So
every path the tool reads (experiment files, server profiles, base configs, the results
database) or writes (``--log-file``, ``report -o``, ``export -o``) is looked at with ``stat``
first — which never blocks — and refused with the reason and the fix. The checks raise
:class:`~core.errors.ConfigError` (or the ``error`` class the caller gives, e.g.
``StoreError`` for the database).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.errors import ConfigError, FlushbenchError


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (from ``stat`` or ``lstat``) is, in words for an error message:
    "a link", "a named pipe (FIFO)", "a socket", "a device", "a directory" or "a file"."""
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a file"


def _stat_input(path: Path, what: str, error: type[FlushbenchError],
                missing_fix: str) -> os.stat_result:
    """``stat`` of a path flushbench reads; missing or unreadable is ``error``."""
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise error(f"{what} not found", where=str(path), fix=missing_fix) from None
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror}", where=str(path),
                    fix="check the path and its permissions") from None


def check_input_file(
    path: Path,
    what: str = "file",
    *,
    max_bytes: int | None = None,
    error: type[FlushbenchError] = ConfigError,
    missing_fix: str = "check the path",
) -> os.stat_result:
    """Refuse anything but an existing regular file of at most ``max_bytes``; return its stat.

    Raises
    ------
    FlushbenchError
        (of class ``error``) for a missing file, a directory, a FIFO, a socket or a device,
        an unreadable path, or a file larger than ``max_bytes``.
    """
    info = _stat_input(path, what, error, missing_fix)
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} is a directory", where=str(path), fix="name a file")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{what} is {file_kind(info.st_mode)}, not a regular file (it would block or"
                    " never end)", where=str(path), fix="name a regular file")
    if max_bytes is not None and info.st_size > max_bytes:
        raise error(f"{what} is {info.st_size:,} bytes, more than the {max_bytes:,} a"
                    " configuration file may have", where=str(path),
                    fix="check that this is the right file")
    if not os.access(path, os.R_OK):
        raise error(f"cannot read {what}: permission denied", where=str(path),
                    fix="check the file's permissions")
    return info


def check_input_path(path: Path, what: str = "path", *,
                     error: type[FlushbenchError] = ConfigError,
                     missing_fix: str = "check the path") -> os.stat_result:
    """Refuse anything but an existing, readable regular file or directory; return its stat.

    For inputs that may be either (``server add``'s folder or archive): a FIFO, a device or a
    socket is refused before anything opens it.

    Raises
    ------
    FlushbenchError
        (of class ``error``) for a missing path, a FIFO, a socket or a device, or one that
        cannot be read.
    """
    info = _stat_input(path, what, error, missing_fix)
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise error(f"{what} is {file_kind(info.st_mode)}, not a regular file or a folder (it"
                    " would block or never end)", where=str(path),
                    fix="name a folder or a regular file")
    wanted = os.R_OK | (os.X_OK if stat.S_ISDIR(info.st_mode) else 0)
    if not os.access(path, wanted):
        raise error(f"cannot read {what}: permission denied", where=str(path),
                    fix="check its permissions")
    return info


def _writable_parent(path: Path, what: str, error: type[FlushbenchError]) -> None:
    """The nearest existing folder above ``path`` must be a writable directory."""
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is None:
        return
    if not parent.is_dir():
        raise error(f"cannot create {what}: {parent} is a file, not a folder", where=str(path),
                    fix="choose a path under a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise error(f"cannot create {what}: {parent} is not writable", where=str(path),
                    fix="choose a writable folder")


#: Kernel file systems: what looks like a folder there holds no files anyone can create (as
#: root ``os.access`` says "writable", and the write fails later with a misleading error).
KERNEL_FILE_SYSTEMS = (Path("/proc"), Path("/sys"))


def check_output_place(path: Path, what: str = "output",
                       error: type[FlushbenchError] = ConfigError) -> None:
    """Refuse an output path that resolves (links followed) under ``/proc`` or ``/sys``.

    Called by :func:`check_output_file` and :func:`check_output_dir` before anything else, so
    every ``-o`` (report, plot, export, bundle) and ``--log-file`` says so up front.
    """
    resolved = Path(os.path.realpath(path))
    for root in KERNEL_FILE_SYSTEMS:
        if resolved == root or root in resolved.parents:
            raise error(f"cannot write {what} under {root}: it is a kernel file system, not a"
                        " place for files", where=str(path),
                        fix="choose a folder on a disk (e.g. under your home or ./results)")


def _existing(path: Path, what: str, error: type[FlushbenchError]) -> os.stat_result | None:
    """``stat`` of an output path, or None when it does not exist yet (its folder must then be
    writable); any other failure is ``error``."""
    check_output_place(path, what, error)
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        _writable_parent(path, what, error)
        return None
    except OSError as exc:
        raise error(f"cannot use {what}: {exc.strerror}", where=str(path),
                    fix="check the path") from None


def check_output_file(path: Path, what: str = "output file", *,
                      error: type[FlushbenchError] = ConfigError) -> None:
    """A file flushbench will write: absent (in a writable folder) or a writable regular file.

    Raises
    ------
    FlushbenchError
        For a directory, a FIFO, a device or socket, an unwritable file or folder.
    """
    info = _existing(path, what, error)
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} is a directory", where=str(path), fix="name a file")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{what} is {file_kind(info.st_mode)}, not a regular file", where=str(path),
                    fix="name a regular file")
    if not os.access(path, os.W_OK):
        raise error(f"{what} is not writable", where=str(path),
                    fix="check its permissions, or choose another path")


def check_output_dir(path: Path, what: str = "output folder", *,
                     error: type[FlushbenchError] = ConfigError) -> None:
    """A folder flushbench will write into: absent (creatable) or a writable directory."""
    info = _existing(path, what, error)
    if info is None:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise error(f"{what} is a file, not a folder" if stat.S_ISREG(info.st_mode)
                    else f"{what} is {file_kind(info.st_mode)}, not a folder", where=str(path),
                    fix="name a folder (it is created if missing)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise error(f"{what} is not writable", where=str(path),
                    fix="check its permissions, or choose another folder")


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name the same file (resolving links; False if either is missing)."""
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


#: The files SQLite keeps beside a database: writing any of them damages the database.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def input_written_over(out: Path, inputs: list[Path]) -> Path | None:
    """The file of ``inputs`` (or a SQLite companion of one: ``-wal``, ``-shm``,
    ``-journal``) that writing ``out`` would write over, or None.

    Compared by resolved path (links followed, so a link to the input counts; a name that does
    not exist yet counts when it is the companion's) and by device and inode (a hard link).
    """
    for source in inputs:
        for suffix in ("", *SQLITE_COMPANIONS):
            candidate = source.with_name(source.name + suffix)
            if same_file(out, candidate):
                return candidate
    return None
