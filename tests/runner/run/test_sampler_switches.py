"""Context switches of a process from /proc: parsed from recorded kernel output, summed over
every thread live, and kept cumulative over threads that end."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import runner.run.sampler as sampler
from runner.run.sampler import ProcessSwitches, parse_ctx_switches, thread_ctx_switches

PROC = Path(__file__).resolve().parents[2] / "fixtures" / "proc"


def _value(text: str, key: str) -> int:
    return int(next(ln for ln in text.splitlines() if ln.startswith(key + ":")).split()[1])


def test_switches_of_a_recorded_mariadbd() -> None:
    status = (PROC / "mysqld-status.txt").read_text()
    assert parse_ctx_switches(status) == (_value(status, "voluntary_ctxt_switches"),
                                          _value(status, "nonvoluntary_ctxt_switches"))
    # A kernel that prints neither line (or only one) gives no figure, not 0.
    assert parse_ctx_switches("VmRSS:\t 1000 kB\n") is None
    assert parse_ctx_switches("voluntary_ctxt_switches:\t5\n") is None


def test_every_live_thread_is_read() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        threads = thread_ctx_switches(os.getpid())
        assert threads is not None
        assert worker.native_id in threads and threading.main_thread().native_id in threads
    finally:
        stop.set()
        worker.join()
    assert thread_ctx_switches(2**22 + 1) is None  # above pid_max: no such process


def test_a_thread_that_ends_keeps_its_switches_in_the_count() -> None:
    counter = ProcessSwitches()
    before = counter.read(os.getpid())
    go, stop = threading.Event(), threading.Event()

    def sleeper() -> None:  # each sleep is a voluntary switch
        for _ in range(50):
            time.sleep(0.001)
        go.set()
        stop.wait()

    worker = threading.Thread(target=sleeper)
    worker.start()
    go.wait()
    live = counter.read(os.getpid())
    mine = thread_ctx_switches(os.getpid())[worker.native_id]
    stop.set()
    worker.join()
    after = counter.read(os.getpid())
    assert before is not None and live is not None and after is not None
    assert mine[0] >= 50
    # The ended thread's switches stay counted: the figure never goes down.
    assert after[0] >= live[0] >= before[0] + mine[0]
    assert after[1] >= live[1]


def test_a_reused_thread_id_is_a_new_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = iter([{1: (10, 1), 7: (100, 5)},
                  {1: (12, 1), 7: (3, 0)},      # 7 ended and its id was given to a new thread
                  {1: (12, 2)}])                # the new 7 ended too
    monkeypatch.setattr(sampler, "thread_ctx_switches", lambda pid: next(reads))
    counter = ProcessSwitches()
    assert counter.read(42) == (110, 6)
    assert counter.read(42) == (12 + 100 + 3, 1 + 5 + 0)
    assert counter.read(42) == (12 + 100 + 3, 2 + 5 + 0)


def test_a_new_process_starts_a_new_count(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = iter([{1: (10, 1), 2: (20, 2)}, {5: (4, 0)}])
    monkeypatch.setattr(sampler, "thread_ctx_switches", lambda pid: next(reads))
    counter = ProcessSwitches()
    assert counter.read(42) == (30, 3)
    # mysqld restarted (another pid): the old one's threads are not carried over.
    assert counter.read(43) == (4, 0)
