"""A report folder's ``figures/``: the PNGs of an earlier report that this one did not write
are removed — and only those.

A report's figures are numbered in page order (``07-throughput-per-cell.png``), so a report
with fewer or other figures than the last one written to the same folder would leave the
earlier report's PNGs beside its own, looking current. Deleting files in a folder a user named
needs care (a user's own file there must never go), so the folder keeps a manifest of the
PNGs flushbench wrote into it (:data:`MANIFEST`); the next report removes exactly those it
does not write again, when they are still plain files with a figure's name. A PNG that was
never in a manifest (a user's, or one written before the manifest existed) is left alone.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

#: The manifest's file name inside ``figures/``: the PNG names the last report wrote there.
MANIFEST = ".flushbench-figures.json"
#: What a figure's PNG is named (``NN-kind.png``; the cross-database report's one name too).
_FIGURE_NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z_.-]{0,120}\.png")


def replace_figures(folder: Path, written: Iterable[str], *, complete: bool = True
                    ) -> list[str]:
    """Remove from ``folder`` the PNGs the previous manifest lists and ``written`` (this
    report's PNG file names) does not, then record ``written`` as the manifest; return the
    names removed. ``complete=False`` (the PNG export failed part-way) removes nothing and
    records both lists: an earlier PNG is not lost to a renderer's failure. A manifest that
    cannot be read removes nothing; a file that cannot be removed or a manifest that cannot be
    written is logged, never raised (the report itself is written)."""
    manifest = folder / MANIFEST
    earlier = _read(manifest)
    names = sorted(set(written) if complete else set(written) | earlier)
    removed = []
    for name in sorted(earlier - set(names)):
        path = folder / name
        try:
            if path.is_symlink() or not path.is_file():
                continue
            path.unlink()
            removed.append(name)
        except OSError as exc:
            log.warning("could not remove the earlier report's %s: %s", path, exc)
    if names or earlier:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            manifest.write_text(json.dumps(names, indent=0) + "\n", encoding="utf-8")
        except OSError as exc:
            log.warning("could not record the report's figures in %s: %s", manifest, exc)
    return removed


def _read(manifest: Path) -> set[str]:
    """The PNG names a manifest lists (only plain names of figures; nothing else counts)."""
    try:
        if manifest.is_symlink() or not manifest.is_file():
            return set()
        raw = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("ignoring the figures manifest %s: %s", manifest, exc)
        return set()
    if not isinstance(raw, list):
        return set()
    return {n for n in raw if isinstance(n, str) and _FIGURE_NAME.fullmatch(n)
            and "/" not in n and n not in (".", "..")}
