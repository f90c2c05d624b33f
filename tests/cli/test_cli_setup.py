"""The real ``flushbench`` console script: validate, plan, doctor, db upgrade.

Each test runs the installed entry point in a subprocess and checks exit code, stdout and
stderr, as a researcher would see them. Nothing here starts a server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import paths
from store.migrate import head_revision
from tests.support.built_servers import built_servers_named

FLUSHBENCH = Path(sys.executable).parent / "flushbench"
MARIADBD = Path("/usr/sbin/mariadbd")

pytestmark = [
    pytest.mark.skipif(not FLUSHBENCH.exists(), reason="console script not installed (uv sync)"),
]
no_mariadb = pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian MariaDB is not installed")

GOOD = """\
version: 1
name: cli-good
base_config: small
dataset: {workload: sysbench, tables: 1, table_size: 1000}
workload: {driver: sysbench, test: oltp_read_only, connections: 4, duration: 60s}
matrix:
  doublewrite: [on, off]
"""


def _run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    return subprocess.run([str(FLUSHBENCH), *args], capture_output=True, text=True,
                          timeout=120, env=full_env, cwd=cwd, check=False)


@pytest.fixture
def work_env(tmp_path: Path) -> dict[str, str]:
    return {"FLUSHBENCH_WORK": str(tmp_path / "work"),
            "FLUSHBENCH_DB": str(tmp_path / "results" / "r.sqlite")}


def test_validate_bad_file_exits_2_with_location_and_fix(tmp_path: Path,
                                                         work_env: dict[str, str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("name: cli-good", "name: cli-good\nrepetitons: 3"))
    result = _run("validate", str(bad), env=work_env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ")
    assert f"{bad}: repetitons: unknown key 'repetitons'" in result.stderr
    assert "did you mean 'repetitions'?" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.mysql
@no_mariadb
def test_validate_good_and_bad_files(tmp_path: Path, work_env: dict[str, str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD + "fixed: {adaptive_checkpoint: keep_average}\n")
    result = _run("validate", str(good), str(bad), env=work_env)
    assert result.returncode == 2
    assert f"{good}: ok: 2 cells × 1 repetitions on mariadb-" in result.stdout
    assert "1 of 2 files are invalid" in result.stderr
    assert f"{bad}: fixed.adaptive_checkpoint: adaptive_checkpoint=keep_average is absent" \
        in result.stderr
    ok = _run("validate", str(good), env=work_env)
    assert ok.returncode == 0, ok.stderr
    assert "ok: 2 cells × 1 repetitions" in ok.stdout


@pytest.mark.mysql
@no_mariadb
def test_validate_shipped_experiments(work_env: dict[str, str]) -> None:
    tpcc = paths.tpcc_binary()
    if not (tpcc.is_file() and os.access(tpcc, os.X_OK)):
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")
    # servers-2011 and the 2011 flash study need the servers scripts/build-server.sh builds,
    # absent from a fresh clone: tests/runner/test_server_axis.py and
    # test_shipped_2011_studies.py validate them where they are built.
    files = sorted(str(p) for p in paths.EXPERIMENTS_DIR.glob("*.yaml")
                   if not built_servers_named(p))
    assert len(files) >= 4  # the files that need no built server are still checked here
    result = _run("validate", *files, env=work_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(": ok: ") == len(files)
    assert "stability-2011.yaml: ok: 8 cells × 3 repetitions (baseline 5)" in result.stdout


@pytest.mark.mysql
@no_mariadb
def test_plan_stability_2011(work_env: dict[str, str]) -> None:
    tpcc = paths.tpcc_binary()
    if not (tpcc.is_file() and os.access(tpcc, os.X_OK)):
        pytest.skip("tpcc/bin/tpcc is not built (make setup)")
    result = _run("plan", str(paths.EXPERIMENTS_DIR / "stability-2011.yaml"), env=work_env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for pct in (75, 50, 60, 70, 30, 15):
        assert f"innodb_max_dirty_pages_pct={pct}" in out
    assert "innodb_doublewrite=OFF" in out and "innodb_io_capacity=20000" in out
    assert "base (baseline)" in out  # the row's own name (its knobs: the variables column)
    assert "8 cells × 3 repetitions (baseline 5) = 26 runs" in out
    assert "estimated total: 2h" in out
    assert "Run order (interleaved)" in out


def test_plan_of_a_missing_file(tmp_path: Path) -> None:
    result = _run("plan", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert f"error: {tmp_path / 'nope.yaml'}: file not found — check the path" in result.stderr


@pytest.mark.mysql
@no_mariadb
def test_doctor(tmp_path: Path, work_env: dict[str, str]) -> None:
    result = _run("doctor", env=work_env)
    assert "server profile mariadb-debian" in result.stdout
    assert "not installed (example profile)" in result.stdout
    # `make test` installs everything a required check needs: doctor must pass here.
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout
    # A missing TPC-C driver is a required check: exit 1 and say which check failed.
    broken = _run("doctor", env={**work_env, "FLUSHBENCH_TPCC_BIN": str(tmp_path / "no-tpcc")})
    assert broken.returncode == 1
    assert "driver tpcc" in broken.stderr
    assert "run `make setup`" in broken.stdout


def test_db_upgrade_creates_database(tmp_path: Path) -> None:
    db = tmp_path / "results" / "r.sqlite"
    result = _run("db", "upgrade", "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert db.exists()
    assert f"sqlite:///{db}: created at revision " in result.stdout
    # Idempotent, and FLUSHBENCH_DB works like --db.
    again = _run("db", "upgrade", env={"FLUSHBENCH_DB": str(db)})
    assert again.returncode == 0
    assert again.stdout == (f"sqlite:///{db}: at revision {head_revision()}"
                            " (already the latest schema)\n")
    assert list(db.parent.glob("*.pre-upgrade-*")) == []  # nothing to back up


def test_db_upgrade_never_prints_the_password() -> None:
    url = "postgresql+psycopg://bench:s3cret-pw@127.0.0.1:1/flushbench"
    result = _run("db", "upgrade", "--db", url)
    assert result.returncode == 2
    assert "s3cret-pw" not in result.stdout + result.stderr
    assert "postgresql+psycopg://bench:***@127.0.0.1:1/flushbench" in result.stderr
    assert "cannot use the results database" in result.stderr
