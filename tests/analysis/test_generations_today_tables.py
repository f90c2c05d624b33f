"""The rerun of the generations study under the window rules, with today's servers
(``experiments/generations-today.yaml``, issues 51 and 52): its tables, computed by
``analysis/studies/generations_tables.py`` from the committed database as far as its queue has
run, agree with the runs they come from, and the write-up quotes them and says how far the
queue is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis.steadiness.disturbed import counted
from analysis.studies import generations_tables
from analysis.tables import frames
from tests.support.recorded import recorded_copy
from tests.support.study_tables import (
    assert_hosts_list_every_counted_run_once,
    assert_readme_quotes,
    assert_says_how_far_the_queue_has_run,
    printed,
    section,
)

EXPERIMENT = "generations-today"
README = Path(__file__).resolve().parents[2] / "docs" / "study-generations" / "README.md"
#: The experiment file's rows, in its order.
ROWS = ["mysql-5.5-defaults", "percona-5.5-defaults", "mariadb-10.2-defaults",
        "mariadb-10.11-defaults", "mariadb-11.4-defaults", "mariadb-11.8-defaults",
        "mariadb-11.8-dw-off", "mysql-9.7-defaults", "mysql-9.7-dw-off"]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the committed database."""
    return recorded_copy(EXPERIMENT, tmp_path_factory)


@pytest.fixture(scope="module")
def tables(study: Path) -> str:
    """The script's whole output on the private copy."""
    return printed(generations_tables.main, str(study), EXPERIMENT)


def test_every_row_of_the_file_is_a_row_and_every_counted_run_is_in_it(tables: str,
                                                                         study: Path) -> None:
    rs = frames.load(study, EXPERIMENT).run_summary
    assert_hosts_list_every_counted_run_once(tables, rs)
    rows = section(tables, "Rows")
    assert [row[0].strip("`") for row in rows] == ROWS
    assert sum(int(row[2]) for row in rows) == int(counted(rs).sum())


def test_each_row_ran_the_server_its_name_says(tables: str) -> None:
    """The version each row's runs recorded is its server's: 9.7 for MySQL 9.7's rows, 11.8
    for MariaDB 11.8's, and so on (a row without a run yet shows –)."""
    expected = {"mysql-5.5": "5.5.62", "percona-5.5": "5.5.39", "mariadb-10.2": "10.2.11",
                "mariadb-10.11": "10.11.", "mariadb-11.4": "11.4.5", "mariadb-11.8": "11.8.",
                "mysql-9.7": "9.7."}
    for row in section(tables, "Rows"):
        name, version = row[0].strip("`"), row[1]
        if version == "–":
            assert row[2] == "0"
            continue
        server = re.sub(r"-(defaults|dw-off)$", "", name)
        assert version.startswith(expected[server]), (name, version)


def test_the_write_up_says_how_far_the_queue_has_run(study: Path) -> None:
    """The section states the runs done of those the file plans, as the database has them
    (all of them, once the queue has run them all)."""
    assert_says_how_far_the_queue_has_run(README, study, EXPERIMENT)


@pytest.mark.parametrize("title", ["Rows", "Generations", "I/O per New-Order",
                                   "Flushing state", "Hosts"])
def test_the_readme_quotes_each_table_as_the_committed_database_has_it(tables: str,
                                                                        title: str) -> None:
    assert_readme_quotes(README, tables, title, "generations_tables.py DB generations-today")
