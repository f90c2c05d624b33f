"""Both notebooks execute top to bottom against a results database (public API only)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support.notebook_kernel import NOTEBOOKS, NotebookKernel

#: The 2011 study's results, committed with its report (docs/study-2011/README.md).
STUDY_DB = NOTEBOOKS.parent / "docs" / "study-2011" / "stability-2011.sqlite"
#: The 2011 post's twelve rows on MySQL 5.5 and XtraDB 5.5 under the flash-2011 preset
#: (docs/study-2011/README.md; committed as it stands while its queue runs across sessions).
FLASH_DB = NOTEBOOKS.parent / "docs" / "study-2011" / "stability-2011-flash.sqlite"
#: The allocator example's results (docs/allocators/README.md): a sysbench experiment.
ALLOCATORS_DB = NOTEBOOKS.parent / "docs" / "allocators" / "allocators-example.sqlite"


@pytest.mark.mysql
@pytest.mark.parametrize("name", ["explore.ipynb", "stability-study.ipynb"])
def test_notebook_runs(name: str, real_results_db: Path, kernel: NotebookKernel) -> None:
    """Against a results DB written by a real short run (or FLUSHBENCH_TEST_RESULTS_DB)."""
    db = os.environ.get("FLUSHBENCH_TEST_RESULTS_DB") or str(real_results_db)
    # No experiment named: the notebook opens the latest.
    outputs, error = kernel.run(name, {"FLUSHBENCH_DB": db, "FLUSHBENCH_EXPERIMENT": None})
    assert not error, error
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no figure was displayed"


def _execute_on_committed_db(name: str, committed: Path, experiment: str, tmp_path: Path,
                             kernel: NotebookKernel) -> tuple[list[dict], list[dict]]:
    """Run notebook ``name`` on a copy of a committed results DB (never written): its outputs
    (none an error) and the plotly figures it displayed (at least one)."""
    db = tmp_path / committed.name
    shutil.copy(committed, db)
    outputs, error = kernel.run(name, {"FLUSHBENCH_DB": str(db),
                                       "FLUSHBENCH_EXPERIMENT": experiment})
    assert not error, error
    figures = [o["data"]["application/vnd.plotly.v1+json"] for o in outputs
               if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no figure was displayed"
    return outputs, figures


@pytest.mark.slow  # a notebook run: out of the fast lane
def test_the_stability_notebook_opens_the_committed_2011_study(
    tmp_path: Path, kernel: NotebookKernel
) -> None:
    """docs/study-2011's database stays readable by the notebook."""
    outputs, _ = _execute_on_committed_db("stability-study.ipynb", STUDY_DB, "stability-2011",
                                          tmp_path, kernel)
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                   for o in outputs)
    assert "max_dirty_pages_pct" in text


@pytest.mark.slow  # a notebook run: out of the fast lane
def test_the_stability_notebook_opens_the_committed_flash_study(
    tmp_path: Path, kernel: NotebookKernel
) -> None:
    """docs/study-2011's flash rerun (two servers, the post's twelve rows) opens in the
    notebook on a copy, whatever part of its queue is done."""
    outputs, _ = _execute_on_committed_db("stability-study.ipynb", FLASH_DB,
                                          "stability-2011-flash", tmp_path, kernel)
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                   for o in outputs)
    assert "xtradb-5.5" in text and "mysql-5.5" in text


@pytest.mark.slow  # a notebook run: out of the fast lane
def test_the_explore_notebook_shows_the_allocator_example_in_tps(
    tmp_path: Path, kernel: NotebookKernel
) -> None:
    """A sysbench experiment is explored in its own metric (TPS), never as NOTPM."""
    outputs, figures = _execute_on_committed_db("explore.ipynb", ALLOCATORS_DB,
                                                "allocators-example", tmp_path, kernel)
    tables = "".join(str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "TPS_mean" in tables and "rank_TPS" in tables
    # One metric vocabulary (issue 26): no output — table, figure, text — says NOTPM.
    shown = json.dumps(outputs).lower()
    assert "notpm" not in shown, shown[max(0, shown.find("notpm") - 80):][:160]
    titles = [str(f["layout"].get("title", {}).get("text", "")) for f in figures]
    assert any(t.startswith("TPS per 10 s interval") for t in titles), titles
    assert any("(TPS, window average)" in t for t in titles), titles
