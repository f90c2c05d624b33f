"""A stored experiment's spec is read typed, through the experiment model, never as a dict.

The store keeps the spec as JSON; :class:`core.experiment.stored.StoredExperiment` reads it back
as the typed model. A module that reads ``row["spec"]`` or ``info.get("spec")`` instead would
key into the raw dump and drift from the model silently, so every Python file of the project
outside ``core/experiment`` is scanned (with ``ast``) for such a read.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where project code lives (the packages, the calibration scripts, the studies' scripts).
SCANNED = ("core", "flushbench", "runner", "analysis", "store", "bench", "docs", "scripts")
#: The one place that reads the stored dump.
READER = Path("core") / "experiment"
_KEY = "spec"


def raw_spec_reads(tree: ast.AST) -> list[int]:
    """Lines of ``x["spec"]`` and ``x.get("spec")`` / ``x.pop("spec")`` / ``x.setdefault(…)``
    in ``tree``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and node.slice.value == _KEY:
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop", "setdefault") and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == _KEY:
            lines.append(node.lineno)
    return sorted(lines)


def raw_reads_under(root: Path, folders: tuple[str, ...] = SCANNED) -> list[str]:
    """``path:line`` of every raw spec read in ``root``'s folders, ``core/experiment`` aside."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root)
            if relative.is_relative_to(READER) or "migrations" in relative.parts:
                continue  # the reader itself; migrations are frozen history
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found += [f"{relative}:{line}" for line in raw_spec_reads(tree)]
    return found


def test_no_module_reads_the_stored_spec_as_a_dict() -> None:
    found = raw_reads_under(ROOT)
    assert found == [], ("raw reads of a stored spec (read it through"
                         " core.experiment.stored.StoredExperiment):\n" + "\n".join(found))


def test_a_raw_spec_read_is_caught(tmp_path: Path) -> None:
    """The scan itself: each kind of raw read planted in a module is reported; the model's
    own reader and a typed read are not."""
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "planted.py").write_text(
        "def f(exp, info, row):\n"
        "    a = exp['spec']['workload']\n"
        "    b = info.get('spec')\n"
        "    return a, b, row.pop(\"spec\", None), exp['stored'].spec.workload\n")
    (tmp_path / "core" / "experiment").mkdir(parents=True)
    (tmp_path / "core" / "experiment" / "stored.py").write_text("x = {}['spec']\n")
    assert raw_reads_under(tmp_path, ("analysis", "core")) == [
        "analysis/planted.py:2", "analysis/planted.py:3", "analysis/planted.py:4"]
