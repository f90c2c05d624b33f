"""The include rows of an experiment matched to the cells they ran as, and the rows' own
names (``dw-on-50``) — what the scorecard grades and what every table, warning and figure
calls a row by (:func:`row_names`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from core.experiment.cells import include_row_cells
from core.experiment.spec import ExperimentSpec


@dataclass(frozen=True)
class Row:
    """One include row with a reference: its index, name, reference value and matched cell."""

    index: int
    name: str
    value: float | None
    cell_id: int | None
    problem: str = ""


def include_rows(spec: ExperimentSpec, cells: pd.DataFrame) -> list[Row]:
    """Every include row, named (its ``name``, its reference's, else its index) and matched
    to the one cell it ran as (none, with the problem said, when it matches no cell or
    several)."""
    rows = []
    matched = include_row_cells(spec, {int(c.cell_id): c.knobs or {}
                                       for c in cells.itertuples()})
    for i, (inc, hits) in enumerate(zip(spec.include, matched, strict=True)):
        ref = inc.reference
        problem = ("" if len(hits) == 1 else "not run in this experiment" if not hits
                   else f"matches {len(hits)} cells")
        rows.append(Row(i, inc.name or (ref.name if ref else None) or str(i),
                        ref.value() if ref else None, hits[0] if len(hits) == 1 else None,
                        problem))
    return rows


def row_names(spec: ExperimentSpec, cells: pd.DataFrame) -> dict[int, str]:
    """Cell id → the name its include row gives it (``dw-on-50``: the row's ``name``, or its
    reference's): the short name the study itself uses, for panel titles and headings. Cells
    without one are absent."""
    named = [i for i, inc in enumerate(spec.include)
             if inc.name or (inc.reference and inc.reference.name)]
    return {r.cell_id: r.name for r in include_rows(spec, cells)
            if r.cell_id is not None and r.index in named}
