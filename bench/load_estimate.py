"""How long does a TPC-C dataset build take, against what `flushbench plan` estimates?

For each warehouse count it writes a one-cell experiment (Debian's MariaDB, ``base_config:
small``, ``dataset: {workload: tpcc, warehouses: W}``, the Go driver), prepares it as
``flushbench run`` does, and builds its dataset in a fresh work folder the way a run does
(``runner.admission.run_context.ensure_experiment_dataset``: datadir, ``tpcc load``, slow
shutdown, manifest). It prints per W: the build's wall time, the loader's own (the manifest's
``load_seconds``), the CPU seconds of every child (mysqld, ``tpcc load``, the install step:
``getrusage(RUSAGE_CHILDREN)``), the load average before and after, and ``plan``'s estimate
of the same build (``runner.admission.planning.load_seconds``).

The machine's other work shows in the wall time, not in the CPU seconds: compare the load
average columns before reading a wall time.

Usage: ``.venv/bin/python bench/load_estimate.py [--warehouses 1,10] [--work DIR] [--keep]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner.admission.planning import load_seconds as planned_load_seconds  # noqa: E402
from runner.admission.run_context import (  # noqa: E402
    NullReporter,
    ensure_experiment_dataset,
    prepare,
)

EXPERIMENT = """\
version: 1
name: load-estimate-w{w}
server: mariadb-debian
base_config: small
dataset: {{workload: tpcc, warehouses: {w}}}
workload: {{driver: tpcc, connections: 1, warmup: 0s, duration: 10s, report_interval: 5s}}
sampling: {{interval: 5s}}
repetitions: 1
pre_run: {{drain_dirty_pages: false}}
"""


def children_cpu() -> float:
    """User + system seconds of every child this process has reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build_one(warehouses: int, work: Path) -> dict[str, float]:
    """Build the dataset of ``warehouses`` in ``work``; its figures and plan's estimate."""
    path = work / f"w{warehouses}.yaml"
    path.write_text(EXPERIMENT.format(w=warehouses))
    ctx = prepare(path, work)
    estimate = planned_load_seconds(ctx.exp, ctx.report.dataset_bytes)
    load_before, cpu_before = os.getloadavg()[0], children_cpu()
    started = time.monotonic()
    ensure_experiment_dataset(ctx, NullReporter())
    wall = time.monotonic() - started
    manifest = json.loads((ctx.snapshots[next(iter(ctx.snapshots))].path
                           / "manifest.json").read_text())
    return {"warehouses": warehouses, "wall_s": round(wall, 1),
            "load_s": manifest["load_seconds"], "build_s": manifest["build_seconds"],
            "children_cpu_s": round(children_cpu() - cpu_before, 1),
            "loadavg_before": load_before, "loadavg_after": os.getloadavg()[0],
            "plan_estimate_s": round(estimate, 1), "bytes": manifest["total_bytes"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouses", default="1,10", help="comma-separated counts")
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the datasets built")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="load-estimate-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for w in (int(x) for x in args.warehouses.split(",")):
            print(json.dumps(build_one(w, work)), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work / "datasets", ignore_errors=True)


if __name__ == "__main__":
    main()
