"""tpcc-mysql's binaries are identified before any dataset is loaded or server started.

``tpcc_start -?`` and ``tpcc_load -?`` print their banner and usage line and exit before they
connect anywhere; the adapter's preflight (``problems``, ``load_problems``: validate, plan,
run, doctor) asks that of whatever binary ``workload.binaries``, ``$TPCC_MYSQL_BIN`` or PATH
names. The real answers are recorded in tests/fixtures/tpcc-mysql (README there); a script
replaying them stands in for the real binaries, which are in no package registry (the real
ones are checked too where ``scripts/build-tpcc-mysql.sh`` built them: marker
``optional_tool``). Hostile scripts as binaries must be refused with one sentence naming the
path and the fix, each command under the 30 s guard of :mod:`tests.support.hostile_binaries`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from runner.workloads.tpcc_mysql import TpccMysqlWorkload, locate
from tests.support.hostile_binaries import FLUSHBENCH, guarded, hostile, left_alive

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tpcc-mysql"
FIX = "build Percona-Lab's tpcc-mysql (scripts/build-tpcc-mysql.sh SRC_DIR)"


def replay(folder: Path, name: str) -> Path:
    """A script printing what the real ``name -?`` printed, and logging its arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    stdout = FIXTURES / f"{name}-unknown-option.stdout"
    stderr = FIXTURES / f"{name}-unknown-option.stderr"
    path.write_text(f"#!/bin/sh\necho \"$*\" >> '{folder}/calls'\n"
                    f"cat '{stdout}'\ncat '{stderr}' >&2\n")
    path.chmod(0o755)
    return path


def test_the_recorded_answers_are_accepted(tmp_path: Path) -> None:
    start, load = replay(tmp_path, "tpcc_start"), replay(tmp_path, "tpcc_load")
    (tmp_path / "create_table.sql").write_text("")
    (tmp_path / "add_fkey_idx.sql").write_text("")
    adapter = TpccMysqlWorkload({"tpcc_start": str(start), "tpcc_load": str(load)})
    assert adapter.problems() == []
    assert adapter.load_problems() == []
    assert (tmp_path / "calls").read_text().split("\n") == ["-?", "-?", ""]


@pytest.mark.optional_tool
def test_the_real_binaries_are_accepted() -> None:
    start, load = locate(None, "tpcc_start"), locate(None, "tpcc_load")
    if start is None or load is None:
        pytest.skip("tpcc_start/tpcc_load not found: scripts/build-tpcc-mysql.sh SRC_DIR, then"
                    " set TPCC_MYSQL_BIN=SRC_DIR")
    adapter = TpccMysqlWorkload({"tpcc_start": str(start), "tpcc_load": str(load)})
    assert adapter.problems() == []
    assert adapter.load_problems() == []


def test_each_binary_is_checked_against_its_own_name(tmp_path: Path) -> None:
    """tpcc_load named as tpcc_start (and the reverse) is refused: the usage line differs."""
    start, load = replay(tmp_path, "tpcc_start"), replay(tmp_path, "tpcc_load")
    swapped = TpccMysqlWorkload({"tpcc_start": str(load), "tpcc_load": str(start)})
    assert swapped.problems() == [
        f"{load} is not tpcc_start: `{load} -?` does not print `Usage: tpcc_start -h"
        f" server_host` — {FIX} and set TPCC_MYSQL_BIN=SRC_DIR, put tpcc_start on PATH or set"
        " workload.binaries.tpcc_start"]
    assert swapped.load_problems()[0].startswith(f"{start} is not tpcc_load: ")


#: (hostile kind, what the sentence says about it)
HOSTILE = [
    # It waits out the 10 s probe timeout: `make test` runs it, the fast lane leaves it out.
    pytest.param("sleeps", "`{path} -?` did not answer within 10 s (killed)", id="sleeps",
                 marks=pytest.mark.slow),
    pytest.param("forks-holding-stdout",
                 "`{path} -?` does not print `Usage: tpcc_start -h server_host`",
                 id="forks-holding-stdout"),
    pytest.param("prints-garbage", "`{path} -?` does not print `Usage: tpcc_start -h server_host`",
                 id="prints-garbage"),
    pytest.param("prints-without-end",
                 "`{path} -?` does not print `Usage: tpcc_start -h server_host`",
                 id="prints-without-end"),
]

