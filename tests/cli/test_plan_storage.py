"""``plan`` and ``validate`` name each cell's emulated disk, the device it throttles and the CPU
placement, before anything starts (a real preflight: the binary parses each option set)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.cli.conftest import CliRun

pytestmark = [pytest.mark.mysql, pytest.mark.host_control("io")]


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough for the plan's tables to stay tables (tests/cli/
    test_terminal_width.py checks them at 80 columns)."""
    monkeypatch.setenv("COLUMNS", "200")


ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments" / "quickstart.yaml"


def _experiment(tmp_path: Path, **changes: object) -> Path:
    data = yaml.safe_load(QUICKSTART.read_text())
    data.update(changes)
    data["pre_run"] = {"drain_dirty_pages": False}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _cells_rows(out: str) -> list[str]:
    """The Cells table's first line of each row (the line with the row number)."""
    table = out.split("Run order")[0]
    return [line for line in table.splitlines() if re.match(r"^│ +\d+ │", line)]


def test_a_fixed_profile_is_named_for_every_cell_with_its_device(cli: CliRun,
                                                                 tmp_path: Path) -> None:
    path = _experiment(tmp_path, fixed={"io_capacity": 1000, "storage": {"write_iops": 1000}})
    code, out, err = cli(["plan", str(path)])
    assert code == 0, err
    rows = _cells_rows(out)
    assert len(rows) == 4 and all("custom (w 1000 IOPS)" in row for row in rows), out
    flat = " ".join(out.split())
    assert "storage: custom (w 1000 IOPS) for every cell; throttles " in flat
    assert re.search(r"throttles \S+ on \S+ \S+ -> \S+ \(\d+:\d+\)", flat), flat
    code, out, err = cli(["validate", str(path)])
    assert code == 0, err
    assert "storage: custom (w 1000 IOPS) for every cell; throttles" in " ".join(out.split())


def test_a_profile_as_a_matrix_axis_is_named_per_cell(cli: CliRun, tmp_path: Path) -> None:
    path = _experiment(tmp_path, matrix={"doublewrite": ["on", "off"],
                                         "storage": ["cloud-gp3", "unlimited"]},
                       baseline={"doublewrite": "on", "storage": "cloud-gp3"})
    code, out, err = cli(["plan", str(path)])
    assert code == 0, err
    rows = _cells_rows(out)
    gp3 = [row for row in rows if "storage=cloud-gp3" in row]
    plain = [row for row in rows if "storage=unlimited" in row]
    assert len(gp3) == 2 and len(plain) == 2, out
    assert all("cloud-gp3 (r 3000 IOPS" in row for row in gp3), out
    assert all("the machine's disk" in row for row in plain), out
    flat = " ".join(out.split())
    assert "for 2 of 4 cells" in flat and "throttles" in flat


def test_an_include_row_with_its_own_profile_and_pinned_cpus(cli: CliRun,
                                                            tmp_path: Path) -> None:
    path = _experiment(
        tmp_path,
        include=[{"doublewrite": "off", "max_dirty_pages_pct": 90, "storage": "flash-2011"}],
        cpus={"mysqld": "0", "driver": "1"},
    )
    code, out, err = cli(["plan", str(path)])
    assert code == 0, err
    rows = _cells_rows(out)
    assert len(rows) == 5
    assert "flash-2011 (r 2000 IOPS 13M/s," in rows[-1], out  # the cell wraps its label
    assert all("the machine's disk" in row for row in rows[:-1]), out
    flat = " ".join(out.split())
    assert "flash-2011 (r 2000 IOPS 13M/s, w 2000 IOPS 10M/s) for 1 of 5 cells" in flat
    assert "cpus: mysqld on CPUs 0, driver on CPUs 1 (affinity)" in flat


def test_no_storage_line_when_no_cell_is_limited(cli: CliRun, tmp_path: Path) -> None:
    code, out, err = cli(["plan", str(_experiment(tmp_path))])
    assert code == 0, err
    assert "throttles" not in out and "cpus:" not in out
