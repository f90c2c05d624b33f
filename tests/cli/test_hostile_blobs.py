"""Hostile stored latency blobs against the read verbs, under a memory limit (issue 49, cause 7).

One table, one row per hostile ``intervals.latency_z`` value: corrupt zlib, cut short, TEXT,
REAL, a huge INTEGER, a zlib bomb, a value of megabytes, a layout of 2^46 buckets, a bucket of
2^62 New-Orders. Each row writes its value into one window interval of run 1 of a small
synthetic database, then runs ``show``, ``compare``, ``report`` and ``export`` through the real
entry point in a child process whose address space is capped at 2 GiB (``RLIMIT_AS``): a
decoder that trusts the blob asks for gigabytes to petabytes and dies there. Each verb must
end with exit 0 or 2, never an internal error, a traceback or a MemoryError; ``show`` and
``compare`` (exit 0) name the run and the interval whose histogram could not be read and why,
and ``show`` still prints the run's other figures.
"""

from __future__ import annotations

import html
import os
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from analysis.reading.series import intervals
from store.latency_codec import _leb128, encode
from tests.support.cli_child import Invocation, Outcome, run_in_one_child
from tests.support.synthetic_latency import LAYOUT
from tests.support.synthetic_store import SynthCell, build_store

#: The child's address space: the verbs need a few hundred MB.
LIMIT = 2 << 30
#: Set in the child before flushbench is imported (tests.support.cli_child runs every case's
#: verbs in that one child, in turn: imports paid once, each verb's output its own). Each case
#: has its own analysis cache: the cases are one done run's copies with a blob edited in place,
#: and the cache keys a done run's window histograms by what the run recorded (its window's
#: seqs, end times and New-Order counts, its blobs' sizes: analysis/response/
#: latency_histograms.py), which an edit in place of one blob's bytes leaves as they were.
PRELUDE = f"""
import resource
resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))
"""


def _varints(*values: int) -> bytes:
    """A blob of these numbers as the codec writes them (any layout, unchecked)."""
    return zlib.compress(_leb128(np.array(values, dtype=np.uint64)))


def _good() -> bytes:
    return encode(LAYOUT, {"new_order": (((200, 5), (300, 2)), 1.5)})


@dataclass(frozen=True)
class Case:
    """One hostile stored value and the words that say what is wrong with it."""

    id: str
    value: object
    why: str


