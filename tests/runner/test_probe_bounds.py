"""Probes of binaries the user names end in bounded time, whatever the binary does.

A probe (``mysqld --version``, ``mysqld --verbose --help``, ``sysbench --version``) runs through
:func:`runner.proc.run_checked`: its own process group, killed as a group at its timeout, no
wait on a pipe that a child it left holds, output kept to a bound. Hostile shell scripts stand
in for the binaries: one that never ends, one whose background child keeps stdout open, one
that closes its output and runs on, one whose child leaves the group, one that prints without
end. Each check runs in a child process under a 30 s guard (its output goes to a file, so the
guard itself waits on no pipe): the bound is the acceptance, not a timing measurement.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from core.paths import REPO_ROOT
from tests.support.hostile_binaries import FLUSHBENCH, guarded, hostile, left_alive

PROBE = textwrap.dedent("""\
    import subprocess, sys
    from runner.proc import OUTPUT_LIMIT, run_checked
    try:
        done = run_checked([sys.argv[1], "--version"], timeout=float(sys.argv[2]))
    except subprocess.TimeoutExpired as exc:
        print("timed out; kept", len(exc.stdout or ""))
    else:
        print("exit", done.returncode, "kept", len(done.stdout),
              "full" if len(done.stdout) == OUTPUT_LIMIT else "", repr(done.stdout[:9]))
    """)


# Each case waits out run_checked's 3 s timeout or a child that keeps running: slow (the fast
# lane is for CPU-bound checks; `make test` runs them).
@pytest.mark.slow
@pytest.mark.parametrize(("kind", "expected"), [
    ("sleeps", "timed out; kept 0"),
    ("forks-holding-stdout", "exit 0 kept 9  'answered\\n'"),
    ("closes-output-and-runs-on", "timed out; kept 0"),
    ("leaves-its-group", "exit 0 kept 9  'answered\\n'"),
    ("prints-without-end", "exit -9 kept 16777216 full 'garbage\\ng'"),
])
def test_run_checked_ends_in_bounded_time(kind: str, expected: str, tmp_path: Path) -> None:
    script = hostile(tmp_path / "bin", kind)
    code, out = guarded([sys.executable, "-c", PROBE, str(script), "3"], tmp_path / "log",
                        cwd=REPO_ROOT)
    assert (code, out.strip()) == (0, expected)
    assert left_alive(tmp_path / "bin", escaped_ok=kind == "leaves-its-group") == []


def test_one_deadline_bounds_every_probe_together(tmp_path: Path) -> None:
    """Inside ``probe_deadline``, a probe whose own timeout is far off is cut at the deadline
    (``DeadlinePassed``, a ``TimeoutExpired``), and once it has passed a probe is not even
    started; outside, the probe's own timeout holds again."""
    from runner.proc import DeadlinePassed, deadline_passed, probe_deadline, run_checked

    marker = tmp_path / "started"
    with probe_deadline(1):
        with pytest.raises(DeadlinePassed):
            run_checked(["sleep", "600"], timeout=600)
        assert deadline_passed()
        with pytest.raises(DeadlinePassed):
            run_checked(["touch", str(marker)], timeout=600)
        assert not marker.exists()
    assert not deadline_passed()
    assert run_checked(["touch", str(marker)], timeout=10).returncode == 0 and marker.exists()


def test_run_checked_returns_an_ordinary_answer_whole(tmp_path: Path) -> None:
    from runner.proc import run_checked

    done = run_checked(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    raw = run_checked(["printf", "\\377ok"], timeout=10, text=False)
    assert raw.stdout == b"\xffok"
    with pytest.raises(OSError):
        run_checked([tmp_path / "missing"], timeout=10)


# --- the commands: validate with a hostile binary in each place a user can name one ----------

EXPERIMENT = textwrap.dedent("""\
    version: 1
    name: hostile-binaries
    server: {server}
    base_config: small
    dataset: {{workload: sysbench, tables: 1, table_size: 1000}}
    workload: {{driver: sysbench, test: oltp_read_only, connections: 4, warmup: 5s,
               duration: 60s, report_interval: 10s{binaries}}}
    """)
#: A real server's --version line, so a script gets past the version probe to --help.
ANSWERS_VERSION = ('case "$*" in *--version*) echo "mariadbd  Ver 10.11.19-MariaDB for'
                   ' debian-linux-gnu on x86_64"; exit 0;; esac\n')


def _validate(tmp_path: Path, *, server: str = "mariadb-debian",
              sysbench: Path | None = None) -> tuple[int, str]:
    binaries = f", binaries: {{sysbench: '{sysbench}'}}" if sysbench else ""
    (tmp_path / "x.yaml").write_text(EXPERIMENT.format(server=server, binaries=binaries))
    return guarded([FLUSHBENCH, "validate", "x.yaml"], tmp_path / "validate.log",
                   cwd=tmp_path, env={"HOME": str(tmp_path)})


def _profile(tmp_path: Path, mysqld: Path) -> str:
    path = tmp_path / "hostile-server.yaml"
    path.write_text(f"version: 1\nname: hostile-server\nflavor: mariadb\nmysqld: '{mysqld}'\n"
                    "install_db: /usr/bin/mariadb-install-db\n")
    return str(path)


def _one_error(out: str) -> str:
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in out, out[-3000:]
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "prefix", "expected"), [
    ("sleeps", "", "--version`: it did not answer within 10 s (killed)"),
    ("prints-garbage", "", "--version` printed no version"),
    ("sleeps", ANSWERS_VERSION, "--verbose --help`: it did not finish within 20 s (killed)"),
    ("forks-holding-stdout", ANSWERS_VERSION,
     "--no-defaults --verbose --help` printed no variable list (exit 0)"),
    ("prints-without-end", ANSWERS_VERSION,
     "--no-defaults --verbose --help` printed no variable list (exit -9)"),
], ids=["sleeps", "garbage", "help-sleeps", "help-forks", "help-prints-without-end"])
def test_validate_with_a_hostile_mysqld_ends_with_one_error(
        kind: str, prefix: str, expected: str, tmp_path: Path) -> None:
    mysqld = hostile(tmp_path / "bin", kind, "mariadbd", prefix=prefix)
    code, out = _validate(tmp_path, server=_profile(tmp_path, mysqld))
    assert code == 2, out[-3000:]
    assert f"{mysqld} {expected}" in _one_error(out), out[-3000:]
    assert left_alive(tmp_path / "bin") == []


@pytest.mark.mysql
@pytest.mark.parametrize(("kind", "expected"), [
    ("sleeps", "`{path} --version` did not answer within 10 s (killed)"),
    ("forks-holding-stdout", "`{path} --version` does not print `sysbench`"),
    ("prints-without-end", "`{path} --version` does not print `sysbench`"),
])
def test_validate_with_a_hostile_sysbench_ends_with_one_error(
        kind: str, expected: str, tmp_path: Path) -> None:
    sysbench = hostile(tmp_path / "bin", kind, "sysbench")
    code, out = _validate(tmp_path, sysbench=sysbench)
    assert code == 2, out[-3000:]
    assert f"{sysbench} is not sysbench: " + expected.format(path=sysbench) in _one_error(out)
    assert left_alive(tmp_path / "bin") == []
