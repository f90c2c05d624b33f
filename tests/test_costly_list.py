"""The fast lane's ``costly`` list (tests/support/costly.py): written from a CPU profile, read
back the same, every entry a test that exists, and the marker set on exactly those tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import mark_lane_items
from tests.support.costly import COSTLY_LIST, costly_text, read_costly

ROOT = Path(__file__).resolve().parents[1]


def test_the_list_is_the_profiles_tests_at_or_above_the_threshold(tmp_path: Path) -> None:
    rows = [
        {"test": "tests/a.py::test_x[1]", "cpu_self": 0.4, "cpu_children": 0.6},  # 1.0: listed
        {"test": "tests/a.py::test_y", "cpu_self": 0.9, "cpu_children": 0.0},
        {"test": "tests/b.py::test_z", "cpu_self": 0.0, "cpu_children": 7.5},
    ]
    path = tmp_path / "costly.txt"
    path.write_text(costly_text(rows, threshold_s=1.0))
    assert read_costly(path) == {"tests/a.py::test_x[1]", "tests/b.py::test_z"}
    assert path.read_text().startswith("# Tests that cost 1 CPU-s or more")
    assert read_costly(tmp_path / "absent.txt") == frozenset()


def test_every_listed_test_exists() -> None:
    """A renamed or deleted test leaves a stale line: its file and function must still be there
    (`make costly-list` measures the lane again)."""
    listed = read_costly()
    assert listed, f"{COSTLY_LIST} lists no test"
    defined: dict[str, set[str]] = {}
    for node in sorted(listed):
        path, _, rest = node.partition("::")
        name = re.sub(r"\[.*\]$", "", rest).split("::")[-1]
        if path not in defined:
            assert (ROOT / path).is_file(), f"{COSTLY_LIST}: {node}: no file {path}"
            tree = ast.parse((ROOT / path).read_text())
            defined[path] = {n.name for n in ast.walk(tree)
                             if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        assert name in defined[path], f"{COSTLY_LIST}: {node}: no test {name} in {path}"


def test_the_marker_goes_on_the_listed_tests_only() -> None:
    def item(nodeid: str) -> SimpleNamespace:
        marks: list[pytest.MarkDecorator] = []
        return SimpleNamespace(nodeid=nodeid, fixturenames=[], module=None, marks=marks,
                               add_marker=marks.append)

    listed, other = item("tests/a.py::test_x[1]"), item("tests/a.py::test_x[2]")
    mark_lane_items([listed, other], frozenset({"tests/a.py::test_x[1]"}))
    assert [m.name for m in listed.marks] == ["costly"] and other.marks == []
