"""``plan`` calls each row by its own name (issue 54, item 2): the shipped experiments' include
rows, matched to the cells they expand to, and the real ``plan`` command's tables."""

from __future__ import annotations

from pathlib import Path

from core.experiment.cells import cell_names, expand
from core.experiment.loading import load_experiment
from tests.cli.test_terminal_width import ROOT, flushbench

STUDY = ROOT / "experiments" / "stability-2011.yaml"
GENERATIONS = ROOT / "experiments" / "generations.yaml"


def test_every_named_row_names_its_cell() -> None:
    for path, count in ((STUDY, 8), (GENERATIONS, 15)):
        exp = load_experiment(path)
        cells = expand(exp, str(path))
        names = cell_names(exp, cells)
        assert len(names) == count == len(cells)
        assert len(set(names.values())) == count  # one row, one cell
    exp = load_experiment(STUDY)
    cells = expand(exp, str(STUDY))
    base = next(c for c in cells if c.is_baseline)
    assert cell_names(exp, cells)[base.key] == "base"


def test_plan_tables_show_row_names(tmp_path: Path) -> None:
    code, out, err = flushbench(["plan", str(STUDY)], 160, tmp_path)
    assert code == 0, err
    cells_table, runs_table = out.split("Run order", 1)
    for name in ("base (baseline)", "dw-on-50", "dw-off-60", "dw-on-15"):
        assert name in cells_table
    assert "dw-off-60" in runs_table
    # The knobs are in the server variables column, not in the cell's name.
    assert "doublewrite=on" not in cells_table and "innodb_doublewrite=ON" in cells_table
