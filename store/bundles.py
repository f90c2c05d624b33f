"""Study bundles on disk: one archive holding an experiment's results and everything it named.

A bundle (``study.tar.zst``, or ``.tar.gz``) is a tar archive with one top folder::

    <name>/MANIFEST.json      what is inside: versions, environment, row counts, sha256 per file
    <name>/results.sqlite     the results database trimmed to the experiment
    <name>/experiment.yaml    the experiment as it was queued
    <name>/base_config.cnf    the base config text it ran with (when stored)
    <name>/server.yaml        the server profile it named (when stored)
    <name>/server-N.yaml      with servers as a matrix axis: each profile a cell named
    <name>/report/…           the report made from the bundled database

This module writes the archive and opens one; ``analysis/bundle.py`` fills it. Opening never
trusts the archive (``store/bundle_archive.py`` reads it as a capped stream and checks every
member; ``store/bundle_manifest.py`` types the manifest): the whole archive is read and checked
first — every member's path, every file's sha256 against the manifest, no file the manifest
does not list — before anything is written. Then the top folder is made (never an existing
one, unless ``force`` and none of the bundle's files is there yet), files are created
exclusively (nothing is ever overwritten), the database is checked against the manifest's
figures, and on any failure exactly what this call made is removed again.

A bundle is read-only: ``--db BUNDLE`` reads a copy unpacked into the cache, and a command
that writes is refused (:func:`read_only_bundle`) rather than writing into that copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from core.errors import StoreError, quote
from core.filecheck import check_input_file
from core.paths import cache_dir
from store.bundle_archive import DAMAGED, MANIFEST, Listing, Member, inspect_archive, walk
from store.bundle_manifest import (
    RESULTS,
    BundleManifest,
    check_database,
    database_revision,
    parse_manifest,
)

#: Suffixes a bundle may have, and the tar compression each means.
SUFFIXES = {".tar.zst": "zst", ".tar.gz": "gz", ".tgz": "gz"}
#: The fix for a bundle whose files differ from its manifest.
CHANGED = f"it was changed after it was made; {DAMAGED.split(': ', 1)[1]}"


def unpack_root() -> Path:
    """Where ``--db BUNDLE`` unpacks (one folder per bundle content hash): ``bundles/`` of
    flushbench's cache folder (:func:`core.paths.cache_dir`)."""
    return cache_dir() / "bundles"


def is_bundle_path(value: str | os.PathLike[str]) -> bool:
    """Whether a ``--db`` value names a bundle file (by its suffix)."""
    return str(value).lower().endswith(tuple(SUFFIXES))


def compression(path: Path) -> str:
    """``zst`` or ``gz`` from the file name, or a StoreError naming the suffixes."""
    for suffix, kind in SUFFIXES.items():
        if path.name.lower().endswith(suffix):
            return kind
    raise StoreError("a bundle is a *.tar.zst or *.tar.gz file", where=str(path),
                     fix="name one (`flushbench bundle EXPERIMENT -o study.tar.zst` writes one)")


def sha256(path: Path) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_archive(folder: Path, target: Path, manifest: dict[str, Any]) -> Path:
    """Archive ``folder`` (its name becomes the top folder) with a manifest of its files.

    ``manifest`` is every key of :class:`~store.bundle_manifest.BundleManifest` but ``files``.
    Written to a temporary file beside ``target`` and renamed, so a failure never leaves half
    a bundle under the final name.
    """
    kind = compression(target)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    manifest = {**manifest, "files": {str(p.relative_to(folder)): sha256(p) for p in files}}
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str)
    parse_manifest(text.encode(), str(target))  # never write a manifest `open` would refuse
    (folder / MANIFEST).write_text(text)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise StoreError(f"cannot write the bundle there ({exc.strerror})", where=str(target),
                         fix="choose a writable folder") from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            if kind == "zst":
                import zstandard

                with zstandard.ZstdCompressor(level=10).stream_writer(raw) as zst, \
                        tarfile.open(fileobj=zst, mode="w|") as tar:
                    tar.add(folder, arcname=folder.name)
            else:
                with tarfile.open(fileobj=raw, mode="w:gz") as tar:
                    tar.add(folder, arcname=folder.name)
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def read_only_bundle(path: Path) -> StoreError:
    """The refusal of a command that would write to a study bundle's database."""
    return StoreError("a study bundle is read-only, and this command writes to its results"
                      " database", where=str(path),
                      fix=f"unpack it with `flushbench open {path}` and point --db at the"
                          " results.sqlite it prints (a copy of your own)")


