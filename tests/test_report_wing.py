"""The report wing (analysis/report/) keeps its shape: its modules import one way, annotations
included, and only its renderer writes HTML.

docs/architecture.md describes the report as data → sections (typed blocks) → HTML. Two
checks hold it there: the wing's import graph, ``if TYPE_CHECKING:`` imports counted (a circle
of annotations is still two modules that cannot be read apart), follows :data:`ORDER`; and no
module of the analysis but the renderer has a page's HTML tag in a string. Each check is first
shown to fail on a planted mistake.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.test_layers import import_cycles, module_graph, module_name

ROOT = Path(__file__).resolve().parents[1]
WING = "analysis.report"

#: The wing's modules, each importing only modules before it (the package's docstring).
ORDER = ("folder", "model", "figures", "sentences", "sections", "write_path", "servers",
         "searches", "first_screen", "build", "render", "writer", "cross")
#: The modules that write HTML.
RENDERERS = ("analysis.report.render",)

#: A page's HTML tag: in no string of the analysis outside the renderer.
PAGE_TAG = re.compile(r"<(?:div|table|thead|tbody|tr|td|th|p|h[1-6]|ul|ol|li|code|a|html|head|"
                      r"body|main|style|script|meta|title)[\s>/]", re.IGNORECASE)
#: Inline tags: plotly reads them in a figure's text (``<br>``, ``<b>``, ``<span style>``), so
#: the figures' modules may use them; the wing's modules other than the renderer may not.
INLINE_TAG = re.compile(r"<(?:b|i|br|span|em|strong|sub|sup)[\s>/]", re.IGNORECASE)


def wing_graph(root: Path) -> dict[str, set[str]]:
    """Module of the wing → the wing's modules it imports, ``TYPE_CHECKING`` blocks and
    function-level imports included."""
    graph = module_graph(root, ("analysis",), type_checking=True)
    return {module: {t for t in targets if t.startswith(WING + ".")}
            for module, targets in graph.items() if module == WING
            or module.startswith(WING + ".")}


def out_of_order(graph: dict[str, set[str]]) -> list[str]:
    """Every import of the wing against :data:`ORDER` (or of a module not in it)."""
    rank = {f"{WING}.{name}": i for i, name in enumerate(ORDER)}
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if module == WING:
                found.append(f"{module} imports {target}: the package imports nothing")
            elif module not in rank or target not in rank:
                found.append(f"{module} → {target}: a module not in ORDER")
            elif rank[target] >= rank[module]:
                found.append(f"{module} imports {target}, which comes after it")
    return found


def strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant of a module (f-strings' literal parts too), docstrings aside."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def html_outside_the_renderer(root: Path) -> list[str]:
    """Each string of analysis/ outside :data:`RENDERERS` holding a page's tag (or, in the
    wing, any tag)."""
    found = []
    for path in sorted((root / "analysis").rglob("*.py")):
        module = module_name(path, root)
        if module in RENDERERS:
            continue
        in_wing = module == WING or module.startswith(WING + ".")
        for line, text in strings(ast.parse(path.read_text(), filename=str(path))):
            tag = PAGE_TAG.search(text) or (INLINE_TAG.search(text) if in_wing else None)
            if tag:
                found.append(f"{module}:{line}: {tag.group(0)!r} in {text[:60]!r}")
    return found


def test_the_wing_imports_one_way() -> None:
    graph = wing_graph(ROOT)
    assert set(graph) == {WING, *(f"{WING}.{name}" for name in ORDER)}, sorted(graph)
    assert import_cycles(graph) == []
    assert out_of_order(graph) == []


def test_only_the_renderer_writes_html() -> None:
    assert html_outside_the_renderer(ROOT) == []


def _wing(tmp_path: Path, modules: dict[str, str]) -> Path:
    (tmp_path / "analysis" / "report").mkdir(parents=True)
    (tmp_path / "analysis" / "__init__.py").write_text("")
    (tmp_path / "analysis" / "report" / "__init__.py").write_text('"""The wing."""\n')
    for name, source in modules.items():
        (tmp_path / "analysis" / "report" / f"{name}.py").write_text(source)
    return tmp_path


def test_a_circle_closed_only_by_an_annotation_is_caught(tmp_path: Path) -> None:
    """The check itself: model → sections at run time is out of order, and sections ⇄ model
    through ``TYPE_CHECKING`` alone is a circle."""
    root = _wing(tmp_path, {
        "model": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from analysis.report.sections import Section\n",
        "sections": "from analysis.report.model import Heading\n",
    })
    graph = wing_graph(root)
    assert import_cycles(graph) == [["analysis.report.model", "analysis.report.sections"]]
    assert out_of_order(graph) == [
        "analysis.report.model imports analysis.report.sections, which comes after it"]
    (root / "analysis" / "report" / "model.py").write_text("import dataclasses\n")
    assert import_cycles(wing_graph(root)) == [] and out_of_order(wing_graph(root)) == []


@pytest.mark.parametrize(("module", "source", "caught"), [
    ("sections", "def f(x):\n    return f\"<p class='sub'>{x}</p>\"\n", True),
    ("sentences", "NOTE = '<div class=\"note\">'\n", True),
    ("write_path", "BR = ' <br>'\n", True),
    ("render", "def f(x):\n    return f'<table>{x}</table>'\n", False),
    ("sections", '"""A docstring may name <table> and ``<head>``."""\n', False),
], ids=["f-string-in-sections", "div-in-sentences", "inline-tag-in-the-wing",
        "the-renderer-may", "docstrings-may"])
def test_html_planted_outside_the_renderer_is_caught(tmp_path: Path, module: str, source: str,
                                                     caught: bool) -> None:
    root = _wing(tmp_path, {module: source})
    found = html_outside_the_renderer(root)
    assert bool(found) == caught, found
    if caught:
        assert found[0].startswith(f"analysis.report.{module}:")


def test_a_page_tag_elsewhere_in_the_analysis_is_caught(tmp_path: Path) -> None:
    """Outside the wing, plotly's text markup is figure text; a table is page HTML."""
    root = _wing(tmp_path, {})
    (root / "analysis" / "plots.py").write_text("T = 'a<br><b>b</b>'\n")
    assert html_outside_the_renderer(root) == []
    (root / "analysis" / "comparisons").mkdir()
    (root / "analysis" / "comparisons" / "scorecard.py").write_text(
        "T = '<table><tr><td>x</td></tr></table>'\n")
    assert [f.split(":")[0] for f in html_outside_the_renderer(root)] == [
        "analysis.comparisons.scorecard"]
