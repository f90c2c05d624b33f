"""The notebooks run top to bottom in one kernel a test module shares.

A kernel start, with the notebook's first cell importing pandas, plotly and the analysis, cost
≈ 2.5 CPU-s; the notebook tests started thirteen. Here a module starts one kernel and runs each
notebook in it afresh: before the notebook's own cells, one cell of the test's empties the
namespace (``%reset -f``: no variable of an earlier notebook survives) and sets the
environment the notebook reads (``FLUSHBENCH_DB``, ``FLUSHBENCH_EXPERIMENT``), as a new kernel
started with it would see them. What stays is what a researcher's long-lived kernel keeps too:
the imported modules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from core.paths import REPO_ROOT

NOTEBOOKS = REPO_ROOT / "notebooks"
#: A cell that runs longer than this fails the notebook (seconds).
CELL_TIMEOUT_S = 120


class NotebookKernel:
    """One Python kernel started in the repository with the repository importable; each
    :meth:`run` executes one notebook in it from an empty namespace."""

    def __init__(self) -> None:
        self._km = KernelManager(kernel_name="python3")
        # PYTHONPATH: the repo's packages import whatever directory the kernel starts in.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
            str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))}
        self._km.start_kernel(env=env, cwd=str(REPO_ROOT))

    def run(self, name: str, env: dict[str, str | None]) -> tuple[list[dict], str]:
        """Run ``notebooks/<name>`` with ``env`` set (None: unset) in the kernel's
        environment; its code cells' outputs and the first error ("" if none)."""
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        setup = ["%reset -f", "import os as _os"] + [
            f"_os.environ.pop({key!r}, None)" if value is None
            else f"_os.environ[{key!r}] = {json.dumps(str(value))}"
            for key, value in env.items()] + ["del _os"]
        nb.cells.insert(0, nbformat.v4.new_code_cell("\n".join(setup)))
        client = NotebookClient(nb, km=self._km, timeout=CELL_TIMEOUT_S,
                                resources={"metadata": {"path": str(REPO_ROOT)}})
        try:
            client.execute()
        except CellExecutionError:
            pass  # the error is in the cell's outputs, read below
        finally:
            # The kernel is this object's; the client nbclient opened to it is the run's own.
            if client.kc is not None:
                client.kc.stop_channels()
        cells = [c for c in nb.cells[1:] if c.cell_type == "code"]
        setup_errors = [o for o in nb.cells[0].get("outputs", [])
                        if o.get("output_type") == "error"]
        assert not setup_errors, setup_errors  # the test's own cell never fails
        outputs = [o for c in cells for o in c.get("outputs", [])]
        errors = [f"{o['ename']}: {o['evalue']}" for o in outputs
                  if o.get("output_type") == "error"]
        return outputs, errors[0] if errors else ""

    def close(self) -> None:
        """Stop the kernel and close what talked to it."""
        self._km.shutdown_kernel(now=True)
        self._km.cleanup_resources()


def shared_kernel() -> Iterator[NotebookKernel]:
    """The body of a module-scoped fixture: one kernel for the module's notebook runs."""
    kernel = NotebookKernel()
    try:
        yield kernel
    finally:
        kernel.close()

