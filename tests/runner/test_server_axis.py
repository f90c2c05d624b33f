"""The server as a matrix axis against real binaries: preflight checks each cell against its
own server, the queue keeps every profile a cell uses, and ``flushbench run`` runs a
two-server matrix (MariaDB 10.11 from Debian + MySQL 5.5 built by scripts/build-server.sh),
each run on its cell's server, its results stored per cell.

Without a built MySQL 5.5 the tests that need it skip naming the build command
(tests/support/built_servers.py); those that only need mariadbd use a second profile file
pointing at the same binary.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sqlalchemy import select

from core import paths
from core.errors import PreflightError
from core.experiment.hashes import measurement_hash
from core.experiment.loading import load_experiment
from runner.admission import queue_record
from runner.admission.preflight import preflight
from runner.admission.run_context import prepare, prepare_stored
from store.db import ResultsDB
from store.models import Cell, Experiment, Interval, Run, RunMetadata, RunVariable, Sample
from tests.support.built_servers import built_server

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.skipif(not Path("/usr/sbin/mariadbd").is_file(),
                       reason="Debian MariaDB is not installed"),
]

HEAD = """\
version: 1
name: {name}
dataset: {{workload: tpcc, warehouses: 1}}
workload: {{driver: tpcc, connections: 1, warmup: 2s, duration: 4s, report_interval: 2s}}
sampling: {{interval: 2s}}
pre_run: {{drain_dirty_pages: false}}
"""


def experiment(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(HEAD.format(name=name) + textwrap.dedent(body))
    return path


def second_mariadb(folder: Path, description: str = "the same mariadbd, a second profile"
                   ) -> Path:
    """A profile file of its own for Debian's mariadbd: a second server without building one."""
    path = folder / "mariadb-again.yaml"
    path.write_text(
        (paths.SERVER_PROFILES_DIR / "mariadb-debian.yaml").read_text()
        .replace("name: mariadb-debian", "name: mariadb-again")
        .replace("description: Debian 12 MariaDB 10.11 from the distribution packages",
                 f"description: {description}"))
    return path


@pytest.fixture(autouse=True)
def _work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))


@pytest.mark.optional_tool  # the 5.5 servers are built by hand (scripts/build-server.sh)
def test_each_cell_is_checked_against_its_own_servers_binary(tmp_path: Path) -> None:
    built_server("mysql-5.5")
    built_server("xtradb-5.5")
    path = experiment(tmp_path, "checks", """\
        matrix: {server: [mariadb-debian, mysql-5.5], doublewrite: [on, off]}
        include:
          - {server: xtradb-5.5, flush_neighbor_pages: none, adaptive_checkpoint: keep_average}
          - {server: mariadb-debian, flush_neighbor_pages: none}
          - {server: mysql-5.5, adaptive_checkpoint: keep_average}
          - {server: mysql-5.5, flush_neighbor_pages: none}
          - {server: mysql-5.5, variables: {innodb_flush_neighbors: 0}}
        """)
    with pytest.raises(PreflightError) as err:
        preflight(load_experiment(path), str(path))
    lines = err.value.problems
    # Only the three 5.5 rows fail; XtraDB and MariaDB take the Percona and 5.6 knobs.
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"{path}: include[2].adaptive_checkpoint (server mysql-5.5):"
                               " adaptive_checkpoint=keep_average is absent on mysql-5.5")
    assert lines[1].startswith(f"{path}: include[3].flush_neighbor_pages (server mysql-5.5):"
                               " flush_neighbor_pages=none is absent on mysql-5.5")
    assert lines[2].startswith(f"{path}: include[4].variables.innodb_flush_neighbors"
                               " (server mysql-5.5): innodb_flush_neighbors is not a variable"
                               " of mysql-5.5")
    assert all(" — " in line for line in lines)  # each with its fix

    # Without those rows it passes, and each cell carries its own server's translation.
    path.write_text(path.read_text().split("  - {server: mysql-5.5, adaptive")[0])
    report = preflight(load_experiment(path), str(path))
    assert {n: s.label for n, s in report.servers.items()} == {
        "mariadb-debian": "mariadb-10.11", "mysql-5.5": "mysql-5.5", "xtradb-5.5": "mariadb-5.5"}
    xtradb, mariadb = report.cells[-2:]
    assert report.translations[xtradb.key].server_options == {
        "innodb_flush_neighbor_pages": "none", "innodb_adaptive_flushing_method": "keep_average"}
    assert report.translations[mariadb.key].server_options == {"innodb_flush_neighbors": "0"}
    # MySQL 5.5 spells a switch 1/0 in my.cnf, MariaDB 10.11 ON/OFF: per cell, per server.
    on = {report.server_name(c): report.translations[c.key].server_options
          for c in report.cells[:4] if c.knobs["doublewrite"]}
    assert on == {"mariadb-debian": {"innodb_doublewrite": "ON"},
                  "mysql-5.5": {"innodb_doublewrite": "1"}}


