"""Every test file the documentation names exists, at the path it gives.

The docs cite test files as evidence ("`tests/store/test_wal_kept.py` checks …") and in figures
("runner/run/test_execute.py 240 s"); a file moved into a wing leaves such a path pointing at
nothing. Paths are written either from the repository root (``tests/…``) or, in the
benchmark tables, from ``tests/`` (``runner/run/test_execute.py``); a bare ``test_x.py`` must
be some file of that name under ``tests/``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A path to a Python test file, optionally from the root (``tests/…``); ``<wing>`` templates
#: and Go's ``_test.go`` files do not match.
TEST_FILE = re.compile(r"(?<![\w/.<>-])((?:[\w-]+/)*test_\w+\.py)\b")
#: Any path under ``tests/`` (support modules, fixtures, folders), for the same check.
TESTS_PATH = re.compile(r"(?<![\w/.-])(tests/[\w./-]*[\w/])")


def documents() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def named_paths(text: str) -> set[str]:
    """The test files and ``tests/`` paths a document names (templates with ``<…>`` left out)."""
    found = {m.group(1) for m in TEST_FILE.finditer(text)}
    for m in TESTS_PATH.finditer(text):
        # A template (`tests/runner/<wing>/`, `rev-<revision>.sqlite`) names no one path.
        rest = re.match(r"[^\s`)]*", text[m.end(1):])
        if rest is None or "<" not in rest.group(0):
            found.add(m.group(1))
    return found


def exists(path: str) -> bool:
    """Whether ``path`` names a file or folder, from the root or from ``tests/``."""
    if "/" not in path:
        return any((ROOT / "tests").rglob(path))
    return (ROOT / path).exists() or (ROOT / "tests" / path).exists()


def test_the_pattern_finds_both_spellings_and_skips_templates() -> None:
    text = ("`tests/store/test_wal_kept.py` checks it; runner/run/test_execute.py 240, "
            "test_layers.py; `tests/runner/<wing>/`, `tests/fixtures/results-db/rev-<r>.sqlite`,"
            " tpcc/internal/run/run_test.go")
    assert named_paths(text) == {"tests/store/test_wal_kept.py", "runner/run/test_execute.py",
                                 "test_layers.py"}
    assert not exists("runner/test_execute.py")  # the path before runner/ was split into wings
    assert exists("runner/run/test_execute.py") and exists("tests/store/test_wal_kept.py")


def test_every_test_path_in_the_docs_exists() -> None:
    missing = [f"{doc.relative_to(ROOT)}: {path}" for doc in documents()
               for path in sorted(named_paths(doc.read_text(encoding="utf-8")))
               if not exists(path)]
    assert not missing, "the docs name test paths that do not exist:\n" + "\n".join(missing)
