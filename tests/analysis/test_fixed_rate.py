"""A fixed-rate run against its target (analysis/response/fixed_rate.py): the window's achieved
rate, the intervals below 95 %, the queue, and a run that missed named — closed-loop runs absent."""

from __future__ import annotations

import math

import pandas as pd

from analysis.response import fixed_rate


def _intervals(run_id: int, counts: list[float], target: float | None,
               backlog: list[float] | None = None) -> pd.DataFrame:
    n = len(counts)
    return pd.DataFrame({
        "run_id": run_id, "interval_s": 10.0, "primary_count": counts,
        "notpm": [c * 6 for c in counts], "in_window": [i > 0 for i in range(n)],
        "rate_target_notpm": target if target is not None else math.nan,
        "rate_backlog": backlog or [0.0] * n,
        "rate_backlog_oldest_ms": [b * 40.0 for b in (backlog or [0.0] * n)],
    })


def test_a_run_holds_or_misses_its_target_over_its_window() -> None:
    df = pd.concat([
        # 600 NOTPM = 100 New-Orders in 10 s; the warmup interval (not in the window) is 0.
        _intervals(1, [0, 100, 94, 100, 106], 600),
        # Stalled and never caught up: 70 % of the target.
        _intervals(2, [0, 100, 0, 80, 100], 600, [0, 0, 250, 60, 0]),
        _intervals(3, [0, 300, 310, 305, 290], None),  # a closed loop
    ], ignore_index=True)
    runs = fixed_rate.per_run(df)
    assert sorted(runs.index) == [1, 2]
    one, two = runs.loc[1], runs.loc[2]
    assert one["notpm"] == 600 and not one["missed"] and one["intervals"] == 4
    assert one["intervals_below"] == 1  # 94 of 100: below 95 %
    assert two["notpm"] == 420 and two["missed"] and two["intervals_below"] == 2
    assert two["backlog_max"] == 250 and two["backlog_oldest_max_ms"] == 10_000
    assert "(held); 1 of 4 window intervals below 95%" in fixed_rate.run_text(one)
    assert "MISSED its target" in fixed_rate.run_text(two)
    assert fixed_rate.missed_reason(runs, [1]) is None
    assert fixed_rate.missed_reason(runs, [3]) is None
    why = fixed_rate.missed_reason(runs, [1, 2])
    assert why is not None and why.startswith("missed its fixed rate in 1 of 2 runs (run 2:"
                                              " 420 of 600 NOTPM)")


def test_no_rate_columns_no_fixed_rate_runs() -> None:
    df = _intervals(3, [0, 300], None).drop(columns=["rate_target_notpm", "rate_backlog",
                                                     "rate_backlog_oldest_ms"])
    assert fixed_rate.per_run(df).empty
