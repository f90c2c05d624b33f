"""The write-path factorial (``experiments/write-path-factorial.yaml``, issue 53): its tables,
computed by ``analysis/studies/write_path_tables.py`` from the committed database as far as its
queue has run, agree with the runs they come from, and the write-up quotes them and says how far
the queue is."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.statistics.design import main_effects
from analysis.steadiness.disturbed import counted
from analysis.studies import write_path_tables
from analysis.tables import frames
from tests.support.recorded import recorded_copy
from tests.support.study_tables import (
    assert_hosts_list_every_counted_run_once,
    assert_readme_quotes,
    assert_says_how_far_the_queue_has_run,
    printed,
    section,
)

EXPERIMENT = "write-path-factorial"
README = Path(__file__).resolve().parents[2] / "docs" / "study-write-path" / "README.md"
TITLES = ["Rows", "Ledger", "Effects", "Interactions", "Engine", "Hosts"]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the committed database."""
    return recorded_copy(EXPERIMENT, tmp_path_factory)


@pytest.fixture(scope="module")
def tables(study: Path) -> str:
    """The script's whole output on the private copy."""
    return printed(write_path_tables.main, str(study))


def test_every_counted_run_is_in_a_row_and_each_row_names_its_settings(tables: str,
                                                                       study: Path) -> None:
    rs = frames.load(study, EXPERIMENT).run_summary
    assert_hosts_list_every_counted_run_once(tables, rs)
    rows = section(tables, "Rows")
    assert sum(int(row[5]) for row in rows) == int(counted(rs).sum())
    for row in rows:
        server, settings = row[1], row[2:5]
        assert server in ("mariadb-debian", "mariadb-10.2"), row
        assert settings[0] in ("none", "all") and settings[1] in ("75", "90"), row
        assert settings[2] in ("80M", "160M"), row
        if server == "mariadb-10.2":  # the engine row runs 10.11's defaults of the three
            assert settings == ["none", "90", "80M"], row


#: MariaDB 10.11's own defaults of the three settings: the experiment file's baseline, against
#: which each effect is read.
BASELINE = {"change_buffering": "none", "max_dirty_pages_pct": "90", "log_file_size": "80M"}


def test_the_effects_are_the_design_models_on_the_runs(study: Path, tables: str) -> None:
    """Each printed main effect is the log-scale main-effects model fitted here on 10.11's
    counted runs, the baseline's levels as the references: "none → all", "90 → 75",
    "80M → 160M"."""
    from analysis.comparisons.compare import compare
    from analysis.tables import efficiency

    cmp = compare(study, EXPERIMENT)
    runs = write_path_tables.per_run(cmp, efficiency.load(study, cmp.frames))
    mine = runs[runs["server"] == write_path_tables.FACTORIAL_SERVER]
    # A stable sort putting the runs at the baseline's level of each setting first: the model
    # takes a knob's first level as its reference.
    mine = mine.sort_values(list(BASELINE), key=lambda col: col != BASELINE[col.name],
                            kind="stable")
    printed_rows = {row[0].strip("`"): row[1:] for row in section(tables, "Effects")}
    for column_index, column in enumerate(write_path_tables.RESPONSES):
        effects = main_effects(mine, list(BASELINE), column)
        for factor, base in BASELINE.items():
            levels, *cells = printed_rows[factor]
            hit = effects[effects["knob"] == factor]
            if hit.empty:
                assert cells[column_index] == "–"
                continue
            assert levels.startswith(f"{base} → "), (factor, levels)
            cell = cells[column_index]
            if not bool(hit.iloc[0]["estimable"]):
                assert cell == "–", (factor, column, cell)
            else:
                assert cell.startswith(f"{hit.iloc[0]['ratio']:.2f}×"), (factor, column, cell)


def test_the_write_up_says_how_far_the_queue_has_run(study: Path) -> None:
    assert_says_how_far_the_queue_has_run(README, study, EXPERIMENT)


@pytest.mark.parametrize("title", TITLES)
def test_the_readme_quotes_each_table_as_the_committed_database_has_it(tables: str,
                                                                        title: str) -> None:
    assert_readme_quotes(README, tables, title, "write_path_tables.py DB")
