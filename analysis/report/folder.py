"""What a report may write in the folder ``report -o DIR`` names, and nothing else.

A report folder is the user's: it may hold their own ``report.html``, their annotated
``figures/01-notpm.png``, links, named pipes. A report writes three kinds of names there —
``report.html``, ``figures/NN-kind.png`` and its manifest :data:`MANIFEST` — and these rules
keep everything else safe:

- **Its own files are known by its manifest.** The manifest lists every file the last report
  wrote with its sha256. An entry counts only when its name is ``report.html`` or
  ``figures/<figure>.png`` (a plain name inside the folder), the file is a regular file (seen
  with ``lstat``, opened with ``O_NOFOLLOW | O_NONBLOCK``, so a link or a FIFO is never
  followed or waited on) and its content still has that sha256 (a file the user changed is
  theirs again). A tampered or foreign manifest therefore can claim nothing.
- **Everything is checked before anything is written.** A name the report would write that
  exists and is not its own (a user's file, a link, a FIFO) is refused with one error naming
  it, unless ``overwrite`` (``report --overwrite``); a folder in its place, or ``figures``
  that is not a real folder, is refused always.
- **Files are replaced, never written through.** The PNGs are drawn into a private staging
  folder inside the report folder (made with ``mkdtemp``); the page and the manifest are
  written to a new temporary file beside their name; each is then renamed over its name, so a
  link there is replaced, not followed, and a reader never sees half a file.
- **Only its own files are deleted.** A figure the previous report wrote (listed, unchanged)
  that this report did not draw again is removed — after a complete PNG export only; a file
  that is not the report's own is never removed, not even with ``overwrite``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from core.errors import AnalysisError, quote
from core.filecheck import file_kind

#: The manifest's name in the report folder: the files the last report wrote, with sha256.
MANIFEST = ".flushbench-report.json"
#: The page's name in the report folder.
PAGE = "report.html"
#: The folder of the PNGs inside the report folder.
FIGURES = "figures"
#: What a figure's PNG is named (``NN-kind.png``; the cross-database report's one name too).
FIGURE_NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z_.-]{0,120}\.png")
#: A manifest is a short list of names: anything larger is not one this tool wrote.
MANIFEST_MAX_BYTES = 1024 * 1024
#: A listed file larger than this is not hashed (a report's page is ≈ 5 MB, a PNG < 1 MB).
OWN_FILE_MAX_BYTES = 256 * 1024 * 1024
_SHA = re.compile(r"[0-9a-f]{64}")
_OVERWRITE_FIX = ("choose another folder with -o, move the file away, or pass --overwrite to"
                  " replace it (a file flushbench did not write is never deleted)")


def is_report_name(name: object) -> bool:
    """Whether ``name`` is one a report writes: ``report.html`` or ``figures/<figure>.png``."""
    if not isinstance(name, str):
        return False
    if name == PAGE:
        return True
    folder, _, leaf = name.partition("/")
    return folder == FIGURES and FIGURE_NAME.fullmatch(leaf) is not None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _sha256_of(path: Path, info: os.stat_result) -> str | None:
    """The sha256 of the regular file at ``path`` (the one ``info`` describes), or None when
    it is not one (a link, a FIFO, too large, gone, swapped since ``lstat``)."""
    if not stat.S_ISREG(info.st_mode) or info.st_size > OWN_FILE_MAX_BYTES:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        now = os.fstat(handle.fileno())
        if (now.st_ino, now.st_dev) != (info.st_ino, info.st_dev):
            return None
        digest = hashlib.sha256()
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class ReportFolder:
    """One report's writes into ``out`` (see the module docstring for the rules).

    Made before the report is built: the folder, its page, manifest and ``figures`` are
    checked then, and an error is raised before anything is written. Then
    :meth:`staged_png` names where each PNG is drawn, :meth:`check_figures` checks the
    figures' names once the report knows them, :meth:`commit` puts everything in place, and
    :meth:`close` removes the staging folder (always; use it as a context manager).
    """

    def __init__(self, out: str | os.PathLike[str], *, png: bool, overwrite: bool = False
                 ) -> None:
        self.out = Path(out)
        self.png = png
        self.overwrite = overwrite
        self._staging: Path | None = None
        info = _lstat(self.out)
        if info is not None and not self.out.is_dir():
            raise AnalysisError("the report folder is a file", where=str(self.out),
                                fix="name a folder (it is created when missing)")
        self._own, manifest_ok = self._read_manifest() if info is not None else ({}, True)
        if not manifest_ok:
            self._refuse_unless_overwrite([MANIFEST], "is not a manifest flushbench wrote")
        if png:
            self._check_figures_folder()
        self.check_names([PAGE])
        #: The folders this report made (deepest last), removed again when it fails before
        #: writing anything: a refused report leaves no empty folder behind.
        self._made = [p for p in (self.out, *self.out.parents) if not p.exists()][::-1]
        self.out.mkdir(parents=True, exist_ok=True)

    # -------------------------------------------------------------- what is the report's own

    def _read_manifest(self) -> tuple[dict[str, str], bool]:
        """The files the manifest lists that are still the report's own (name → sha256), and
        whether the manifest is one this tool wrote (absent counts as fine)."""
        path = self.out / MANIFEST
        info = _lstat(path)
        if info is None:
            return {}, True
        if not stat.S_ISREG(info.st_mode) or info.st_size > MANIFEST_MAX_BYTES:
            return {}, False
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as handle:
                raw = json.loads(handle.read(MANIFEST_MAX_BYTES + 1))
        except (OSError, ValueError):
            return {}, False
        files = raw.get("files") if isinstance(raw, dict) and raw.get("format") == 1 else None
        if not isinstance(files, dict):
            return {}, False
        own = {}
        for name, digest in files.items():
            if not (is_report_name(name) and isinstance(digest, str)
                    and _SHA.fullmatch(digest)):
                continue  # never a path outside the folder, never a name it does not write
            info = _lstat(self.out / name)
            if info is not None and _sha256_of(self.out / name, info) == digest:
                own[name] = digest
        return own, True

    def is_own(self, name: str) -> bool:
        """Whether ``name`` is a file the last report wrote, unchanged since."""
        return name in self._own

    # -------------------------------------------------------------------------- checks

    def _check_figures_folder(self) -> None:
        path = self.out / FIGURES
        info = _lstat(path)
        if info is None or stat.S_ISDIR(info.st_mode):
            return
        raise AnalysisError(
            f"the report's {FIGURES} is {file_kind(info.st_mode)}, not a folder: the PNGs cannot"
            " be written there", where=str(path),
            fix="move it away, choose another folder with -o, or pass --no-png")

    def check_names(self, names: Iterable[str]) -> None:
        """Refuse (before anything is written) any of ``names`` (relative to the folder) that
        exists and is not the report's own, unless ``overwrite``; a folder always."""
        names = list(names)
        for name in names:
            info = _lstat(self.out / name)
            if info is not None and stat.S_ISDIR(info.st_mode):
                raise AnalysisError(f"the report would write {name}, and a folder is there",
                                    where=str(self.out / name),
                                    fix="move it away, or choose another folder with -o")
        self._refuse_unless_overwrite(
            [n for n in names if _lstat(self.out / n) is not None and not self.is_own(n)],
            "was not written by flushbench (or was changed since)")

    def _refuse_unless_overwrite(self, names: list[str], why: str) -> None:
        if not names or self.overwrite:
            return
        first = self.out / names[0]
        info = _lstat(first)
        what = file_kind(info.st_mode) if info is not None else "a file"
        more = f" (and {len(names) - 1} more of the report's names)" if len(names) > 1 else ""
        raise AnalysisError(
            f"the report folder holds {names[0]}{more}: {what} that {why}; the report would"
            " overwrite it", where=str(first), fix=_OVERWRITE_FIX)

    def check_figures(self, slugs: Iterable[str]) -> None:
        """Check the figures' PNG names (``slug.png`` in ``figures/``) before any is put in
        place; a slug that is no figure name is a bug, not the user's."""
        names = [f"{FIGURES}/{slug}.png" for slug in slugs]
        bad = [n for n in names if not is_report_name(n)]
        if bad:
            raise ValueError(f"not a figure's name: {quote(bad[0])}")
        if self.png:
            self.check_names(names)

    # ------------------------------------------------------------------------- writing

    def staged_png(self, slug: str) -> Path:
        """Where the PNG of figure ``slug`` is drawn before :meth:`commit` puts it in place
        (a private folder made now inside the report folder)."""
        if self._staging is None:
            self._staging = Path(tempfile.mkdtemp(prefix=".flushbench-report-", dir=self.out))
        return self._staging / f"{slug}.png"

    def commit(self, page: str, written: Iterable[Path], *, complete: bool) -> Path:
        """Put the drawn PNGs (``written``: paths :meth:`staged_png` gave) and the page in
        place, remove the previous report's figures this one did not draw (when ``complete``:
        the PNG export did not fail part-way), and record the manifest; return the page."""
        pngs = sorted({Path(p).name for p in written})
        targets = [f"{FIGURES}/{name}" for name in pngs]
        self.check_names([*targets, PAGE])  # again: the folder may have changed meanwhile
        files: dict[str, str] = {}
        if pngs:
            self._check_figures_folder()
            (self.out / FIGURES).mkdir(exist_ok=True)
            for name, target in zip(pngs, targets, strict=True):
                source = self._staging / name if self._staging else None
                info = _lstat(source) if source else None
                digest = _sha256_of(source, info) if source and info else None
                if digest is None:
                    continue
                os.replace(source, self.out / target)
                files[target] = digest
        stale = [n for n in self._own if n.startswith(f"{FIGURES}/") and n not in files]
        for name in stale:
            path = self.out / name
            info = _lstat(path)
            if info is None or _sha256_of(path, info) != self._own[name]:
                continue  # changed or gone since the report began: not ours any more
            if self.png and complete:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:  # kept: still the earlier report's, so still listed
                files[name] = self._own[name]
        files[PAGE] = self._write_atomic(PAGE, page.encode("utf-8"))
        self._write_atomic(MANIFEST, (json.dumps({"format": 1, "files": dict(sorted(
            files.items()))}, indent=1) + "\n").encode())
        return self.out / PAGE

    def _write_atomic(self, name: str, data: bytes) -> str:
        """Write ``data`` to a new temporary file beside ``name`` and rename it over ``name``
        (a link there is replaced, never followed); return its sha256."""
        fd, tmp = tempfile.mkstemp(prefix=".flushbench-", suffix=".part", dir=self.out)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), 0o644)
            os.replace(tmp, self.out / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return hashlib.sha256(data).hexdigest()

    def close(self) -> None:
        """Remove the staging folder (made by this report; its own files only inside)."""
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None

    def __enter__(self) -> ReportFolder:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close()
        if kind is not None:
            for folder in reversed(self._made):
                with contextlib.suppress(OSError):  # not empty: something was written
                    folder.rmdir()

