"""The experiment's metric in tables (TPS for sysbench, NOTPM for TPC-C), sysbench's QPS from
the interval detail, and a finished run without a window interval shown as a warning."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.reading.metric import metric_view, window_detail_rate
from analysis.tables.summaries import cell_summary, run_summary
from runner.workloads import get_workload

TPS = {"name": "TPS", "unit": "transactions per second", "counts": "transactions",
       "per_minute": False}


def test_metric_view_scales_the_per_minute_columns() -> None:
    m = metric_view({"metric": TPS, "id": 1})  # an experiment_info dict works too
    assert (m.name, m.per, m.column) == ("TPS", "s", "per_s")
    assert m.of(6000.0) == 100.0 and math.isnan(m.of(None))
    cells = pd.DataFrame({"notpm_mean": [600.0], "notpm_ci_low": [540.0], "notpm_cv_pct": [3.0]})
    scaled = m.scaled(cells)
    assert scaled["notpm_mean"].tolist() == [10.0] and scaled["notpm_ci_low"].tolist() == [9.0]
    assert scaled["notpm_cv_pct"].tolist() == [3.0]  # a percentage is not a rate
    notpm = metric_view(None)
    assert (notpm.name, notpm.scale) == ("NOTPM", 1.0)


def test_metric_view_of_each_adapter_matches_what_the_queue_stores() -> None:
    for driver, name in (("sysbench", "TPS"), ("tpcc", "NOTPM")):
        metric = get_workload(driver).metric
        assert metric_view(vars(metric)).name == name


def test_window_detail_rate_is_weighted_by_interval_length() -> None:
    ivl = pd.DataFrame({"run_id": [1, 1, 1, 2], "interval_s": [10.0, 10.0, 5.0, 10.0],
                        "in_window": [False, True, True, True],
                        "qps": [1.0, 100.0, 400.0, np.nan]})
    qps = window_detail_rate(ivl)
    assert qps.to_dict() == {1: pytest.approx((100 * 10 + 400 * 5) / 15)}
    assert window_detail_rate(ivl.drop(columns=["qps"])).empty


def _runs() -> pd.DataFrame:
    rows = []
    for run_id, cell_id, status in ((1, 10, "done"), (2, 10, "done"), (3, 20, "done"),
                                    (4, 20, "failed")):
        rows.append({"run_id": run_id, "cell_id": cell_id, "position": cell_id // 10,
                     "cell_label": f"connections={cell_id}", "is_baseline": cell_id == 10,
                     "knobs": {"connections": cell_id}, "connections": cell_id,
                     "repetition": 1, "status": status})
    df = pd.DataFrame(rows)
    df.attrs["knobs"] = ["connections"]
    return df


def _intervals() -> pd.DataFrame:
    rows = []
    for run_id in (1, 2, 3):
        for seq in range(1, 9):
            # Run 3 reported only warmup and early intervals: nothing inside its window.
            rows.append({"run_id": run_id, "seq": seq, "t": 10.0 * seq, "interval_s": 10.0,
                         "primary_count": 1000.0 + seq, "p95_ms": 5.0, "p99_ms": 9.0,
                         "errors": 0.0, "retries": 0.0,
                         "in_window": seq > 4 and run_id != 3})
    df = pd.DataFrame(rows)
    df["notpm"] = df["primary_count"] * 60 / df["interval_s"]
    return df


def test_done_run_without_window_data_is_a_warning_on_the_run_and_its_cell() -> None:
    rs = run_summary(None, runs_df=_runs(), intervals_df=_intervals())
    run3 = rs.set_index("run_id").loc[3]
    assert math.isnan(run3["notpm"])
    assert run3["warnings"] == ("done, no data in window: 8 intervals reported, none inside "
                                "the measurement window")
    cs = cell_summary(None, run_summary_df=rs).set_index("cell_id")
    missing = cs.loc[20]  # a row, not silently dropped
    assert (missing["n_done"], missing["n_no_data"], missing["n_failed"]) == (0, 1, 1)
    assert "1 done, no data in window: run 3" in missing["warnings"]
    assert math.isnan(missing["notpm_mean"])
    ok = cs.loc[10]
    assert (ok["n_done"], ok["n_no_data"]) == (2, 0) and "no data" not in ok["warnings"]
