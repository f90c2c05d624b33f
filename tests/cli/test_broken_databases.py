"""Every verb on a broken results database: a clear error, never a traceback, nothing changed.

The databases: truncated, a newer schema, an unstamped schema (another application's tables),
a read-only file system, garbage bytes. Each verb that opens the database runs against each.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from store.db import ResultsDB

VERBS = [
    ["status"], ["queue", "list"], ["queue", "cancel", "x"], ["queue", "unpin", "x"],
    ["worker"], ["show", "1"],
    ["compare", "x"], ["report", "x", "-o", "{tmp}/out"], ["export", "x", "-o", "{tmp}/e.csv"],
    ["db", "upgrade"],
]


def _good(path: Path) -> None:
    ResultsDB(path).dispose()


def _truncated(path: Path) -> None:
    _good(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3 or 100])


def _newer(path: Path) -> None:
    _good(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    conn.commit()
    conn.close()


def _unstamped(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()


def _garbage(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8)


BROKEN = {"truncated": _truncated, "newer": _newer, "unstamped": _unstamped,
          "garbage": _garbage}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize("verb", VERBS, ids=[" ".join(v) for v in VERBS])
def test_verb_on_broken_database(kind: str, verb: list[str], tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch, cli) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))
    db = tmp_path / "r.sqlite"
    BROKEN[kind](db)
    for extra in ("r.sqlite-wal", "r.sqlite-shm"):
        (tmp_path / extra).unlink(missing_ok=True)
    before = _digest(db)
    args = [a.replace("{tmp}", str(tmp_path)) for a in verb] + ["--db", str(db)]
    code, out, err = cli(args)
    assert code == 2, f"exit {code}\n{out}\n{err}"
    assert err.startswith("error: ") and "Traceback" not in err + out, err
    assert "results database" in err or "SQLite" in err, err
    assert _digest(db) == before  # the broken file is left as it was
    assert not (tmp_path / "out").exists() and not (tmp_path / "e.csv").exists()
    assert not (tmp_path / "work").exists()


@pytest.mark.host_control("mount")
@pytest.mark.parametrize("verb", [["status"], ["compare", "x"], ["db", "upgrade"],
                                  ["export", "x", "-o", "{tmp}/e.csv"]],
                         ids=["status", "compare", "db upgrade", "export"])
def test_verb_on_read_only_file_system(verb: list[str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch, cli) -> None:
    """A results database on a read-only mount: reading verbs work or say why; none crash."""
    mnt = tmp_path / "ro"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        db = mnt / "r.sqlite"
        code, _, err = cli(["db", "upgrade", "--db", str(db)])
        assert code == 0, err
        shutil.rmtree(tmp_path / "x", ignore_errors=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        monkeypatch.chdir(tmp_path)
        args = [a.replace("{tmp}", str(tmp_path)) for a in verb] + ["--db", str(db)]
        code, out, err = cli(args)
        assert "Traceback" not in err + out
        assert code in (0, 2), f"exit {code}\n{out}\n{err}"
        if code == 2:
            assert err.startswith("error: ") and "--db" in err or "writable" in err, err
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