@dataclass(frozen=True)
class OpenedBundle:
    """A bundle unpacked and checked: its folder and its manifest."""

    folder: Path
    manifest: BundleManifest


class _Made:
    """Every folder and file one opening made, in order, so a failure removes exactly those
    (never a folder that was there before, nor a file someone else put in a new folder)."""

    def __init__(self, where: str) -> None:
        self._where = where
        self._paths: list[tuple[Path, bool]] = []

    def folder(self, path: Path, *, new: bool = False) -> None:
        """Make ``path`` (an existing real folder is fine unless ``new``)."""
        try:
            path.mkdir()
        except FileExistsError:
            if new or path.is_symlink() or not path.is_dir():
                raise StoreError(f"{path} exists already", where=self._where,
                                 fix="open the bundle into another folder with -o FOLDER"
                                 ) from None
            return
        self._paths.append((path, True))

    def file(self, path: Path) -> BinaryIO:
        """Create ``path`` for writing; an existing file (or link) there is never replaced."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o644)
        except FileExistsError:
            raise StoreError(f"{path} exists already: opening the bundle would overwrite it",
                             where=self._where,
                             fix="open the bundle into another folder with -o FOLDER") from None
        self._paths.append((path, False))
        return os.fdopen(fd, "wb")

    def undo(self) -> None:
        """Remove what was made, newest first; a folder someone else added to stays."""
        for path, is_folder in reversed(self._paths):
            try:
                path.rmdir() if is_folder else path.unlink()
            except OSError:
                pass


def _match_manifest(manifest: BundleManifest, listing: Listing, where: str) -> None:
    """Every file in the archive listed, every listed file there, every sha256 the same."""
    unlisted = sorted(set(listing.files) - set(manifest.files))
    if unlisted:
        names = ", ".join(quote(n) for n in unlisted[:3])
        more = f" and {len(unlisted) - 3} more" if len(unlisted) > 3 else ""
        raise StoreError(f"the bundle holds files its manifest does not list: {names}{more}",
                         where=where, fix=CHANGED)
    for name, digest in sorted(manifest.files.items()):
        if name not in listing.files:
            raise StoreError(f"the bundle's {name} is listed in its manifest but missing",
                             where=where, fix=CHANGED)
        if listing.files[name] != digest:
            raise StoreError(f"the bundle's {name} does not match its manifest", where=where,
                             fix=CHANGED)


def _destination(parent: Path, listing: Listing, made: _Made, *, force: bool,
                 where: str) -> Path:
    """Make the folder the bundle opens into (``parent/<top folder>``) and return it.

    Folders missing above it are made too. An existing top folder is refused unless
    ``force``; then none of the bundle's paths may exist in it.
    """
    missing: list[Path] = []
    existing = parent
    while not existing.exists() and not existing.is_symlink():
        missing.append(existing)
        existing = existing.parent
    if not existing.is_dir():
        raise StoreError(f"{existing} is not a folder", where=where,
                         fix="open the bundle into a folder with -o FOLDER")
    folder = parent / listing.top
    if folder.exists() or folder.is_symlink():
        if not force or folder.is_symlink() or not folder.is_dir():
            raise StoreError(
                f"{folder} exists already", where=where,
                fix="open the bundle into another folder with -o FOLDER, or remove that one"
                    " (--force adds the bundle's files to it when none of them is there yet)")
        for path in sorted(listing.folders | set(listing.files) | {MANIFEST}):
            target = folder / path
            is_folder = path in listing.folders
            if target.is_symlink() or target.exists() and not (is_folder and target.is_dir()):
                raise StoreError(f"{target} exists already: opening the bundle would overwrite"
                                 " it", where=where,
                                 fix="open the bundle into another folder with -o FOLDER")
    for path in reversed(missing):
        made.folder(path)
    made.folder(folder, new=not force)
    return folder


def _write_members(handle: BinaryIO, kind: str, where: str, listing: Listing, folder: Path,
                   made: _Made) -> None:
    """The second pass: every member written under ``folder``, each file's sha256 again the
    one the first pass checked (a bundle changed in between is refused)."""
    with contextlib.closing(walk(handle, kind, where)) as members:
        for _, member in members:
            if member.path:
                _write_member(member, folder, made, where, listing)


def _write_member(member: Member, folder: Path, made: _Made, where: str,
                  listing: Listing) -> None:
    parts = member.path.split("/")
    for depth in range(1, len(parts) + 1 if member.is_folder else len(parts)):
        made.folder(folder.joinpath(*parts[:depth]))
    if member.is_folder:
        return
    digest = hashlib.sha256()
    with made.file(folder.joinpath(*parts)) as out:
        for block in member.chunks():
            digest.update(block)
            out.write(block)
    expected = (hashlib.sha256(listing.manifest).hexdigest() if member.path == MANIFEST
                else listing.files.get(member.path))
    if digest.hexdigest() != expected:
        raise StoreError("the bundle changed while it was being opened", where=where,
                         fix="open it again once nothing writes to it")


def open_bundle(path: Path, parent: Path, *, force: bool = False) -> OpenedBundle:
    """Unpack a bundle into ``parent/<its top folder>`` (made here) after checking all of it.

    Raises
    ------
    StoreError
        Naming ``path`` as given: not a readable archive, a member that breaks a rule of
        ``store/bundle_archive.py``, a manifest that is invalid or does not match the files
        or the database, or a destination that exists. Whatever this call made is removed
        again; nothing else is touched.
    """
    where = str(path)
    kind = compression(path)
    check_input_file(path, "bundle file", error=StoreError)  # a FIFO would block the read
    with path.open("rb") as handle:
        listing = inspect_archive(handle, kind, where)
        manifest = parse_manifest(listing.manifest, where)
        _match_manifest(manifest, listing, where)
        made = _Made(where)
        try:
            folder = _destination(parent, listing, made, force=force, where=where)
            _write_members(handle, kind, where, listing, folder, made)
            check_database(manifest, folder / RESULTS, where)
        except BaseException:
            made.undo()
            raise
    return OpenedBundle(folder, manifest)


def _cached_database(folder: Path) -> Path | None:
    """The database of a bundle already unpacked into the cache at ``folder``, if complete.

    The cache's own folder, made whole by a rename: anything else there is removed.
    """
    if not folder.exists() and not folder.is_symlink():
        return None
    opened = [p for p in folder.iterdir() if p.is_dir()] if folder.is_dir() else []
    if len(opened) == 1 and (opened[0] / RESULTS).is_file() and not folder.is_symlink():
        return opened[0] / RESULTS
    if folder.is_symlink() or not folder.is_dir():
        folder.unlink()
    else:
        shutil.rmtree(folder)
    return None


def _unpack_into_cache(path: Path, folder: Path) -> Path:
    """Open ``path`` into a new folder of the cache, renamed to ``folder`` once complete."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".opening-", dir=folder.parent))
    try:
        opened = open_bundle(path, staging)
        try:
            staging.rename(folder)
        except OSError:  # another process unpacked the same bundle first: use that copy
            if _cached_database(folder) is None:
                raise
        return folder / opened.folder.name / RESULTS
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # this call's own folder, if still there


