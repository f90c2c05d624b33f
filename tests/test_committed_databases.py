"""Every results database committed with the repository is stored in rollback-journal mode.

A database in WAL mode makes even a read-only open (``?mode=ro``) create ``-wal`` and ``-shm``
files beside it — in the work tree — and tells a reader nothing more. SQLite keeps the mode in
the file header (bytes 18 and 19: 1 = rollback journal, 2 = WAL); before committing a database
a worker wrote, run ``sqlite3 FILE "PRAGMA journal_mode=DELETE"`` with nothing else open on it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

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
