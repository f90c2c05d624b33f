"""analysis/studies/flash_tables.py: the write-up's tables, computed from the committed flash
study, agree with the run table they come from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis.steadiness.disturbed import counted
from analysis.studies import flash_tables
from analysis.tables import frames
from tests.support.study_tables import (
    assert_hosts_list_every_counted_run_once,
    assert_readme_quotes,
    printed,
    section,
)

#: The write-up whose tables the script prints.
README = Path(__file__).resolve().parents[2] / "docs" / "study-2011" / "README.md"


@pytest.fixture(scope="module")
def tables(recorded_flash: Path) -> str:
    """The script's whole output on a private copy of the committed database."""
    return printed(flash_tables.main, str(recorded_flash))


def test_every_counted_run_is_in_one_session_and_one_target_row(tables: str,
                                                                recorded_flash: Path) -> None:
    rs = frames.load(recorded_flash, "stability-2011-flash").run_summary
    assert_hosts_list_every_counted_run_once(tables, rs)
    ids = rs.loc[counted(rs), "run_id"]
    targets = section(tables, "Targets")
    assert sum(int(row[1].split(" of ")[1]) for row in targets) == len(ids)
    met = sum(int(row[1].split(" of ")[0]) for row in targets)
    assert re.search(rf"\b{met} of {len(ids)} counted runs", tables)


def test_doublewrite_writes_nothing_when_off_and_doubles_the_page_bytes_when_on(
        tables: str) -> None:
    rows = {row[0].strip("`"): row for row in section(tables, "I/O per New-Order")}
    assert {n for n in rows if n.startswith("dw-off")} == {"dw-off-50", "dw-off-60", "dw-off-70"}
    for name, row in rows.items():
        pages, dblwr = float(row[5]), float(row[6])
        if name.startswith("dw-off"):
            assert dblwr == 0
        else:  # every flushed page goes through the doublewrite buffer first
            assert dblwr == pytest.approx(pages, rel=0.02)


def test_the_rows_table_names_all_twelve_rows_with_both_baselines(tables: str) -> None:
    rows = {row[0].strip("`"): row for row in section(tables, "Rows")}
    assert len(rows) == 12
    assert rows["base"][4] == "–" and rows["ps-bigredo-75"][4] == "–"
    # the post's ratio of its optimized mode to MySQL-compatible mode: 73,530 / 55,073
    assert rows["ps-optimized"][5] == "1.34×"


@pytest.mark.parametrize("title", ["Rows", "Scorecard", "Stability claims", "Targets",
                                   "I/O per New-Order",
                                   "Flushing state", "Noise floor", "Hosts"])
def test_the_readme_quotes_each_table_as_the_committed_database_has_it(tables: str,
                                                                        title: str) -> None:
    """The write-up's tables are the script's output on the committed database, verbatim: a
    database committed again (more runs) without pasting the tables again fails here."""
    assert_readme_quotes(README, tables, title, "flash_tables.py DB")


def test_a_missing_or_broken_database_is_one_line_not_a_traceback(tmp_path: Path,
                                                                   capsys) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not a database")
    for path in (tmp_path / "missing.sqlite", broken):
        assert flash_tables.main([str(path)]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and "Traceback" not in err and len(err.splitlines()) == 1
