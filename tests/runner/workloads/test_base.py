"""The shared machinery: credentials stay out of argv and logs, evidence files, records."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from core.errors import ConfigError, WorkloadError
from core.experiment.sections import DatasetSpec, WorkloadSpec
from runner.connection import ConnectionInfo
from runner.workloads import base, get_workload, log_files
from runner.workloads.base import (
    IntervalRecord,
    OutputParser,
    RunningWorkload,
    client_env,
    run_to_completion,
)

SECRET = "s3cr3t-pw"
CONN = ConnectionInfo(socket=Path("/tmp/x.sock"), user="bench", password=SECRET, database="d")


class EchoParser(OutputParser):
    """Every line is an interval whose count is the line number (for the plumbing tests)."""

    def __init__(self) -> None:
        self.n = 0

    def feed(self, line: str, read_ts: dt.datetime) -> IntervalRecord | None:
        self.n += 1
        return IntervalRecord(
            seq=self.n, ts=read_ts, elapsed_s=self.n, interval_s=1, phase="measure",
            primary_count=self.n, detail={"line": line},
        )  # fmt: skip

    def summary(self) -> dict | None:
        return {"lines": self.n}


def test_interval_record_needs_aware_utc_and_known_phase() -> None:
    naive = dt.datetime(2026, 1, 1)
    with pytest.raises(ValueError, match="aware UTC"):
        IntervalRecord(seq=1, ts=naive, elapsed_s=1, interval_s=1, phase="measure", primary_count=1)
    with pytest.raises(ValueError, match="phase"):
        IntervalRecord(
            seq=1, ts=naive.replace(tzinfo=dt.UTC), elapsed_s=1, interval_s=1,
            phase="cooldown", primary_count=1,  # type: ignore[arg-type]
        )  # fmt: skip


def test_log_files_names() -> None:
    assert log_files(Path("run/driver.log")) == (
        Path("run/driver.stdout.log"),
        Path("run/driver.stderr.log"),
    )
    assert log_files(Path("run/driver"))[1] == Path("run/driver.stderr.log")


def test_password_goes_to_env_never_argv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "someone-elses")
    assert client_env(CONN)["MYSQL_PWD"] == SECRET
    no_pw = ConnectionInfo(socket=Path("/tmp/x.sock"), user="root", database="d")
    assert "MYSQL_PWD" not in client_env(no_pw)  # never inherited
    assert SECRET not in repr(CONN)
    cases = {
        "tpcc": (DatasetSpec(workload="tpcc", warehouses=1), None),
        "sysbench": (DatasetSpec(workload="sysbench", tables=1, table_size=10), "oltp_read_only"),
    }
    for driver, (dataset, test) in cases.items():
        spec = WorkloadSpec(driver=driver, test=test, duration=10, report_interval=5)
        running = get_workload(driver, {driver: "/bin/true"}).run(
            CONN, spec, 2, dataset, Path("/tmp/unused")
        )
        assert not any(SECRET in a for a in running.argv), running.argv


def test_tpcc_mysql_password_is_redacted_and_warned(caplog: pytest.LogCaptureFixture,
                                                    tmp_path: Path) -> None:
    # tpcc-mysql only takes -p: it is on its command line, but never in what we log.
    # The adapter identifies tpcc_start first (`-?` prints its usage line): a stand-in says it.
    start = tmp_path / "tpcc_start"
    start.write_text("#!/bin/sh\necho 'Usage: tpcc_start -h server_host -P port'\n")
    start.chmod(0o755)
    adapter = get_workload("tpcc-mysql", {"tpcc_start": str(start)})
    spec = WorkloadSpec(driver="tpcc-mysql", duration=10, report_interval=5)
    with caplog.at_level("WARNING"):
        running = adapter.run(CONN, spec, 2, DatasetSpec(warehouses=1), Path("/tmp/unused"))
    assert "-p" in running.argv and "***" in running.argv
    assert not any(SECRET in a for a in running.argv)
    assert "process list" in caplog.text and SECRET not in caplog.text


def test_fractional_seconds_are_refused() -> None:
    spec = WorkloadSpec(driver="tpcc", warmup=2.5, duration=10, report_interval=5)
    with pytest.raises(WorkloadError, match="whole seconds for warmup"):
        get_workload("tpcc", {"tpcc": "/bin/true"}).run(
            CONN, spec, 1, DatasetSpec(warehouses=1), Path("/tmp/unused")
        )


def test_unknown_driver() -> None:
    with pytest.raises(ConfigError, match="unknown workload driver"):
        get_workload("hammerdb", {})


def test_running_workload_tees_redacted_output(tmp_path: Path) -> None:
    script = f"echo one; echo pass={SECRET}; echo oops >&2; echo two"
    running = RunningWorkload(
        ["sh", "-c", script], env={"PATH": "/usr/bin:/bin"}, log_path=tmp_path / "drv.log",
        parser=EchoParser(), name="echo", secrets=[SECRET],
    )  # fmt: skip
    with running:
        records = list(running.intervals(timeout_s=30))
        outcome = running.outcome()
    assert [r.detail["line"] for r in records] == ["one", "pass=***", "two"]
    assert outcome.exit_code == 0 and outcome.summary == {"lines": 3}
    assert outcome.stderr_tail == "oops"
    out_log, err_log = log_files(tmp_path / "drv.log")
    assert out_log.read_text() == "one\npass=***\ntwo\n"
    assert err_log.read_text() == "oops\n"


def test_failure_with_empty_stderr_keeps_stdout_tail(tmp_path: Path) -> None:
    running = RunningWorkload(
        ["sh", "-c", "echo FATAL: no database; exit 3"], env={"PATH": "/usr/bin:/bin"},
        log_path=tmp_path / "drv.log", parser=EchoParser(), name="echo",
    )  # fmt: skip
    with running:
        list(running.intervals(timeout_s=30))
        outcome = running.outcome()
    assert outcome.exit_code == 3
    assert "FATAL: no database" in outcome.stderr_tail


def test_run_to_completion_raises_with_the_stderr_tail(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="exited with code 2: boom"):
        run_to_completion(
            ["sh", "-c", f"echo {SECRET}; echo boom >&2; exit 2"], env={"PATH": "/usr/bin:/bin"},
            log_path=tmp_path / "load.log", timeout_s=30, what="loader", fix="x",
            secrets=[SECRET],
        )  # fmt: skip
    assert SECRET not in log_files(tmp_path / "load.log")[0].read_text()


def test_planning_counts_the_interval_sysbench_runs_past_the_window() -> None:
    from runner.workloads.registry import adapter_class

    spec = WorkloadSpec(driver="sysbench", test="oltp_read_only", warmup="10s",
                        duration="60s", report_interval="10s")
    # sysbench runs one report interval longer than it measures (runner/workloads/sysbench.py).
    assert adapter_class("sysbench").workload_seconds(spec) == 80
    assert adapter_class("tpcc").workload_seconds(spec.model_copy(
        update={"driver": "tpcc", "test": None})) == 70


def test_a_line_without_end_is_read_in_bounded_pieces(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver printing megabytes without a newline: the parser sees pieces of at most
    MAX_LINE_BYTES, never the whole output as one line."""
    monkeypatch.setattr(base, "MAX_LINE_BYTES", 1000)
    running = RunningWorkload(
        ["sh", "-c", "head -c 10500 /dev/zero | tr '\\0' x; echo; echo end"],
        env={"PATH": "/usr/bin:/bin"}, log_path=tmp_path / "drv.log", parser=EchoParser(),
        name="echo",
    )  # fmt: skip
    with running:
        lines = [r.detail["line"] for r in running.intervals(timeout_s=30)]
    assert [len(x) for x in lines] == [1000] * 10 + [500, 3]
    assert "".join(lines[:-1]) == "x" * 10500 and lines[-1] == "end"
