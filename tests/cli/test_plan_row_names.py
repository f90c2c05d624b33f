"""``plan`` calls each row by its own name (issue 54, item 2): the shipped experiments' include
rows, matched to the cells they expand to, and the real ``plan`` command's tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.reading.rows import row_names
from core.experiment.cells import cell_names, expand
from core.experiment.loading import load_experiment
from tests.cli.test_terminal_width import ROOT, finished, flushbench

STUDY = ROOT / "experiments" / "stability-2011.yaml"
GENERATIONS = ROOT / "experiments" / "generations.yaml"
#: Rows whose own values match several cells: `io-10000` is `{doublewrite: on}`, which
#: `io-200` (`{doublewrite: on, io_capacity: 200}`) also holds.
IO_CAPACITY = ROOT / "experiments" / "mysql-9.7-io-capacity.yaml"


def test_every_named_row_names_its_cell() -> None:
    for path, count in ((STUDY, 8), (GENERATIONS, 15), (IO_CAPACITY, 4)):
        exp = load_experiment(path)
        cells = expand(exp, str(path))
        names = cell_names(cells)
        assert len(names) == count == len(cells)
        assert len(set(names.values())) == count  # one row, one cell
    exp = load_experiment(STUDY)
    cells = expand(exp, str(STUDY))
    base = next(c for c in cells if c.is_baseline)
    assert cell_names(cells)[base.key] == "base"


def test_plan_tables_show_row_names(tmp_path: Path) -> None:
    code, out, err = finished(flushbench([("plan", ["plan", str(STUDY)], 160)], 160,
                                         tmp_path / "work")["plan", 160])
    assert code == 0, err
    cells_table, runs_table = out.split("Run order", 1)
    for name in ("base (baseline)", "dw-on-50", "dw-off-60", "dw-on-15"):
        assert name in cells_table
    assert "dw-off-60" in runs_table
    # The knobs are in the server variables column, not in the cell's name.
    assert "doublewrite=on" not in cells_table and "innodb_doublewrite=ON" in cells_table


def test_a_row_whose_own_values_match_several_cells_names_its_own() -> None:
    """The planner's names and the stored cells' (what compare, show and the report read)
    agree: each row is the cell of its whole knobs, not every cell holding its own values."""
    exp = load_experiment(IO_CAPACITY)
    cells = expand(exp, str(IO_CAPACITY))
    planned = cell_names(cells)
    assert [planned[c.key] for c in cells] == [
        "io-10000", "io-10000-dw-off", "io-200", "io-200-dw-off"]
    # Stored cells: ids unrelated to positions, knobs as read back from the database (JSON).
    stored = pd.DataFrame({"cell_id": [40 + i for i in range(4)][::-1],
                           "knobs": [dict(c.knobs) for c in cells]})
    assert row_names(exp, stored) == {43: "io-10000", 42: "io-10000-dw-off", 41: "io-200",
                                      40: "io-200-dw-off"}
