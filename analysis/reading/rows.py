"""The include rows of an experiment matched to the cells they ran as, and the rows' own
names (``dw-on-50``) — what the scorecard grades and what every table, warning and figure
calls a row by (:func:`row_names`); a row without a name is called by only the knobs that
differ from its baseline (:func:`row_labels`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.reading.baselines import baseline_of
from core.experiment.cells import differing_label, include_row_cells
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


def row_labels(spec: ExperimentSpec, cells: pd.DataFrame) -> dict[int, str]:
    """Cell id → what a table, export or summary calls the row: its name in the experiment
    file (:func:`row_names`); else, for a baseline, its cell label; else only the knobs that
    differ from its own baseline (``doublewrite=off``,
    :func:`core.experiment.cells.differing_label`) — the question the row asks. Where two
    rows would read alike (the same change against two servers' baselines), each says whose
    baseline it differs from (``doublewrite=off vs server=mysql-5.5``).

    ``cells``: ``cell_id``, ``knobs``, ``cell_label`` and ``is_baseline`` (and ``position``,
    else in the experiment's order), one row a cell.
    """
    if "position" in cells:  # which baseline a cell has can depend on the cells' order
        cells = cells.sort_values("position")
    names = row_names(spec, cells[["cell_id", "knobs"]])
    by_id = {int(c.cell_id): c for c in cells.itertuples()}
    base_of = baseline_of(cells)
    out: dict[int, str] = {}
    for cid, cell in by_id.items():
        base = by_id.get(base_of.get(cid, cid))
        out[cid] = names.get(cid) or (
            str(cell.cell_label) if base is None or int(base.cell_id) == cid
            else differing_label(cell.knobs or {}, base.knobs or {}))
    taken: dict[str, int] = {}
    for label in out.values():
        taken[label] = taken.get(label, 0) + 1
    for cid, label in out.items():
        base_id = base_of.get(cid, cid)
        if taken[label] > 1 and cid not in names and base_id != cid:
            out[cid] = f"{label} vs {names.get(base_id) or by_id[base_id].cell_label}"
    return out
