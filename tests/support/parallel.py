"""How ``make test`` spreads the suite over pytest-xdist workers (``--dist loadgroup``).

Every test gets an ``xdist_group``: one worker runs a whole group, in collection order.

- ``host-control``: every test marked ``host_control`` (cgroups, THP, CPU sets, mounts, the
  storage-limit proofs). They change the host or judge what the host did, so they run one
  after another on one worker, never beside each other.
- ``real-run``: the tests reading :func:`tests.conftest.real_results_db` (a real experiment
  run), so that run happens once, not once per worker. A test that reaches it through
  ``request.getfixturevalue`` names the group itself: ``pytest.mark.xdist_group(REAL_RUN_GROUP)``
  (a group a test declares is always kept).
- the test's file when the test uses a module- or class-scoped fixture (a loaded 1-warehouse
  snapshot, a running server): it is built once, as in a serial run.
- no group otherwise: such tests go to whichever worker is free, one at a time (the 368
  hostile-input cases, each a preflight of its own, would keep one worker busy for minutes as
  one group).

The groups are then ordered by an estimate of their cost, most expensive first (the measured
seconds of the slowest tests, :data:`KNOWN_COST_S`, else a guess from the markers), so the long
tests and server modules start at once and the quick files fill the gaps at the end (xdist hands the
groups out in collection order when ``--no-loadscope-reorder`` is given).

The groups reach xdist's scheduler through a file, not through xdist's own ``loadgroup``: that
one appends ``@group`` to each test's node id, which pytest 9.2's structured node ids silently
ignore (pytest-dev/pytest-xdist#1386), so every group was split over all workers — host-control
tests ran beside each other and each worker built its own module fixtures and real run. Each
worker writes the node id → group map it computed (:func:`write_groups`); the controller's
:class:`GroupScheduling` reads it once every worker has collected.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

HOST_GROUP = "host-control"
REAL_RUN_GROUP = "real-run"
#: The ``workerinput`` key naming the directory the workers write their group maps to.
GROUPS_DIR_KEY = "flushbench_groups_dir"

#: Rough seconds per test by marker: enough to put the server modules first; the order inside
#: a group is never changed.
COST_S = {"slow": 15.0, "mysql": 4.0, "postgres": 1.0}
OTHER_COST_S = 0.1

#: Measured seconds (setup + call + teardown, each parametrized case alike) of the tests that
#: take longest, by test function: a marker says a test is slow, not whether it takes 20 s or
#: 200 s, and a 200 s test handed out late is the pass's tail (three workers, one of them
#: still running it while two wait). Figures of one ``FLUSHBENCH_TEST_CPU`` run of the whole
#: suite on a loaded 2-core VM (2026-12-06, load 6–16, after the tiny experiments lost their
#: start offsets): only their order matters. A test missing here falls back to :data:`COST_S`;
#: ``tests/test_parallel_groups.py`` fails on a name that no longer exists.
KNOWN_COST_S = {
    "tests/runner/server/test_debian_fetch.py::"
    "test_a_fetch_leaves_the_systems_apt_untouched": 73.0,
    "tests/runner/test_fixed_rate_real_run.py::"
    "test_a_server_blocked_for_20_s_at_a_fixed_rate_queues_and_every_wait_is_counted": 62.0,
    "tests/runner/test_latency_real_run.py::"
    "test_a_server_blocked_for_20_s_is_a_wait_of_20_s_in_the_windows_tail": 62.0,
    "tests/runner/fleet/test_claim_race.py::test_four_workers_run_every_run_exactly_once": 58.0,
    "tests/runner/run/test_recording_safety.py::"
    "test_readers_and_report_while_a_worker_records": 52.0,
    "tests/analysis/test_notebooks.py::test_notebook_runs": 51.0,
    "tests/runner/fleet/test_farm.py::test_slow_restore_keeps_its_lease": 45.0,
    "tests/runner/fleet/test_farm.py::test_worker_cut_off_past_its_lease_stops_and_says_why": 40.0,
    "tests/runner/run/test_execute.py::test_resume_after_sigkill_of_flushbench": 39.0,
    "tests/runner/test_fixed_rate_real_run.py::"
    "test_compare_never_compares_a_row_that_missed_its_rate": 38.0,
    "tests/cli/test_terminal_width.py::test_results_verbs_fit": 38.0,
    "tests/runner/fleet/test_farm.py::"
    "test_sigkilled_worker_is_taken_over_and_its_mysqld_reaped": 36.0,
    "tests/analysis/test_ledger_real_run.py::"
    "test_doublewrite_off_is_zero_and_redo_is_the_servers_counter": 36.0,
    "tests/runner/run/test_disturbed_runs.py::"
    "test_rerun_policy_queues_a_replacement_through_the_real_queue": 35.0,
    "tests/runner/test_fixed_rate_real_run.py::"
    "test_a_rate_far_below_capacity_is_held_in_every_window_interval": 35.0,
    "tests/runner/test_debian_servers_e2e.py::test_a_cell_runs_end_to_end": 35.0,
    "tests/runner/run/test_execute.py::test_cells_apply_their_variables_and_allocator": 34.0,
    "tests/runner/server/test_knobs_per_server.py::test_every_knob_applies_or_is_refused": 34.0,
    "tests/runner/test_distributions_e2e.py::test_a_cell_runs_end_to_end": 32.0,
    "tests/runner/fleet/test_farm.py::test_database_restart_mid_run_loses_nothing": 30.0,
    "tests/runner/test_start_offset_real_run.py::"
    "test_each_run_warms_up_its_own_offset_longer": 30.0,
    "tests/runner/run/test_execute.py::test_queue_fits_a_disk_sized_for_one_live_datadir": 30.0,
    "tests/runner/server/test_option_parse_isolation.py::"
    "test_validate_and_plan_leave_the_system_datadir_byte_identical": 29.0,
    "tests/runner/test_child_pipe_bounds.py::test_a_driver_ends_in_bounded_time": 29.0,
    "tests/analysis/test_bound_real_run.py::"
    "test_an_unthrottled_quickstart_like_run_is_bound_by_the_cpu": 28.0,
    "tests/analysis/test_report_browser.py::"
    "test_report_figures_are_drawn_and_legends_cover_nothing": 27.0,
    "tests/analysis/test_metric_vocabulary.py::"
    "test_sysbench_report_and_exports_never_say_notpm": 27.0,
    "tests/runner/fleet/test_farm.py::"
    "test_one_host_one_measurement_at_a_time_and_readable_logs": 27.0,
    "tests/cli/test_cli_setup.py::test_validate_good_and_bad_files": 26.0,
    "tests/analysis/test_database_shapes.py::"
    "test_a_report_over_a_larger_one_leaves_only_its_own_pngs": 25.0,
    "tests/runner/run/test_recording_safety.py::"
    "test_sigkill_while_recording_leaves_no_half_run_and_resumes": 25.0,
    "tests/analysis/test_database_shapes.py::test_notebook": 23.0,
}


def declared_group(item: pytest.Item) -> str | None:
    """The group a test names itself with ``@pytest.mark.xdist_group(name)``, if any."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def shares_module_fixtures(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture set up once per module, class or package."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope in ("class", "module", "package")
               for defs in info.name2fixturedefs.values())


