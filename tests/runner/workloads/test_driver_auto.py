"""``workload.driver: auto`` (the default): tpcc-mysql's tpcc_start when it is found, else the
Go driver; resolved once, when the file is validated, and stored resolved.

The resolution tests put a fake executable named ``tpcc_start`` in a PATH or ``TPCC_MYSQL_BIN``
directory (the choice asks whether it is there and answers its identity probe as the real one
does); the real run uses the real tpcc_start (built by ``scripts/build-tpcc-mysql.sh``, marker
``optional_tool``: skipped without it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import select

from core.experiment.drivers import choose_auto
from core.experiment.hashes import measurement_hash
from core.experiment.loading import load_experiment
from core.experiment.queued import QueuedExperiment
from core.experiment.sections import WorkloadSpec
from core.experiment.spec import ExperimentSpec
from runner.workloads.tpcc_mysql import TPCC_MYSQL_ENV, TpccMysqlWorkload
from store.db import ResultsDB
from store.models import Experiment, Run, RunMetadata
from tests.support.cli_runner import CliRun
from tests.support.tiny_experiment import tiny_tpcc_experiment

#: What the real tpcc_start prints for the adapter's identity probe (``tpcc_start -?``).
USAGE = Path(__file__).parents[2] / "fixtures" / "tpcc-mysql" / "tpcc_start-unknown-option.stdout"


def _fake_tpcc_start(folder: Path, *, executable: bool = True) -> Path:
    """A file named tpcc_start in ``folder`` that answers the identity probe as the real one."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tpcc_start"
    # echo, a shell builtin: these tests run with a PATH that holds nothing else.
    path.write_text("#!/bin/sh\n" + "".join(f"echo '{line}'\n"
                                            for line in USAGE.read_text().splitlines()))
    path.chmod(0o755 if executable else 0o644)
    return path


@pytest.fixture
def no_tpcc_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH without tpcc_start and TPCC_MYSQL_BIN unset; returns the (empty) PATH directory."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv(TPCC_MYSQL_ENV, raising=False)
    return empty


def test_auto_without_tpcc_start_is_the_go_driver(no_tpcc_start: Path) -> None:
    spec = WorkloadSpec()
    assert spec.driver == "tpcc"
    assert spec.driver_choice is not None
    assert "tpcc_start not found on PATH or in TPCC_MYSQL_BIN (unset)" in spec.driver_choice
    assert "Go driver (1.03–1.12× tpcc_start's TpmC, docs/tpcc.md)" in spec.driver_choice
    assert WorkloadSpec(driver="auto").driver == "tpcc"


def test_auto_with_tpcc_start_on_path_is_tpcc_mysql(no_tpcc_start: Path) -> None:
    found = _fake_tpcc_start(no_tpcc_start)
    spec = WorkloadSpec()
    assert spec.driver == "tpcc-mysql"
    assert spec.driver_choice == ("workload.driver auto → tpcc-mysql: using tpcc-mysql's"
                                  f" tpcc_start ({found}, found via PATH)")


def test_auto_finds_tpcc_start_in_tpcc_mysql_bin(no_tpcc_start: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "tpcc-mysql"
    found = _fake_tpcc_start(checkout)
    monkeypatch.setenv(TPCC_MYSQL_ENV, str(checkout))
    choice = choose_auto()
    assert (choice.driver, choice.reason.endswith(f"({found}, found via TPCC_MYSQL_BIN)")) == (
        "tpcc-mysql", True)
    # The run finds it where the choice did: the adapter's own lookup.
    assert TpccMysqlWorkload().start_binary == found
    # The variable may name the binary itself, as for the benchmark and the real-binary tests.
    monkeypatch.setenv(TPCC_MYSQL_ENV, str(found))
    assert choose_auto().driver == "tpcc-mysql"


def test_auto_skips_an_unusable_tpcc_start(no_tpcc_start: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "tpcc-mysql"
    _fake_tpcc_start(checkout, executable=False)
    monkeypatch.setenv(TPCC_MYSQL_ENV, str(checkout))
    choice = choose_auto()
    assert choice.driver == "tpcc"
    assert "is not executable" in choice.reason

    monkeypatch.setenv(TPCC_MYSQL_ENV, str(tmp_path / "nowhere"))
    assert f"not found in TPCC_MYSQL_BIN ({tmp_path / 'nowhere'}) or on PATH" in \
        choose_auto().reason


def test_auto_keeps_the_go_driver_for_its_mode(no_tpcc_start: Path) -> None:
    _fake_tpcc_start(no_tpcc_start)
    spec = WorkloadSpec(mode="batched")
    assert spec.driver == "tpcc"
    assert spec.driver_choice is not None and "workload.mode" in spec.driver_choice


def test_auto_picks_the_go_driver_for_a_fixed_rate(no_tpcc_start: Path) -> None:
    """tpcc_start runs a closed loop: with tpcc_start found, a rate still picks the Go
    driver, and says why."""
    _fake_tpcc_start(no_tpcc_start)
    assert WorkloadSpec().driver == "tpcc-mysql"
    spec = WorkloadSpec(rate=600)
    assert spec.driver == "tpcc"
    assert spec.driver_choice is not None and "fixed rate (`rate`)" in spec.driver_choice \
        and "closed loop" in spec.driver_choice


@pytest.mark.parametrize(("driver", "extra"), [("tpcc-mysql", {}),
                                               ("sysbench", {"test": "oltp_read_only"})])
@pytest.mark.parametrize("key", ["rate", "arrivals"])
def test_a_closed_loop_driver_refuses_a_rate(no_tpcc_start: Path, driver: str,
                                             extra: dict[str, str], key: str) -> None:
    value = {"rate": 600, "arrivals": "poisson"}[key]
    with pytest.raises(ValueError, match=f"`{key}` needs the Go tpcc driver: {driver} runs a"
                       " closed loop and cannot hold a fixed rate"):
        WorkloadSpec(driver=driver, **extra, **{key: value})  # type: ignore[arg-type]


def _experiment(workload: dict[str, object], **more: object) -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "version": 1, "name": "rated", "dataset": {"workload": "tpcc", "warehouses": 1},
        "workload": {"duration": "60s", **workload}, **more})


