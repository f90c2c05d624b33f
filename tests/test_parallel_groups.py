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
from collections import defaultdict
from pathlib import Path

import pytest

from core.paths import REPO_ROOT
from tests.support.parallel import ALONE_MARK, alone_files

CONFTEST = """\
from tests.support.parallel import (  # noqa: F401
    pytest_collection_modifyitems,
    pytest_configure_node,
    pytest_unconfigure,
    pytest_xdist_make_scheduler,
)
"""

#: Each test writes "<its kind> <its worker>" to $SEEN. A module fixture puts its file's tests
#: in a group; the declared group spans two files; the free tests belong to no group.
TEST = """\
import os
import time
import pytest
{fixture}
{mark}
@pytest.mark.parametrize("i", range({n}))
def test_{kind}(i{uses}):
    time.sleep({pause})
    with open(os.environ["SEEN"], "a") as f:
        f.write(f"{kind} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")
"""
MODULE_FIXTURE = """
@pytest.fixture(scope="module")
def shared():
    return object()
"""
TESTS = {
    "test_module_fixture.py": TEST.format(fixture=MODULE_FIXTURE, mark="", n=6, kind="module",
                                          uses=", shared", pause=0),
    "test_declared_a.py": TEST.format(fixture="", mark='@pytest.mark.xdist_group("declared")',
                                      n=4, kind="declared", uses="", pause=0),
    "test_declared_b.py": TEST.format(fixture="", mark='@pytest.mark.xdist_group("declared")',
                                      n=4, kind="declared", uses="", pause=0),
    # long enough for both workers to take some
    "test_free.py": TEST.format(fixture="", mark="", n=12, kind="free", uses="", pause=0.2),
}


@pytest.mark.slow  # three Python processes: out of the fast lane
def test_each_group_runs_in_one_worker(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    for name, text in TESTS.items():
        (suite / name).write_text(text)
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


def test_every_measured_cost_names_a_test_that_exists() -> None:
    """A renamed or moved test would silently lose its place at the front of the pass."""
    from tests.support.parallel import KNOWN_COST_S

    for name in KNOWN_COST_S:
        path, function = name.split("::")
        source = REPO_ROOT / path
        assert source.is_file(), name
        assert f"def {function}(" in source.read_text(encoding="utf-8"), name


class _Item:
    """What :func:`tests.support.parallel.assign_groups` reads of a pytest item."""

    def __init__(self, nodeid: str, *markers: str) -> None:
        self.nodeid = nodeid
        self.fixturenames: tuple[str, ...] = ()
        self._markers = markers

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self._markers else None


def test_a_measured_slow_test_is_handed_out_before_longer_groups_of_guesses() -> None:
    """The test of the largest measured figure goes first, before a group of three tests
    marked slow (3 x 15 s guessed, less than it) and a quick test; its parameters share its
    figure."""
    from tests.support.parallel import KNOWN_COST_S, assign_groups, cost_of

    slow = max(KNOWN_COST_S, key=KNOWN_COST_S.__getitem__)
    measured = _Item(f"{slow}[case]", "slow")
    guessed = [_Item(f"tests/x/test_marked.py::test_{i}", "slow") for i in range(3)]
    for item in guessed:  # the readers of the real run: one group
        item.fixturenames = ("real_results_db",)
    quick = _Item("tests/x/test_quick.py::test_q")
    assert cost_of(measured) == KNOWN_COST_S[slow]
    assert cost_of(guessed[0]) == 15.0 and cost_of(quick) < 1
    items = [quick, *guessed, measured]
    assign_groups(items)  # type: ignore[arg-type]
    assert KNOWN_COST_S[slow] > 3 * 15.0
    assert items[0] is measured and items[1:-1] == guessed and items[-1] is quick


def test_the_alone_pass_collects_every_alone_test_and_refuses_one_it_would_miss(
        tmp_path: Path) -> None:
    """The ``alone`` pass collects only :func:`alone_files`; a suite with an ``alone`` test
    those leave out is refused at collection, naming its file."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(
        "from pathlib import Path\n"
        "from tests.support.parallel import check_alone_files\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    check_alone_files(items, Path(__file__).parent)\n")
    (tests / "test_marked.py").write_text(
        f"import pytest\n@pytest.{ALONE_MARK}\ndef test_a():\n    pass\n")
    # `alone` given by a name the file never writes out: the pass would not find it.
    (tests / "test_hidden.py").write_text(
        "import pytest\nQUIET = getattr(pytest.mark, 'al' + 'one')\n"
        "@QUIET\ndef test_b():\n    pass\n")
    (tests / "test_plain.py").write_text("def test_c():\n    pass\n")
    assert alone_files(tests) == [tests / "test_marked.py"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-m", "alone", "--co", str(tests)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    said = run.stdout + run.stderr
    assert run.returncode != 0 and "test_hidden.py" in said and "test_marked.py" not in \
        said.split("would not collect")[-1], said
    (tests / "test_hidden.py").unlink()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-m", "alone", "--co", str(tests)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "1/2 tests collected" in run.stdout, run.stdout + run.stderr


def test_the_suite_s_alone_files_are_the_two_that_need_a_quiet_machine() -> None:
    assert [str(p.relative_to(REPO_ROOT)) for p in alone_files()] == [
        "tests/analysis/test_allocator_sweep.py", "tests/runner/run/test_disturbed_runs.py"]
