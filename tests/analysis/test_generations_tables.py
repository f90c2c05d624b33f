"""analysis/studies/generations_tables.py: the write-up's tables, computed from the
committed generations study, agree with the runs they come from, and the README quotes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.steadiness.disturbed import counted
from analysis.studies import generations_tables
from analysis.tables import frames
from tests.support.recorded import recorded_copy
from tests.support.study_tables import (
    assert_hosts_list_every_counted_run_once,
    assert_readme_quotes,
    printed,
    section,
)

#: The write-up whose tables the script prints.
README = Path(__file__).resolve().parents[2] / "docs" / "study-generations" / "README.md"
#: The rows' names in the experiment file: SERVER-KIND, each server's defaults its baseline.
SERVERS = ("mysql-5.5", "percona-5.5", "mariadb-10.2", "mariadb-10.11", "mariadb-11.4")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the committed database."""
    return recorded_copy("generations", tmp_path_factory)


@pytest.fixture(scope="module")
def tables(study: Path) -> str:
    """The script's whole output on the private copy."""
    return printed(generations_tables.main, str(study))


def test_every_counted_run_is_in_one_session_and_one_row(tables: str, study: Path) -> None:
    rs = frames.load(study, "generations").run_summary
    assert_hosts_list_every_counted_run_once(tables, rs)
    ids = rs.loc[counted(rs), "run_id"]
    rows = section(tables, "Rows")
    assert len(rows) == 15 and sum(int(row[2]) for row in rows) == len(ids)


def test_each_server_is_its_own_baseline_and_mysql_55_the_generations_one(tables: str) -> None:
    rows = {row[0].strip("`"): row for row in section(tables, "Rows")}
    assert set(rows) == {f"{s}-{k}" for s in SERVERS for k in ("defaults", "dw-off", "fast")}
    for server in SERVERS:
        assert rows[f"{server}-defaults"][4] == "–"
        assert rows[f"{server}-dw-off"][4] != "–"
    generations = {row[0].strip("`"): row for row in section(tables, "Generations")}
    assert list(generations) == [f"{s}-defaults" for s in SERVERS]
    assert generations["mysql-5.5-defaults"][2] == "–"
    assert all(row[2] != "–" for name, row in generations.items() if not name.startswith("mysql"))


def test_doublewrite_off_writes_no_doublewrite_pages(tables: str) -> None:
    for name, row in ((r[0].strip("`"), r) for r in section(tables, "I/O per New-Order")):
        dblwr_ops = float(row[2])
        assert (dblwr_ops == 0) is name.endswith("dw-off"), (name, row)


@pytest.mark.parametrize("title", ["Rows", "Generations", "I/O per New-Order",
                                   "Flushing state", "Hosts"])
def test_the_readme_quotes_each_table_as_the_committed_database_has_it(tables: str,
                                                                        title: str) -> None:
    assert_readme_quotes(README, tables, title, "generations_tables.py DB")


def test_a_missing_or_broken_database_is_one_line_not_a_traceback(tmp_path: Path,
                                                                   capsys) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not a database")
    for path in (tmp_path / "missing.sqlite", broken):
        assert generations_tables.main([str(path)]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and "Traceback" not in err and len(err.splitlines()) == 1
