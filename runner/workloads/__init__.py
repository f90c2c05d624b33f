"""Workload drivers behind one interface: ``get_workload(driver, binaries)``.

Each adapter (``tpcc``: the built-in Go driver, ``tpcc-mysql``, ``sysbench``) turns its driver's
output into :class:`~runner.workloads.base.IntervalRecord` rows and passes the same contract
tests (``tests/runner/workloads/test_contract.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from flushbench.errors import ConfigError
from runner.workloads.base import (
    IntervalRecord,
    RunningWorkload,
    Workload,
    WorkloadOutcome,
    log_files,
)

__all__ = [
    "DRIVERS",
    "IntervalRecord",
    "RunningWorkload",
    "Workload",
    "WorkloadOutcome",
    "get_workload",
    "log_files",
]

#: Driver names as written in experiment files (``workload.driver``, ``dataset.loader``).
DRIVERS = ("tpcc", "tpcc-mysql", "sysbench")


def get_workload(driver_name: str, binaries: Mapping[str, str] | None = None) -> Workload:
    """The adapter for ``driver_name``; ``binaries`` overrides where its executables are.

    Raises
    ------
    ConfigError
        For an unknown driver name.
    """
    if driver_name == "tpcc":
        from runner.workloads.tpcc import TpccWorkload

        return TpccWorkload(binaries)
    if driver_name == "tpcc-mysql":
        from runner.workloads.tpcc_mysql import TpccMysqlWorkload

        return TpccMysqlWorkload(binaries)
    if driver_name == "sysbench":
        from runner.workloads.sysbench import SysbenchWorkload

        return SysbenchWorkload(binaries)
    raise ConfigError(
        f"unknown workload driver {driver_name!r}",
        where="workload.driver",
        fix=f"use one of {', '.join(DRIVERS)}",
    )
