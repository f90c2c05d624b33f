"""The shipped generations study and its profiling companion, as designed (no server needed):
five servers × three rows in rounds, each server's defaults its own baseline, the same load."""

from __future__ import annotations

from core import paths
from core.experiment.cells import expand, run_order
from core.experiment.loading import load_experiment
from core.experiment.references import row_name

STUDY = paths.EXPERIMENTS_DIR / "generations.yaml"
PROFILE = paths.EXPERIMENTS_DIR / "generations-profile.yaml"
SERVERS = {"mysql-5.5": "mysql-5.5", "percona-5.5": "percona-5.5",
           "mariadb-10.2": "mariadb-10.2", "mariadb-10.11": "mariadb-debian",
           "mariadb-11.4": "mariadb-11.4"}


def test_the_study_is_three_rows_per_server_in_rounds_each_server_its_own_baseline() -> None:
    exp = load_experiment(STUDY)
    cells = expand(exp, str(STUDY))
    names = [row_name(inc) for inc in exp.include]
    assert names == [f"{s}-{k}" for s in SERVERS for k in ("defaults", "dw-off", "fast")]
    for name, cell in zip(names, cells, strict=True):
        server, kind = name.rsplit("-", 1) if not name.endswith("dw-off") else (
            name.removesuffix("-dw-off"), "dw-off")
        assert cell.knobs["server"] == SERVERS[server]
        assert cell.is_baseline is (kind == "defaults"), name
        assert cell.knobs["doublewrite"] is (kind != "dw-off")
        assert cell.knobs["io_capacity"] == (2000 if kind == "fast" else 200)
        assert cell.knobs["storage"] == "flash-2011" and cell.knobs["log_file_size"] == 80 << 20
    assert exp.order.mode == "blocks" and len(run_order(exp, cells)) == 45
    assert (exp.disturbed.action, exp.dataset.warehouses, exp.workload.connections) == (
        "rerun", 10, 32)


def test_the_profile_runs_the_study_s_10_11_and_11_4_defaults_rows() -> None:
    study = {c.knobs["server"]: c.knobs for c in expand(load_experiment(STUDY), str(STUDY))
             if c.is_baseline}
    exp = load_experiment(PROFILE)
    cells = expand(exp, str(PROFILE))
    assert [c.knobs["server"] for c in cells] == ["mariadb-debian", "mariadb-11.4"]
    for cell in cells:
        assert cell.knobs == study[cell.knobs["server"]]
    base = load_experiment(STUDY)
    assert (exp.base_config, exp.dataset, exp.workload.connections) == (
        base.base_config, base.dataset, base.workload.connections)


def test_the_shipped_profiles_are_the_committed_ones() -> None:
    """Which servers a fresh clone has: the test that validates every shipped experiment
    leaves out the files naming any other (tests/support/built_servers.py)."""
    import subprocess

    from tests.support.built_servers import SHIPPED_PROFILES, built_servers_named

    tracked = subprocess.run(["git", "ls-files", "configs/servers/*.yaml"], cwd=paths.REPO_ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert sorted(SHIPPED_PROFILES) == sorted(n.rsplit("/", 1)[1][:-5] for n in tracked)
    assert built_servers_named(PROFILE) == ["mariadb-11.4"]
    assert built_servers_named(STUDY) == ["mariadb-10.2", "mariadb-11.4", "mysql-5.5",
                                          "percona-5.5"]


TODAY = paths.EXPERIMENTS_DIR / "generations-today.yaml"


def test_today_s_study_follows_the_flush_cycle_rules_and_the_older_study_s_load() -> None:
    """Seven servers, 15-minute runs with a 10-minute whole-cycle window and start offsets in
    three blocks (docs/statistics.md, "Flush cycles and the window"); the older servers'
    defaults rows are the older study's, compared with MySQL 5.5's; today's doublewrite-off
    rows with their own server's defaults."""
    exp = load_experiment(TODAY)
    cells = expand(exp, str(TODAY))
    older = {c.knobs["server"]: c.knobs for c in expand(load_experiment(STUDY), str(STUDY))
             if c.is_baseline}
    by_name = {row_name(inc): cell for inc, cell in zip(exp.include, cells, strict=True)}
    for server, knobs in older.items():
        name = next(n for n, c in by_name.items() if c.knobs["server"] == server)
        assert by_name[name].knobs == knobs, name
    assert by_name["mysql-5.5-defaults"].is_baseline
    for today in ("mariadb-11.8", "mysql-9.7"):
        defaults, off = by_name[f"{today}-defaults"], by_name[f"{today}-dw-off"]
        assert defaults.is_baseline and not off.is_baseline
        assert defaults.knobs.get("io_capacity") is None  # the server's own default
        assert (defaults.knobs["doublewrite"], off.knobs["doublewrite"]) == (True, False)
    assert (exp.workload.duration, exp.window.start, exp.window.end) == (900, 300, 900)
    assert exp.window.cycles == "whole" and exp.pre_run.start_jitter == 120
    assert exp.order.mode == "blocks" and len(run_order(exp, cells)) == 27
    base = load_experiment(STUDY)
    assert (exp.base_config, exp.dataset, exp.workload.connections) == (
        base.base_config, base.dataset, base.workload.connections)