def test_arrivals_need_a_rate_and_a_rate_is_bounded(no_tpcc_start: Path) -> None:
    with pytest.raises(ValueError, match="`arrivals` spaces a fixed rate's starts"):
        _experiment({"driver": "tpcc", "arrivals": "poisson"})
    for bad in (0, -5, 1e8, float("inf")):
        with pytest.raises(ValueError, match="rate"):
            WorkloadSpec(driver="tpcc", rate=bad)
        with pytest.raises(ValueError, match="rate"):
            _experiment({"driver": "tpcc"}, matrix={"rate": [600, bad]})


def test_the_rate_knob_is_a_matrix_axis_for_the_go_driver(no_tpcc_start: Path) -> None:
    """`rate` in the matrix: auto picks the Go driver even with tpcc_start found, arrivals
    apply to every cell; a closed-loop driver refuses it, and the rate lives in one place."""
    _fake_tpcc_start(no_tpcc_start)
    exp = _experiment({"arrivals": "poisson"}, matrix={"rate": [300, 600]})
    assert exp.workload.driver == "tpcc"
    assert "fixed rate (`rate`)" in (exp.workload.driver_choice or "")
    assert measurement_hash(exp) == measurement_hash(
        _experiment({"arrivals": "poisson"}, matrix={"rate": [300, 1200]}))  # the matrix: plan only
    with pytest.raises(ValueError, match="`rate` needs the Go tpcc driver: tpcc-mysql runs a"
                       " closed loop"):
        _experiment({"driver": "tpcc-mysql"}, include=[{"rate": 600}])
    with pytest.raises(ValueError, match="the rate is set both in `workload.rate` and in"
                       " `fixed`"):
        _experiment({"rate": 600}, fixed={"rate": 300})


def test_tpcc_start_named_in_binaries_picks_tpcc_mysql_even_if_missing(
        no_tpcc_start: Path, tmp_path: Path) -> None:
    """A path the user wrote is theirs to fix (preflight names it), not a silent fallback."""
    missing = tmp_path / "built" / "tpcc_start"
    spec = WorkloadSpec(binaries={"tpcc_start": str(missing)})
    assert spec.driver == "tpcc-mysql"
    assert str(missing) in (spec.driver_choice or "")
    assert TpccMysqlWorkload(spec.binaries).problems() == [
        f"tpcc_start not found at {missing} — build Percona-Lab's tpcc-mysql"
        " (scripts/build-tpcc-mysql.sh SRC_DIR) and set TPCC_MYSQL_BIN=SRC_DIR, put tpcc_start"
        " on PATH or set workload.binaries.tpcc_start"]


@pytest.mark.parametrize("driver", ["tpcc", "tpcc-mysql"])
def test_a_named_driver_is_unchanged(no_tpcc_start: Path, driver: str) -> None:
    for present in (False, True):
        if present:
            _fake_tpcc_start(no_tpcc_start)
        spec = WorkloadSpec(driver=driver)
        assert (spec.driver, spec.driver_choice) == (driver, None)


def test_auto_without_tpcc_start_keeps_the_go_driver_hash(no_tpcc_start: Path,
                                                          tmp_path: Path) -> None:
    """Files written before ``auto`` (no driver: the Go driver) keep their measurement."""
    # Closed loops both (rate=None): a fixed rate is the Go driver's alone.
    auto = load_experiment(tiny_tpcc_experiment(tmp_path, "same", driver=None, rate=None))
    named = load_experiment(tiny_tpcc_experiment(tmp_path, "same", driver="tpcc", rate=None))
    assert auto.workload.driver == "tpcc"
    assert measurement_hash(auto) == measurement_hash(named)
    _fake_tpcc_start(no_tpcc_start)
    other = load_experiment(tiny_tpcc_experiment(tmp_path, "same", driver=None, rate=None))
    assert other.workload.driver == "tpcc-mysql"
    assert measurement_hash(other) != measurement_hash(named)


