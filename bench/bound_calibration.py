"""What bound each run (``analysis/writes/bound.py``) on the recorded studies, row by row.

Per row of each committed study (the two 2011 studies, storage-limited; the allocators
example, sysbench read-only unthrottled): the attribution most of its runs share and how many
runs share it, the runs named otherwise, and the figures each candidate is judged on, as
ranges over the row's runs — the storage limit's share of sampler intervals at ≥ 90 % of it
(or, without the group's per-sample counters, the storage proof's mean share of it), the CPU
busy share, the share of window samples with the checkpoint age past 7/8 of its maximum,
free-page waits per second and connections waiting on row locks on average (with the row's
median, the figure the study's write-up quotes). Below each study, the storage proof's rule
applied to the same runs where both exist, to show the two rules agree. ``--real-run`` adds a
quickstart-like run made here (1 warehouse, 4 connections, unthrottled: CPU-bound on a
2-core machine; needs a built server and the tpcc binary). The tables are those of
``docs/statistics.md`` ("What bound a run"); ``tests/analysis/test_cost_bound.py`` and
``tests/analysis/test_bound_real_run.py`` check the rows it names.

Each database is copied first (a committed database is never opened in place); the figures
come from the run digests, as the analysis reads them.

Usage: ``.venv/bin/python bench/bound_calibration.py [--real-run] [NAME…]`` (default: every
study).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from analysis.comparisons.scorecard import row_names  # noqa: E402
from analysis.tables import efficiency, frames  # noqa: E402
from analysis.writes import bound
from bench.calibration_studies import chosen_studies, markdown, span, study_copies  # noqa: E402

#: Recorded database (tests/support/recorded.py) → its experiment.
STUDIES = {"stability-2011-flash": "stability-2011-flash", "stability-2011": "stability-2011",
           "allocators": "allocators-example"}


def table(db: Path, experiment: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per row: the attribution and the ranges of the figures; and the runs, as judged."""
    fr = frames.load(db, experiment)
    eff = efficiency.load(db, fr)
    rs = fr.run_summary.set_index("run_id")
    names = row_names(fr.experiment["stored"].spec, fr.cell_summary)
    runs = eff.bound_runs.join(rs[["cell_id", "cell_label"]])
    rows = []
    for cell_id, cell in eff.bound_cells.iterrows():
        g = runs[runs["cell_id"] == cell_id]
        proof = g["storage_source"].eq("storage proof").all()
        other = g[g["bound"] != cell["bound"]]
        rows.append({
            "row": names.get(int(cell_id)) or str(g["cell_label"].iloc[0]),
            "bound": f"{bound.short(cell['bound'])} ({cell['bound_runs']})",
            "others": ", ".join(f"run {r}: {bound.short(b)}" for r, b in other["bound"].items())
                      or "–",
            "storage": ("no limit" if not g["storage_limit"].notna().any()
                        else f"mean {span(g['storage_mean_share'], '.0f', 100)} % (proof)"
                        if proof else
                        f"{span(g['storage_at_limit_share'], '.0f', 100)} % at limit"),
            "CPU busy %": span(g["cpu_busy_share"], ".0f", 100),
            "redo past 7/8 %": span(g["redo_past_async_share"], ".0f", 100),
            "free-page waits/s": span(g["wait_free_per_s"], ".1f"),
            "row-lock waiting": (f"{span(g['row_lock_waiting'], '.1f')} (median "
                                 f"{g['row_lock_waiting'].median():.1f} of "
                                 f"{g['connections'].median():.0f})"),
        })
    return pd.DataFrame(rows), runs


def proof_agreement(db: Path, runs: pd.DataFrame) -> str:
    """The storage proof's rule on the runs judged by the group's counters: how many it names
    the same way."""
    judged = runs[runs["storage_source"] == "group counters"]
    if not runs["storage_limit"].notna().any():
        return "no storage limit set"
    if judged.empty:
        return "no run with the group's per-sample counters: the proof's rule is the only one"
    proofs = bound.storage_proofs(db, list(judged.index))
    agree = shares = 0
    lows = []
    for run_id, r in judged.iterrows():
        measured = proofs.get(int(run_id), {}).get(bound.PROOF_KEYS[r["storage_limit"]])
        if measured is None:
            continue
        share = float(measured) / float(r["storage_limit_value"])
        shares += 1
        lows.append(share)
        by_group = r["storage_at_limit_share"] >= bound.STORAGE_MIN_SHARE
        agree += by_group == (share >= bound.STORAGE_PROOF_MIN_SHARE)
    low = f"{100 * min(lows):.0f}" if lows else "–"
    return (f"the storage proof's rule (mean ≥ {bound.STORAGE_PROOF_MIN_SHARE:.0%} of the"
            f" limit) agrees with the group counters' rule on {agree} of {shares} runs"
            f" (lowest proof mean {low} %)")


def real_run(tmp: Path) -> None:
    """A quickstart-like run made here, judged."""
    from runner.fleet.worker import run_experiment
    from store.db import ResultsDB
    from tests.support.tiny_experiment import tiny_tpcc_experiment

    path = tiny_tpcc_experiment(tmp, "cpu-bound", "fixed: {connections: 4}\n",
                                duration="20s", report_interval="2s", sampling="2s")
    db = ResultsDB(tmp / "real.sqlite")
    run_experiment(path, db, work=tmp / "work")
    df, runs = table(tmp / "real.sqlite", "cpu-bound")
    print("\nquickstart-like run here (1 warehouse, 4 connections, unthrottled, 20 s):")
    print(markdown(df))
    for run_id, r in runs.iterrows():
        print(f"  run {run_id}: {r['bound_text']}")


def _options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--real-run", action="store_true",
                    help="also make and judge a quickstart-like run here (needs mysqld)")


def main() -> None:
    args, names = chosen_studies(__doc__, list(STUDIES), _options)
    print(f"rules: storage ≥ {bound.STORAGE_MIN_SHARE:.0%} of intervals at ≥ 90 % of a limit"
          f" (proof: mean ≥ {bound.STORAGE_PROOF_MIN_SHARE:.0%}), CPU busy ≥"
          f" {bound.CPU_MIN_BUSY:.0%}, redo ≥ {bound.REDO_MIN_SHARE:.0%} of samples past 7/8,"
          f" free-page waits ≥ {bound.FREE_PAGE_MIN_PER_S:g}/s, row locks ≥"
          f" {bound.ROW_LOCK_MIN_SHARE:.0%} of the connections waiting; first in that order")
    with tempfile.TemporaryDirectory(prefix="bound-") as tmp:
        for name, db in study_copies(names, Path(tmp)):
            df, runs = table(db, STUDIES[name])
            counts = runs["bound"].value_counts()
            print(f"\n{name}: " + ", ".join(f"{bound.short(k)} {n}" for k, n in counts.items())
                  + f" of {len(runs)} runs")
            print(markdown(df))
            print("  " + proof_agreement(db, runs))
        if args.real_run:
            real_run(Path(tmp))


if __name__ == "__main__":
    main()
