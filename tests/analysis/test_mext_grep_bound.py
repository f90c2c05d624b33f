"""``flushbench mext --grep``: the user's regular expression cannot hang the command.

The expression runs under the ``regex`` module's timeout (:func:`analysis.reading.mext.grep_names`):
a pattern that backtracks without end against a long counter name ends in one sentence. The
command runs in a child process under the 30 s guard of :mod:`tests.support.hostile_binaries`
(a bound, not a timing measurement); the stdlib ``re`` takes hours on the same input.
"""

from __future__ import annotations

import datetime as dt
import json
import zlib
from pathlib import Path

import pytest
from sqlalchemy import select

from analysis.reading.mext import grep_names
from core.errors import AnalysisError
from store.db import ResultsDB
from store.models import Run, Sample
from tests.support.hostile_binaries import FLUSHBENCH, guarded
from tests.support.synthetic_store import SynthCell, build_store

#: A status name as long as a real one, made of the letter a nested repeats choke on.
LONG_NAME = "a" * 60 + "!"
#: Exponential for a backtracking engine against LONG_NAME.
CATASTROPHIC = "(a|aa)+$"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A results database with one run whose samples hold :data:`LONG_NAME`."""
    path = tmp_path_factory.mktemp("mext-grep") / "r.sqlite"
    db = ResultsDB(path)
    build_store(db, [SynthCell(knobs={"doublewrite": True})], name="grep", repetitions=1,
                warmup=10, duration=20, n_counters=5)
    start = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    with db.session() as s, s.begin():
        run_id = s.scalars(select(Run.id)).one()
        s.query(Sample).filter(Sample.run_id == run_id).delete()
        for seq in range(1, 4):
            when = start + dt.timedelta(seconds=10 * seq)
            status = {"Uptime": 100 + 10 * seq, "Com_commit": 100 * seq, LONG_NAME: seq}
            s.add(Sample(run_id=run_id, seq=seq, scheduled_ts=when, ts=when, missed=False,
                         status_z=zlib.compress(json.dumps(status).encode())))
    db.dispose()
    return path, run_id


@pytest.mark.slow  # waits out the 2 s match timeout
def test_a_catastrophic_pattern_ends_in_one_sentence(recorded: tuple[Path, int],
                                                     tmp_path: Path) -> None:
    path, run_id = recorded
    code, out = guarded([FLUSHBENCH, "mext", str(run_id), "--grep", CATASTROPHIC,
                         "--db", str(path)], tmp_path / "mext.log")
    assert code != 0, out
    errors = [line for line in out.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: --grep: "), out
    assert f"--grep '{CATASTROPHIC}' took longer than 2 s to match" in errors[0]
    assert "simplify the pattern, e.g. --grep 'innodb_(buffer|log)'" in errors[0]


def test_an_ordinary_pattern_still_finds_the_long_name(recorded: tuple[Path, int],
                                                       tmp_path: Path) -> None:
    path, run_id = recorded
    code, out = guarded([FLUSHBENCH, "mext", str(run_id), "--grep", "^a+!$|commit", "--csv",
                         "--db", str(path)], tmp_path / "mext.log")
    assert code == 0, out
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == [LONG_NAME, "Com_commit"]


def test_grep_names_keeps_order_and_refuses_a_non_expression() -> None:
    assert grep_names("INNODB", ["innodb_b", "x", "Innodb_a"]) == ["innodb_b", "Innodb_a"]
    with pytest.raises(AnalysisError, match="is not a regular expression"):
        grep_names("(unclosed", ["x"])
