"""flushbench's generic import names: ours alone here, and a clash named when it is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core import import_names

PROBE = "from core.import_names import clashes\nfor line in clashes():\n    print(line)\n"


def _clashes_with(path: Path) -> list[str]:
    """The clash sentences a fresh interpreter prints with ``path`` first on sys.path."""
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"}, check=True,
                          cwd=path)
    return proc.stdout.splitlines()


def test_the_names_are_flushbenchs_own_in_its_environment() -> None:
    assert import_names.clashes() == []


def test_another_distribution_declaring_a_name_is_named(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "__init__.py").write_text("")
    info = tmp_path / "other_tool-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-tool\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("analysis\n")
    found = _clashes_with(tmp_path)
    assert len(found) == 1, found
    assert "'analysis' is also installed by other-tool" in found[0]
    assert "scripts/setup.sh" in found[0]


def test_a_folder_shadowing_a_name_is_named(tmp_path: Path) -> None:
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "__init__.py").write_text("")
    found = _clashes_with(tmp_path)
    assert len(found) == 1, found
    assert found[0].startswith(f"`import runner` loads {tmp_path / 'runner'}")
    assert f"not flushbench's {import_names.ROOT / 'runner'}" in found[0]
