"""A loader or driver whose children keep its output open cannot hang the run.

``run_to_completion`` (``tpcc_load``, ``sysbench prepare``, the Go loader) and
``RunningWorkload`` (the driver during a run) read the child's pipes in threads. When the
command exits but a process it started still holds those pipes, what is left in its process
group is killed, and a process that left the group (``setsid``) costs a bounded wait
(:func:`runner.proc.close_pipes`) instead of a hang. Each check runs in a child process under
the 30 s guard of :mod:`tests.support.hostile_binaries`.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from core.paths import REPO_ROOT
from tests.support.hostile_binaries import guarded, hostile, left_alive

#: Each case waits out a real timeout (seconds of a worker's wall time, no CPU): `make test`
#: runs them; the fast lane, which is for CPU-bound checks, leaves them out.
pytestmark = pytest.mark.slow

LOAD = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from core.errors import WorkloadError
    from runner.workloads.base import run_to_completion
    try:
        run_to_completion([sys.argv[1]], env={}, log_path=Path(sys.argv[2]), timeout_s=3,
                          what="loader", fix="see the log")
    except WorkloadError as exc:
        print("refused:", exc.what)
    else:
        print("loaded")
    """)

RUN = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from core.errors import WorkloadError
    from runner.workloads.base import RunningWorkload
    from runner.workloads.tpcc_mysql_output import TpccMysqlParser
    running = RunningWorkload([sys.argv[1]], env={}, log_path=Path(sys.argv[2]),
                              parser=TpccMysqlParser(rampup_s=0), name="driver", grace_s=2)
    with running:
        try:
            print("intervals", len(list(running.intervals(timeout_s=3))))
        except WorkloadError as exc:
            print("watchdog:", exc.what)
        print("exit", running.outcome(timeout_s=3).exit_code)
    print("left")
    """)


@pytest.mark.parametrize(("kind", "expected"), [
    ("forks-holding-stdout", "loaded"),
    ("leaves-its-group", "loaded"),
    ("sleeps", "refused: loader still running after 3 s (killed)"),
])
def test_a_loader_ends_in_bounded_time(kind: str, expected: str, tmp_path: Path) -> None:
    script = hostile(tmp_path / "bin", kind, "loader")
    code, out = guarded([sys.executable, "-c", LOAD, str(script), str(tmp_path / "logs" / "l")],
                        tmp_path / "out", cwd=REPO_ROOT)
    assert (code, out.strip()) == (0, expected)
    assert left_alive(tmp_path / "bin", escaped_ok=kind == "leaves-its-group") == []


@pytest.mark.parametrize(("kind", "expected"), [
    ("forks-holding-stdout", ["exit 0", "left"]),
    ("leaves-its-group", ["exit 0", "left"]),
])
def test_a_driver_ends_in_bounded_time(kind: str, expected: list[str], tmp_path: Path) -> None:
    script = hostile(tmp_path / "bin", kind, "driver")
    code, out = guarded([sys.executable, "-c", RUN, str(script), str(tmp_path / "logs" / "r")],
                        tmp_path / "out", cwd=REPO_ROOT)
    assert code == 0, out
    lines = out.strip().splitlines()
    # Its one line is not an interval: the watchdog or the end of stdout, then the exit.
    assert lines[0].startswith(("intervals 0", "watchdog: no interval for 3 s")), out
    assert lines[1:] == expected, out
    assert left_alive(tmp_path / "bin", escaped_ok=kind == "leaves-its-group") == []
