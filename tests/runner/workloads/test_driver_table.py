"""The experiment model's driver table (core/experiment/drivers.py) and the workload registry's
adapters describe the same drivers: the model validates files from the table alone, the runner
runs the adapters, and the two must not drift apart."""

from __future__ import annotations

import dataclasses

from core.experiment.drivers import DRIVER_BY_NAME, DRIVER_NAMES
from runner.workloads.registry import adapters, driver_names


def test_the_registry_and_the_driver_table_name_the_same_drivers() -> None:
    assert driver_names() == DRIVER_NAMES


def test_every_adapter_matches_its_table_entry() -> None:
    for name, adapter in adapters().items():
        facts = DRIVER_BY_NAME[name]
        assert adapter.dataset_kind == facts.dataset_kind, name
        assert dataclasses.asdict(adapter.metric) == dataclasses.asdict(facts.metric), name
