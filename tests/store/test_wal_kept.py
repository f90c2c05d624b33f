"""A worker's write-ahead log survives what the worker reads of its own database file and a
reader elsewhere.

Closing any descriptor of a file drops every POSIX lock the process holds on it. When opening
the results database read its header with Python's ``open()``, a worker that opened a second
handle on its own database lost SQLite's locks; the next reader in another process to close
took the database for unused, checkpointed it and deleted the WAL the worker still wrote to:
every later write of the worker went to an unlinked file (seen in the flash-2011 calibration,
2026-11-24). The analysis's file stamp did the same after every run's summary line (seen in
the generations study, 2026-11-26: readers saw finished runs as still running). Real
processes, a real SQLite file.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from store.db import ResultsDB
from store.models import Experiment

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from store.db import ResultsDB
    from store.models import Experiment
    path = Path({path!r})
    db = ResultsDB(path)
    with db.session() as s, s.begin():
        s.add(Experiment(name="first", measurement_hash="a", spec={{}}, window={{}},
                         metric={{}}))
    {between}
    Path({ready!r}).touch()
    while not Path({go!r}).exists():
        time.sleep(0.05)
    with db.session() as s, s.begin():  # written after the reader came and went
        s.add(Experiment(name="second", measurement_hash="b", spec={{}}, window={{}},
                         metric={{}}))
    print("wal kept" if path.with_name(path.name + "-wal").exists() else "wal deleted")
    time.sleep(60)  # still open while the test reads
""")


#: What the worker does between its writes that once dropped its locks.
BETWEEN = {
    # A second handle, as a worker opens per run.
    "second-handle": "ResultsDB(path, create=False)",
    # The file stamp the analysis takes for its cache (each run's summary line), twice: the
    # second read must not close the first's descriptor either.
    "file-stamp": "from store.file_stamp import file_stamp\n"
                  "with db.session() as s2:\n"
                  "    assert file_stamp(s2) and file_stamp(s2)",
}


@pytest.mark.parametrize("between", sorted(BETWEEN))
def test_a_reader_elsewhere_does_not_orphan_the_workers_log(tmp_path: Path,
                                                            between: str) -> None:
    path, ready, go = tmp_path / "r.sqlite", tmp_path / "ready", tmp_path / "go"
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER.format(root=str(ROOT), path=str(path), ready=str(ready),
                                             go=str(go), between=BETWEEN[between])],
        stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert worker.poll() is None and time.monotonic() < deadline, "worker did not start"
            time.sleep(0.05)
        reader = ResultsDB(path, create=False)  # `flushbench status` in another shell
        with reader.session() as s:
            assert s.scalars(select(Experiment.name)).all() == ["first"]
        reader.dispose()
        go.touch()
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "wal kept"
        # The worker's later write is in the database that everyone else opens.
        again = ResultsDB(path, create=False)
        with again.session() as s:
            assert sorted(s.scalars(select(Experiment.name)).all()) == ["first", "second"]
        again.dispose()
    finally:
        worker.kill()
        worker.wait()
        if worker.stdout is not None:
            worker.stdout.close()
