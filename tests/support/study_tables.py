"""Reading the markdown a study's tables script prints (``flash_tables.py``,
``generations_tables.py``, ``write_path_tables.py``), for the tests that hold a write-up to its
database."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from analysis.steadiness.disturbed import counted
from analysis.tables import frames
from core import paths
from core.experiment.cells import expand
from core.experiment.loading import load_experiment
from store.models import RunStatus


def printed(script_main: Callable[[list[str]], int], *argv: str) -> str:
    """Everything a tables script's ``main(argv)`` prints (it must exit 0)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert script_main(list(argv)) == 0
    return out.getvalue()


def assert_says_how_far_the_queue_has_run(readme: Path, study: Path, experiment: str) -> None:
    """The write-up states the runs done of those the experiment file plans, as the database
    has them: "N of its M runs done", or "All M of its runs are done" once the queue is
    through."""
    runs = frames.runs(study, experiment)
    done = int((runs["status"] == RunStatus.DONE).sum())
    exp = load_experiment(paths.EXPERIMENTS_DIR / f"{experiment}.yaml")
    planned = len(expand(exp)) * exp.repetitions
    text = " ".join(readme.read_text(encoding="utf-8").split())
    said = (f"All {planned} of its runs are done" if done == planned
            else f"{done} of its {planned} runs done")
    assert said in text, (f"{readme}: says no {said!r}", done, planned)


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


def assert_readme_quotes(readme: Path, tables: str, title: str, script: str) -> None:
    """The write-up quotes the table under ``## TITLE`` as ``script`` prints it on the
    committed database, verbatim: a database committed again (more runs) without pasting its
    tables again fails here, naming the table and the command."""
    table = table_markdown(tables, title)
    assert table in readme.read_text(encoding="utf-8"), (
        f"{readme.relative_to(readme.parents[2])}: the {title!r} table is not what `{script}`"
        " prints on the committed database; paste it again")
