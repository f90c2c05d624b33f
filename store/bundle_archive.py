"""A bundle's tar stream read without trusting it: decompressed as a stream, capped, checked.

A bundle comes from someone else. So it is never decompressed whole into memory (a 96 KiB
file can expand to gigabytes): zstandard's stream reader, or gzip's, feeds ``tarfile``'s
stream mode, and every limit is checked as the stream is read — the number of members, the
size of each and of all, and the bytes a member's headers may take (``tarfile`` reads a pax or
GNU long-name header whole into memory, so one of a gigabyte would be a gigabyte). Every
member's path is checked as it comes: one top folder with a plain name, then relative paths
without ``.``, ``..``, empty or control-character parts; only regular files and folders (no
links, devices or FIFOs); no path twice, no file where another member needs a folder.

:func:`walk` yields the members of one pass over the archive; :func:`inspect_archive` is the
pass that reads everything before anything is written (each file's sha256, the manifest's
bytes). ``store/bundles.py`` runs it, checks the manifest, then walks again to write.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from core.errors import StoreError, quote

MiB = 1024**2
GiB = 1024**3
#: Members a bundle may hold (one made by `flushbench bundle` holds tens: the report's files).
MAX_MEMBERS = 10_000
#: Largest member (a long study's results database is ~100 MB).
MAX_MEMBER_BYTES = 1 * GiB
#: All members together, decompressed.
MAX_TOTAL_BYTES = 2 * GiB
#: The headers before one member (tar, pax, GNU long name): a long path takes a few KiB.
MAX_HEADER_BYTES = 1 * MiB
#: The manifest is read into memory (a sha256 line per file: ~100 bytes each).
MAX_MANIFEST_BYTES = 4 * MiB
#: The manifest's name in the top folder.
MANIFEST = "MANIFEST.json"
#: The fix for an archive that cannot be read: it was cut short or changed on the way.
DAMAGED = ("the file is damaged or truncated: copy it again from where it came from, or make"
           " it again with `flushbench bundle`")
#: The fix for an archive no `flushbench bundle` makes.
NOT_OURS = "open only bundles made by `flushbench bundle`"
_CHUNK = 1 << 20


def _refuse(what: str, where: str, fix: str = NOT_OURS) -> StoreError:
    return StoreError(what, where=where, fix=fix)


def _blocks(size: int) -> int:
    """Bytes a member of ``size`` takes in a tar stream (whole 512-byte blocks)."""
    return -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE


class _CappedStream:
    """The decompressed stream, refusing to go past what the members so far declared.

    ``tarfile`` reads through this; :meth:`expect` is told each member's size as it is
    yielded, so the stream may hold that member's data and at most :data:`MAX_HEADER_BYTES`
    of headers before the next member, and never more than all members may hold in total.
    """

    def __init__(self, source: BinaryIO, where: str) -> None:
        self._source = source
        self._where = where
        self.read_so_far = 0
        self._limit = MAX_HEADER_BYTES

    def expect(self, size: int) -> None:
        """The member just yielded holds ``size`` bytes: allow those and its successor's headers."""
        ceiling = MAX_TOTAL_BYTES + MAX_MEMBERS * 2 * tarfile.BLOCKSIZE + MAX_HEADER_BYTES
        self._limit = min(self.read_so_far + _blocks(size) + MAX_HEADER_BYTES, ceiling)

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` decompressed bytes (tarfile asks for one record at a time)."""
        data = self._source.read(size if size >= 0 else _CHUNK)
        self.read_so_far += len(data)
        if self.read_so_far > self._limit:
            raise _refuse(f"the bundle's tar stream holds headers of more than"
                          f" {MAX_HEADER_BYTES // MiB} MiB before a member, or more data than"
                          f" its members declare (a decompression bomb?)", self._where)
        return data


@contextlib.contextmanager
def _read_errors(where: str) -> Iterator[None]:
    """A damaged or truncated stream, whatever layer notices it, as one StoreError."""
    import zstandard

    try:
        yield
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise _refuse(f"cannot read the bundle ({exc or type(exc).__name__})", where,
                      DAMAGED) from None
    except zstandard.ZstdError as exc:
        raise _refuse(f"cannot decompress the bundle ({exc})", where, DAMAGED) from None


@contextlib.contextmanager
def _decompressed(handle: BinaryIO, kind: str) -> Iterator[BinaryIO]:
    """The tar bytes of ``handle`` (a ``zst`` or ``gz`` file), decompressed as they are read."""
    handle.seek(0)
    if kind == "zst":
        import zstandard

        # read_across_frames: a bundle recompressed by the zstd tool may hold several frames.
        with zstandard.ZstdDecompressor().stream_reader(
                handle, read_across_frames=True, closefd=False) as stream:
            yield stream
    else:
        with gzip.GzipFile(fileobj=handle, mode="rb") as stream:
            yield stream


@dataclass(frozen=True)
class Member:
    """One checked member: its path below the top folder (``""`` for the top folder itself)."""

    path: str
    is_folder: bool
    size: int
    #: The member's data in chunks (a file's; read it before asking for the next member).
    chunks: Callable[[], Iterator[bytes]]


def _parts(name: str, where: str) -> list[str]:
    """A member name's parts, or a StoreError for anything but a plain relative path in
    UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        # tarfile reads undecodable bytes as surrogates; no file name of ours holds one, and
        # every use of the name (its length, a path, the terminal) would fail on it.
        raw = name.encode("utf-8", "surrogateescape")  # the name's own bytes, shown as such
        raise _refuse(f"the bundle holds a member whose name is not UTF-8: {quote(raw)}"
                      " (`flushbench bundle` writes UTF-8 names only)", where) from None
    parts = name.split("/")
    bad = (name.startswith("/") or len(name) > 4096
           or any(p in ("", ".", "..") or len(p.encode()) > 255 for p in parts)
           or any(ord(c) < 0x20 or c == "\x7f" or c == "\\" for c in name))
    if bad:
        raise _refuse(f"the bundle holds an unsafe member: {quote(name)} (members are plain"
                      " relative paths under one top folder)", where)
    return parts


def _top_name(name: str, where: str) -> str:
    """The top folder's name if it is one `flushbench bundle` could have written."""
    plain = all(c.isalnum() or c in "-_." for c in name) and name[0] not in ".-"
    if not plain:
        raise _refuse(f"the bundle's top folder {quote(name)} is not a plain name", where)
    return name


def _member_data(tar: tarfile.TarFile, info: tarfile.TarInfo, where: str) -> Iterator[bytes]:
    """A member's data in chunks; the stream ending early is refused like any damage."""
    with _read_errors(where):
        reader = tar.extractfile(info)
        while reader is not None and (block := reader.read(_CHUNK)):
            yield block


def _checked(info: tarfile.TarInfo, index: int, total: int, where: str) -> None:
    """The type and size limits of one member (``total``: bytes of the members before it)."""
    if index > MAX_MEMBERS:
        raise _refuse(f"the bundle holds more than {MAX_MEMBERS:,} members", where)
    if not (info.isfile() and not info.issparse() or info.isdir()):
        raise _refuse(f"the bundle holds an unsafe member: {quote(info.name)} (a link, device"
                      " or FIFO; a bundle holds files and folders only)", where)
    if info.size > MAX_MEMBER_BYTES:
        raise _refuse(f"the bundle member {quote(info.name)} is {info.size:,} bytes, over the"
                      f" {MAX_MEMBER_BYTES // GiB} GiB a member may hold", where)
    if total + info.size > MAX_TOTAL_BYTES:
        raise _refuse(f"the bundle's members hold over {MAX_TOTAL_BYTES // GiB} GiB"
                      " decompressed (a decompression bomb?)", where)


def walk(handle: BinaryIO, kind: str, where: str) -> Iterator[tuple[str, Member]]:
    """Each member of the archive as ``(top folder, member)``, checked, in archive order.

    ``where`` names the bundle in every message. Raises :class:`StoreError` at the first
    member (or byte) that breaks a rule, before the caller sees it.
    """
    top: str | None = None
    total = 0
    with _read_errors(where), _decompressed(handle, kind) as raw:
        capped = _CappedStream(raw, where)
        with tarfile.open(fileobj=capped, mode="r|") as tar:  # type: ignore[call-overload]
            for index, info in enumerate(tar, start=1):
                _checked(info, index, total, where)
                parts = _parts(info.name, where)
                if top is None:
                    top = _top_name(parts[0], where)
                elif parts[0] != top:
                    raise _refuse("not a flushbench bundle (it has no single top folder)",
                                  where, "make bundles with `flushbench bundle`")
                if len(parts) == 1 and not info.isdir():
                    raise _refuse(f"the bundle holds a file {quote(info.name)} where its top"
                                  " folder should be", where)
                size = info.size if info.isfile() else 0
                total += size
                capped.expect(size)
                yield top, Member("/".join(parts[1:]), info.isdir(), size,
                                  lambda info=info: _member_data(tar, info, where))
    if top is None:
        raise _refuse("the bundle is an empty archive", where, DAMAGED)


@dataclass
class Listing:
    """What one full pass over the archive found (nothing written)."""

    top: str = ""
    #: File path below the top folder → sha256 of its data (the manifest excluded).
    files: dict[str, str] = field(default_factory=dict)
    #: Folders below the top folder, named by members or implied by a member's path.
    folders: set[str] = field(default_factory=set)
    #: The manifest's bytes.
    manifest: bytes = b""
    has_manifest: bool = False


def _read_manifest(member: Member, where: str) -> bytes:
    if member.size > MAX_MANIFEST_BYTES:
        raise _refuse(f"the bundle's {MANIFEST} is {member.size:,} bytes, over the"
                      f" {MAX_MANIFEST_BYTES // MiB} MiB a manifest may have", where)
    return b"".join(member.chunks())


def _record(listing: Listing, member: Member, where: str) -> None:
    """Add one member to ``listing``; refuses a file seen before or a file/folder clash."""
    path = member.path
    is_file_already = path in listing.files or (path == MANIFEST and listing.has_manifest)
    if is_file_already or (path in listing.folders and not member.is_folder):
        raise _refuse(f"the bundle holds {quote(path)} twice, or as a file and a folder", where)
    parents = path.split("/")[:-1]
    for depth in range(1, len(parents) + 1):
        folder = "/".join(parents[:depth])
        if folder in listing.files or folder == MANIFEST:
            raise _refuse(f"the bundle holds {quote(folder)} as a file and a folder", where)
        listing.folders.add(folder)
    if member.is_folder:
        if path:
            listing.folders.add(path)
    elif path == MANIFEST:
        listing.manifest = _read_manifest(member, where)
        listing.has_manifest = True
    else:
        digest = hashlib.sha256()
        for block in member.chunks():
            digest.update(block)
        listing.files[path] = digest.hexdigest()


def inspect_archive(handle: BinaryIO, kind: str, where: str) -> Listing:
    """Read the whole archive once, writing nothing: its top folder, each file's sha256 and
    the manifest's bytes — every rule of :func:`walk` checked on every member."""
    listing = Listing()
    with contextlib.closing(walk(handle, kind, where)) as members:
        for top, member in members:
            listing.top = top
            _record(listing, member, where)
    if not listing.has_manifest:
        raise _refuse("the bundle has no readable manifest", where,
                      "make bundles with `flushbench bundle`")
    return listing
