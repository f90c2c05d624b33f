"""The fast lane's ``costly`` marker: tests measured to cost 0.7 CPU-s or more each.

``make test-fast`` is the inner loop (target: under 90 s on two cores); ``make test`` runs every
test. The lane leaves out the tests a profile of the lane itself found costly — a report built
end to end, a notebook's kernel, a ``flushbench`` subprocess per case — because 86 of
them were more than half its CPU. They are listed by node id in ``tests/costly.txt``, which
``make costly-list`` writes: it profiles the lane with them (``FLUSHBENCH_TEST_CPU``), then
``scripts/test_cpu_summary.py PROFILE --write-costly tests/costly.txt``. A test not listed (a
new one) runs in the lane until the list is measured again.
"""

from __future__ import annotations

from pathlib import Path

#: The list, one pytest node id a line; a line starting with ``#`` is a comment (a node id may
#: hold ``#`` itself: a parameter's HTML entity).
COSTLY_LIST = Path(__file__).resolve().parents[1] / "costly.txt"

#: The CPU a test must cost (seconds: its own process and the children it reaped) to be listed:
#: at 1.0 the lane took 93 s, at 0.7 it leaves out 86 of its 1,747 tests and 113 of 202 CPU-s.
THRESHOLD_S = 0.7


def read_costly(path: Path = COSTLY_LIST) -> frozenset[str]:
    """The node ids listed in ``path`` (none when it does not exist)."""
    if not path.exists():
        return frozenset()
    ids = (line.strip() for line in path.read_text().splitlines())
    return frozenset(i for i in ids if i and not i.startswith("#"))


def costly_text(rows: list[dict], threshold_s: float = THRESHOLD_S) -> str:
    """The list's text from a CPU profile's rows (``tests/support/cpu_profile.py``): each test
    whose CPU reached ``threshold_s``, sorted, under a header that says how it was made."""
    ids = sorted({r["test"] for r in rows
                  if r["cpu_self"] + r["cpu_children"] >= threshold_s})
    header = (f"# Tests that cost {threshold_s:g} CPU-s or more each in the fast lane's profile:"
              " `make test-fast`\n# leaves them out, `make test` runs them (tests/support/"
              "costly.py). `make costly-list` writes\n# this file again.\n")
    return header + "".join(f"{i}\n" for i in ids)
