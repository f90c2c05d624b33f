"""The package layers of docs/architecture.md, enforced: who may import whom.

Every ``import`` and ``from … import`` in the project's Python packages is read with ``ast``
(including imports inside functions, which hide cycles from the interpreter but not from a
reader) and checked against :data:`FORBIDDEN`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "flushbench", "runner", "analysis", "store")

#: The analysis' wings, lowest first: a wing imports only those before it.
ANALYSIS_WINGS = ("analysis.statistics", "analysis.reading", "analysis.figures",
                  "analysis.steadiness", "analysis.writes", "analysis.tables",
                  "analysis.comparisons", "analysis.response", "analysis.studies")
#: What sits above every wing: the report wing (the cross-database report among it) and the
#: bundle that packs a report.
ANALYSIS_TOP = ("analysis.report", "analysis.bundle")

#: (importing package prefix, forbidden imported prefix, why). The first matching exemption
#: in :data:`EXEMPT` lets one module through.
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("runner", "analysis", "the runner records; the analysis only reads the store"),
    ("analysis", "runner", "the analysis never starts a process"),
    ("store", "runner", "the store knows nothing of how runs are made"),
    ("store", "analysis", "the store knows nothing of how results are read"),
    *((low, "flushbench", "the command calls the packages below it, never the reverse (the"
       " version is core.version)") for low in ("runner", "analysis", "store")),
    ("runner.knobs", "runner.server", "knob translation is pure: no server"),
    ("runner.knobs", "runner.host", "knob translation is pure: no host control"),
    *((low, high, "calls go one way: worker → execute (one run) → measure")
      for low, highs in (("runner.run.measure", ("runner.run.execute",)),
                         ("runner.admission.run_context",
                          ("runner.run.execute", "runner.run.measure")))
      for high in highs),
    # The experiment model is in the core: below the runner and the analysis, it reads no
    # workload adapter, host, store or CLI (the drivers are a table of facts there).
    *(("core.experiment", target, "the experiment model is pure: it imports nothing of ours")
      for target in ("runner", "analysis", "store", "flushbench")),
    *(("core", target, "the core (errors, units, models, flavors…) imports nothing of ours")
      for target in ("flushbench", "runner", "analysis", "store")),
    # The runner's wings (docs/architecture.md): admission is below the queue's worker and one
    # run's life; the parts the wings use know none of them.
    *(("runner.admission", target, "admission is checked before a run: it calls no run or worker")
      for target in ("runner.run",)),
    # experiment → admission → run → fleet, one way: the fleet hands its lease down to a run
    # (runner.run.run_lease) and both speak to the store's ledger, never to the fleet.
    *((low, "runner.fleet", "the fleet calls admission and a run, never the reverse")
      for low in ("runner.run", "runner.admission")),
    *((low, target, "the wings use servers, hosts, knobs and workloads; never the reverse")
      for low in ("runner.server", "runner.host", "runner.knobs", "runner.workloads",
                  "runner.connection", "runner.proc", "runner.datasets")
      for target in ("runner.admission", "runner.fleet", "runner.run")),
    # The analysis' wings (docs/architecture.md, "The analysis"): each imports only the ones
    # before it, and none the report modules above them all.
    *((low, high, "the analysis' wings call one way: " + " → ".join(
        w.removeprefix("analysis.") for w in ANALYSIS_WINGS) + " → the report")
      for i, low in enumerate(ANALYSIS_WINGS)
      for high in (*ANALYSIS_WINGS[i + 1:], *ANALYSIS_TOP)),
)


@dataclass(frozen=True)
class Violation:
    """One forbidden import: where it is, what it imports, and the rule it breaks."""

    module: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported} — {self.rule}"


def module_name(path: Path, root: Path) -> str:
    """``runner/knobs/rules.py`` → ``runner.knobs.rules``; a package's ``__init__`` → its name."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every module an AST imports, absolute, with its line (relative imports resolved).

    ``from a import b`` counts as importing ``a.b`` (``b`` may be a submodule; when it is a
    name, ``a.b`` still lies within ``a``).
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[Violation]:
    """Every import under ``root``'s packages that :data:`FORBIDDEN` refuses."""
    out: list[Violation] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts and path.name != "env.py":
                continue  # revisions are frozen history
            module = module_name(path, root)
            tree = ast.parse(path.read_text(), filename=str(path))
            for line, imported in imported_modules(tree, module, path.name == "__init__.py"):
                for source, target, why in FORBIDDEN:
                    if _within(module, source) and _within(imported, target):
                        out.append(Violation(module, line, imported, why))
                        break
    return sorted(set(out), key=lambda v: (v.module, v.line, v.imported))


def test_the_project_keeps_its_layers() -> None:
    found = violations(ROOT)
    assert found == [], "forbidden imports:\n" + "\n".join(map(str, found))


