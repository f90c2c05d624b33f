"""Every results database committed with the repository is stored in rollback-journal mode.

A database in WAL mode makes even a read-only open (``?mode=ro``) create ``-wal`` and ``-shm``
files beside it — in the work tree — and tells a reader nothing more. SQLite keeps the mode in
the file header (bytes 18 and 19: 1 = rollback journal, 2 = WAL); before committing a database
a worker wrote, run ``sqlite3 FILE "PRAGMA journal_mode=DELETE"`` with nothing else open on it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_committed_databases_are_not_in_wal_mode() -> None:
    tracked = subprocess.run(["git", "ls-files", "*.sqlite"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
    assert tracked, "no committed database found (is this a git checkout?)"
    in_wal = []
    for name in tracked:
        # The staged copy (what a commit holds), not the work tree's: a study running here
        # keeps its database in WAL mode until it is stopped and converted for committing.
        header = subprocess.run(["git", "cat-file", "blob", f":{name}"], cwd=ROOT, check=True,
                                capture_output=True).stdout[:20]
        if header[:16] == b"SQLite format 3\0" and (header[18], header[19]) != (1, 1):
            in_wal.append(name)
    assert not in_wal, (f"in WAL mode: {in_wal} — sqlite3 FILE \"PRAGMA journal_mode=DELETE\" "
                        "before committing")


@pytest.mark.slow  # a report of a whole study
def test_reading_a_study_leaves_its_journal_mode(tmp_path: Path) -> None:
    """compare, show and report only read: a committed study's database stays in
    rollback-journal mode (no -wal/-shm beside it), so reading one in place changes nothing
    git tracks."""
    import shutil
    import sqlite3
    import sys

    db = tmp_path / "study.sqlite"
    shutil.copy(ROOT / "docs" / "study-2011" / "stability-2011.sqlite", db)
    verbs = [["compare", "stability-2011"], ["show", "1"],
             ["report", "stability-2011", "-o", str(tmp_path / "r"), "--no-png"]]
    for verb in verbs:
        done = subprocess.run([str(Path(sys.executable).parent / "flushbench"), *verb,
                               "--db", str(db)],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (verb, done.stderr)
        if verb[0] == "show":  # recorded before runs stored the flushbench that made them
            assert re.search(r"recorded by\s+.\s*not recorded", done.stdout), done.stdout
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete", verb
        assert not list(tmp_path.glob("study.sqlite-*")), verb
