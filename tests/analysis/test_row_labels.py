"""What a row is called where it has no name of its own: only the knobs that differ from its
baseline (analysis/reading/rows.py ``row_labels``) — in the report, ``export`` and the table
``run`` prints at its end — and its name where it has one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.reading.rows import row_labels
from core.experiment.cells import expand
from core.experiment.loading import load_experiment
from tests.support.recorded import copy_recorded

ROOT = Path(__file__).resolve().parents[2]


def _frame(cells: list) -> pd.DataFrame:
    return pd.DataFrame([{"cell_id": c.position + 1, "position": c.position, "knobs": c.knobs,
                          "cell_label": c.label, "is_baseline": c.is_baseline}
                         for c in cells])


def test_an_unnamed_matrix_row_is_called_by_what_differs_from_its_baseline() -> None:
    spec = load_experiment(ROOT / "experiments" / "quickstart.yaml")
    cells = _frame(expand(spec))
    labels = row_labels(spec, cells)
    by_knobs = {(c.knobs["doublewrite"], c.knobs["max_dirty_pages_pct"]): labels[c.cell_id]
                for c in cells.itertuples()}
    base = cells.loc[cells["is_baseline"], "cell_label"].item()
    assert by_knobs == {
        (True, 75): base,  # the baseline keeps its whole label
        (True, 50): "max_dirty_pages_pct=50",
        (False, 75): "doublewrite=off",
        (False, 50): "doublewrite=off max_dirty_pages_pct=50",
    }


def test_a_named_row_keeps_its_name() -> None:
    spec = load_experiment(ROOT / "experiments" / "stability-2011.yaml")
    cells = _frame(expand(spec))
    labels = row_labels(spec, cells)
    assert "dw-off-50" in labels.values() and "base" in labels.values()
    assert not any("=" in label for label in labels.values())


def test_two_rows_that_would_read_alike_say_whose_baseline_they_differ_from() -> None:
    # The same change against two servers' baselines reads "doublewrite=off" twice; each then
    # names its own baseline, and the two labels differ.
    spec = load_experiment(ROOT / "experiments" / "quickstart.yaml")
    rows = [({"server": "a", "doublewrite": True}, True),
            ({"server": "b", "doublewrite": True}, True),
            ({"server": "a", "doublewrite": False}, False),
            ({"server": "b", "doublewrite": False}, False)]
    cells = pd.DataFrame([{"cell_id": i + 1, "position": i, "knobs": knobs,
                           "cell_label": " ".join(f"{k}={v}" for k, v in knobs.items()),
                           "is_baseline": base} for i, (knobs, base) in enumerate(rows)])
    labels = row_labels(spec, cells)
    assert labels[3] == "doublewrite=off vs server=a doublewrite=True"
    assert labels[4] == "doublewrite=off vs server=b doublewrite=True"


def test_export_and_the_report_call_unnamed_rows_by_their_difference(tmp_path: Path) -> None:
    from analysis.report.build import build_report_model
    from analysis.report.model import Table
    from analysis.tables.export import export

    db = copy_recorded("allocators", tmp_path / "a.sqlite")
    out = export(db, "allocators-example", tmp_path / "runs.csv", fmt="csv")
    rows = set(pd.read_csv(out)["row"])
    assert {"connections=16", "allocator=jemalloc", "allocator=tcmalloc connections=64",
            "allocator=glibc connections=4"} <= rows
    assert "allocator=glibc connections=16" not in rows
    model = build_report_model(db, "allocators-example")
    # Tables call a row by what differs from its baseline; its whole label stays where the
    # report defines the row (its heading, the contents, the ranking's notes: "name · label").
    tables = [b for section in model.sections for b in section if isinstance(b, Table)]
    first_cells = {str(row[0]) for t in tables for row in t.rows}
    assert any("'connections=16'" in cell for cell in first_cells)
    assert not any("'allocator=glibc connections=16'" in cell for cell in first_cells)



def test_the_table_run_prints_at_its_end_calls_rows_as_the_report_does(tmp_path: Path) -> None:
    from rich.console import Console

    from flushbench.cli.summary import print_cell_summary
    from store.db import ResultsDB

    db = copy_recorded("allocators", tmp_path / "a.sqlite")
    console = Console(width=200, record=True)
    print_cell_summary(console, ResultsDB(db), 1)
    rows = [line.split("│")[1].strip() for line in console.export_text().splitlines()
            if line.startswith("│")]
    assert "allocator=glibc connections=4 (baseline)" in rows
    assert {"connections=16", "allocator=jemalloc", "allocator=tcmalloc connections=64"} \
        <= set(rows)
    assert "allocator=glibc connections=16" not in rows
