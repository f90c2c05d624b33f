"""Rendered PNGs kept by content, so a figure drawn once is not drawn again.

Drawing a report's PNGs (66 figures for 500 runs) costs seconds of headless Chromium; between
two reports of an overnight queue most figures have not changed (a finished cell's figures stay
as they are while other cells run). A PNG is stored under

    sha256(plotly version, kaleido version, width × height, the figure's JSON)

— the figure exactly as kaleido receives it — so a changed figure, size or renderer is a new
key and an old entry is never served for it. The files live in ``png/`` of flushbench's cache
folder (:func:`core.paths.cache_dir`), at most :data:`MAX_BYTES` (least recently used go
first); ``FLUSHBENCH_ANALYSIS_CACHE=0`` turns the cache off with the stability cache. The
system's fonts are not part of the key: after installing fonts, delete the folder to redraw.
Like the stability cache it is an optimisation only: any error reading or writing it means
the figure is drawn as if it were absent.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from analysis.reading.figure_cache import enabled
from core.paths import cache_dir

#: Largest total size of the stored PNGs (a 500-run report's 66 PNGs are ≈ 5 MB).
MAX_BYTES = 256 * 1024**2


def folder() -> Path:
    """Where the PNGs are kept (it may not exist yet)."""
    return cache_dir() / "png"


@functools.cache
def _renderer() -> str:
    import kaleido
    import plotly

    return f"plotly {plotly.__version__} kaleido {kaleido.__version__}"


def key(figure: dict[str, Any], width: int, height: int) -> str:
    """The key of one figure drawn at ``width`` × ``height`` (see the module docstring)."""
    from plotly.utils import PlotlyJSONEncoder

    h = hashlib.sha256(f"{_renderer()} {int(width)}x{int(height)}\n".encode())
    h.update(json.dumps(figure, sort_keys=True, cls=PlotlyJSONEncoder).encode())
    return h.hexdigest()


def _path(k: str) -> Path:
    return folder() / k[:2] / f"{k}.png"


def get(k: str) -> bytes | None:
    """The stored PNG of key ``k``, or None (also when the cache is off or unreadable)."""
    if not enabled():
        return None
    path = _path(k)
    try:
        data = path.read_bytes()
        os.utime(path)  # recently used: kept longest when pruning
    except OSError:
        return None
    return data if data.startswith(b"\x89PNG\r\n\x1a\n") else None


def put(k: str, data: bytes) -> None:
    """Store ``data`` under ``k`` (atomically: a reader never sees half a file)."""
    if not enabled():
        return
    path = _path(k)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def prune(max_bytes: int = MAX_BYTES) -> None:
    """Delete the least recently used PNGs until the rest fit in ``max_bytes``."""
    if not enabled() or not folder().is_dir():
        return
    try:
        files = [(p.stat().st_mtime, p.stat().st_size, p) for p in folder().glob("*/*.png")]
    except OSError:
        return
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            total -= size