def group_of(item: pytest.Item) -> str | None:
    """The xdist group ``item`` runs in, None for none (see the module docstring)."""
    declared = declared_group(item)
    if declared is not None:
        return declared
    if item.get_closest_marker("host_control") is not None:
        return HOST_GROUP
    if "real_results_db" in getattr(item, "fixturenames", ()):
        return REAL_RUN_GROUP
    if shares_module_fixtures(item):
        return item.nodeid.split("::", 1)[0]
    return None


def function_id(nodeid: str) -> str:
    """A test's node id without its parameters: ``file.py::test_x[a-1]`` → ``file.py::test_x``."""
    return nodeid.split("[", 1)[0]


def cost_of(item: pytest.Item) -> float:
    """A cost estimate of one test in seconds: its measured figure (:data:`KNOWN_COST_S`),
    else a rough one from its markers."""
    known = KNOWN_COST_S.get(function_id(item.nodeid))
    if known is not None:
        return known
    marked = [cost for name, cost in COST_S.items() if item.get_closest_marker(name)]
    return max(marked, default=OTHER_COST_S)


def assign_groups(items: list[pytest.Item]) -> dict[str, str]:
    """Sort ``items`` in place, costliest group first; return node id → group name.

    The sort is stable and keeps each group's items in their collection order, so module and
    class fixtures are set up once per group. Every worker runs this on the same collection
    and gets the same order, as xdist requires. Tests of no group are left out of the map.
    """
    groups: dict[str, list[pytest.Item]] = defaultdict(list)
    named: dict[str, str] = {}
    for item in items:
        name = group_of(item)
        if name is None:
            name = item.nodeid  # a unit of its own: xdist schedules it alone
        else:
            named[item.nodeid] = name
        groups[name].append(item)
    cost = {name: sum(cost_of(i) for i in members) for name, members in groups.items()}
    first_seen = {name: n for n, name in enumerate(groups)}
    ordered = sorted(groups, key=lambda name: (-cost[name], first_seen[name]))
    items[:] = [item for name in ordered for item in groups[name]]
    return named


def write_groups(groups_dir: Path, worker_id: str, groups: dict[str, str]) -> None:
    """Leave this worker's node id → group map for the controller (written whole, then
    renamed, so the controller never reads half a file)."""
    tmp = groups_dir / f".{worker_id}.json"
    tmp.write_text(json.dumps(groups))
    os.replace(tmp, groups_dir / f"{worker_id}.json")


def read_groups(groups_dir: Path) -> dict[str, str]:
    """The node id → group map a worker left (all workers collect the same tests).

    Raises
    ------
    RuntimeError
        No worker left one: the groups would silently not hold (conftest not loaded?).
    """
    maps = sorted(groups_dir.glob("*.json"))
    if not maps:
        raise RuntimeError(f"no worker wrote its test groups to {groups_dir}:"
                           " tests/conftest.py must run in every xdist worker")
    return json.loads(maps[0].read_text())


