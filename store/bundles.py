"""Study bundles on disk: one archive holding an experiment's results and everything it named.

A bundle (``study.tar.zst``, or ``.tar.gz``) is a tar archive with one top folder::

    <name>/MANIFEST.json      what is inside: versions, environment, row counts, sha256 per file
    <name>/results.sqlite     the results database trimmed to the experiment
    <name>/experiment.yaml    the experiment as it was queued
    <name>/base_config.cnf    the base config text it ran with (when stored)
    <name>/server.yaml        the server profile it named (when stored)
    <name>/server-N.yaml      with servers as a matrix axis: each profile a cell named
    <name>/report/…           the report made from the bundled database

This module reads and writes the archive and checks it; ``analysis/bundle.py`` fills it.
Opening never trusts the archive: members must be regular files under the top folder (no
links, devices, absolute paths or ``..``), sizes are capped, and every file's sha256 must match
the manifest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from flushbench.errors import StoreError
from flushbench.paths import cache_dir

MANIFEST = "MANIFEST.json"
RESULTS = "results.sqlite"
#: Suffixes a bundle may have, and the tar compression each means.
SUFFIXES = {".tar.zst": "zst", ".tar.gz": "gz", ".tgz": "gz"}
#: Largest bundle member accepted when opening (a results DB of a long study is ~100 MB).
MAX_MEMBER_BYTES = 4 * 1024**3
#: The fix for an archive that cannot be read: it was cut short or changed on the way.
DAMAGED = ("the file is damaged or truncated: copy it again from where it came from, or make"
           " it again with `flushbench bundle`")


def unpack_root() -> Path:
    """Where ``--db BUNDLE`` unpacks (one folder per bundle content hash): ``bundles/`` of
    flushbench's cache folder (:func:`flushbench.paths.cache_dir`)."""
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

    Written to a temporary file beside ``target`` and renamed, so a failure never leaves half
    a bundle under the final name.
    """
    kind = compression(target)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    manifest = {**manifest, "files": {str(p.relative_to(folder)): sha256(p) for p in files}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str))
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


def _members(tar: tarfile.TarFile, where: str) -> tuple[str, list[tarfile.TarInfo]]:
    """The top folder and the members to extract; refuses anything but plain files/folders."""
    members = tar.getmembers()
    tops = {m.name.split("/", 1)[0] for m in members}
    if len(tops) != 1:
        raise StoreError("not a flushbench bundle (it has no single top folder)", where=where,
                         fix="make bundles with `flushbench bundle`")
    top = tops.pop()
    for m in members:
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise StoreError(f"the bundle holds an unsafe member: {m.name[:80]!r}", where=where,
                             fix="open only bundles made by `flushbench bundle`")
        if m.size > MAX_MEMBER_BYTES:
            raise StoreError(f"the bundle member {m.name[:80]!r} is over 4 GiB", where=where,
                             fix="open only bundles made by `flushbench bundle`")
    return top, members


def _tar_stream(path: Path) -> tarfile.TarFile:
    kind = compression(path)
    if kind == "zst":
        import zstandard

        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zst:
            data = zst.read()
        return tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    return tarfile.open(path, mode="r:gz")


def open_bundle(path: Path, target: Path) -> Path:
    """Unpack a bundle into ``target`` (created), check it, and return its top folder.

    Raises
    ------
    StoreError
        Not a readable archive, unsafe members, no manifest, or a file whose sha256 does not
        match the manifest (the folder is removed again).
    """
    where = str(path)
    if not path.is_file():
        raise StoreError("no bundle file here", where=where, fix="check the path")
    try:
        with _tar_stream(path) as tar:
            top, members = _members(tar, where)
            target.mkdir(parents=True, exist_ok=True)
            tar.extractall(target, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise StoreError(f"cannot read the bundle ({exc})", where=where, fix=DAMAGED) from None
    except Exception as exc:  # zstandard raises its own ZstdError
        if type(exc).__module__.startswith("zstandard"):
            raise StoreError(f"cannot decompress the bundle ({exc})", where=where,
                             fix=DAMAGED) from None
        raise
    folder = target / top
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        expected: dict[str, str] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError):
        shutil.rmtree(folder, ignore_errors=True)
        raise StoreError("the bundle has no readable manifest", where=where,
                         fix="make bundles with `flushbench bundle`") from None
    for name, digest in expected.items():
        member = folder / name
        if not member.is_file() or sha256(member) != digest:
            shutil.rmtree(folder, ignore_errors=True)
            raise StoreError(f"the bundle's {name} does not match its manifest", where=where,
                             fix=f"it was changed after it was made; {DAMAGED.split(': ', 1)[1]}")
    if not (folder / RESULTS).is_file():
        shutil.rmtree(folder, ignore_errors=True)
        raise StoreError("the bundle has no results database", where=where,
                         fix="make bundles with `flushbench bundle`")
    return folder


def bundle_database(path: Path) -> Path:
    """The results database inside a bundle, unpacked once into the cache (``--db BUNDLE``)."""
    if not path.is_file():
        raise StoreError("no bundle file here", where=str(path), fix="check the path")
    folder = unpack_root() / sha256(path)[:16]
    unpacked = [p for p in folder.iterdir() if p.is_dir()] if folder.is_dir() else []
    if len(unpacked) == 1 and (unpacked[0] / RESULTS).is_file():
        return unpacked[0] / RESULTS
    shutil.rmtree(folder, ignore_errors=True)
    return open_bundle(path, folder) / RESULTS
