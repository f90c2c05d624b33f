"""Reading the markdown a study's tables script prints (``flash_tables.py``,
``generations_tables.py``), for the tests that hold a write-up to its database."""

from __future__ import annotations

import pandas as pd

from analysis.steadiness.disturbed import counted


def section(text: str, title: str) -> list[list[str]]:
    """The body rows of the table under ``## TITLE``, as stripped cells."""
    body = text.split(f"## {title}\n\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in body.splitlines()[2:] if line.startswith("| ")]


def assert_hosts_list_every_counted_run_once(tables: str, run_summary: pd.DataFrame) -> None:
    """The Hosts table names every counted run once, and its counts add up to them."""
    ids = sorted(int(i) for i in run_summary.loc[counted(run_summary), "run_id"])
    hosts = section(tables, "Hosts")
    listed = sorted(int(i) for row in hosts for i in row[2].split(", "))
    assert listed == ids and sum(int(row[1]) for row in hosts) == len(ids)


def table_markdown(tables: str, title: str) -> str:
    """The table under ``## TITLE`` as printed (its header, rule and rows): what a write-up
    pastes and its test finds in it verbatim."""
    body = tables.split(f"## {title}\n\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in body.splitlines() if line.startswith("|"))
