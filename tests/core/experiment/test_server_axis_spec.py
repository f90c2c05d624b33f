"""The server as a matrix axis, before any binary runs: the experiment file, the expansion,
preflight's errors for a server that is unknown or not built, the snapshot guard, and the
analysis's metadata check across servers. No mysqld is started or asked anything here (fast
lane); tests/runner/test_server_axis.py runs the real servers."""

from __future__ import annotations

import json
import shutil
import sqlite3
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from analysis.comparisons.compare import check_metadata
from core import paths
from core.errors import AnalysisError, ConfigError, PreflightError
from core.experiment.cells import cell_key, cell_server, expand
from core.experiment.hashes import measurement_hash
from core.experiment.loading import load_experiment
from core.experiment.spec import ExperimentSpec
from runner.admission.preflight import preflight
from runner.datasets import DatasetError, DatasetKey, Snapshot, restore

HEAD = """\
version: 1
name: servers
dataset: {workload: tpcc, warehouses: 1}
workload: {driver: tpcc, connections: 1, warmup: 2s, duration: 6s, report_interval: 2s}
sampling: {interval: 2s}
"""


def experiment(tmp_path: Path, body: str, head: str = HEAD) -> Path:
    path = tmp_path / "servers.yaml"
    path.write_text(head + textwrap.dedent(body))
    return path


def test_a_server_axis_expands_with_the_server_first_in_every_label(tmp_path: Path) -> None:
    path = experiment(tmp_path, """\
        matrix: {doublewrite: [on, off], server: [mariadb-debian, mysql-5.5]}
        include:
          - {server: xtradb-5.5, doublewrite: on, flush_neighbor_pages: none}
          - {doublewrite: off, max_dirty_pages_pct: 50}
        """)
    exp = load_experiment(path)
    cells = expand(exp, str(path))
    assert [c.label for c in cells] == [
        "server=mariadb-debian doublewrite=on",
        "server=mariadb-debian doublewrite=off",
        "server=mysql-5.5 doublewrite=on",
        "server=mysql-5.5 doublewrite=off",
        "server=xtradb-5.5 doublewrite=on flush_neighbor_pages=none",
        # An include row naming no server runs on the top-level default, and says so.
        "server=mariadb-debian doublewrite=off max_dirty_pages_pct=50",
    ]
    assert [cell_server(exp, c) for c in cells][-2:] == ["xtradb-5.5", "mariadb-debian"]
    # The server is part of the cell's identity like any knob.
    assert cells[0].key == cell_key({"server": "mariadb-debian", "doublewrite": True})


def test_an_experiment_naming_no_server_per_cell_keeps_its_cell_keys(tmp_path: Path) -> None:
    path = experiment(tmp_path, "server: mariadb-debian\nmatrix: {doublewrite: [on, off]}\n")
    exp = load_experiment(path)
    cells = expand(exp, str(path))
    assert not exp.names_servers()
    assert [c.knobs for c in cells] == [{"doublewrite": True}, {"doublewrite": False}]
    assert cells[0].key == cell_key({"doublewrite": True})
    assert [cell_server(exp, c) for c in cells] == ["mariadb-debian"] * 2


def test_fixed_server_runs_every_cell_and_exclude_and_baseline_name_servers(
        tmp_path: Path) -> None:
    path = experiment(tmp_path, """\
        fixed: {server: mysql-5.5}
        matrix: {doublewrite: [on, off]}
        """)
    cells = expand(load_experiment(path), str(path))
    assert {c.knobs["server"] for c in cells} == {"mysql-5.5"}

    path = experiment(tmp_path, """\
        matrix: {server: [mariadb-debian, mysql-5.5], flush_neighbor_pages: [none, area]}
        exclude:
          - {server: mysql-5.5, flush_neighbor_pages: none}
        baseline: {server: mysql-5.5}
        """)
    cells = expand(load_experiment(path), str(path))
    assert [c.label for c in cells] == [
        "server=mariadb-debian flush_neighbor_pages=none",
        "server=mariadb-debian flush_neighbor_pages=area",
        "server=mysql-5.5 flush_neighbor_pages=area",
    ]
    assert [c.is_baseline for c in cells] == [False, False, True]


