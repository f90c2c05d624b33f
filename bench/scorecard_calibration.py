"""How often the reproduction scorecard grades a comparison wrongly (docs/statistics.md).

Simulated lognormal runs of two cells (the reference's a and b rows), judged by the verdict
rule (`analysis.statistics.verdicts.verdict`, independent runs) and graded against a reference
ratio (`analysis.comparisons.scorecard.grade`). Prints one markdown row per (truth, reference,
runs): the share of each grade. Seeded: the same versions print the same table.

    .venv/bin/python bench/scorecard_calibration.py [--sims 4000] [--cv 0.10]
"""

from __future__ import annotations

import argparse
import math
from collections import Counter

import numpy as np

from analysis.comparisons import scorecard
from analysis.statistics.verdicts import verdict

CASES = [  # (true ratio, reference ratio, runs a side)
    (1.55, 1.55, 4), (1.55, 1.55, 6), (1.36, 1.55, 4), (1.36, 1.55, 6), (1.00, 1.55, 4),
    (0.90, 0.90, 4), (1.00, 0.90, 4), (1.00, 1.00, 4), (1.00, 1.00, 6), (1.20, 1.55, 4),
]


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--cv", type=float, default=0.10)
    args = parser.parse_args()
    sd = math.sqrt(math.log1p(args.cv ** 2))
    print(f"CV {100 * args.cv:g} %, {args.sims} experiments per line, seed 2011\n")
    print("| truth | reference | runs | " + " | ".join(scorecard.GRADES) + " |")
    print("|---" * (3 + len(scorecard.GRADES)) + "|")
    for true, reference, n in CASES:
        rng = np.random.default_rng(2011)
        counts: Counter[str] = Counter()
        for _ in range(args.sims):
            b = np.exp(rng.normal(0.0, sd, n))
            a = np.exp(rng.normal(math.log(true), sd, n))
            counts[scorecard.grade(reference, verdict(b, a))[0]] += 1
        shares = " | ".join(f"{100 * counts[g] / args.sims:.1f} %" for g in scorecard.GRADES)
        print(f"| {true:.2f}× | {reference:.2f}× | {n} vs {n} | {shares} |")


if __name__ == "__main__":
    main()
