"""Both notebooks execute top to bottom against a results database (public API only)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
#: The 2011 study's results, committed with its report (docs/study-2011/README.md).
STUDY_DB = NOTEBOOKS.parent / "docs" / "study-2011" / "stability-2011.sqlite"
#: The 2011 post's twelve rows on MySQL 5.5 and XtraDB 5.5 under the flash-2011 preset
#: (docs/study-2011/README.md; committed as it stands while its queue runs across sessions).
FLASH_DB = NOTEBOOKS.parent / "docs" / "study-2011" / "stability-2011-flash.sqlite"
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


def _execute_on_committed_db(name: str, committed: Path, experiment: str, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict], list[dict]]:
    """Run notebook ``name`` on a copy of a committed results DB (never written): its outputs
    (none an error) and the plotly figures it displayed (at least one)."""
    db = tmp_path / committed.name
    shutil.copy(committed, db)
    monkeypatch.setenv("FLUSHBENCH_DB", str(db))
    monkeypatch.setenv("FLUSHBENCH_EXPERIMENT", experiment)
    outputs = _execute(name, monkeypatch)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    figures = [o["data"]["application/vnd.plotly.v1+json"] for o in outputs
               if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no figure was displayed"
    return outputs, figures


@pytest.mark.slow  # a kernel start: out of the fast lane
def test_the_stability_notebook_opens_the_committed_2011_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/study-2011's database stays readable by the notebook."""
    outputs, _ = _execute_on_committed_db("stability-study.ipynb", STUDY_DB, "stability-2011",
                                          tmp_path, monkeypatch)
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                   for o in outputs)
    assert "max_dirty_pages_pct" in text


@pytest.mark.slow  # a kernel start: out of the fast lane
def test_the_stability_notebook_opens_the_committed_flash_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/study-2011's flash rerun (two servers, the post's twelve rows) opens in the
    notebook on a copy, whatever part of its queue is done."""
    outputs, _ = _execute_on_committed_db("stability-study.ipynb", FLASH_DB,
                                          "stability-2011-flash", tmp_path, monkeypatch)
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                   for o in outputs)
    assert "xtradb-5.5" in text and "mysql-5.5" in text


@pytest.mark.slow  # a kernel start: out of the fast lane
def test_the_explore_notebook_shows_the_allocator_example_in_tps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sysbench experiment is explored in its own metric (TPS), never as NOTPM."""
    outputs, figures = _execute_on_committed_db("explore.ipynb", ALLOCATORS_DB,
                                                "allocators-example", tmp_path, monkeypatch)
    tables = "".join(str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "TPS_mean" in tables and "rank_TPS" in tables
    # One metric vocabulary (issue 26): no output — table, figure, text — says NOTPM.
    shown = json.dumps(outputs).lower()
    assert "notpm" not in shown, shown[max(0, shown.find("notpm") - 80):][:160]
    titles = [str(f["layout"].get("title", {}).get("text", "")) for f in figures]
    assert any(t.startswith("TPS per 10 s interval") for t in titles), titles
    assert any("(TPS, window average)" in t for t in titles), titles