@pytest.mark.parametrize(("module_path", "source", "rule"), [
    ("runner/knobs/extra.py", "from runner.server.sandbox import Sandbox\n", "no server"),
    ("runner/execute_more.py", "def f():\n    import analysis.tables.frames\n", "only reads"),
    ("analysis/more.py", "from runner.fleet import queue\n", "never starts a process"),
    ("store/more.py", "from ..runner.fleet.queue import enqueue\n", "how runs are made"),
    ("core/units.py", "from flushbench.cli import app\n", "imports nothing of ours"),
    ("runner/run/execute.py", "def f():\n    from runner.fleet.worker import serve\n",
     "never the reverse"),
    ("runner/run/measure.py", "from runner.fleet.lease import Heartbeat\n", "never the reverse"),
    ("runner/admission/run_context.py", "from runner.fleet import queue\n",
     "never the reverse"),
    ("runner/run/metadata.py", "from flushbench import __version__\n", "core.version"),
    ("store/ledger/x.py", "import flushbench\n", "core.version"),
    ("core/experiment/spec.py", "def f():\n    from runner.workloads.registry import adapters\n",
     "experiment model is pure"),
    ("core/experiment/stored.py", "from store.models import Experiment\n",
     "experiment model is pure"),
    ("analysis/reading/more.py", "from analysis.figures import plots\n", "wings call one way"),
    ("analysis/figures/more.py", "def f():\n    from analysis.comparisons.compare import x\n",
     "wings call one way"),
    ("analysis/tables/more.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from analysis.report.model import ReportModel\n", "wings call one way"),
], ids=["knobs-server", "lazy-runner-analysis", "analysis-runner", "relative-store-runner",
        "core-cli", "execute-worker", "run-fleet", "admission-fleet", "run-command",
        "store-command", "model-workloads", "model-store", "reading-figures",
        "lazy-figures-comparisons", "typed-tables-report"])
def test_a_forbidden_import_is_caught(tmp_path: Path, module_path: str, source: str,
                                      rule: str) -> None:
    """The checker itself: each kind of forbidden import added to a module is reported."""
    target = tmp_path / module_path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    found = violations(tmp_path, packages=(module_path.split("/")[0],))
    assert len(found) == 1 and rule in found[0].rule, found


def test_allowed_imports_pass(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "ok.py").write_text(
        "from store.models import Run\nfrom core.flavors import label\nimport pandas\n")
    assert violations(tmp_path, packages=("analysis",)) == []


def _runtime_imports(tree: ast.AST, type_checking: bool = False) -> ast.AST:
    """``tree`` without its ``if TYPE_CHECKING:`` blocks (annotations only: never a cycle at
    run time), or whole with ``type_checking``."""
    if type_checking:
        return tree
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = [ast.Pass()]
    return tree