def test_the_queue_keeps_every_servers_profile_and_a_worker_runs_those(
        tmp_path: Path) -> None:
    again = second_mariadb(tmp_path)
    path = experiment(tmp_path, "queued", f"""\
        matrix: {{server: [mariadb-debian, {again}], doublewrite: [on, off]}}
        """)
    ctx = prepare(path, tmp_path / "work")
    assert set(ctx.files["servers"]) == {"mariadb-debian", str(again)}
    assert "server" not in ctx.files
    db = ResultsDB(tmp_path / "r.sqlite")
    enq = queue_record.enqueue(db, ctx.queued())

    # Editing one server's profile is a different measurement, as with the one server.
    before = measurement_hash(ctx.exp, ctx.files)
    second_mariadb(tmp_path, description="edited")
    assert measurement_hash(ctx.exp, prepare(path, tmp_path / "work").files) != before

    # A worker runs what was queued, even once the profile file is gone.
    again.unlink()
    worker = prepare_stored(db, enq.experiment_id, tmp_path / "work")
    assert set(worker.report.servers) == {"mariadb-debian", str(again)}
    assert worker.report.servers[str(again)].profile.description == (
        "the same mariadbd, a second profile")
    with db.session() as s:
        queued_hash = s.get(Experiment, enq.experiment_id).measurement_hash
    assert measurement_hash(worker.exp, worker.files) == queued_hash


