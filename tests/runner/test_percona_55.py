"""Percona Server 5.5 built from source (``scripts/build-server.sh percona-5.5``), for real.

Its knob rules against the binary's own option list (names, defaults and value sets, no
server started), and one cell end to end through the runner — dataset load with the Go
driver, restore, start, samples, record — with the knobs only Percona's XtraDB has. The
build from Percona XtraDB Cluster's tree carries Galera's wsrep hooks: the run must show them
inactive. Without the built profile every test skips and names the build command
(``optional_tool``), so ``make test`` costs nothing extra here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.statistics.checkpoint import max_checkpoint_age
from runner.fleet.worker import run_experiment
from runner.knobs.translate import translate_for_option_list, translate_partial
from runner.run.sampler import decompress_status
from runner.server.options import dry_run, dry_run_options, option_list
from store.db import ResultsDB
from tests.support.built_servers import built_server
from tests.support.server_runs import (
    assert_checkpoints_trail_redo,
    built_server_experiment,
    only_run,
)

pytestmark = [pytest.mark.mysql, pytest.mark.slow, pytest.mark.optional_tool]

KIND = "percona-5.5"
MiB = 1024**2


def translate(knobs: dict) -> tuple[dict[str, str], list[str]]:
    """(my.cnf options, problems) for ``knobs`` on the built Percona server, as preflight."""
    server = built_server(KIND)
    options = option_list(server)
    tr, problems = translate_partial(knobs, server.flavor, server.version,
                                     option_names=options)
    problems = [str(p) for p in problems]
    problems += [str(p) for p in translate_for_option_list(tr, options, label=server.label)]
    return tr.server_options, problems


def test_the_binary_is_percona_server_55_with_xtradb_knobs() -> None:
    server = built_server(KIND)
    assert server.flavor == "percona" and server.version[:2] == (5, 5)
    assert server.label == "percona-5.5"
    options = option_list(server)
    # Percona's names, with the defaults its 5.5 documentation gives.
    assert options["innodb_adaptive_flushing_method"] == "estimate"
    assert options["innodb_flush_neighbor_pages"] == "area"
    assert options["innodb_checkpoint_age_target"] == "0"
    assert options["innodb_adaptive_flushing"] == "TRUE"
    assert options["innodb_doublewrite"] == "TRUE"
    # Neither Percona 5.5.8's name nor the 5.6+ variables exist here.
    for absent in ("innodb_adaptive_checkpoint", "innodb_flush_neighbors",
                   "innodb_io_capacity_max", "innodb_max_dirty_pages_pct_lwm",
                   "innodb_cleaner_lsn_age_factor", "innodb_redo_log_capacity"):
        assert absent not in options, absent
    # Galera's hooks are compiled in and load nothing by default.
    assert options["wsrep_provider"] == "none"


@pytest.mark.parametrize(("level", "variable", "value"), [
    ({"flush_neighbor_pages": "none"}, "innodb_flush_neighbor_pages", "none"),
    ({"flush_neighbor_pages": "cont"}, "innodb_flush_neighbor_pages", "cont"),
    ({"flush_neighbor_pages": "area"}, "innodb_flush_neighbor_pages", "area"),
    ({"adaptive_checkpoint": "none"}, "innodb_adaptive_flushing_method", "native"),
    ({"adaptive_checkpoint": "estimate"}, "innodb_adaptive_flushing_method", "estimate"),
    ({"adaptive_checkpoint": "keep_average"}, "innodb_adaptive_flushing_method",
     "keep_average"),
    ({"doublewrite": False}, "innodb_doublewrite", "0"),
    ({"max_dirty_pages_pct": 60.0}, "innodb_max_dirty_pages_pct", "60"),
    ({"log_file_size": 4000 * MiB}, "innodb_log_file_size", str(2000 * MiB)),
])
def test_each_percona_level_is_what_the_binary_parses(level: dict, variable: str,
                                                      value: str) -> None:
    """The rule's variable and value, and the binary's own parse agrees (no complaint)."""
    server = built_server(KIND)
    options, problems = translate(level)
    assert problems == [] and options[variable] == value
    assert dry_run_options(server, options) == []
    parsed = dry_run(server, options).values
    shown = {"0": "FALSE", "1": "TRUE"}.get(value, value) if variable == "innodb_doublewrite" \
        else value
    assert parsed[variable] == shown


@pytest.mark.parametrize(("variable", "bogus"), [
    ("innodb_flush_neighbor_pages", "neighbors"),
    ("innodb_adaptive_flushing_method", "reflex"),
])
def test_the_binary_refuses_values_outside_the_rules_set(variable: str, bogus: str) -> None:
    """The value sets the rules use are the binary's own: anything else it refuses."""
    server = built_server(KIND)
    complaints = dry_run_options(server, {variable: bogus})
    assert complaints and any(bogus in c for c in complaints), complaints


