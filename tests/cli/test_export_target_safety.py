"""`export -o` never writes over what it reads, and writes a format under its own suffix.

One table (the model is ``test_bundle_safety.py``): each row builds a case folder holding a
results database and a study bundle, runs the real ``flushbench export`` in this process, and
lists every path in the folder before and after (kind and sha256; ``lstat``, never following a
link). A refusal is one ``error:`` line naming the target, exit 2, and the folder exactly as it
was — also with ``--force``; an export creates exactly its one file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.conftest import CliRun
from tests.cli.test_bundle_safety import HEAD_DB, bundle
from tests.support.folder_listing import listing

EXPERIMENT = "study-short"


Build = Callable[[Path], list[str]]


def args(*more: str, db: str = "r.sqlite") -> Build:
    """``export study-short --db DB MORE`` in the case folder."""
    return lambda _case: ["--db", db, *more]


def via_symlink(target: str, db: str = "r.sqlite") -> Build:
    def build(case: Path) -> list[str]:
        (case / "link.csv").symlink_to(case / target)
        return ["--db", db, "-o", "link.csv", "--force"]
    return build


def via_hard_link(target: str, db: str = "r.sqlite") -> Build:
    def build(case: Path) -> list[str]:
        os.link(case / target, case / "hard.csv")
        return ["--db", db, "-o", "hard.csv", "--force"]
    return build


@dataclass(frozen=True)
class Case:
    id: str
    build: Build
    #: Fragments of the one error line; None: the export is written.
    expect: list[str] | None
    #: The file a written export creates.
    creates: str = ""
    #: No --db: ``$FLUSHBENCH_DB`` names the case's database.
    env_db: bool = False


ITSELF = "the export would write over what it reads"
CASES = [
    # The input, with --force.
    Case("bundle-read-is-refused", args("-o", "study.tar.zst", "--force",
                                        db="study.tar.zst"), [ITSELF]),
    Case("bundle-through-a-link-is-refused", via_symlink("study.tar.zst", db="study.tar.zst"),
         [ITSELF]),
    Case("bundle-through-a-hard-link-is-refused",
         via_hard_link("study.tar.zst", db="study.tar.zst"), [ITSELF]),
    Case("database-is-refused", args("-o", "r.sqlite", "--force"),
         ["the results database itself", ITSELF]),
    Case("database-through-a-link-is-refused", via_symlink("r.sqlite"), [ITSELF]),
    Case("database-through-a-hard-link-is-refused", via_hard_link("r.sqlite"), [ITSELF]),
    Case("database-wal-is-refused", args("-o", "r.sqlite-wal", "--force"),
         ["results database's r.sqlite-wal"]),
    Case("database-shm-is-refused", args("-o", "r.sqlite-shm", "--force"),
         ["results database's r.sqlite-shm"]),
    Case("database-journal-from-the-environment-is-refused",
         lambda _case: ["-o", "r.sqlite-journal", "--force"],
         ["results database's r.sqlite-journal"], env_db=True),
    # The suffix says another format.
    Case("parquet-under-csv-is-refused", args("-o", "e.csv", "--format", "parquet"),
         ["the export is parquet", "'e.csv'", "pass --format csv", "name it e.parquet"]),
    Case("csv-under-parquet-is-refused", args("-o", "e.parquet"),
         ["the export is csv", "pass --format parquet", "name it e.csv"]),
    Case("csv-under-a-bundle-name-is-refused", args("-o", "other.tar.zst"),
         ["does not end in .csv", "name it other.tar.csv"]),
    Case("csv-without-a-suffix-is-refused", args("-o", "export"),
         ["does not end in .csv", "name it export.csv"]),
    # What is written.
    Case("csv-is-written", args("-o", "e.csv"), None, creates="e.csv"),
    Case("compressed-csv-is-written", args("-o", "e.csv.gz"), None, creates="e.csv.gz"),
    Case("parquet-is-written", args("-o", "e.pq", "--format", "parquet"), None,
         creates="e.pq"),
    Case("csv-from-a-bundle-is-written", args("-o", "e.csv", db="study.tar.zst"), None,
         creates="e.csv"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_export_target(case: Case, tmp_path: Path, cli: CliRun,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "case"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FLUSHBENCH_DB", raising=False)
    shutil.copyfile(HEAD_DB, folder / "r.sqlite")
    bundle(folder / "study.tar.zst")
    extra = case.build(folder)
    if case.env_db:
        monkeypatch.setenv("FLUSHBENCH_DB", str(folder / "r.sqlite"))
    before = listing(folder)
    code, out, err = cli(["export", EXPERIMENT, *extra])
    after = listing(folder)
    assert "Traceback" not in err and "internal error" not in err, err
    if case.expect is not None:
        assert code == 2, (out, err)
        assert err.startswith("error: ") and err.count("error:") == 1, err
        for fragment in case.expect:
            assert fragment in " ".join(err.split()), (fragment, err)
        assert after == before, "the folder changed although the export was refused"
        return
    assert code == 0, err
    assert set(after) - set(before) == {case.creates}
    assert {name: after[name] for name in before} == before
