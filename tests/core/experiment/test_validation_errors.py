"""Malformed experiment files: each one is rejected with a message naming file, key path, fix.

Table-driven: every case patches a valid base experiment (or gives raw YAML text), writes it to
``tmp_path`` and runs what ``flushbench validate`` runs. Cases whose problem is only visible
to the real server (option list, value ranges) go through preflight against the Debian
``mariadbd`` (``--verbose --help`` only: no server is started) and carry the ``mysql`` mark.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.errors import FlushbenchError
from core.experiment.cells import expand
from core.experiment.loading import load_experiment
from runner.admission.preflight import validate_file
from runner.host import facts as facts_mod
from runner.knobs import rules as knobs_rules
from tests.support.patching import DELETE, merge

MARIADBD = Path("/usr/sbin/mariadbd")
needs_mariadb = [
    pytest.mark.mysql,
    pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed"),
]

#: A valid experiment that needs nothing but mariadbd and sysbench.
BASE: dict[str, Any] = {
    "version": 1,
    "name": "bad-input",
    "server": "mariadb-debian",
    "base_config": "small",
    "dataset": {"workload": "sysbench", "tables": 1, "table_size": 1000},
    "workload": {
        "driver": "sysbench",
        "test": "oltp_read_only",
        "connections": 4,
        "warmup": "5s",
        "duration": "60s",
        "report_interval": "10s",
    },
    "matrix": {"doublewrite": [True, False]},
}

def _text(patch: dict[str, Any] | str) -> str:
    if isinstance(patch, str):
        return patch
    return yaml.safe_dump(merge(BASE, patch), sort_keys=False)


def _validate(path: Path, full: bool) -> None:
    if full:
        validate_file(path)
    else:
        expand(load_experiment(path), str(path))


BASE_TEXT = yaml.safe_dump(BASE, sort_keys=False)

# (id, patch or raw YAML text, expected fragments, needs the real server)
# Every fragment must appear in the message; "{file}" stands for the experiment's path.
CASES: list[tuple[str, dict[str, Any] | str, list[str], bool]] = [
    ("unknown-key", {"repetitons": 3},
     ["{file}: repetitons: unknown key 'repetitons'", "did you mean 'repetitions'?"], False),
    ("unknown-nested-key", {"workload": {"warmpu": "5s"}},
     ["{file}: workload.warmpu: unknown key 'warmpu'", "did you mean 'warmup'?"], False),
    ("wrong-type", {"repetitions": "many"},
     ["{file}: repetitions", "valid integer", "'many'"], False),
    ("bad-duration", {"workload": {"duration": "10 parsecs"}},
     ["{file}: workload.duration", "expected a duration like 10s, 30m or 1h30m"], False),
    ("bad-size", {"fixed": {"log_file_size": "2XB"}},
     ["{file}: fixed.log_file_size", "expected a size like 128M, 2000M or 8G"], False),
    ("empty-after-exclude", {"exclude": [{"doublewrite": True}, {"doublewrite": False}]},
     ["{file}: exclude", "the matrix is empty after `exclude`", "remove an exclude rule"], False),
    ("exclude-matches-nothing",
     {"exclude": [{"doublewrite": True, "max_dirty_pages_pct": 99}]},
     ["{file}: exclude[0]", "matches no cell", "check the knob names and levels"], False),
    ("duplicate-cells",
     {"matrix": DELETE, "include": [{"doublewrite": True}, {"doublewrite": True}]},
     ["{file}: include[1]", "duplicate cell doublewrite=on", "use `repetitions`"], False),
    ("duplicate-yaml-key", BASE_TEXT + "repetitions: 1\nrepetitions: 2\n",
     ["{file}:", "duplicate key 'repetitions'", "fix the syntax"], False),
    ("invalid-yaml", BASE_TEXT + "matrix: [on, off\n",
     ["{file}:", "invalid YAML", "fix the syntax"], False),
    ("version-missing", {"version": DELETE},
     ["{file}: version", "missing `version`", "add `version: 1`"], False),
    ("version-2", {"version": 2},
     ["{file}: version", "unsupported version 2", "reads `version: 1` files"], False),
    ("io-capacity-above-max", {"fixed": {"io_capacity": 20000, "io_capacity_max": 2000}},
     ["{file}: fixed.io_capacity: io_capacity 20000 exceeds io_capacity_max 2000",
      "raise io_capacity_max or lower io_capacity"], False),
    ("max-dirty-out-of-range", {"matrix": {"max_dirty_pages_pct": [60, 150]}},
     ["{file}: matrix.max_dirty_pages_pct[1]", "less than or equal to 99.999"], False),
    ("io-capacity-below-min", {"fixed": {"io_capacity": 50}},
     ["{file}: fixed.io_capacity", "greater than or equal to 100"], False),
    ("injection-quote", {"fixed": {"variables": {"sql_mode": "x'; DROP TABLE t; --"}}},
     ["{file}: fixed.variables.sql_mode: value", "is not allowed in a server variable",
      "no quotes"], False),
    ("injection-newline", {"fixed": {"variables": {"innodb_io_capacity": "200\n[client]"}}},
     ["{file}: fixed.variables.innodb_io_capacity: value '200\\n[client]' is not allowed",
      "control characters"],
     False),
    ("bad-variable-name", {"fixed": {"variables": {"innodb io capacity": 200}}},
     ["{file}: fixed.variables.innodb io capacity: 'innodb io capacity' is not a server"
      " variable name"], False),
    ("sysbench-without-test", {"workload": {"test": DELETE}},
     ["{file}: workload.test: the sysbench driver needs `test`", "e.g. oltp_read_only"], False),
    ("window-outside-duration", {"window": {"start": "50s", "end": "90s"}},
     ["{file}: window: window 50s..90s does not fit in the duration (60s)",
      "keep 0 <= start < end <= duration"], False),
    ("baseline-matches-none", {"baseline": {"doublewrite": True, "max_dirty_pages_pct": 10}},
     ["{file}: baseline", "matches 0 cells", "name exactly one cell"], False),
    ("baseline-matches-two",
     {"matrix": {"max_dirty_pages_pct": [50, 75]}, "baseline": {"doublewrite": True}},
     ["{file}: baseline", "matches 2 cells", "name exactly one cell"], False),
    ("connections-zero", {"workload": {"connections": 0}},
     ["{file}: workload.connections", "greater than or equal to 1"], False),
    ("knob-in-fixed-and-matrix", {"fixed": {"doublewrite": True}},
     ["{file}: matrix.doublewrite: doublewrite set in both `fixed` and `matrix`",
      "keep one"], False),
    ("bad-enum", {"fixed": {"flush_method": "O_DIRECTX"}},
     ["{file}: fixed.flush_method", "Input should be", "O_DIRECT"], False),
    ("tpcc-scale-missing", {"dataset": {"workload": "tpcc", "tables": DELETE,
                                        "table_size": DELETE}},
     ["{file}: dataset.warehouses: a tpcc dataset needs `warehouses`"], False),
    ("empty-axis", {"matrix": {"doublewrite": [True, False], "io_capacity": []}},
     ["{file}: matrix.io_capacity: empty list — give at least one level"], False),
    ("dataset-driver-mismatch", {"workload": {"driver": "tpcc", "test": DELETE}},
     ["{file}: workload.driver: a sysbench dataset needs `workload.driver: sysbench`"], False),
    # -- found by preflight against the real server ------------------------------------------
    ("unknown-server-profile", {"server": "mariadb-debain"},
     ["{file}: server", "unknown server profile 'mariadb-debain'",
      "did you mean 'mariadb-debian'?"], True),
    ("unknown-base-config", {"base_config": "smal"},
     ["{file}: base_config", "unknown base config 'smal'", "did you mean 'small'?"], True),
    ("knob-absent-on-flavor", {"fixed": {"adaptive_checkpoint": "keep_average"}},
     ["{file}: fixed.adaptive_checkpoint", "absent on mariadb-10.11",
      "related: innodb_adaptive_flushing, innodb_adaptive_flushing_lwm,"
      " innodb_max_dirty_pages_pct_lwm", "drop adaptive_checkpoint"], True),
    ("buffer-pool-instances-on-mariadb", {"fixed": {"buffer_pool_instances": 8}},
     ["{file}: fixed.buffer_pool_instances", "absent on mariadb-10.11",
      "related: innodb_buffer_pool_size"], True),
    ("io-capacity-above-raw-max",
     {"fixed": {"io_capacity": 20000, "variables": {"innodb_io_capacity_max": 2000}}},
     ["{file}: fixed.io_capacity", "io_capacity 20000 exceeds io_capacity_max 2000",
      "MariaDB silently lowers innodb_io_capacity", "raise io_capacity_max"], True),
    ("value-the-server-adjusts", {"fixed": {"variables": {"innodb_adaptive_flushing_lwm": 95}}},
     ["{file}: fixed.variables.innodb_adaptive_flushing_lwm",
      "mariadb-10.11 says: [Warning] option 'innodb-adaptive-flushing-lwm': value 95 adjusted"
      " to 70", "use a value in the server's range"], True),
    ("value-the-server-refuses", {"matrix": {"variables": {"innodb_flush_neighbors": [1, 9]}}},
     ["{file}: matrix.variables.innodb_flush_neighbors[1]", "adjusted to 2"], True),
    ("unknown-raw-variable", {"fixed": {"variables": {"innodb_io_capacityy": 300}}},
     ["{file}: fixed.variables.innodb_io_capacityy", "is not a variable of mariadb-10.11",
      "did you mean innodb_io_capacity"], True),
    ("managed-raw-variable", {"fixed": {"variables": {"datadir": "/tmp/elsewhere"}}},
     ["{file}: fixed.variables.datadir", "managed by the sandbox", "sets paths"], True),
    ("raw-variable-also-a-knob",
     {"fixed": {"io_capacity": 400, "variables": {"innodb_io_capacity": 300}}},
     ["{file}: fixed.variables.innodb_io_capacity", "also set by knob io_capacity",
      "set it once"], True),
    ("redo-over-the-disk", {"fixed": {"log_file_size": "100T"}},
     ["{file}: fixed.log_file_size", "of redo does not fit", "FLUSHBENCH_WORK"], True),
    ("connections-over-max-connections", {"matrix": {"connections": [8, 300]}},
     ["{file}: matrix.connections[1]", "300 connections + 2 of flushbench's exceed"
      " max_connections 200", "variables.max_connections: 310"], True),
    ("driver-binary-missing", {"workload": {"binaries": {"sysbench": "/nonexistent/sysbench"}}},
     ["{file}: workload.driver", "sysbench not found at /nonexistent/sysbench",
      "apt-get install sysbench"], True),
    ("driver-binary-unknown-name", {"workload": {"binaries": {"sysbnech": "/usr/bin/sysbench"}}},
     ["{file}: workload.binaries.sysbnech", "unknown driver binary name",
      "did you mean 'sysbench'?"], True),
]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))


def _params():
    for case_id, patch, fragments, full in CASES:
        yield pytest.param(patch, fragments, full, id=case_id, marks=needs_mariadb if full else ())


@pytest.mark.parametrize(("patch", "fragments", "full"), list(_params()))
def test_malformed_input_is_rejected(
    tmp_path: Path, patch: dict[str, Any] | str, fragments: list[str], full: bool
) -> None:
    path = tmp_path / "experiment.yaml"
    path.write_text(_text(patch))
    with pytest.raises(FlushbenchError) as info:
        _validate(path, full)
    message = info.value.render()
    for fragment in fragments:
        assert fragment.format(file=path) in message, message


def test_enough_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("full", [False, pytest.param(True, marks=needs_mariadb)])
def test_base_experiment_is_valid(tmp_path: Path, full: bool) -> None:
    """The control: every case above fails because of its patch, not because of the base."""
    if full and not os.access("/usr/bin/sysbench", os.X_OK):
        pytest.skip("sysbench is not installed")
    path = tmp_path / "experiment.yaml"
    path.write_text(BASE_TEXT)
    _validate(path, full)


@pytest.mark.mysql
@pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed")
def test_missing_mysqld_binary(tmp_path: Path) -> None:
    profile = tmp_path / "broken.yaml"
    profile.write_text(
        "version: 1\nname: broken\nflavor: mariadb\n"
        f"mysqld: {tmp_path}/missing/mariadbd\ninstall_db: /usr/bin/mariadb-install-db\n"
    )
    path = tmp_path / "experiment.yaml"
    path.write_text(_text({"server": str(profile)}))
    with pytest.raises(FlushbenchError) as info:
        validate_file(path)
    message = info.value.render()
    assert f"{profile}: mysqld: mysqld binary {tmp_path}/missing/mariadbd is missing" in message
    assert "apt-get install mariadb-server" in message
    assert f"named by {path}: server" in message


@pytest.mark.mysql
@pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed")
def test_allocator_library_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knobs_rules, "ALLOCATOR_LIB_DIRS", [tmp_path / "lib"])
    path = tmp_path / "experiment.yaml"
    path.write_text(_text({"matrix": {"allocator": ["glibc", "jemalloc"]}}))
    with pytest.raises(FlushbenchError) as info:
        validate_file(path)
    message = info.value.render()
    assert f"{path}: matrix.allocator[1]: allocator jemalloc: libjemalloc.so.2 not found" in message
    assert "apt-get install libjemalloc2" in message
    assert "glibc" not in message.split("libjemalloc.so.2")[0].split("matrix.allocator")[-1]


@pytest.mark.mysql
@pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed")
def test_large_pages_without_huge_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        "MemTotal:       24000000 kB\nHugePages_Total:       4\nHugePages_Free:        4\n"
        "Hugepagesize:       2048 kB\n"
    )
    monkeypatch.setattr(facts_mod, "MEMINFO", meminfo)
    path = tmp_path / "experiment.yaml"
    path.write_text(_text({"fixed": {"large_pages": True, "buffer_pool_size": "256M"}}))
    with pytest.raises(FlushbenchError) as info:
        validate_file(path)
    message = info.value.render()
    # 256M × 1.05 / 2M = 135 pages needed, 4 free of 4 → the pool needs 135 in total.
    assert f"{path}: fixed.large_pages: large_pages needs 135 huge pages of 2M" in message
    assert "4 free" in message
    assert "run `sysctl -w vm.nr_hugepages=135` as root" in message


@pytest.mark.mysql
@pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed")
def test_tpcc_driver_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_TPCC_BIN", str(tmp_path / "bin" / "tpcc"))
    path = tmp_path / "experiment.yaml"
    path.write_text(_text({
        "dataset": {"workload": "tpcc", "warehouses": 1, "tables": DELETE, "table_size": DELETE},
        "workload": {"driver": "tpcc", "test": DELETE},
    }))
    with pytest.raises(FlushbenchError) as info:
        validate_file(path)
    message = info.value.render()
    assert f"{path}: workload.driver: the built-in TPC-C driver {tmp_path}/bin/tpcc" in message
    assert "run `make setup`" in message


@pytest.mark.mysql
@pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed")
def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "experiment.yaml"
    path.write_text(_text({
        "fixed": {"adaptive_checkpoint": "keep_average",
                  "variables": {"innodb_bogus_knob": 1, "innodb_adaptive_flushing_lwm": 95}},
        "workload": {"binaries": {"sysbench": "/nonexistent/sysbench"}},
    }))
    with pytest.raises(FlushbenchError) as info:
        validate_file(path)
    problems = info.value.problems
    assert len(problems) == 4, problems
    assert info.value.render().startswith("4 problems found before starting any server:")
    assert all(p.startswith(f"{path}: ") for p in problems)
