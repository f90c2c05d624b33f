"""Schema drift against the read verbs and `db upgrade` (issue 49, cause 8; and the hard link).

One table, one row per database shape and verb: a database stamped the latest revision whose
tables are older (no ``runs.step_rate``), one whose ``alembic_version`` names two
revisions, and one truly at an older revision. Each is one ``error:`` line naming the database
and the fix, exit 2, no internal error, and the database file unchanged (``db upgrade`` makes
no backup of a database it will not upgrade). Then: one database under two names (a hard and a
symbolic link) is one database to cross-database ``compare``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from store.migrate import head_revision
from tests.cli.conftest import CliRun
from tests.support.recorded import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "results-db"
HEAD = head_revision()
HEAD_DB = FIXTURES / f"rev-{HEAD}.sqlite"
#: The fixture one revision older than head: the same tables but the columns head adds.
OLDER_DB = sorted(FIXTURES.glob("rev-*.sqlite"))[-2]
OLDER = OLDER_DB.stem.split("-")[1][:4]


def stamped_head(db: Path) -> None:
    """The older fixture's tables, stamped the latest revision (by hand, by another tool)."""
    shutil.copy(OLDER_DB, db)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE alembic_version SET version_num = ?", (HEAD,))


def two_revisions(db: Path) -> None:
    """The latest fixture with a second row in alembic_version."""
    shutil.copy(HEAD_DB, db)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO alembic_version VALUES (?)", (OLDER,))


def older(db: Path) -> None:
    shutil.copy(OLDER_DB, db)


@dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[Path], None]
    verb: list[str]
    expect: list[str]


LACKS = [f"stamped revision {HEAD}, the latest, but lacks runs.step_rate",
         "older than its stamp", f"set alembic_version to the revision its tables match ({OLDER}"]
TWO = [f"alembic_version names 2 revisions ({OLDER}, {HEAD})", "keep only the row"]
OLD = [f"at revision {OLDER}, this flushbench needs {HEAD}"]
CASES = [
    Case("stamped-head-show", stamped_head, ["show", "1", "--db", "{db}"], LACKS),
    Case("stamped-head-status", stamped_head, ["status", "--db", "{db}"], LACKS),
    Case("stamped-head-compare-name-at-db", stamped_head,
         ["compare", "study-short@{db}", f"study-short@{HEAD_DB}"], LACKS),
    Case("stamped-head-db-upgrade", stamped_head, ["db", "upgrade", "--db", "{db}"], LACKS),
    Case("two-revisions-show", two_revisions, ["show", "1", "--db", "{db}"], TWO),
    Case("two-revisions-db-upgrade", two_revisions, ["db", "upgrade", "--db", "{db}"], TWO),
    Case("older-revision-show", older, ["show", "1", "--db", "{db}"], OLD),
    Case("older-revision-compare-name-at-db", older,
         ["compare", "study-short@{db}", f"study-short@{HEAD_DB}"], OLD),
]


def _listing(folder: Path) -> tuple[list[str], str]:
    """The folder's file names (SQLite's own -wal/-shm aside) and the database's content."""
    names = sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))
    con = sqlite3.connect(folder / "r.sqlite")
    try:
        dump = hashlib.sha256("\n".join(con.iterdump()).encode()).hexdigest()
    finally:
        con.close()
    return names, dump


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_schema_drift_is_one_sentence(case: Case, tmp_path: Path, cli: CliRun,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLUSHBENCH_DB", raising=False)
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "r.sqlite"
    case.make(db)
    before = _listing(folder)
    code, out, err = cli([a.replace("{db}", str(db)) for a in case.verb])
    assert "internal error" not in err and "Traceback" not in err
    assert code == 2, (out, err)
    assert err.startswith(f"error: sqlite:///{db}: ") and err.count("error:") == 1, err
    for fragment in [*case.expect, f"`flushbench db upgrade --db sqlite:///{db}`"]:
        assert fragment in err, (fragment, err)
    assert _listing(folder) == before, "the database was changed or a backup made"


@pytest.mark.parametrize("link", [os.link, os.symlink], ids=["hard-link", "symlink"])
def test_one_database_under_two_names_is_one_database(
        link: Callable[[Path, Path], None], tmp_path: Path, cli: CliRun) -> None:
    db = tmp_path / "a.sqlite"
    shutil.copy(HEAD_DB, db)
    other = tmp_path / "b.sqlite"
    link(db, other)
    code, out, err = cli(["compare", f"study-short@{db}", f"study-short@{other}"])
    assert code == 2, (out, err)
    assert "are the same experiment (id 1) of the same database" in err, err