def test_server_at_the_top_and_in_fixed_is_one_clear_error(tmp_path: Path) -> None:
    path = experiment(tmp_path, "server: mariadb-debian\nfixed: {server: mysql-5.5}\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    text = err.value.render()
    assert "fixed.server" in text and "keep one" in text


@pytest.mark.parametrize(("body", "key"), [
    ("matrix: {server: [mariadb-debian, 'my server']}\n", "matrix.server[1]"),
    ("include:\n  - {server: '', doublewrite: on}\n", "include[0].server"),
])
def test_a_server_value_that_is_no_profile_name_is_refused_with_its_key(
        tmp_path: Path, body: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_experiment(experiment(tmp_path, body))
    assert key in err.value.render()


@pytest.fixture
def only_mariadb_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A configs/servers without the built 5.5 profiles (a machine that did not build them)."""
    folder = tmp_path / "servers"
    folder.mkdir()
    (folder / "mariadb-debian.yaml").write_text(
        (paths.SERVER_PROFILES_DIR / "mariadb-debian.yaml").read_text())
    monkeypatch.setattr(paths, "SERVER_PROFILES_DIR", folder)
    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))
    return folder


def test_a_cell_naming_an_unbuilt_or_unknown_server_is_a_preflight_error(
        tmp_path: Path, only_mariadb_profile: Path) -> None:
    # Every cell names a server this machine lacks, so no binary is asked anything.
    path = experiment(tmp_path, """\
        matrix: {server: [xtradb-5.5], doublewrite: [on, off]}
        include:
          - {server: mysql-5.6, doublewrite: on}
        """)
    exp = load_experiment(path)
    with pytest.raises(PreflightError) as err:
        preflight(exp, str(path), work_dir=tmp_path / "work")
    lines = err.value.problems
    assert len(lines) == 2, lines  # one per server, not one per cell
    assert lines[0].startswith(f"{path}: matrix.server[0]: server profile 'xtradb-5.5' is not"
                               " built on this machine")
    assert "scripts/build-server.sh xtradb-5.5 SRC PREFIX" in lines[0]
    assert lines[1].startswith(f"{path}: include[0].server: unknown server profile 'mysql-5.6'")
    assert "mariadb-debian" in lines[1]  # the profiles there are, to pick from


def test_a_snapshot_of_another_server_is_never_restored(tmp_path: Path) -> None:
    mariadb = DatasetKey("tpcc", "w1", "mariadb", "10.11.19+0a1b2c3d")
    mysql = DatasetKey("tpcc", "w1", "mysql", "5.5.62+4e5f6a7b")
    (tmp_path / "snap" / "data").mkdir(parents=True)
    snapshot = Snapshot(tmp_path / "snap", mariadb, (), (), {})
    target = tmp_path / "datadir"
    with pytest.raises(DatasetError) as err:
        restore(snapshot, target, expect=mysql)
    assert "mariadb 10.11.19" in err.value.what and "mysql 5.5.62" in err.value.what
    assert not target.exists()  # refused before anything was copied
    assert mariadb.dirname() != mysql.dirname()


def runs_frame(servers: list[str], versions: list[str]) -> pd.DataFrame:
    return pd.DataFrame({
        "status": ["done"] * len(servers), "server": servers, "server_version": versions,
        "server_flavor": ["mariadb" if v.startswith("10.") else "mysql" for v in versions],
        "dataset_key": [f"tpcc-w1-{v}" for v in versions], "hostname": ["h"] * len(servers),
    })


def test_the_analysis_checks_server_metadata_within_each_server() -> None:
    # Across the levels of a server axis the versions differ by design: no refusal.
    ok = runs_frame(["mariadb-debian", "mysql-5.5"] * 2, ["10.11.19", "5.5.62"] * 2)
    assert check_metadata(ok) == []
    # Two runs of one server cell on different versions still refuse, naming the server.
    bad = runs_frame(["mysql-5.5", "mysql-5.5", "mariadb-debian"],
                     ["5.5.62", "5.5.61", "10.11.19"])
    with pytest.raises(AnalysisError) as err:
        check_metadata(bad)
    assert "server_version differs between runs of server mysql-5.5: 5.5.61, 5.5.62" in str(
        err.value.what)
    # Without a server knob, differing versions are refused as before.
    with pytest.raises(AnalysisError):
        check_metadata(ok.drop(columns=["server"]))


def test_the_stored_spec_round_trips_the_server_knob(tmp_path: Path) -> None:
    path = experiment(tmp_path, "matrix: {server: [mariadb-debian, mysql-5.5]}\n")
    exp = load_experiment(path)
    again = ExperimentSpec.model_validate(exp.model_dump(mode="json"))
    assert [c.key for c in expand(again)] == [c.key for c in expand(exp)]


def test_the_server_knob_keeps_the_measurement_hash_of_stored_experiments(
        tmp_path: Path) -> None:
    # The committed study was queued before `server` was a knob; recomputing its hash from
    # what it stored must give the stored hash, or re-queuing it would start over.
    copy = tmp_path / "study.sqlite"  # never open a committed database in place
    shutil.copy(paths.REPO_ROOT / "docs" / "study-2011" / "stability-2011.sqlite", copy)
    with sqlite3.connect(copy) as con:
        rows = con.execute("SELECT measurement_hash, spec, files FROM experiments").fetchall()
    assert rows
    for stored, spec, files in rows:
        exp = ExperimentSpec.model_validate(json.loads(spec))
        assert exp.fixed.server is None
        assert measurement_hash(exp, json.loads(files)) == stored