@pytest.mark.parametrize(("level", "reason"), [
    ({"adaptive_checkpoint": "reflex"}, "is not a value on percona-5.5"),
    ({"adaptive_checkpoint": "legacy"}, "is not a value on percona-5.5"),
    ({"io_capacity_max": 800}, "is absent on percona-5.5"),
    ({"max_dirty_pages_pct_lwm": 10.0}, "is absent on percona-5.5"),
    ({"flush_method": "O_DIRECT_NO_FSYNC"}, "is absent on percona-5.5"),
])
def test_levels_percona_55_lacks_are_refused_with_the_reason(level: dict, reason: str) -> None:
    options, problems = translate(level)
    assert options == {} and len(problems) == 1 and reason in problems[0], problems


def experiment(tmp_path: Path, name: str) -> Path:
    """One cell with Percona's knobs: 1 warehouse, 24 s of workload, 2 s samples."""
    return built_server_experiment(tmp_path, KIND, name, f"""\
        include:
          - {{doublewrite: off, max_dirty_pages_pct: 60, flush_neighbor_pages: cont,
              adaptive_checkpoint: keep_average,
              variables: {{innodb_checkpoint_age_target: {16 * MiB}}}}}
        """, warmup="4s", duration="20s")


def test_a_cell_runs_end_to_end_with_wsrep_inactive(tmp_path: Path, work: Path) -> None:
    server = built_server(KIND)
    name = "e2e-percona-5.5"
    db = ResultsDB(tmp_path / "r.sqlite")
    outcome = run_experiment(experiment(tmp_path, name), db, work=work)
    assert (outcome.done, outcome.failed) == (1, 0)
    recorded = only_run(db, name)
    shown, meta, samples = recorded.variables, recorded.metadata, recorded.samples
    tpmc = (recorded.run.driver_summary or {}).get("tpmc", 0)
    # The server's own words, recorded with the run.
    assert meta is not None and meta.server_flavor == "percona"
    assert meta.server_version == shown["version"] == server.version_string.split()[2]
    assert meta.extra["server"]["version_comment"] == shown["version_comment"]
    assert "Percona" in shown["version_comment"]
    # Galera's hooks stayed inactive.
    assert (shown["wsrep_on"], shown["wsrep_provider"]) == ("OFF", "none")
    # Percona's knobs, as the server shows them.
    assert shown["innodb_adaptive_flushing_method"] == "keep_average"
    assert shown["innodb_flush_neighbor_pages"] == "cont"
    assert shown["innodb_doublewrite"] == "OFF"
    assert shown["innodb_max_dirty_pages_pct"] == "60"
    assert shown["innodb_checkpoint_age_target"] == str(16 * MiB)
    assert tpmc > 0 and len(samples) >= 5
    limit = max_checkpoint_age(meta.server_flavor, meta.server_version, shown)
    assert_checkpoints_trail_redo(samples)
    for sample in samples:
        status = decompress_status(sample.status_z)
        # XtraDB's own figures: its maximum age is InnoDB's rule (docs/domain.md §3), and the
        # age target reaches the engine (the smaller of it and the async flush point).
        assert status["Innodb_checkpoint_max_age"] == limit.bytes
        assert status["Innodb_checkpoint_target_age"] == 16 * MiB
