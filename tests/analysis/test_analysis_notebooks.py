"""Both notebooks execute top to bottom against a results database (public API only)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
#: The 2011 study's results, committed with its report (docs/study-2011/README.md).
STUDY_DB = NOTEBOOKS.parent / "docs" / "study-2011" / "stability-2011.sqlite"
#: The allocator example's results (docs/allocators/README.md): a sysbench experiment.
ALLOCATORS_DB = NOTEBOOKS.parent / "docs" / "allocators" / "allocators-example.sqlite"


def _execute(name: str, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Run a notebook top to bottom in a fresh kernel; return its code cells' outputs."""
    repo = NOTEBOOKS.parent
    # The kernel inherits this environment; PYTHONPATH makes the repo's packages importable
    # whatever directory the kernel starts in.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [
        str(repo), os.environ.get("PYTHONPATH", "")])))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=120,
                            resources={"metadata": {"path": str(repo)}})
    client.execute()
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


@pytest.mark.mysql
@pytest.mark.parametrize("name", ["explore.ipynb", "stability-study.ipynb"])
def test_notebook_runs(name: str, real_results_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a results DB written by a real short run (or FLUSHBENCH_TEST_RESULTS_DB)."""
    db = os.environ.get("FLUSHBENCH_TEST_RESULTS_DB") or str(real_results_db)
    monkeypatch.setenv("FLUSHBENCH_DB", db)
    monkeypatch.delenv("FLUSHBENCH_EXPERIMENT", raising=False)  # the latest experiment
    outputs = _execute(name, monkeypatch)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no figure was displayed"


def test_the_stability_notebook_opens_the_committed_2011_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/study-2011's database stays readable by the notebook (on a copy: never written)."""
    db = tmp_path / "stability-2011.sqlite"
    shutil.copy(STUDY_DB, db)
    monkeypatch.setenv("FLUSHBENCH_DB", str(db))
    monkeypatch.setenv("FLUSHBENCH_EXPERIMENT", "stability-2011")
    outputs = _execute("stability-study.ipynb", monkeypatch)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no figure was displayed"
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                   for o in outputs)
    assert "max_dirty_pages_pct" in text


def test_the_explore_notebook_shows_the_allocator_example_in_tps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sysbench experiment is explored in its own metric (TPS), never as NOTPM."""
    db = tmp_path / "allocators-example.sqlite"
    shutil.copy(ALLOCATORS_DB, db)
    monkeypatch.setenv("FLUSHBENCH_DB", str(db))
    monkeypatch.setenv("FLUSHBENCH_EXPERIMENT", "allocators-example")
    outputs = _execute("explore.ipynb", monkeypatch)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    figures = [o["data"]["application/vnd.plotly.v1+json"] for o in outputs
               if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no figure was displayed"
    tables = "".join(str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "TPS_mean" in tables and "notpm_mean" not in tables
    titles = [str(f["layout"].get("title", {}).get("text", "")) for f in figures]
    assert any(t.startswith("TPS per 10 s interval") for t in titles), titles
    assert any("(TPS, window average)" in t for t in titles), titles