def test_a_worker_runs_the_record_as_it_is_writing_nothing_and_expanding_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's context comes from the queued record: the base config and profiles from
    its files (none written under the work folder), the cells as the record expanded them
    (the context and preflight expand nothing again)."""
    import runner.admission.preflight as preflight_module
    import runner.admission.run_context as run_context

    base = tmp_path / "mine.cnf"
    base.write_text("[mysqld]\nskip-name-resolve\ninnodb_io_capacity = 300\n")
    path = experiment(tmp_path, "record",
                      f"base_config: {base}\nmatrix: {{doublewrite: [on, off]}}\n")
    ctx = prepare(path, tmp_path / "work")
    db = ResultsDB(tmp_path / "r.sqlite")
    enq = queue_record.enqueue(db, ctx.queued())
    base.unlink()  # gone: the worker reads the record's copy

    def expanded_again(*args: object, **kwargs: object) -> None:
        raise AssertionError("the worker expanded the cells a second time")

    monkeypatch.setattr(run_context, "expand", expanded_again)
    monkeypatch.setattr(preflight_module, "expand", expanded_again)
    work = tmp_path / "worker-work"
    worker = prepare_stored(db, enq.experiment_id, work)
    assert worker.report.base_cnf_text == ctx.report.base_cnf_text
    assert worker.report.base_options["innodb_io_capacity"] == "300"
    assert [c.key for c in worker.cells] == [c.key for c in ctx.cells]
    assert worker.exp == ctx.exp and worker.files == ctx.files
    assert not (work / "queued").exists()


def test_a_one_server_experiment_is_queued_as_before(tmp_path: Path) -> None:
    path = experiment(tmp_path, "one", "matrix: {doublewrite: [on, off]}\n")
    ctx = prepare(path, tmp_path / "work")
    assert set(ctx.files) == {"base_config", "server"}
    assert ctx.files["server"]["name"] == "mariadb-debian"
    db = ResultsDB(tmp_path / "r.sqlite")
    enq = queue_record.enqueue(db, ctx.queued())
    worker = prepare_stored(db, enq.experiment_id, tmp_path / "work")
    assert worker.exp.server == "mariadb-debian"
    assert [c.key for c in worker.cells] == [c.key for c in ctx.cells]


@pytest.mark.slow
@pytest.mark.optional_tool
def test_flushbench_run_runs_each_cell_on_its_own_server(
        tmp_path: Path, work: Path, cli) -> None:  # noqa: ANN001 - the cli fixture
    built_server("mysql-5.5")
    path = experiment(tmp_path, "two-servers", """\
        fixed: {max_dirty_pages_pct: 60}
        matrix: {server: [mariadb-debian, mysql-5.5]}
        """)
    db_path = tmp_path / "r.sqlite"
    code, out, err = cli(["run", str(path), "--db", str(db_path), "--work", str(work)])
    assert code == 0, out + err
    db = ResultsDB(db_path)
    with db.session() as s:
        rows = s.execute(select(Run, Cell).join(Cell).order_by(Cell.position)).all()
        assert [(cell.knobs["server"], run.status) for run, cell in rows] == [
            ("mariadb-debian", "done"), ("mysql-5.5", "done")]
        seen = {}
        for run, cell in rows:
            meta = s.get(RunMetadata, run.id)
            shown = dict(s.execute(select(RunVariable.name, RunVariable.value)
                                   .where(RunVariable.run_id == run.id)).all())
            intervals = s.scalars(select(Interval).where(Interval.run_id == run.id)).all()
            samples = s.scalars(select(Sample).where(Sample.run_id == run.id)).all()
            seen[cell.knobs["server"]] = (meta, shown, len(intervals), len(samples))
    maria, maria_vars, maria_intervals, maria_samples = seen["mariadb-debian"]
    mysql, mysql_vars, mysql_intervals, mysql_samples = seen["mysql-5.5"]
    # The version each run stored is what its server said (SHOW GLOBAL VARIABLES).
    assert maria.server_version == maria_vars["version"] and "MariaDB" in maria.server_version
    assert mysql.server_version == mysql_vars["version"] == "5.5.62"
    assert (maria.server_flavor, mysql.server_flavor) == ("mariadb", "mysql")
    assert maria.extra["server"]["name"] == "mariadb-debian"
    assert mysql.extra["server"]["name"] == "mysql-5.5"
    assert mysql.extra["server"]["mysqld"].endswith("/mysql-5.5/bin/mysqld")
    # The fixed knob reached both, each in its own spelling.
    assert maria_vars["innodb_max_dirty_pages_pct"] == "60.000000"
    assert mysql_vars["innodb_max_dirty_pages_pct"] == "60"
    # One dataset per server (a MariaDB 10.11 datadir does not open on MySQL 5.5).
    assert maria.dataset_key != mysql.dataset_key
    assert "-mariadb-10.11" in maria.dataset_key and "-mysql-5.5.62" in mysql.dataset_key
    assert {p.name for p in (work / "datasets").iterdir() if p.is_dir()} >= {
        maria.dataset_key, mysql.dataset_key}
    assert maria_intervals > 0 and mysql_intervals > 0
    assert maria_samples > 0 and mysql_samples > 0

    # compare takes the server as an ordinary knob: the two versions are no reason to refuse.
    code, out, err = cli(["compare", "two-servers", "--db", str(db_path)])
    assert code == 0, out + err
    assert "server=mysql-5.5" in out and "server_version differs" not in out + err


EXAMPLE = Path(__file__).resolve().parents[2] / "experiments" / "servers-2011.yaml"


@pytest.mark.optional_tool
def test_servers_2011_validates_here_and_names_the_build_of_a_missing_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli) -> None:  # noqa: ANN001
    built_server("mysql-5.5")
    built_server("xtradb-5.5")
    code, out, err = cli(["validate", str(EXAMPLE)])
    assert code == 0, out + err
    assert "4 cells" in out and "3 servers" in out

    # The same file where MySQL 5.5 was never built: one error, where and how to build it.
    folder = tmp_path / "servers"
    folder.mkdir()
    for name in ("mariadb-debian", "xtradb-5.5"):
        (folder / f"{name}.yaml").write_text(
            (paths.SERVER_PROFILES_DIR / f"{name}.yaml").read_text())
    monkeypatch.setattr(paths, "SERVER_PROFILES_DIR", folder)
    code, out, err = cli(["validate", str(EXAMPLE)])
    assert code != 0
    lines = [line for line in (out + err).splitlines() if "servers-2011.yaml: " in line]
    assert len(lines) == 1, out + err
    assert "matrix.server[1]: server profile 'mysql-5.5' is not built on this machine" in lines[0]
    assert "scripts/build-server.sh mysql-5.5 SRC PREFIX" in lines[0]
