"""The driver table: what each driver refuses in the ``workload:`` section, and how
``driver: auto`` asks the host only when the file decides nothing."""

from __future__ import annotations

import pytest

from core.experiment import drivers
from core.experiment.drivers import DRIVER_BY_NAME, choose_auto, spec_problems
from core.experiment.sections import WorkloadSpec

#: (driver, workload options, the first problem's message start, or None).
PROBLEMS = [
    ("sysbench", {}, "the sysbench driver needs `test` (e.g. oltp_read_only)"),
    ("sysbench", {"test": "oltp_read_only", "mode": "batched"}, "`mode` is only for the tpcc"),
    ("sysbench", {"test": "oltp_read_only", "rate": 100.0}, "`rate` needs the Go tpcc driver"),
    ("sysbench", {"test": "oltp_read_only"}, None),
    ("tpcc", {"test": "oltp_read_only"}, "`test` is only for the sysbench driver"),
    ("tpcc", {"client": "libmariadb", "mode": "batched"}, "client: libmariadb runs the"),
    ("tpcc", {"rate": 100.0, "arrivals": "poisson"}, None),
    ("tpcc-mysql", {"client": "go"}, "`client` is only for the tpcc driver"),
    ("tpcc-mysql", {"arrivals": "poisson"}, "`arrivals` needs the Go tpcc driver"),
    ("tpcc-mysql", {}, None),
]


@pytest.mark.parametrize(("driver", "options", "problem"), PROBLEMS)
def test_each_driver_refuses_what_is_not_its_own(driver: str, options: dict,
                                                 problem: str | None) -> None:
    spec = WorkloadSpec.model_construct(**{"test": None, "mode": None, "client": None,
                                           "rate": None, "arrivals": None, **options})
    found = spec_problems(DRIVER_BY_NAME[driver], spec)
    if problem is None:
        assert found == []
    else:
        assert found and found[0][0].startswith(problem), found


def test_auto_asks_the_host_only_when_the_file_decides_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drivers, "_probe", None)
    assert choose_auto(mode="batched").driver == "tpcc"
    assert choose_auto(rate=100.0).driver == "tpcc"
    assert choose_auto({"tpcc_start": "/opt/tpcc_start"}).driver == "tpcc-mysql"
    with pytest.raises(ValueError, match="name the driver"):
        choose_auto()
    monkeypatch.setattr(drivers, "_probe", lambda binaries: drivers.chosen("tpcc", "host"))
    assert choose_auto().reason == "workload.driver auto → tpcc: host"
