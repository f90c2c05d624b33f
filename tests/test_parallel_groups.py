"""`make test`'s xdist groups hold: a small suite of its own runs in two real xdist workers with
the hooks of tests/support/parallel.py, and every test of one group runs in one worker.

Without the hooks' own scheduler the groups silently fell apart under pytest 9.2 (xdist's
``loadgroup`` renames node ids, which pytest 9.2 ignores: pytest-dev/pytest-xdist#1386).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

from flushbench.paths import REPO_ROOT

CONFTEST = """\
from tests.support.parallel import (  # noqa: F401
    pytest_collection_modifyitems,
    pytest_configure_node,
    pytest_unconfigure,
    pytest_xdist_make_scheduler,
)
"""

#: Each test appends "<node id> <worker>" to $SEEN. A module fixture puts its file's tests in a
#: group; the declared group spans two files; the other tests belong to no group.
TESTS = {
    "test_module_fixture.py": """\
import os
import pytest

@pytest.fixture(scope="module")
def shared():
    return object()

@pytest.mark.parametrize("i", range(6))
def test_m(i, shared):
    with open(os.environ["SEEN"], "a") as f:
        f.write(f"module {os.environ['PYTEST_XDIST_WORKER']}\\n")
""",
    "test_declared_a.py": """\
import os
import pytest

@pytest.mark.xdist_group("declared")
@pytest.mark.parametrize("i", range(4))
def test_a(i):
    with open(os.environ["SEEN"], "a") as f:
        f.write(f"declared {os.environ['PYTEST_XDIST_WORKER']}\\n")
""",
    "test_declared_b.py": """\
import os
import pytest

@pytest.mark.xdist_group("declared")
@pytest.mark.parametrize("i", range(4))
def test_b(i):
    with open(os.environ["SEEN"], "a") as f:
        f.write(f"declared {os.environ['PYTEST_XDIST_WORKER']}\\n")
""",
    "test_free.py": """\
import os
import time
import pytest

@pytest.mark.parametrize("i", range(12))
def test_free(i):
    time.sleep(0.2)  # long enough for both workers to take some
    with open(os.environ["SEEN"], "a") as f:
        f.write(f"free {os.environ['PYTEST_XDIST_WORKER']}\\n")
""",
}


@pytest.mark.slow  # three Python processes: out of the fast lane
def test_each_group_runs_in_one_worker(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    for name, text in TESTS.items():
        (suite / name).write_text(textwrap.dedent(text))
    seen = tmp_path / "seen.txt"
    env = {**os.environ, "SEEN": str(seen),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                      os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "--no-loadscope-reorder", "--rootdir", str(suite),
         "-c", os.devnull, str(suite)],
        cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers: dict[str, list[str]] = defaultdict(list)
    for line in seen.read_text().splitlines():
        kind, worker = line.split()
        workers[kind].append(worker)
    assert {k: len(v) for k, v in workers.items()} == {"module": 6, "declared": 8, "free": 12}
    assert len(set(workers["module"])) == 1, json.dumps(workers)
    assert len(set(workers["declared"])) == 1, json.dumps(workers)
