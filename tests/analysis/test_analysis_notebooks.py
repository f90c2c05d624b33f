"""Both notebooks execute top to bottom against a results database (public API only)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.mark.mysql
@pytest.mark.parametrize("name", ["explore.ipynb", "stability-study.ipynb"])
def test_notebook_runs(name: str, real_results_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a results DB written by a real short run (or FLUSHBENCH_TEST_RESULTS_DB)."""
    db = os.environ.get("FLUSHBENCH_TEST_RESULTS_DB") or str(real_results_db)
    monkeypatch.setenv("FLUSHBENCH_DB", db)
    monkeypatch.delenv("FLUSHBENCH_EXPERIMENT", raising=False)  # the latest experiment
    repo = NOTEBOOKS.parent
    # The kernel inherits this environment; PYTHONPATH makes the repo's packages importable
    # whatever directory the kernel starts in.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [
        str(repo), os.environ.get("PYTHONPATH", "")])))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=120,
                            resources={"metadata": {"path": str(repo)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no figure was displayed"
