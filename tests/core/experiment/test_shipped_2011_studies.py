"""The shipped 2011 flash study and its calibration sweep on the built 5.5 servers.

Both name MySQL 5.5 and XtraDB 5.5, which scripts/build-server.sh builds by hand: where they
are built, ``validate`` and ``plan`` accept the files (every cell checked against its own
server's binary); where one is missing (CI), ``validate`` fails with one line naming it and
the command that builds it. The file's own design (rows, repetitions, references) is checked
without any server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core import paths
from core.experiment.cells import expand, run_order
from core.experiment.loading import load_experiment
from runner.workloads.tpcc_mysql import locate
from tests.support.built_servers import built_server, built_servers_named

FLASH = paths.EXPERIMENTS_DIR / "stability-2011-flash.yaml"
CALIBRATION = paths.EXPERIMENTS_DIR / "flash-2011-calibration.yaml"
#: The four rows of the flash study on a card with headroom (for a machine of >= 4 cores).
HEADROOM = paths.EXPERIMENTS_DIR / "headroom-2011.yaml"


def test_the_flash_study_is_the_posts_twelve_rows_in_blocks() -> None:
    exp = load_experiment(FLASH)
    cells = expand(exp, str(FLASH))
    servers = [c.knobs["server"] for c in cells]
    assert servers == ["mysql-5.5"] * 8 + ["xtradb-5.5"] * 4
    assert all(c.knobs["storage"] == "flash-2011" for c in cells)
    names = [inc.reference.name for inc in exp.include]
    assert len(set(names)) == 12
    # 4 runs a row, 6 for each server's baseline (MySQL's base row, XtraDB's big-redo 75 row).
    reps = dict(zip(names, (exp.repetitions_of(c) for c in cells), strict=True))
    assert {n for n, r in reps.items() if r == 6} == {"base", "ps-bigredo-75"}
    assert set(reps.values()) == {4, 6} and len(run_order(exp, cells)) == 52
    assert cells[0].is_baseline and exp.order.mode == "blocks"
    assert (exp.disturbed.action, exp.disturbed.max_reruns) == ("rerun", 2)
    # >= 10-minute runs over their second half; the post's redo/buffer pool ratios (512M pool).
    assert exp.workload.duration >= 600
    assert exp.window.resolve(exp.workload.duration) == (exp.workload.duration / 2,
                                                         exp.workload.duration)
    redo = {c.knobs["server"]: c.knobs["log_file_size"] for c in cells}
    assert redo == {"mysql-5.5": 80 * 1024**2, "xtradb-5.5": 320 * 1024**2}
    # Every comparison of issue 24's list, rows referred to by name.
    pairs = {(c.a, c.b) for c in exp.reference.comparisons}
    assert pairs == {("dw-off-50", "dw-on-50"), ("dw-on-50", "base"), ("dw-on-30", "dw-on-50"),
                     ("dw-on-15", "dw-on-50"), ("ps-bigredo-75-noneighbors", "dw-on-15"),
                     ("ps-bigredo-75-noneighbors", "ps-bigredo-75"),
                     ("ps-optimized", "ps-bigredo-75"), ("ps-optimized", "dw-on-15"),
                     # What the post's numbers compare without its text stating a ratio.
                     ("dw-on-60", "dw-off-60"), ("dw-off-70", "dw-off-60"),
                     ("ps-bigredo-75", "ps-bigredo-60"), ("ps-bigredo-60", "dw-on-60")}


@pytest.mark.mysql
@pytest.mark.optional_tool  # the 5.5 servers are built by hand (scripts/build-server.sh)
@pytest.mark.parametrize("path", [FLASH, CALIBRATION, HEADROOM], ids=lambda p: p.stem)
def test_validate_and_plan_accept_it_where_the_servers_are_built(
        path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    # A terminal wide enough for the plan's variable column to print whole.
    monkeypatch.setenv("COLUMNS", "300")
    assert built_servers_named(path) == ["mysql-5.5", "xtradb-5.5"]
    built_server("mysql-5.5")
    built_server("xtradb-5.5")
    if locate(None, "tpcc_start") is None:  # both files name the post's client
        pytest.skip("tpcc_start not found: scripts/build-tpcc-mysql.sh SRC_DIR, then set"
                    " TPCC_MYSQL_BIN or put it on PATH")
    code, out, err = cli(["validate", str(path)])
    assert code == 0, out + err
    assert "on 2 servers: mysql-5.5, xtradb-5.5" in out
    code, out, err = cli(["plan", str(path)])
    assert code == 0, out + err
    runs = {FLASH: "52 runs", CALIBRATION: "6 runs", HEADROOM: "12 runs"}[path]
    assert runs in out and "Run order (blocks)" in out
    if path != HEADROOM:
        assert "innodb_adaptive_flushing_method=native" in out  # XtraDB's MySQL mode
    # The post's optimized mode as written leaves keep_average inert on XtraDB 5.5.44: plan
    # says so for the flash study's row; the headroom rows keep adaptive flushing on.
    inert = "adaptive_checkpoint=keep_average acts only while innodb_adaptive_flushing is ON"
    assert (inert in " ".join(out.split())) == (path == FLASH), out


@pytest.mark.mysql
@pytest.mark.optional_tool
def test_without_a_built_server_validate_names_it_and_its_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli) -> None:  # noqa: ANN001
    built_server("xtradb-5.5")
    folder = tmp_path / "servers"
    folder.mkdir()
    (folder / "xtradb-5.5.yaml").write_text(
        (paths.SERVER_PROFILES_DIR / "xtradb-5.5.yaml").read_text())
    monkeypatch.setattr(paths, "SERVER_PROFILES_DIR", folder)
    code, out, err = cli(["validate", str(FLASH)])
    assert code != 0
    # One line for the server (and one for tpcc_start where it is not installed: the study
    # names the post's client), each with its fix.
    lines = [line for line in (out + err).splitlines()
             if "stability-2011-flash.yaml: " in line and "workload.driver" not in line]
    assert len(lines) == 1, out + err
    assert "server profile 'mysql-5.5' is not built on this machine" in lines[0]
    assert "scripts/build-server.sh mysql-5.5 SRC PREFIX" in lines[0]
