"""``flushbench queue stop`` signals only flushbench workers of this host.

A ``workers`` row is data anyone with the database can write: its pid is trusted only when
the process behind it is a live ``flushbench run``/``worker`` (or the claim tests' null worker)
that did not start after the row registered. An unrelated process named by a live row
survives; a real worker gets the signal; pids that are no process id (negative, 0, 1, beyond
the kernel's pid_max, text) are one sentence each, never a signal and never a crash.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select, text

from runner.fleet.workers import is_worker_command, pid_max, valid_pid
from store.db import ResultsDB
from store.ledger import db_now
from store.models import Worker
from tests.runner.fleet.test_claim_race import wait_registered
from tests.support.cli_runner import run_cli

FB = str(Path(sys.executable).with_name("flushbench"))
PY = sys.executable


def _live_row(db: ResultsDB, pid: object, *, started_days_ago: float = 0.0) -> None:
    """A live workers row of this host naming ``pid`` (written raw: SQLite keeps any type)."""
    with db.session() as s, s.begin():
        now = db_now(s)
        s.add(Worker(host_id="h", host_class="h", hostname=socket.gethostname(), pid=0,
                     lease_s=600.0, started_at=now - dt.timedelta(days=started_days_ago),
                     heartbeat_at=now, state="running"))
        s.flush()
        s.execute(text("UPDATE workers SET pid = :pid WHERE id = (SELECT MAX(id) FROM workers)"),
                  {"pid": pid})


@pytest.mark.slow  # waits 2 s to see that `sleep` was not signalled
@pytest.mark.parametrize("now", [False, True], ids=["between-runs", "now"])
def test_an_unrelated_process_named_by_a_live_row_survives(
        now: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ResultsDB(tmp_path / "r.sqlite")
    victim = subprocess.Popen(["sleep", "300"])
    try:
        _live_row(db, victim.pid)
        code, out, err = run_cli(["queue", "stop", "--db", str(tmp_path / "r.sqlite"),
                                  *(["--now"] if now else [])], capsys)
        assert code == 0, err
        assert f"worker pid {victim.pid} (running): not signalled" in out, out
        assert "is now sleep, not a flushbench worker" in out, out
        # SIGUSR1 and SIGTERM both end `sleep`: had either been sent, it would exit here.
        with pytest.raises(subprocess.TimeoutExpired):
            victim.wait(timeout=2)
    finally:
        victim.kill()
        victim.wait()


def test_a_real_worker_gets_the_signal_and_stops(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`flushbench worker` on an empty queue (polling forever) stops when asked."""
    url = f"sqlite:///{tmp_path / 'w.sqlite'}"
    db = ResultsDB(url)
    env = {**os.environ, "FLUSHBENCH_WORK": str(tmp_path / "work"),
           "FLUSHBENCH_LOCK_DIR": str(tmp_path / "locks")}
    env.pop("FLUSHBENCH_DB", None)
    log = tmp_path / "worker.log"
    with log.open("w") as handle:
        worker = subprocess.Popen([FB, "worker", "--db", url, "--idle-timeout", "-1",
                                   "--host-id", "stop-test"], env=env, cwd=tmp_path,
                                  stdout=handle, stderr=subprocess.STDOUT)
    try:
        wait_registered(db, 1, [worker])
        code, out, err = run_cli(["queue", "stop", "--db", url], capsys)
        assert code == 0, err
        assert f"worker pid {worker.pid} (idle): asked to stop after the run in progress" in out
        assert worker.wait(timeout=60) == 0, log.read_text()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert "stop asked (SIGUSR1)" in log.read_text()
    with db.session() as s:
        assert s.scalars(select(Worker.state)).all() == ["stopped"]


BAD_PIDS = [
    ("negative", -1),
    ("zero", 0),
    ("init", 1),
    ("beyond-pid-max", pid_max() + 1),
    ("beyond-63-bits", 2**62 * 3.0),  # SQLite keeps a number this big as a REAL
    ("text", "1234x"),
]


@pytest.mark.parametrize(("case", "pid"), BAD_PIDS, ids=[c for c, _ in BAD_PIDS])
def test_a_pid_that_is_no_process_id_is_one_sentence(
        case: str, pid: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ResultsDB(tmp_path / "r.sqlite")
    _live_row(db, pid)
    code, out, err = run_cli(["queue", "stop", "--db", str(tmp_path / "r.sqlite")], capsys)
    assert code == 0, err
    assert err == "", err
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    assert "not signalled" in lines[0] and "is not a process id a worker can have" in lines[0]
    assert f"between 2 and {pid_max()}" not in lines[0]  # the range reads 2–N, one sentence
    assert f"2–{pid_max()}" in lines[0]
    code, out, err = run_cli(["status", "--db", str(tmp_path / "r.sqlite")], capsys)
    assert code == 0 and "internal error" not in err, err


def test_valid_pids() -> None:
    assert valid_pid(2) == 2 and valid_pid(pid_max()) == pid_max()
    assert valid_pid(4321.0) == 4321 and valid_pid("4321") == 4321
    for bad in (-5, 0, 1, pid_max() + 1, 2**70, 1.5, "x", None, True, b"12"):
        assert valid_pid(bad) is None, bad


COMMANDS = [
    ("console-script", ["/venv/bin/flushbench", "worker", "--db", "x"], True),
    ("through-its-python", ["/venv/bin/python3", "/venv/bin/flushbench", "run", "e.yaml"], True),
    ("python-options-first", ["python3.12", "-X", "dev", "-u", "/v/bin/flushbench", "worker"],
     True),
    ("null-worker", [PY, "-m", "tests.support.null_worker", "sqlite:///q", "h"], True),
    ("another-verb", ["/venv/bin/flushbench", "status"], False),
    ("verb-as-a-value", ["/venv/bin/flushbench", "report", "worker", "-o", "r"], False),
    ("sleep", ["sleep", "300"], False),
    ("python-c-with-the-words", [PY, "-c", "import time; time.sleep(9)", "flushbench",
                                 "worker"], False),
    ("another-module", [PY, "-m", "http.server"], False),
    ("a-script-named-like-it", ["/tmp/flushbench-worker.sh", "worker"], False),
    ("empty", [], False),
]


@pytest.mark.parametrize(("case", "cmdline", "expected"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_which_command_lines_are_workers(case: str, cmdline: list[str], expected: bool) -> None:
    assert is_worker_command(cmdline) is expected
