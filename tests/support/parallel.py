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

The groups are then ordered by an estimate of their cost, most expensive first, so the long
server modules start at once and the quick files fill the gaps at the end (xdist hands the
groups out in collection order when ``--no-loadscope-reorder`` is given).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

HOST_GROUP = "host-control"
REAL_RUN_GROUP = "real-run"

#: Rough seconds per test by marker: enough to put the server modules first; the order inside
#: a group is never changed.
COST_S = {"slow": 15.0, "mysql": 4.0, "postgres": 1.0}
OTHER_COST_S = 0.1


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


def cost_of(item: pytest.Item) -> float:
    """A rough cost estimate of one test from its markers (seconds, on a quiet machine)."""
    marked = [cost for name, cost in COST_S.items() if item.get_closest_marker(name)]
    return max(marked, default=OTHER_COST_S)


def assign_groups(items: list[pytest.Item]) -> None:
    """Mark every grouped item with its group; sort ``items`` in place, costliest group first.

    The sort is stable and keeps each group's items in their collection order, so module and
    class fixtures are set up once per group. Every worker runs this on the same collection
    and gets the same order, as xdist requires.
    """
    groups: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        name = group_of(item)
        if name is None:
            name = item.nodeid  # a unit of its own: xdist schedules it alone
        elif declared_group(item) is None:
            item.add_marker(pytest.mark.xdist_group(name))
        groups[name].append(item)
    cost = {name: sum(cost_of(i) for i in members) for name, members in groups.items()}
    first_seen = {name: n for n, name in enumerate(groups)}
    ordered = sorted(groups, key=lambda name: (-cost[name], first_seen[name]))
    items[:] = [item for name in ordered for item in groups[name]]
