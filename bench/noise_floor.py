"""The A/A noise floor of a recorded experiment under each way of measuring it (issue 21).

For each A/A cell named (default: every cell with at least ``--min-runs`` counted runs) prints
one table: per variant (declared window with and without disturbance detection, shorter
windows ending where it ends, a steady-state start), the runs' window NOTPM, the between-run
CV, the verdict rule's MDE at 5 vs 5 and at the experiment's own repetitions, and whether the
cell drifted over the night (Spearman's ρ, CV after removing a line in time). The figures are
recomputed from the runs already recorded (``analysis/comparisons/aa_variants.py``): nothing runs
again.

The database is copied to a temporary folder and the copy is opened (a committed database is
never opened in place).

Usage: ``.venv/bin/python bench/noise_floor.py DB EXPERIMENT [--cell LABEL]… [--against N]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.comparisons.aa_variants import aa_variants, drift  # noqa: E402
from analysis.tables import frames  # noqa: E402
from core.errors import FlushbenchError  # noqa: E402
from store.db import upgrade  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("experiment")
    ap.add_argument("--cell", action="append", default=[], help="an A/A cell's label")
    ap.add_argument("--min-runs", type=int, default=5,
                    help="without --cell: cells with at least this many counted runs")
    ap.add_argument("--against", type=int, default=4,
                    help="runs of the other cell for the second MDE column (default 4)")
    ap.add_argument("--short", type=float, action="append", default=[],
                    help="a shorter window in minutes (repeatable; default 2.5)")
    args = ap.parse_args()
    if not args.db.is_file():
        sys.exit(f"bench/noise_floor.py: {args.db}: no such results database")
    try:
        _run(args)
    except FlushbenchError as exc:  # no such experiment or cell, too few runs, not a database
        sys.exit(f"bench/noise_floor.py: {exc.render()}")


def _run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="flushbench-noise-") as tmp:
        db = Path(tmp) / args.db.name
        shutil.copyfile(args.db, db)
        upgrade(db, i_have_a_backup=True)
        cells = args.cell or _aa_cells(db, args.experiment, args.min_runs)
        for label in cells:
            _table(db, args.experiment, label, args.against,
                   tuple(60.0 * m for m in (args.short or [2.5])))


def _aa_cells(db: Path, experiment: str, min_runs: int) -> list[str]:
    cs = frames.cell_summary(db, experiment)
    return [str(c) for c in cs.loc[cs["n_done"] - cs["n_excluded"] >= min_runs, "cell_label"]]


def _table(db: Path, experiment: str, label: str, against: int,
           windows_s: tuple[float, ...]) -> None:
    variants = aa_variants(db, experiment, label, windows_s=windows_s)
    print(f"\n### {label}\n")
    print(f"| variant | runs | window NOTPM | CV | MDE 5 vs 5 | MDE n vs {against} "
          "| drift ρ (p) | CV after a line in time |")
    print("|---|---|---|---|---|---|---|---|")
    for v in variants:
        d = drift(db, experiment, v)
        values = " / ".join(f"{x:,.0f}" for x in v.notpm)
        print(f"| {v.name} | {v.n} | {values} | {v.cv_pct:.1f} % | {v.mde_pct(5, 5):.1f} % "
              f"| {v.mde_pct(v.n, against):.1f} % | {d['rho']:+.2f} ({d['p']:.2f}) "
              f"| {d['detrended_cv_pct']:.1f} % |")


if __name__ == "__main__":
    main()
