"""How closely the Go driver holds a fixed rate (issue #55's figure): one cell run flat out,
then at a share of the NOTPM it reached (50 % by default), on a real MariaDB sandbox. Prints
each window interval's achieved NOTPM against the target, the largest deviation, the backlog
and the window p99 — the line docs/benchmarks.md records.

Run it on a quiet machine (nothing else measuring): the flat-out run sets the rate.

Usage: .venv/bin/python bench/fixed_rate_accuracy.py [--share 0.5] [--duration 5m]
       [--warehouses 2] [--connections 8] [--arrivals uniform] [--server mariadb-debian]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from analysis.response import fixed_rate
from analysis.tables import frames
from core.paths import work_dir
from runner.fleet.worker import run_experiment
from store.db import ResultsDB

EXPERIMENT = """\
version: 1
name: {name}
server: {server}
base_config: small
dataset: {{workload: tpcc, warehouses: {warehouses}}}
workload: {{driver: tpcc, connections: {connections}, warmup: 10s, duration: {duration},
           report_interval: 10s{rate}}}
sampling: {{interval: 10s}}
window: {{start: 60s}}
pre_run: {{drain_dirty_pages: true, drain_timeout: 60s}}
matrix: {{doublewrite: [on]}}
"""


def _run(db: ResultsDB, folder: Path, name: str, args: argparse.Namespace, rate: str = ""
         ) -> int:
    """Run one single-cell experiment; its run id."""
    path = folder / f"{name}.yaml"
    path.write_text(EXPERIMENT.format(name=name, server=args.server, warehouses=args.warehouses,
                                      connections=args.connections, duration=args.duration,
                                      rate=rate))
    outcome = run_experiment(path, db, work=work_dir())
    if outcome.done != 1:
        raise SystemExit(f"{name}: the run did not finish ({outcome.failed} failed);"
                         f" `flushbench show` on {db.url} has its evidence")
    return int(frames.runs(db, name)["run_id"].iloc[-1])


def main() -> None:
    """Run flat out, then at ``--share`` of that rate, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--share", type=float, default=0.5)
    parser.add_argument("--duration", default="5m")
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--arrivals", choices=("uniform", "poisson"), default="uniform")
    parser.add_argument("--server", default="mariadb-debian")
    args = parser.parse_args()
    if not 0 < args.share < 1:
        parser.error("--share is a fraction of the flat-out rate, between 0 and 1 (e.g. 0.5)")

    folder = Path(tempfile.mkdtemp(prefix="fixed-rate-"))
    db = ResultsDB(folder / "fixed-rate.sqlite")
    flat_id = _run(db, folder, "flat-out", args)
    flat = float(frames.run_summary(db, "flat-out").set_index("run_id").loc[flat_id, "notpm"])
    target = round(args.share * flat)
    print(f"flat out: {flat:,.0f} NOTPM over the window (run {flat_id});"
          f" the fixed rate: {target:,} NOTPM ({args.share:.0%}, {args.arrivals} arrivals)")
    fixed_id = _run(db, folder, "fixed", args,
                    rate=f", rate: {target}, arrivals: {args.arrivals}")
    ivl = frames.intervals(db, run_ids=[fixed_id], detail=True)
    window = ivl[ivl["in_window"]]
    deviation = (window["notpm"] - target).abs() / target
    for t, notpm, off, backlog in zip(window["t"], window["notpm"], deviation,
                                      window["rate_backlog"], strict=True):
        print(f"  t={t:5.0f} s  {notpm:9,.0f} NOTPM  {off:6.2%} off  backlog {backlog:g}")
    held = fixed_rate.per_run(ivl).loc[fixed_id]
    print(f"fixed rate {target:,} NOTPM (run {fixed_id}): window {held['notpm']:,.0f} NOTPM;"
          f" {len(window)} window intervals, largest deviation {deviation.max():.2%},"
          f" median {deviation.median():.2%}; {int((deviation > 0.02).sum())} intervals more"
          f" than 2 % off; backlog at most {held['backlog_max']:g}")
    print(f"results kept in {folder}")


if __name__ == "__main__":
    main()
