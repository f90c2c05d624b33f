"""Hostile stored latency blobs against the read verbs, under a memory limit (issue 49, cause 7).

One table, one row per hostile ``intervals.latency_z`` value: corrupt zlib, cut short, TEXT,
REAL, a huge INTEGER, a zlib bomb, a value of megabytes, a layout of 2^46 buckets, a bucket of
2^62 New-Orders. One small synthetic database holds them all, each in one window interval of
a run of its own (the other runs' blobs are good), and ``show`` of each run, ``compare``,
``report`` and ``export`` run on it through the real entry point in a child process whose
address space is capped at 2 GiB (``RLIMIT_AS``): a decoder that trusts a blob asks for
gigabytes to petabytes and dies there. Each verb must end with exit 0 or 2, never an internal
error, a traceback or a MemoryError; ``show`` and ``compare`` (exit 0) name each run and the
interval whose histogram could not be read and why — one bad blob never hides another, nor
the good ones — and ``show`` still prints the run's other figures.
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
#: Set in the child before flushbench is imported (tests.support.cli_child runs every verb in
#: that one child, in turn: imports paid once, each verb's output its own).
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
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[int, int]]]:
    """A small database of two cells with a run per case (the last ones' blobs all good),
    each case's value written into the last window interval of its own run: the database,
    and case → (its run, that interval's seq)."""
    db = tmp_path_factory.mktemp("blobs") / "hb.sqlite"
    repetitions = len(CASES) // 2 + 1
    build_store(db, [SynthCell(knobs={"doublewrite": True}, notpm=8000),
                     SynthCell(knobs={"doublewrite": False}, notpm=9000)],
                name="hb", repetitions=repetitions, duration=60, warmup=10, n_counters=20)
    df = intervals(db)
    last = df[df["in_window"]].groupby("run_id")["seq"].max()
    assert len(last) == 2 * repetitions > len(CASES)
    placed = {case.id: (int(run_id), int(seq))
              for case, (run_id, seq) in zip(CASES, last.items(), strict=False)}
    with sqlite3.connect(db) as con:
        for case in CASES:
            con.execute("UPDATE intervals SET latency_z = ? WHERE run_id = ? AND seq = ?",
                        (case.value, *placed[case.id]))
    return db, placed


@pytest.fixture(scope="module")
def verbs_said(hostile_db: tuple[Path, dict[str, tuple[int, int]]],
               tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Outcome]]:
    """``show`` of every case's run, then ``compare``, ``report`` and ``export`` of the
    database, in one child process: the report's folder, and "VERB" (``show RUN``) → its
    outcome (exit code, stdout, stderr; None for a verb that did not finish, with why)."""
    db, placed = hostile_db
    root = tmp_path_factory.mktemp("hostile")
    verbs = [["show", str(run_id)] for run_id, _ in placed.values()] + [
        ["compare", "hb"], ["report", "hb", "-o", str(root / "report"), "--no-png"],
        ["export", "hb", "-o", str(root / "x.csv")]]
    jobs = [Invocation(" ".join(verb[:2] if verb[0] == "show" else verb[:1]),
                       [*verb, "--db", str(db)]) for verb in verbs]
    # COLUMNS: show's table rows on one line each, so a sentence is never cut by the border.
    env = {**os.environ, "FLUSHBENCH_WORK": str(root / "work"), "COLUMNS": "1000",
           "FLUSHBENCH_CACHE_DIR": str(root / "cache")}
    env.pop("FLUSHBENCH_DB", None)
    # A verb past 5 minutes is a hang (a report takes ≈ 5 CPU-s): killed and named.
    return root, run_in_one_child(jobs, prelude=PRELUDE, env=env, deadline_s=300)


# One child process runs each verb once on the database of every case (each case's four verbs
# on a database of its own were ≈ 45 CPU-s in all); `make test` runs them, the fast lane not.
@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_latency_blob(case: Case, hostile_db: tuple[Path, dict[str, tuple[int, int]]],
                              verbs_said: tuple[Path, dict[str, Outcome]]) -> None:
    run_id, seq = hostile_db[1][case.id]
    root, outcomes = verbs_said
    # verb → (exit code, stdout and stderr with the table's wrapping undone)
    said: dict[str, tuple[int | None, str]] = {}
    for verb in (f"show {run_id}", "compare", "report", "export"):
        run = outcomes[verb]
        assert run.finished, (verb, run.note)
        code, text = run.code, " ".join((run.out + run.err).split())
        for bad in ("internal error", "Traceback", "MemoryError"):
            assert bad not in text, (verb, text[-3000:])
        assert code in (0, 2), (verb, code, text[-3000:])
        said[verb] = code, text
    unread = f"interval {seq}'s latency histogram could not be read"
    code, show = said[f"show {run_id}"]
    assert code == 0 and "latency histograms" in show and unread in show and case.why in show
    assert "NOTPM (window average)" in show and "stability score" in show  # the rest shows
    code, compare = said["compare"]
    assert code == 0 and f"run {run_id}: {unread}" in compare, compare[-3000:]
    # This run's sentence names this case's cause (the next run's sentence follows it).
    sentence = compare[compare.index(f"run {run_id}: {unread}"):][:400]
    assert case.why in sentence, sentence
    assert said["report"][0] == 0 and said["export"][0] == 0
    page = " ".join(html.unescape((root / "report" / "report.html").read_text()).split())
    assert f"run {run_id}: {unread}" in page


def test_the_runs_without_a_hostile_blob_read_whole(
        hostile_db: tuple[Path, dict[str, tuple[int, int]]],
        verbs_said: tuple[Path, dict[str, Outcome]]) -> None:
    """The bad blobs spoil only their own runs: the good runs' windows read whole."""
    db, placed = hostile_db
    bad_runs = {run_id for run_id, _ in placed.values()}
    good_runs = sorted(set(intervals(db)["run_id"].astype(int)) - bad_runs)
    assert good_runs
    compare = " ".join(verbs_said[1]["compare"].out.split())
    for run_id in good_runs:
        assert f"run {run_id}: interval" not in compare
