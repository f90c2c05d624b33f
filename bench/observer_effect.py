"""Observer effect of the sampler: the same cell with sampling at 10 s vs sampling off,
alternated A/B/A/B, on a real MariaDB sandbox with the Go driver. Prints NOTPM per run, the
mean difference, and the sampler's own collection time per sample.

Usage: .venv/bin/python bench/observer_effect.py [--pairs 3] [--duration 60s] [--warehouses 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import textwrap
from pathlib import Path

from analysis.tables import frames
from core.paths import work_dir
from runner.fleet.worker import run_experiment
from store.db import ResultsDB

EXPERIMENT = """\
version: 1
name: observer-{mode}
server: mariadb-debian
base_config: small
dataset: {{workload: tpcc, warehouses: {warehouses}}}
workload: {{driver: tpcc, connections: 4, warmup: 10s, duration: {duration}, report_interval: 10s}}
sampling: {{enabled: {enabled}, interval: 10s}}
window: {{start: 0s}}
pre_run: {{drain_dirty_pages: true, drain_timeout: 60s}}
matrix: {{doublewrite: [on]}}
"""


def main() -> None:
    """Run the A/B pairs and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", default="60s")
    parser.add_argument("--warehouses", type=int, default=1)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="observer-"))
    db = ResultsDB(tmp / "observer.sqlite")
    files = {}
    for mode, enabled in (("on", "true"), ("off", "false")):
        files[mode] = tmp / f"observer-{mode}.yaml"
        files[mode].write_text(
            textwrap.dedent(
                EXPERIMENT.format(
                    mode=mode, enabled=enabled, duration=args.duration, warehouses=args.warehouses
                )
            )
        )
    notpm: dict[str, list[float]] = {"on": [], "off": []}
    for pair in range(args.pairs):
        for mode in ("on", "off"):
            out = run_experiment(files[mode], db, fresh=pair > 0, work=work_dir())
            summary = frames.run_summary(db, f"observer-{mode}")
            latest = summary.sort_values("run_id").iloc[-1]
            notpm[mode].append(float(latest["notpm"]))
            print(f"pair {pair + 1} sampling {mode:3}: {latest['notpm']:10.0f} NOTPM "
                  f"(run {int(latest['run_id'])}, {out.done} done)", flush=True)

    on, off = statistics.mean(notpm["on"]), statistics.mean(notpm["off"])
    diffs = [100 * (a - b) / b for a, b in zip(notpm["on"], notpm["off"], strict=True)]
    diff = 100 * (on - off) / off
    print(f"\nmean NOTPM sampling on {on:.0f}, off {off:.0f}: difference {diff:+.2f} %")
    print("per-pair differences: " + ", ".join(f"{d:+.2f} %" for d in diffs))
    samples = frames.samples(db, "observer-on", counters=[])
    taken = samples[~samples["missed"]] if "missed" in samples else samples
    if "collect_s" in taken and len(taken):
        median_ms = 1000 * taken["collect_s"].median()
        max_ms = 1000 * taken["collect_s"].max()
        print(f"sampler collection time per sample: median {median_ms:.1f} ms,"
              f" max {max_ms:.1f} ms over {len(taken)} samples")
    print(f"results kept in {tmp}")


if __name__ == "__main__":
    main()
