"""Per-test CPU, for finding where the suite's time goes (opt-in: ``FLUSHBENCH_TEST_CPU``).

``make test`` runs on two cores with three xdist workers and keeps them ~90 % busy, so a test's
wall time says little about what it costs the others: a real tpcc run of 8 s may burn 16 CPU
seconds that every other worker waits for, and a lease test may sleep 30 s and cost nothing.
With ``FLUSHBENCH_TEST_CPU=FILE`` every test appends one JSON line to FILE::

    {"test": node id, "worker": xdist worker id, "start": Unix time, "wall": s,
     "cpu_self": s, "cpu_children": s}

``cpu_self`` is the pytest process's own user + system time over the test (setup, call and
teardown); ``cpu_children`` is the time of the child processes it waited for meanwhile —
mysqld sandboxes, ``flushbench`` subprocesses with their own mysqld and driver, Chromium —
which the kernel adds to the parent only when the child is reaped (a session-scoped server is
counted where it is stopped; a daemonized PostgreSQL not at all; a child another library
reaps in the background, such as Chromium, is counted where that happens). Lines from the
xdist workers go to one file (appends of one short line each).
``scripts/test_cpu_summary.py FILE`` sums them per file and shows each worker's timeline.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator

import pytest

ENV = "FLUSHBENCH_TEST_CPU"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Time one test (setup, call, teardown) when ``FLUSHBENCH_TEST_CPU`` is set."""
    path = os.environ.get(ENV)
    if not path:
        yield
        return
    start, wall0 = time.time(), time.monotonic()
    self0, children0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    line = json.dumps({
        "test": item.nodeid,
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "start": round(start, 3),
        "wall": round(time.monotonic() - wall0, 3),
        "cpu_self": round(_cpu(resource.RUSAGE_SELF) - self0, 3),
        "cpu_children": round(_cpu(resource.RUSAGE_CHILDREN) - children0, 3),
    })
    # One write of one line with O_APPEND: the workers' lines never interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)
