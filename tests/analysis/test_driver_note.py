"""Every report made with the built-in Go driver states its measured gap to tpcc_start
(issue 25); reports of other drivers do not."""

from __future__ import annotations

from pathlib import Path

from analysis.report.render import block_html
from analysis.report.sentences import GO_DRIVER_RESIDUAL, driver_fidelity_note
from analysis.tables import frames
from core.experiment.sections import WorkloadSpec


def test_the_go_driver_study_carries_the_residual(recorded_study: Path) -> None:
    workload = frames.load(recorded_study, "stability-2011").experiment["stored"].spec.workload
    note = driver_fidelity_note(workload)
    assert note is not None
    page = block_html(note)
    assert GO_DRIVER_RESIDUAL in page and "<code>driver: tpcc-mysql</code>" in page


def test_sysbench_tpcc_mysql_and_batched_runs_carry_none(recorded_allocators: Path) -> None:
    workload = frames.load(recorded_allocators,
                           "allocators-example").experiment["stored"].spec.workload
    assert workload.driver == "sysbench" and driver_fidelity_note(workload) is None
    assert driver_fidelity_note(WorkloadSpec(driver="tpcc-mysql")) is None
    assert driver_fidelity_note(WorkloadSpec(driver="tpcc", mode="batched")) is None
    assert driver_fidelity_note(WorkloadSpec(driver="tpcc", mode="tpcc-mysql")) is not None