_GROUPS_DIR = pytest.StashKey[Path]()


def groups_dir(config: pytest.Config) -> Path:
    """The controller's directory for the workers' group maps (made on first use)."""
    if _GROUPS_DIR not in config.stash:
        config.stash[_GROUPS_DIR] = Path(tempfile.mkdtemp(prefix="flushbench-xdist-groups-"))
    return config.stash[_GROUPS_DIR]


def remove_groups_dir(config: pytest.Config) -> None:
    """Remove the directory :func:`groups_dir` made, if any."""
    if _GROUPS_DIR in config.stash:
        shutil.rmtree(config.stash[_GROUPS_DIR], ignore_errors=True)


class GroupScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with the scopes of :func:`assign_groups`: each group goes
    whole to one worker; a test of no group is a scope of its own."""

    def __init__(self, config: pytest.Config, log: Any, groups_dir: Path) -> None:
        super().__init__(config, log)
        self._groups_dir = groups_dir
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        # Called once every worker has collected (and written its map), never before.
        if self._groups is None:
            self._groups = read_groups(self._groups_dir)
        # An older pytest still lets xdist append "@group" to the node id.
        group = self._groups.get(nodeid) or self._groups.get(nodeid.rsplit("@", 1)[0])
        return f"group:{group}" if group is not None else nodeid


def in_xdist_worker(config: pytest.Config) -> bool:
    """True in a pytest-xdist worker process (``make test`` runs the suite in several)."""
    return hasattr(config, "workerinput")


def session_folder(config: pytest.Config, factory: pytest.TempPathFactory, name: str) -> Path:
    """The folder ``name`` of this test session, the same for every xdist worker (made if
    missing): what the workers share must be written whole (renamed into place, under a lock,
    or in one SQLite transaction)."""
    base = factory.getbasetemp()
    # A worker's base is <session>/popen-gwN: its parent is this session's, not another's.
    path = (base.parent if in_xdist_worker(config) else base) / name
    path.mkdir(exist_ok=True)
    return path


#: Where the suite's tests live (the ``alone`` pass looks for its files there).
TESTS_DIR = Path(__file__).resolve().parents[1]
#: How a test file marks a test to run after the parallel pass, in a process of its own
#: (``pytest.mark.alone``, in a ``pytestmark`` or on the test).
ALONE_MARK = "mark.alone"


def alone_files(tests_dir: Path = TESTS_DIR) -> list[Path]:
    """The test files that hold the ``alone`` tests: those whose text marks one.

    The ``alone`` pass (scripts/test.sh) collects only these: collecting the whole suite to
    select its few tests took 4 s of the critical path, with nothing else running (9 s cold).
    :func:`check_alone_files` holds every collected ``alone`` test to this list.
    """
    return sorted(p for p in tests_dir.rglob("test_*.py")
                  if ALONE_MARK in p.read_text(encoding="utf-8"))


def check_alone_files(items: list[pytest.Item], tests_dir: Path = TESTS_DIR) -> None:
    """Refuse a session whose ``alone`` tests lie outside :func:`alone_files` (the ``alone``
    pass would never collect them), naming the files and the fix."""
    marked = {Path(str(item.path)).resolve() for item in items
              if item.get_closest_marker("alone") is not None}
    missed = sorted(marked - {p.resolve() for p in alone_files(tests_dir)})
    if missed:
        raise pytest.UsageError(
            "alone tests the `alone` pass would not collect (their file never writes"
            f" `pytest.{ALONE_MARK}`): {', '.join(map(str, missed))} — mark them with"
            f" `pytest.{ALONE_MARK}` in the file itself (tests/support/parallel.py)")


# The hooks below are pytest's and xdist's; tests/conftest.py imports them (so does the test of
# this module, for a suite of its own).


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker: give every test its group, put the costliest groups first and leave the
    groups for the controller's scheduler. A serial run keeps pytest's order."""
    if in_xdist_worker(config):
        groups = assign_groups(items)
        where = config.workerinput.get(GROUPS_DIR_KEY)  # type: ignore[attr-defined]
        if where:
            write_groups(Path(where), config.workerinput["workerid"],  # type: ignore[attr-defined]
                         groups)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller: tell each xdist worker where to leave its test groups."""
    node.workerinput[GROUPS_DIR_KEY] = str(groups_dir(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> GroupScheduling | None:
    """Controller: ``--dist loadgroup`` schedules by :func:`assign_groups`' groups."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return GroupScheduling(config, log, groups_dir(config))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Controller: remove the group maps' directory."""
    remove_groups_dir(config)


if __name__ == "__main__":
    # scripts/test.sh: the files the `alone` pass collects, one a line, relative to the repo.
    for path in alone_files():
        print(path.relative_to(TESTS_DIR.parent))
