"""Sum the per-test CPU lines of ``FLUSHBENCH_TEST_CPU=FILE make test`` per test file.

Usage: ``python3 scripts/test_cpu_summary.py FILE [--top 25] [--write-costly tests/costly.txt]``

Prints, per test file, the tests, their wall time and the CPU they cost (the pytest worker's own
time plus the children it reaped: mysqld, the driver, ``flushbench`` subprocesses, Chromium),
costliest first, then the costliest single tests, then each xdist worker's timeline (when it
started and ended, how long it was busy) and the last tests to end. See
``tests/support/cpu_profile.py``. ``--write-costly`` also writes the fast lane's list of
costly tests from a profile of ``make test-fast`` (``tests/support/costly.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.costly import costly_text  # noqa: E402 - the repository's root on the path


def main() -> None:
    """Read the JSON lines and print the two tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--write-costly", type=Path, metavar="LIST",
                        help="write the fast lane's list of costly tests to LIST")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.file.read_text().splitlines() if line.strip()]
    if args.write_costly:
        args.write_costly.write_text(costly_text(rows))
    per_file: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for row in rows:
        acc = per_file[row["test"].split("::")[0]]
        acc[0] += 1
        acc[1] += row["wall"]
        acc[2] += row["cpu_self"]
        acc[3] += row["cpu_children"]
    total_wall = sum(a[1] for a in per_file.values())
    total_cpu = sum(a[2] + a[3] for a in per_file.values())
    print(f"{len(rows)} tests: {total_wall:.0f} s of test wall time, {total_cpu:.0f} s CPU")
    print(f"{'CPU s':>7} {'self':>7} {'child':>7} {'wall s':>7} {'tests':>5}  file")
    ranked = sorted(per_file.items(), key=lambda kv: -(kv[1][2] + kv[1][3]))
    for name, (n, wall, own, kids) in ranked[: args.top]:
        print(f"{own + kids:7.1f} {own:7.1f} {kids:7.1f} {wall:7.1f} {n:5d}  {name}")
    print("\ncostliest tests (CPU s, wall s):")
    for row in sorted(rows, key=lambda r: -(r["cpu_self"] + r["cpu_children"]))[: args.top]:
        print(f"{row['cpu_self'] + row['cpu_children']:7.1f} {row['wall']:7.1f}  {row['test']}")

    timed = [r for r in rows if "start" in r]
    if timed:
        _timeline(timed)


def _timeline(rows: list[dict]) -> None:
    """Per xdist worker: when it started and ended, how busy it was; the last tests to end."""
    t0 = min(r["start"] for r in rows)
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_worker[row["worker"]].append(row)
    print("\nper worker (s from the first test's start): first start, last end, busy")
    for worker, mine in sorted(by_worker.items()):
        first = min(r["start"] for r in mine) - t0
        last = max(r["start"] + r["wall"] for r in mine) - t0
        busy = sum(r["wall"] for r in mine)
        print(f"  {worker:6s} {first:7.1f} {last:7.1f} {busy:7.1f}  ({len(mine)} tests)")
    print("last tests to end (end s, wall s):")
    for row in sorted(rows, key=lambda r: r["start"] + r["wall"])[-8:]:
        print(f"  {row['start'] + row['wall'] - t0:7.1f} {row['wall']:6.1f}  {row['worker']:6s}"
              f" {row['test']}")


if __name__ == "__main__":
    main()
