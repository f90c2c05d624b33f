"""Workload drivers behind one interface, found by the registry (``get_workload(driver)``).

Each adapter module (``tpcc``: the built-in Go driver, ``tpcc_mysql``, ``sysbench``) turns its
driver's output into :class:`~runner.workloads.base.IntervalRecord` rows, declares what it needs
(binaries, dataset size, load speed, database, primary metric) and passes the same contract
tests (``tests/runner/workloads/test_contract.py``).
"""

from __future__ import annotations

from runner.workloads.base import (
    IntervalRecord,
    RunningWorkload,
    Workload,
    WorkloadOutcome,
    log_files,
)
from runner.workloads.registry import adapter_class, driver_names, get_workload

__all__ = [
    "IntervalRecord",
    "RunningWorkload",
    "Workload",
    "WorkloadOutcome",
    "adapter_class",
    "driver_names",
    "get_workload",
    "log_files",
]
