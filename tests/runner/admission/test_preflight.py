"""Preflight, plan and doctor against the real Debian mariadbd (option list only, no server)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from core import paths
from core.errors import PreflightError
from core.experiment.cells import cell_names
from core.experiment.loading import load_experiment
from core.experiment.sections import DatasetSpec
from flushbench.cli.tables import print_plan
from runner.admission.doctor import run_doctor
from runner.admission.planning import plan
from runner.admission.preflight import dataset_bytes, preflight, validate_file
from runner.host.facts import read_meminfo

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.skipif(not Path("/usr/sbin/mariadbd").is_file(),
                       reason="Debian MariaDB is not installed"),
]

SHIPPED = ["quickstart", "stability-2011", "allocators-oltp"]


@pytest.fixture(autouse=True)
def _work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))


@pytest.fixture
def drivers_present() -> None:
    tpcc = paths.tpcc_binary()
    if not (tpcc.is_file() and os.access(tpcc, os.X_OK)):
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_experiments_pass_preflight(name: str, drivers_present: None) -> None:
    path = paths.EXPERIMENTS_DIR / f"{name}.yaml"
    report = validate_file(path)
    assert report.server.flavor == "mariadb"
    assert set(report.translations) == {c.key for c in report.cells}


def test_stability_2011_translations(drivers_present: None) -> None:
    report = validate_file(paths.EXPERIMENTS_DIR / "stability-2011.yaml")
    first = report.translations[report.cells[0].key]
    assert first.server_options == {
        "innodb_doublewrite": "ON",
        "innodb_max_dirty_pages_pct": "75",
        "innodb_io_capacity": "200",
        "innodb_log_file_size": str(80 * 1024**2),
        "innodb_flush_neighbors": "2",
        "innodb_adaptive_flushing": "ON",
    }
    assert first.expected["innodb_max_dirty_pages_pct"] == "75.000000"
    # Base config below the cell: the cell's knobs win.
    merged = report.server_options(report.cells[0])
    assert merged["innodb_buffer_pool_size"] == "512M"
    assert merged["innodb_log_file_size"] == str(80 * 1024**2)
    # io_capacity 20000 without a max: MariaDB raises the max itself (verified on 10.11).
    assert any("= 40000 for io_capacity 20000" in n for n in report.notes)
    assert report.dataset_bytes == 10 * dataset_bytes(DatasetSpec(warehouses=1))
    assert report.base_cnf_text.startswith("# Base my.cnf of")
    assert "innodb_buffer_pool_size = 512M" in report.base_cnf_text
    assert report.page_size == 16384


def test_allocator_translations(drivers_present: None) -> None:
    report = validate_file(paths.EXPERIMENTS_DIR / "allocators-oltp.yaml")
    allocators = {report.translations[c.key].allocator for c in report.cells}
    assert None in allocators  # glibc: nothing preloaded
    names = sorted(Path(a).name for a in allocators if a is not None)
    assert names == ["libjemalloc.so.2", "libtcmalloc_minimal.so.4"]
    assert all(Path(a).exists() for a in allocators if a is not None)
    assert {report.translations[c.key].connections for c in report.cells} == {
        8, 16, 32, 64, 128, 256}


def test_plan_of_stability_2011(drivers_present: None) -> None:
    path = paths.EXPERIMENTS_DIR / "stability-2011.yaml"
    exp = load_experiment(path)
    p = plan(exp, str(path))
    assert len(p.runs) == 26  # 8 cells × 3, and the baseline's 4th and 5th run (A/A)
    # Interleaved: the first 8 runs are repetition 1 of each cell, in order.
    assert [r.repetition for r in p.runs[:8]] == [1] * 8
    assert [r.cell.key for r in p.runs[:8]] == [c.key for c in p.cells]
    assert [(r.cell.is_baseline, r.repetition) for r in p.runs[-2:]] == [(True, 4), (True, 5)]
    assert p.runs[0].starts_at == p.load_seconds
    assert all(r.seconds > exp.workload.duration + exp.workload.warmup for r in p.runs)
    assert p.total_seconds == pytest.approx(p.load_seconds + sum(r.seconds for r in p.runs))
    out = io.StringIO()
    print_plan(p, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    # Every row by its name in the experiment file (`plan` calls rows as the study does).
    names = cell_names(p.cells)
    assert len(names) == len(p.cells)
    for cell in p.cells:
        assert names[cell.key] in text
    assert "innodb_max_dirty_pages_pct=15" in text
    assert "estimated total:" in text
    assert "(baseline)" in text


def test_preflight_lists_problems_from_several_checks(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(
        "version: 1\nname: e\nbase_config: small\n"
        "dataset: {workload: sysbench, tables: 1, table_size: 1000}\n"
        "workload: {driver: sysbench, test: oltp_read_only, duration: 60s,"
        " binaries: {sysbench: /nonexistent}}\n"
        "matrix:\n  max_dirty_pages_pct: [50, 75]\n"
        "  variables: {innodb_flush_neighbors: [1, 7]}\n"
    )
    with pytest.raises(PreflightError) as info:
        preflight(load_experiment(path), str(path))
    problems = info.value.problems
    assert any(p.startswith(f"{path}: matrix.variables.innodb_flush_neighbors[1]: ")
               and "adjusted to 2" in p for p in problems), problems
    assert any("sysbench not found at /nonexistent" in p for p in problems), problems
    # The same complaint from several cells (7 with 50 and with 75) is listed once.
    assert len(problems) == 2, problems


def test_read_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("HugePages_Total:      10\nHugePages_Free:        3\n"
                       "Hugepagesize:       2048 kB\n")
    assert read_meminfo(meminfo) == {"HugePages_Total": 10, "HugePages_Free": 3,
                                     "Hugepagesize": 2048}
    assert read_meminfo(tmp_path / "missing") == {}


def test_doctor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    checks = {c.name: c for c in run_doctor(work=tmp_path, db=str(tmp_path / "r.sqlite"))}
    debian = checks["server profile mariadb-debian"]
    assert debian.ok and debian.required and "MariaDB" in debian.detail
    for name in ("example-mysql-tarball", "example-percona-tarball"):
        example = checks[f"server profile {name}"]
        assert not example.ok and not example.required and example.status == "warn"
        assert "not installed (example profile)" in example.detail
    assert checks["work dir writable"].ok
    assert checks["results db dir writable"].ok
    monkeypatch.setenv("FLUSHBENCH_TPCC_BIN", str(tmp_path / "no-tpcc"))
    checks = {c.name: c for c in run_doctor(work=tmp_path)}
    assert checks["driver tpcc"].status == "FAIL"
    assert checks["driver tpcc"].fix.startswith("run `make setup`")
    # Optional drivers never fail doctor: tpcc-mysql is only a warning when it is missing.
    assert checks["driver tpcc-mysql"].status in ("ok", "warn")
    assert not checks["driver tpcc-mysql"].required


def test_dry_runs_once_per_distinct_option_set(drivers_present: None) -> None:
    """Cells whose options coincide share one parse by the binary; progress counts them."""
    calls: list[tuple[int, int]] = []
    path = paths.EXPERIMENTS_DIR / "stability-2011.yaml"
    report = validate_file(path, progress=lambda done, total: calls.append((done, total)))
    distinct = {tuple(sorted(t.server_options.items())) for t in report.translations.values()}
    assert calls and calls[-1] == (len(distinct), len(distinct))
    assert [done for done, _ in calls] == list(range(1, len(distinct) + 1))
