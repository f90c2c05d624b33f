"""A notebook-like reader for the concurrency test: long read transactions, repeated.

``python -m tests.support.long_reader DB STOP_FILE OUT_JSON`` opens the SQLite results file
with plain ``sqlite3`` (what ``pandas.read_sql`` uses) and, until STOP_FILE exists, repeats one
read transaction: per-run interval and sample counts, every sample row read into pandas (the
expensive read a researcher's notebook does), every interval, then the counts again. Within
one transaction both counts must agree and the frames must hold exactly the counted rows (a
consistent snapshot). It writes what it saw as JSON: iterations, errors, and per done run the
(intervals, samples) counts of every snapshot, for the test to compare with the final counts.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

COUNTS = """
SELECT r.id, r.status,
       (SELECT count(*) FROM intervals i WHERE i.run_id = r.id),
       (SELECT count(*) FROM samples s WHERE s.run_id = r.id)
FROM runs r ORDER BY r.id
"""


def snapshot(conn: sqlite3.Connection) -> tuple[list[tuple[Any, ...]], list[str]]:
    """One read transaction; the runs' counts and what was inconsistent in it."""
    problems = []
    conn.execute("BEGIN")  # deferred: the first SELECT takes the snapshot
    try:
        before = conn.execute(COUNTS).fetchall()
        samples = pd.read_sql("SELECT * FROM samples", conn)
        intervals = pd.read_sql("SELECT * FROM intervals", conn)
        time.sleep(0.2)  # hold the transaction while the worker writes
        after = conn.execute(COUNTS).fetchall()
    finally:
        conn.execute("COMMIT")
    if before != after:
        problems.append(f"counts changed inside one transaction: {before} -> {after}")
    if len(samples) != sum(r[3] for r in before) or len(intervals) != sum(r[2] for r in before):
        problems.append(f"frames ({len(intervals)} intervals, {len(samples)} samples) differ "
                        f"from the counts {before}")
    return before, problems


def main(db: str, stop: str, out: str) -> None:
    """Read until ``stop`` exists; write the report to ``out``."""
    conn = sqlite3.connect(db, timeout=30, isolation_level=None)
    report: dict[str, Any] = {"iterations": 0, "errors": [], "running_seen": 0, "done": {}}
    while not Path(stop).exists():
        if report["iterations"]:
            # A breath between transactions (inside one it already holds 0.2 s): back to back,
            # the loop kept a core busy for the whole test; paced, it still reads throughout.
            time.sleep(0.3)
        try:
            counts, problems = snapshot(conn)
        except Exception as exc:  # noqa: BLE001 - every failure is the test's evidence
            report["errors"].append(f"{type(exc).__name__}: {exc}")
            counts, problems = [], []
        report["errors"] += problems
        report["iterations"] += 1
        report["running_seen"] += any(status == "running" for _, status, _, _ in counts)
        for run_id, status, n_int, n_smp in counts:
            if status == "done":
                report["done"].setdefault(str(run_id), []).append([n_int, n_smp])
    conn.close()
    Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