def module_graph(root: Path, packages: tuple[str, ...] = PACKAGES, *,
                 type_checking: bool = False) -> dict[str, set[str]]:
    """Module → the project modules it imports at run time (function-level imports included,
    ``TYPE_CHECKING`` blocks aside unless ``type_checking``; ``from a import b`` resolved to
    ``a.b`` when that is a module, else to ``a``)."""
    paths = {module_name(p, root): p for package in packages
             for p in sorted((root / package).rglob("*.py"))
             if not ("migrations" in p.parts and p.name != "env.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = _runtime_imports(ast.parse(path.read_text(), filename=str(path)), type_checking)
        targets = set()
        for _, imported in imported_modules(tree, module, path.name == "__init__.py"):
            parts = imported.split(".")
            while parts and ".".join(parts) not in paths:
                parts.pop()
            target = ".".join(parts)
            # A module importing its own package's __init__ is how Python loads it: no edge.
            if target and target != module and not _within(module, target):
                targets.add(target)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_circle_of_modules_imports_itself() -> None:
    cycles = import_cycles(module_graph(ROOT))
    assert cycles == [], "modules importing each other in a circle:\n" + "\n".join(
        " → ".join(group) for group in cycles)


def test_a_circle_is_caught_even_through_a_function_level_import(tmp_path: Path) -> None:
    """The cycle check itself: a circle closed by an import inside a function is found; one
    closed only under ``TYPE_CHECKING`` is not a circle."""
    pkg = tmp_path / "analysis"
    pkg.mkdir()
    (pkg / "a.py").write_text("from analysis import b\n")
    (pkg / "b.py").write_text("def f():\n    from analysis.c import g\n")
    (pkg / "c.py").write_text("import analysis.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from analysis.a import x\n")
    assert import_cycles(module_graph(tmp_path, ("analysis",))) == [
        ["analysis.a", "analysis.b", "analysis.c"]]
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    import analysis.a\n")
    assert import_cycles(module_graph(tmp_path, ("analysis",))) == []


def test_the_runner_root_holds_at_most_eight_modules() -> None:
    """runner/ is in wings (admission, fleet, run, server, host, knobs, workloads); its root
    keeps only what every wing shares."""
    root_files = sorted(p.name for p in (ROOT / "runner").glob("*.py"))
    assert len(root_files) <= 8, root_files


def test_no_circle_of_modules_even_through_type_annotations() -> None:
    """A circle closed only under ``if TYPE_CHECKING:`` still ties two modules together: a
    reader, or a type checker, needs both at once. No package has one (the experiment model
    and the workload drivers once formed one: the spec imported the registry inside
    functions, the adapters the spec's types)."""
    cycles = import_cycles(module_graph(ROOT, type_checking=True))
    assert cycles == [], "modules importing each other in a circle:\n" + "\n".join(
        " → ".join(group) for group in cycles)


def test_a_circle_closed_under_type_checking_is_caught_when_annotations_count(
        tmp_path: Path) -> None:
    pkg = tmp_path / "analysis"
    pkg.mkdir()
    (pkg / "maker.py").write_text("from analysis import reader\n")
    (pkg / "reader.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from analysis.maker import Made\n")
    assert import_cycles(module_graph(tmp_path, ("analysis",))) == []
    assert import_cycles(module_graph(tmp_path, ("analysis",), type_checking=True)) == [
        ["analysis.maker", "analysis.reader"]]


def test_the_analysis_root_holds_at_most_twelve_modules() -> None:
    """analysis/ is in wings (reading, figures, steadiness, writes, tables, comparisons,
    response, studies, statistics) under the report wing; its root keeps what packs a
    report."""
    root_files = sorted(p.name for p in (ROOT / "analysis").glob("*.py"))
    assert len(root_files) <= 12, root_files


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[Violation]:
    """Every use of another module's underscore name in ``root``'s packages: ``from m import
    _x``, ``m._x`` where ``m`` names a project module, and a private module (``a/_m.py``)
    imported from outside its own package ``a``."""
    modules = {module_name(p, root) for package in packages for p in (root / package).rglob("*.py")}
    out: list[Violation] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            module = module_name(path, root)
            is_package = path.name == "__init__.py"
            own_package = module if is_package else module.rpartition(".")[0]
            tree = ast.parse(path.read_text(), filename=str(path))
            bound: dict[str, str] = {}  # local name → the project module it names
            for line, imported in imported_modules(tree, module, is_package):
                parts = imported.split(".")
                for i, part in enumerate(parts):
                    prefix = ".".join(parts[: i + 1])
                    if not _private(part):
                        continue
                    if prefix in modules:  # a private module: its own package only
                        if not _within(own_package, ".".join(parts[:i])):
                            out.append(Violation(module, line, imported,
                                                 "a private module used outside its package"))
                    elif ".".join(parts[:i]) in modules:
                        out.append(Violation(module, line, imported,
                                             "another module's private name: make it public"))
                    break
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name in modules:
                            bound[alias.asname or alias.name] = alias.name
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    for alias in node.names:
                        if f"{node.module}.{alias.name}" in modules:
                            bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and _private(node.attr):
                    owner = bound.get(ast.unparse(node.value))
                    if owner and owner != module:
                        out.append(Violation(module, node.lineno, f"{owner}.{node.attr}",
                                             "another module's private name: make it public"))
    return sorted(set(out), key=lambda v: (v.module, v.line, v.imported))


def test_no_module_uses_another_modules_private_names() -> None:
    """A helper two modules share is public and documented in the module that owns its job."""
    found = private_uses(ROOT)
    assert found == [], "private names used across modules:\n" + "\n".join(map(str, found))


@pytest.mark.parametrize(("files", "expected"), [
    ({"analysis/a.py": "def _x(): ...\n", "analysis/b.py": "from analysis.a import _x\n"},
     ["analysis.b imports analysis.a._x"]),
    ({"analysis/a.py": "def _x(): ...\n",
      "analysis/b.py": "def f():\n    from analysis import a\n    return a._x()\n"},
     ["analysis.b imports analysis.a._x"]),
    ({"analysis/s/__init__.py": "", "analysis/s/_m.py": "", "analysis/b.py":
      "from analysis.s._m import y\n"}, ["analysis.b imports analysis.s._m.y"]),
    ({"analysis/s/__init__.py": "", "analysis/s/_m.py": "def y(): ...\n",
      "analysis/s/c.py": "from analysis.s._m import y\nfrom analysis.s import _m\n",
      "analysis/d.py": "import numpy as np\nnp._x = 1\n"}, []),
], ids=["from-import", "module-attribute", "private-module-outside", "allowed"])
def test_a_private_name_used_across_modules_is_caught(tmp_path: Path, files: dict[str, str],
                                                      expected: list[str]) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = private_uses(tmp_path, packages=("analysis",))
    assert [f"{v.module} imports {v.imported}" for v in found] == expected, found
