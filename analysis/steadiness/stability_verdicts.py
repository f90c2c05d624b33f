"""Is one row steadier than another? The one verdict rule on a per-run stability figure.

A ranking by median stability score orders rows whose runs overlap: with 3 runs of 18
intervals a row's scores swing 7 → 59 (issue 51). A ranking word — "steadier", "less steady",
"the steadiest" — is therefore said only when a test separates the rows: the verdict rule of
:func:`analysis.statistics.verdicts.design_verdict` (exact rank test and Welch-on-log
interval, both needed) applied to each run's **CV of its window's per-interval throughput**
(% of the mean). The CV rather than the score: the score (100 × p5 / median) is 0 for every
run with an interval of no transaction, where a log ratio has no value; the CV is positive
for any line that moves, scale-free, and rises with holes, stalls and oscillations alike.
Lower is steadier. Method: ``docs/statistics.md``, "Stability claims".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.statistics.verdicts import FASTER, NOT_ENOUGH, SLOWER, design_verdict

STEADIER = "steadier"
LESS_STEADY = "less steady"
NO_CLEAR = "no clear difference in steadiness"


@dataclass(frozen=True)
class Steadiness:
    """Row b against row a: the word the rule allows, the CV ratio b/a and why."""

    word: str
    ratio: float
    reason: str

    @property
    def separated(self) -> bool:
        """Whether the rule tells the two rows apart."""
        return self.word in (STEADIER, LESS_STEADY)


def steadiness(cv_a: Sequence[float], cv_b: Sequence[float],
               blocks_a: Sequence[object] | None = None,
               blocks_b: Sequence[object] | None = None) -> Steadiness:
    """Row b's steadiness against row a's, from each counted run's CV (%); ``blocks_*``: each
    run's block when the design ran in blocks (the blocked rule then), else None."""
    keep_a = [i for i, x in enumerate(cv_a) if math.isfinite(x) and x > 0]
    keep_b = [i for i, x in enumerate(cv_b) if math.isfinite(x) and x > 0]
    values = np.asarray([cv_a[i] for i in keep_a] + [cv_b[i] for i in keep_b], dtype=float)
    blocks = None
    if blocks_a is not None and blocks_b is not None:
        blocks = [blocks_a[i] for i in keep_a] + [blocks_b[i] for i in keep_b]
    v = design_verdict(values, ["a"] * len(keep_a) + ["b"] * len(keep_b), blocks, "a", "b")
    # Higher CV is a less steady line: the rule's "faster" (b above a) reads "less steady".
    word = {FASTER: LESS_STEADY, SLOWER: STEADIER}.get(v.verdict, NO_CLEAR)
    if v.verdict == NOT_ENOUGH:
        word = NOT_ENOUGH
    return Steadiness(word, v.ratio, f"CV ratio {v.ratio:.2f}: {v.reason}")