CASES = [
    Case("corrupt-zlib", b"this is not zlib at all", "does not decompress"),
    Case("cut-short", _good()[:-6], "cut short"),
    Case("bytes-after-the-stream", _good() + b"zz", "bytes after its zlib stream"),
    Case("text", "a latency histogram", "latency_z holds text"),
    Case("real", 3.25, "latency_z holds a real number"),
    Case("huge-integer", 2**62, "latency_z holds an integer"),
    Case("zlib-bomb", zlib.compress(b"\x00" * (256 << 20), 9), "decompresses to more than"),
    Case("megabytes-stored", os.urandom(3 << 20), "more than the 1,052,672 a histogram takes"),
    Case("layout-of-2^46-buckets", _varints(1, 128, 64, 2**46, 1, 0, 1000, 2, 5, 2**46 - 6,
                                            10, 3), "layout of 70,368,744,177,664 buckets"),
    Case("layout-of-2^55", _varints(1, 2**55, 2**54, 2**55 + 2**54, 1, 0, 1000, 1, 5, 10),
         "more than the 16,384 this flushbench reads"),
    Case("bucket-of-2^62", encode(LAYOUT, {"new_order": (((5, 2**62),), 1.0)}),
         "more than 8 bytes"),
    Case("bucket-of-2^53", encode(LAYOUT, {"new_order": (((5, 2**53),), 1.0)}),
         "counts from 1 to 2^53"),
    Case("more-buckets-than-the-layout",
         _varints(1, 128, 64, 2304, 1, 0, 1000, 5000, *[1] * 10_000),
         "more than its layout's 2,304"),
    Case("maximum-of-2^55-us", _varints(1, 128, 64, 2304, 1, 0, 2**55, 1, 5, 10),
         "beyond any response time"),
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A small database of two cells (two runs each), and the last window interval of run 1."""
    db = tmp_path_factory.mktemp("blobs") / "base.sqlite"
    build_store(db, [SynthCell(knobs={"doublewrite": True}, notpm=8000),
                     SynthCell(knobs={"doublewrite": False}, notpm=9000)],
                name="hb", repetitions=2, duration=60, warmup=10, n_counters=20)
    df = intervals(db, run_ids=[1])
    return db, int(df.loc[df["in_window"], "seq"].max())


def _verbs(folder: Path, db: Path) -> list[list[str]]:
    """The read verbs run on one case's database."""
    return [[*verb, "--db", str(db)] for verb in (
        ["show", "1"], ["compare", "hb"],
        ["report", "hb", "-o", str(folder / "report"), "--no-png"],
        ["export", "hb", "-o", str(folder / "x.csv")])]


@pytest.fixture(scope="module")
def verbs_said(base: tuple[Path, int], tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[Path, dict[str, Outcome]]:
    """Every case's database written, then every verb on each in one child process: the
    cases' folder (``ROOT/CASE/report``), and "CASE VERB" → its outcome (exit code, stdout,
    stderr; None for a verb that did not finish, with why)."""
    source, seq = base
    root = tmp_path_factory.mktemp("hostile")
    jobs = []
    for case in CASES:
        folder = root / case.id
        folder.mkdir()
        db = folder / "r.sqlite"
        with sqlite3.connect(source) as a, sqlite3.connect(db) as b:
            a.backup(b)  # the source is in WAL mode: a file copy could miss its last rows
        with sqlite3.connect(db) as con:
            con.execute("UPDATE intervals SET latency_z = ? WHERE run_id = 1 AND seq = ?",
                        (case.value, seq))
        jobs += [Invocation(f"{case.id} {verb[0]}", verb,
                            env={"FLUSHBENCH_CACHE_DIR": str(folder / "cache")})
                 for verb in _verbs(folder, db)]
    # COLUMNS: show's table rows on one line each, so a sentence is never cut by the border.
    env = {**os.environ, "FLUSHBENCH_WORK": str(root / "work"), "COLUMNS": "1000"}
    env.pop("FLUSHBENCH_DB", None)
    # A verb past 5 minutes is a hang (a report takes ≈ 5 CPU-s): killed and named.
    return root, run_in_one_child(jobs, prelude=PRELUDE, env=env, deadline_s=300)


# One child process runs every case's four verbs (each case's report: ≈ 5 CPU-s, a child of
# its own each was 67 CPU-s in all); `make test` runs them, the fast lane does not.
@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_latency_blob(case: Case, base: tuple[Path, int],
                              verbs_said: tuple[Path, dict[str, Outcome]]) -> None:
    _, seq = base
    root, outcomes = verbs_said
    # verb → (exit code, stdout and stderr with the table's wrapping undone)
    said: dict[str, tuple[int | None, str]] = {}
    for verb in ("show", "compare", "report", "export"):
        run = outcomes[f"{case.id} {verb}"]
        assert run.finished, (verb, run.note)
        code, text = run.code, " ".join((run.out + run.err).split())
        for bad in ("internal error", "Traceback", "MemoryError"):
            assert bad not in text, (verb, text[-3000:])
        assert code in (0, 2), (verb, code, text[-3000:])
        said[verb] = code, text
    unread = f"interval {seq}'s latency histogram could not be read"
    code, show = said["show"]
    assert code == 0 and "latency histograms" in show and unread in show and case.why in show
    assert "NOTPM (window average)" in show and "stability score" in show  # the rest shows
    code, compare = said["compare"]
    assert code == 0 and f"run 1: {unread}" in compare and case.why in compare
    assert said["report"][0] == 0 and said["export"][0] == 0
    report = root / case.id / "report" / "report.html"
    page = " ".join(html.unescape(report.read_text()).split())
    assert f"run 1: {unread}" in page
