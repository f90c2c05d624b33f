"""The host as a block (``placement: spread``): per-host comparisons pooled by a stratified
test recover an effect that naive pooling across unequal hosts gets wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.comparisons.hosts import blocked_comparison, host_of, method_note


def spread_runs(effect: float, seed: int = 3) -> pd.DataFrame:
    """Two hosts, host B 30 % slower; cell 2 is ``effect`` × baseline on both. The baseline
    ran mostly on the slow host, the cell mostly on the fast one (an unlucky spread)."""
    rng = np.random.default_rng(seed)
    rows = []
    plan = {("A", 1): 2, ("A", 2): 6, ("B", 1): 6, ("B", 2): 2}
    speed = {"A": 10_000.0, "B": 7_000.0}
    for (host, cell), n in plan.items():
        for _ in range(n):
            mean = speed[host] * (effect if cell == 2 else 1.0)
            rows.append({"cell_id": cell, "is_baseline": cell == 1, "status": "done",
                         "notpm": rng.normal(mean, mean * 0.01), "hostname": "box",
                         "extra": {"host_id": host}})
    return pd.DataFrame(rows)


def test_blocked_ratio_recovers_the_effect_naive_pooling_misses() -> None:
    df = spread_runs(1.10)
    (row,) = blocked_comparison(df).to_dict("records")
    naive = df.loc[df.cell_id == 2, "notpm"].mean() / df.loc[df.cell_id == 1, "notpm"].mean()
    assert naive > 1.25  # the host mix, not the knob
    assert row["ratio_ci_low"] < 1.10 < row["ratio_ci_high"] and abs(row["ratio"] - 1.10) < 0.02
    assert row["n_hosts"] == 2 and set(row["per_host"]) == {"A", "B"}
    assert row["p_value"] < 0.001 and row["heterogeneity_p"] > 0.001


def test_no_effect_is_not_significant_and_hosts_that_disagree_are_flagged() -> None:
    (same,) = blocked_comparison(spread_runs(1.0)).to_dict("records")
    assert same["ratio_ci_low"] < 1.0 < same["ratio_ci_high"]
    df = spread_runs(1.10)
    df.loc[(df.extra.map(lambda e: e["host_id"]) == "B") & (df.cell_id == 2), "notpm"] /= 1.2
    (split,) = blocked_comparison(df).to_dict("records")
    assert split["heterogeneity_p"] < 0.001  # +10 % on A, about -8 % on B


def test_host_identity_and_method_note() -> None:
    df = spread_runs(1.0)
    assert set(host_of(df)) == {"A", "B"}
    assert "2 hosts" in (method_note(df) or "")
    assert method_note(df[host_of(df) == "A"]) is None
    legacy = df.drop(columns=["extra"])  # runs recorded before host ids: the hostname
    assert set(host_of(legacy)) == {"box"}