@pytest.mark.parametrize("present_at_queue", [False, True])
def test_the_stored_choice_survives_a_changed_host(no_tpcc_start: Path, tmp_path: Path,
                                                   present_at_queue: bool) -> None:
    """What the queue stores (the validated spec) is read back with the driver it chose,
    whatever the host has by then: a resumed queue never switches clients."""
    from core.experiment.cells import expand
    from runner.admission import queue_record

    fake = _fake_tpcc_start(no_tpcc_start) if present_at_queue else None
    exp = load_experiment(tiny_tpcc_experiment(tmp_path, "kept", driver=None))
    chosen = "tpcc-mysql" if present_at_queue else "tpcc"
    assert exp.workload.driver == chosen
    db = ResultsDB(tmp_path / "r.sqlite")
    queue_record.enqueue(db, QueuedExperiment(exp, "kept.yaml", expand(exp, "kept.yaml")))

    if fake is not None:
        fake.unlink()
    else:
        _fake_tpcc_start(no_tpcc_start)
    with db.session() as s:
        stored = s.scalars(select(Experiment.spec).where(Experiment.name == "kept")).one()
    assert stored["workload"]["driver"] == chosen
    again = ExperimentSpec.model_validate(stored)  # as the worker reads it back
    assert (again.workload.driver, again.workload.driver_choice) == (chosen, None)
    assert measurement_hash(again) == measurement_hash(exp)


@pytest.mark.mysql
def test_plan_and_validate_say_which_client_and_why(no_tpcc_start: Path, tmp_path: Path,
                                                    cli: CliRun,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tiny_tpcc_experiment(tmp_path, "said", driver=None)
    # The sandbox's mariadbd and the Go driver are found by absolute paths; PATH only needs
    # what the dry run calls through the shell.
    monkeypatch.setenv("PATH", f"{no_tpcc_start}{os.pathsep}/usr/sbin:/usr/bin:/bin")
    code, out, err = cli(["plan", str(path)])
    assert code == 0, err
    assert ("note: workload.driver auto → tpcc: tpcc_start not found on PATH or in"
            " TPCC_MYSQL_BIN (unset): using flushbench's Go driver (1.03–1.12× tpcc_start's"
            " TpmC, docs/tpcc.md)") in " ".join(out.split())

    checkout = tmp_path / "tpcc-mysql"
    found = _fake_tpcc_start(checkout)
    monkeypatch.setenv(TPCC_MYSQL_ENV, str(checkout))
    code, out, err = cli(["validate", str(path)])
    assert code == 0, err
    # A long path folds at the terminal's width: compare without the white space.
    assert "".join((f"note: workload.driver auto → tpcc-mysql: using tpcc-mysql's tpcc_start"
                    f" ({found}, found via TPCC_MYSQL_BIN)").split()) in "".join(out.split())

    # A fixed rate: tpcc_start is found, yet the plan runs the Go driver at the rate and says
    # why.
    rated = tiny_tpcc_experiment(tmp_path, "rated", driver=None, workload="rate: 600")
    monkeypatch.setenv("COLUMNS", "250")  # the cell table's client column on one line
    code, out, err = cli(["plan", str(rated)])
    assert code == 0, err
    said = " ".join(out.replace("│", " ").split())
    assert ("note: workload.driver auto → tpcc: a fixed rate (`rate`) needs a driver that holds"
            " one, and tpcc_start runs a closed loop") in said
    assert "rate=600 NOTPM (uniform)" in said


@pytest.mark.mysql
@pytest.mark.slow
@pytest.mark.optional_tool
def test_auto_runs_the_real_tpcc_start(tmp_path: Path, work: Path, cli: CliRun) -> None:
    """A tiny real run with ``driver`` left out, on a host with tpcc-mysql built: tpcc_start
    measures it (on data the Go loader loaded), and the run records that client."""
    problems = TpccMysqlWorkload().problems()
    if problems:
        pytest.skip(f"{problems[0]} (tpcc_start is optional; this test needs the real one)")
    path = tiny_tpcc_experiment(tmp_path, "auto-real", driver=None)
    assert load_experiment(path).workload.driver == "tpcc-mysql"
    code, _, err = cli(["run", str(path), "--db", str(tmp_path / "r.sqlite"),
                        "--work", str(work)])
    assert code == 0, err
    with ResultsDB(tmp_path / "r.sqlite").session() as s:
        stored = s.scalars(select(Experiment.spec).where(Experiment.name == "auto-real")).one()
        drivers = list(s.scalars(select(RunMetadata.driver)))
        summaries = list(s.scalars(select(Run.driver_summary)))
    assert stored["workload"]["driver"] == "tpcc-mysql"
    assert drivers == ["tpcc-mysql"]
    assert summaries[0] and summaries[0]["tpmc"] > 0