EXPERIMENT = textwrap.dedent("""\
    version: 1
    name: tpcc-mysql-identity
    server: mariadb-debian
    base_config: small
    dataset: {{workload: tpcc, warehouses: 1}}
    workload: {{driver: tpcc-mysql, connections: 1, warmup: 2s, duration: 6s,
               report_interval: 2s, binaries: {{tpcc_start: '{start}'}}}}
    sampling: {{interval: 2s}}
    pre_run: {{drain_dirty_pages: false}}
    """)


def _one_error(out: str) -> str:
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    problems = [line for line in out.splitlines() if line.startswith("  ")]
    assert len(errors) == 1 and len(problems) <= 1 and "Traceback" not in out, out[-3000:]
    return " ".join(out.split())


@pytest.mark.mysql
@pytest.mark.parametrize(("kind", "expected"), HOSTILE)
def test_run_refuses_a_hostile_tpcc_start_before_any_server(kind: str, expected: str,
                                                            tmp_path: Path) -> None:
    """``run`` (preflight, then dataset and server) stops at preflight: one sentence."""
    start = hostile(tmp_path / "bin", kind, "tpcc_start")
    (tmp_path / "x.yaml").write_text(EXPERIMENT.format(start=start))
    work = tmp_path / "work"
    code, out = guarded([FLUSHBENCH, "run", "x.yaml", "--db", str(tmp_path / "r.sqlite"),
                         "--work", str(work)], tmp_path / "run.log", cwd=tmp_path,
                        env={"HOME": str(tmp_path)})
    assert code == 2, out[-3000:]
    said = _one_error(out)
    assert "before starting any server" in said
    assert f"{start} is not tpcc_start: " + expected.format(path=start) in said
    assert f"— {FIX}" in said and "workload.binaries.tpcc_start" in said
    assert left_alive(tmp_path / "bin") == []
    # No dataset was loaded and no server started: nothing of either in the work folder.
    made = sorted(p.name for p in work.rglob("*")) if work.exists() else []
    assert not [n for n in made if n.startswith(("datasets", "sandbox")) or n.endswith(
        (".sock", ".err", ".pid"))], made


@pytest.mark.mysql
def test_a_real_looking_run_of_the_replay_is_never_reached(tmp_path: Path) -> None:
    """The accepted replay gets only the probe during validate: the run's arguments
    (``-h``, ``-w``...) reach tpcc_start only after a server is up."""
    start = replay(tmp_path / "bin", "tpcc_start")
    (tmp_path / "x.yaml").write_text(EXPERIMENT.format(start=start))
    code, out = guarded([FLUSHBENCH, "validate", "x.yaml"], tmp_path / "validate.log",
                        cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert code == 0, out[-3000:]
    assert set((tmp_path / "bin" / "calls").read_text().split()) == {"-?"}


@pytest.mark.slow  # `flushbench doctor` as a process, per hostile binary (1.5-3.6 s each)
@pytest.mark.parametrize(("kind", "expected"), HOSTILE)
def test_doctor_bounds_a_hostile_tpcc_start_found_through_tpcc_mysql_bin(
        kind: str, expected: str, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    start = hostile(checkout, kind, "tpcc_start")
    code, out = guarded([FLUSHBENCH, "doctor"], tmp_path / "doctor.log", cwd=tmp_path,
                        env={"HOME": str(tmp_path), "TPCC_MYSQL_BIN": str(checkout),
                             "COLUMNS": "1000"})  # one table row per line
    assert "Traceback" not in out, out[-3000:]
    assert f"{start} is not tpcc_start: " + expected.format(path=start) in " ".join(out.split())
    assert left_alive(checkout) == []
