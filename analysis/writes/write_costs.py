"""The cost table a performance engineer reads first: what one transaction cost, against the
row's baseline.

Per cell (the median of its counted runs, over the measurement window), per transaction of the
workload's metric (New-Order for TPC-C): mysqld's and the client's CPU µs and context switches
(voluntary + involuntary; "–" for runs recorded before they were sampled), reads and KiB read
on the datadir's device, KiB written to the device (the throttle group's bytes where a storage
limit ran, as the write-path ledger counts them), InnoDB's page writes, redo KiB and fsyncs —
each beside its ratio to the row's own baseline
(:func:`analysis.reading.baselines.baseline_of`). Figures come from
:mod:`analysis.writes.cost` and :mod:`analysis.writes.ledger`; :func:`markdown` writes the table
for a blog post.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from core.units import format_number

#: (column, header, number format, source table: ``cost`` or ``ledger``, its column there).
FIGURES = (
    ("mysqld_cpu_us", "mysqld CPU µs", ",.0f", "cost", "mysqld_cpu_us"),
    ("client_cpu_us", "client CPU µs", ",.0f", "cost", "client_cpu_us"),
    ("mysqld_ctxsw", "mysqld context switches", ",.1f", "cost", "mysqld_ctxsw"),
    ("client_ctxsw", "client context switches", ",.1f", "cost", "client_ctxsw"),
    ("read_ops", "reads", ".2f", "cost", "read_ops"),
    ("read_kib", "KiB read", ".1f", "cost", "read_kib"),
    ("write_kib", "KiB written", ".1f", "ledger", "device_kib"),
    ("pages_written", "pages written", ".2f", "ledger", "pages_written"),
    ("redo_kib", "redo KiB", ".1f", "ledger", "redo_kib"),
    ("fsyncs", "fsyncs", ".2f", "ledger", "fsyncs"),
)
#: The table's figure columns, in order (each has a ``<column>_x`` twin: × the baseline's).
COLUMNS = tuple(f[0] for f in FIGURES)
HEADERS = {f[0]: f[1] for f in FIGURES}
FORMATS = {f[0]: f[2] for f in FIGURES}


def table(cost_cells: pd.DataFrame, ledger_cells: pd.DataFrame,
          baseline: Mapping[int, int]) -> pd.DataFrame:
    """Per cell (index: cell id, the order of ``cost_cells`` then ``ledger_cells``) each of
    :data:`COLUMNS` and ``<column>_x``: the figure over its baseline cell's (1 for a baseline,
    NaN where either is unknown or the baseline's is 0).

    ``cost_cells``: :func:`analysis.writes.cost.per_cell`; ``ledger_cells``:
    :func:`analysis.writes.ledger.per_cell`; ``baseline``: cell id → its baseline's cell id.
    """
    ids = list(dict.fromkeys([*cost_cells.index, *ledger_cells.index]))
    out = pd.DataFrame(index=pd.Index(ids, name="cell_id"))
    sources = {"cost": cost_cells.reindex(ids), "ledger": ledger_cells.reindex(ids)}
    for column, _header, _fmt, source, name in FIGURES:
        src = sources[source]
        out[column] = src[name].astype(float) if name in src else math.nan
    for column in COLUMNS:
        base = [baseline.get(int(c)) for c in ids]
        base_values = [out.at[b, column] if b in out.index else math.nan for b in base]
        denom = pd.Series(base_values, index=out.index, dtype=float)
        out[f"{column}_x"] = out[column] / denom.where(denom > 0)
    return out


def markdown(costs: pd.DataFrame, labels: Mapping[int, str], unit: str) -> str:
    """The cost table as a Markdown table (a row per cell: its label, then each figure and
    its × baseline twin), ready to paste into a blog post."""
    head = ["configuration"]
    for column in COLUMNS:
        head += [f"{HEADERS[column]} per {unit}", "× baseline"]
    rows = []
    for cell_id, r in costs.iterrows():
        cells = [labels.get(int(cell_id), str(cell_id))]
        for column in COLUMNS:
            cells += [format_number(r[column], FORMATS[column]),
                      format_number(r[f"{column}_x"], ".2f")]
        rows.append(cells)
    return markdown_table(head, rows)


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    """Any table as Markdown: a header, right-aligned figure columns, the first column text."""
    lines = [_row(head), _row(["---"] + ["---:"] * (len(head) - 1))]
    lines += [_row([_md_text(row[0]), *row[1:]]) for row in rows]
    return "\n".join(lines) + "\n"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _md_text(text: str) -> str:
    """A label as Markdown cell text: its pipes escaped, no line breaks."""
    return str(text).replace("|", "\\|").replace("\n", " ")
