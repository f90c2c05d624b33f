"""What a folder holds, by ``lstat`` only: the before/after picture the CLI's output-safety
tests compare to show that a refused (or a finished) command changed none of the user's files.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def listing(folder: Path) -> dict[str, tuple[str, str]]:
    """Every path under ``folder`` (``lstat`` only, links not followed): kind and a file's
    sha256 or a link's target; a FIFO is never opened."""
    out: dict[str, tuple[str, str]] = {}
    for root, dirs, files in os.walk(folder):
        for name in sorted([*dirs, *files]):
            path = Path(root) / name
            rel = str(path.relative_to(folder))
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                out[rel] = ("folder", "")
            elif stat.S_ISFIFO(mode):
                out[rel] = ("fifo", "")
            else:
                out[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return out
