"""Private copies of the results databases committed with the docs.

Never open a committed database in place: opening a SQLite file switches it to WAL and dirties
the work tree (and under pytest-xdist two workers would share one file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from store.db import upgrade
from store.migrate import sqlite_copy

ROOT = Path(__file__).resolve().parents[2]
#: Databases recorded by real runs and committed with the docs.
RECORDED = {
    "stability-2011": ROOT / "docs" / "study-2011" / "stability-2011.sqlite",
    "allocators": ROOT / "docs" / "allocators" / "allocators-example.sqlite",
    # Two servers, twelve rows with the post's names, 130-character labels (issue 24).
    "stability-2011-flash": ROOT / "docs" / "study-2011" / "stability-2011-flash.sqlite",
    # Five servers, one baseline each (the generations study, issue 39).
    "generations": ROOT / "docs" / "study-generations" / "generations.sqlite",
    # Its rerun under the window rules with today's servers (issues 51 and 52): a queue that
    # runs over several sessions, committed as far as it has run.
    "generations-today": ROOT / "docs" / "study-generations" / "generations-today.sqlite",
    # Why the newest engines write more (issue 53): a factorial on MariaDB 10.11 and 10.2 at
    # 10.11's settings, committed as far as its queue has run.
    "write-path-factorial": ROOT / "docs" / "study-write-path" / "write-path-factorial.sqlite",
    # At equal work (issue 55): the 2011 rows at one fixed rate, committed as far as its queue
    # has run.
    "rate-2011": ROOT / "docs" / "study-rate" / "rate-2011.sqlite",
    # Its converse: the highest rate each of those rows holds under p99 <= 1 s, a search of
    # fixed-rate steps committed as far as its queue has run.
    "rate-2011-search": ROOT / "docs" / "study-rate" / "rate-2011-search.sqlite",
}


def copy_recorded(name: str, target: Path) -> Path:
    """A private copy of a committed recorded database at ``target``, migrated to the current
    schema (the pre-upgrade backup an upgrade leaves beside it removed)."""
    # SQLite's backup API, read-only: a consistent copy even of a study's database that a
    # worker here is writing (its main file alone can be mid-checkpoint).
    sqlite_copy(RECORDED[name], target)
    upgrade(target, i_have_a_backup=True)
    for backup in target.parent.glob(f"{target.stem}.pre-upgrade-*"):
        backup.unlink()
    return target


def recorded_copy(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of a committed recorded database, migrated to the current schema."""
    return copy_recorded(name, tmp_path_factory.mktemp(name) / RECORDED[name].name)


def recorded_pair(name: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two private copies of one recorded database (``a.sqlite``, ``b.sqlite``): the two
    sources of a cross-database test, the second one for the test to alter."""
    folder = tmp_path_factory.mktemp(name)
    a = copy_recorded(name, folder / "a.sqlite")
    return a, Path(shutil.copyfile(a, folder / "b.sqlite"))