def _check_current(database: Path, where: str) -> None:
    """A bundle's database must be at this flushbench's schema revision to be read as is."""
    from store.migrate import head_revision, known_revisions

    try:
        revision = database_revision(database)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read the bundle's unpacked database ({exc})", where=where,
                         fix=f"remove {database.parent.parent} (a cache) and try again") from None
    head = head_revision()
    if revision == head:
        return
    if revision in known_revisions():
        raise StoreError(
            f"the bundle's database is at schema revision {revision}, this flushbench reads"
            f" {head}", where=where,
            fix=f"unpack it with `flushbench open {where}`, run `flushbench db upgrade --db"
                " FOLDER/results.sqlite` on the copy it prints, and use that copy")
    raise StoreError(f"the bundle's database is at schema revision {revision}, which this"
                     " flushbench does not know: a newer flushbench made it", where=where,
                     fix="read it with a newer flushbench (its manifest names the version)")


def bundle_database(path: Path) -> Path:
    """The results database inside a bundle (``--db BUNDLE``), read-only by intent.

    Unpacked and checked once into the cache (one folder per content hash); a database at
    another schema revision is refused naming the bundle. ``path`` is named in every message
    as given.
    """
    compression(path)
    check_input_file(path, "bundle file", error=StoreError)
    folder = unpack_root() / sha256(path)
    database = _cached_database(folder) or _unpack_into_cache(path, folder)
    _check_current(database, str(path))
    return database
