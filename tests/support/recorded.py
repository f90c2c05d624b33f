"""Private copies of the results databases committed with the docs.

Never open a committed database in place: opening a SQLite file switches it to WAL and dirties
the work tree (and under pytest-xdist two workers would share one file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from store.db import upgrade

ROOT = Path(__file__).resolve().parents[2]
#: Databases recorded by real runs and committed with the docs.
RECORDED = {
    "stability-2011": ROOT / "docs" / "study-2011" / "stability-2011.sqlite",
    "allocators": ROOT / "docs" / "allocators" / "allocators-example.sqlite",
}


def recorded_copy(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of a committed recorded database, migrated to the current schema."""
    src = RECORDED[name]
    dst = tmp_path_factory.mktemp(name) / src.name
    shutil.copyfile(src, dst)
    upgrade(dst, i_have_a_backup=True)
    return dst
