"""Every report made with the built-in Go driver states its measured gap to tpcc_start
(issue 25); reports of other drivers do not."""

from __future__ import annotations

from pathlib import Path

from analysis.report_sentences import GO_DRIVER_RESIDUAL, driver_fidelity_note
from analysis.tables import frames


def test_the_go_driver_study_carries_the_residual(recorded_study: Path) -> None:
    workload = frames.load(recorded_study, "stability-2011").experiment["spec"]["workload"]
    note = driver_fidelity_note(workload)
    assert GO_DRIVER_RESIDUAL in note and "driver: tpcc-mysql" in note


def test_sysbench_tpcc_mysql_and_batched_runs_carry_none(recorded_allocators: Path) -> None:
    workload = frames.load(recorded_allocators,
                           "allocators-example").experiment["spec"]["workload"]
    assert workload["driver"] == "sysbench" and driver_fidelity_note(workload) == ""
    assert driver_fidelity_note({"driver": "tpcc-mysql"}) == ""
    assert driver_fidelity_note({"driver": "tpcc", "mode": "batched"}) == ""
    assert driver_fidelity_note({"driver": "tpcc", "mode": "tpcc-mysql"}) != ""
