"""CPU lists and pinning of a real child process (affinity and cgroup cpuset)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.cpu_list import format_cpu_list, parse_cpu_list
from core.errors import ConfigError
from runner.host.cpus import (
    CpuPin,
    cpus_allowed,
    online_cpus,
    validate_cpus,
)
from runner.proc import child


def test_parse_and_format_cpu_lists() -> None:
    assert parse_cpu_list("0") == {0}
    assert parse_cpu_list("0-1") == {0, 1}
    assert parse_cpu_list("1,3") == {1, 3}
    assert parse_cpu_list(" 0-2,5,7-8 ") == {0, 1, 2, 5, 7, 8}
    assert parse_cpu_list(2) == {2}
    for bad in ("", "a", "3-1", "1,,2", "1-", True):
        with pytest.raises(ValueError):
            parse_cpu_list(bad)
    assert format_cpu_list({0, 1, 3, 5, 6, 7}) == "0-1,3,5-7"
    assert format_cpu_list([4]) == "4"


def test_validate_against_the_hosts_online_cpus() -> None:
    online = online_cpus()
    assert 0 in online
    assert validate_cpus("0") == {0}
    with pytest.raises(ConfigError) as err:
        validate_cpus("4095", "x.yaml: cpus.mysqld")
    assert "4095" in err.value.what and err.value.where == "x.yaml: cpus.mysqld"
    assert format_cpu_list(online) in err.value.fix
    with pytest.raises(ConfigError, match="CPU list"):
        validate_cpus("0-", "x.yaml: cpus.mysqld")


def _placed_cpus(pin: CpuPin) -> tuple[frozenset[int], dict[str, str]]:
    with pin:
        with child(pin.wrap(["sleep", "30"])) as proc:
            # The wrapper execs into sleep; wait until it has (comm changes at exec).
            deadline = time.monotonic() + 10
            while Path(f"/proc/{proc.pid}/comm").read_text().strip() != "sleep":
                assert time.monotonic() < deadline
                time.sleep(0.01)
            return cpus_allowed(proc.pid), pin.record(proc.pid)


def test_affinity_pins_a_real_child() -> None:
    target = {max(online_cpus())}
    allowed, record = _placed_cpus(CpuPin(target, "affinity"))
    assert allowed == target
    assert record == {"cpus_requested": format_cpu_list(target), "cpu_pin_method": "affinity",
                      "cpus_allowed": format_cpu_list(target)}


@pytest.mark.host_control("cpuset")
def test_cpuset_pins_a_real_child_and_its_group_is_removed() -> None:
    target = {min(online_cpus())}
    pin = CpuPin(target, "cpuset")
    allowed, record = _placed_cpus(pin)
    assert allowed == target
    assert record["cpus_allowed"] == format_cpu_list(target)
    assert pin.group is None  # removed on exit


def test_wrapping_a_cpuset_pin_outside_its_context_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="enter"):
        CpuPin({0}, "cpuset").wrap(["true"])
