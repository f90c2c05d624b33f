"""The report's write-path section, as typed blocks: the ledger of each row (KiB per
transaction by part, the residual, the floor and the bytes above it) and the cost table against
each row's baseline (analysis/writes/ledger.py, analysis/writes/write_costs.py; rules:
docs/statistics.md, "The write-path ledger")."""

from __future__ import annotations

import pandas as pd

from analysis.reading.baselines import baseline_of
from analysis.reading.metric import MetricView
from analysis.report.model import (
    Heading,
    Paragraph,
    Rich,
    Section,
    Value,
    code,
    italic,
    muted,
    row_name,
)
from analysis.report.sections import table
from analysis.tables import efficiency
from analysis.writes import ledger, write_costs
from core.units import format_number as number

#: The ledger table's figure columns: (header, column, number format).
_LEDGER = (("device", "device_kib", ",.1f"), ("redo", "redo_kib", ",.1f"),
           ("doublewrite", "doublewrite_kib", ",.1f"), ("data pages", "pages_kib", ",.1f"),
           ("of which LRU", "pages_lru_kib", ",.1f"), ("binlog", "binlog_kib", ",.1f"),
           ("residual", "residual_kib", ",.1f"), ("residual %", "residual_pct", "+.1f"),
           ("floor", "floor_kib", ",.1f"), ("× floor", "amplification", ".2f"),
           ("pages early", "above_pages_kib", ",.1f"))


def write_path_section(eff: efficiency.Efficiency, cells: pd.DataFrame, metric: MetricView,
                       names: dict[int, str]) -> Section:
    """The write path of each row and the cost table against its baseline (nothing without
    figures). ``cells``: the comparison's cells (``cell_id``, ``cell_label``, baselines)."""
    lc = eff.ledger_cells
    if lc.empty:
        return []
    unit = "New-Order" if metric.per_minute else "transaction"
    labels = cells.set_index("cell_id")["cell_label"]
    order = [c for c in cells["cell_id"] if c in lc.index]
    rows = [[row_name(labels[c], names.get(int(c))),
             *[(number(lc.loc[c, col], fmt),) for _h, col, fmt in _LEDGER],
             (Value(lc.loc[c, "largest"] or "–"),)] for c in order]
    off = [names.get(int(c)) or str(labels[c]) for c in order
           if not ledger.accounted(lc.loc[c])]
    check: Rich = ((f"The parts miss the device's bytes by more than"
                    f" {100 * ledger.TOLERANCE:.0f} % in ", Value(", ".join(off)), ".") if off else
                   (f"The parts add up to the device's bytes within {100 * ledger.TOLERANCE:.0f} %"
                    " in every row.",))
    costs = write_costs.table(eff.cost_cells, lc, baseline_of(cells))
    cost_rows = [[row_name(labels[c], names.get(int(c))),
                  *[(f"{number(costs.loc[c, col], write_costs.FORMATS[col])} ",
                     muted(f"×{number(costs.loc[c, col + '_x'], '.2f')}"))
                    for col in write_costs.COLUMNS]]
                 for c in cells["cell_id"] if c in costs.index]
    return [
        Heading(2, (f"Where each {unit}'s bytes went",), "write-path"),
        Paragraph((f"KiB per {unit} the device received over the measurement window (the median"
                   " of each row's counted runs), split by the server's own counters: redo (",
                   code("Innodb_os_log_written"), "), doublewrite, data pages (",
                   code("Innodb_pages_written"), "; of which LRU flushing where the server"
                   " counts it, – where it does not), binlog, and the residual the counters do"
                   " not explain. ", *check, " ", italic("floor"), ": the fewest KiB its redo"
                   " and its dirty pages allow; ", italic("× floor"), ": the device's bytes over"
                   " it; ", italic("pages early"), ": page writes above the floor's"
                   " (docs/statistics.md, \"The write-path ledger\")."), "sub"),
        table(["configuration", *[h for h, _c, _f in _LEDGER], "largest"], rows),
        Heading(3, (f"Cost per {unit}",)),
        Paragraph(("The median of each row's counted runs; ×: over the row's baseline. KiB"
                   " written is the device's; context switches are voluntary + involuntary,"
                   " every thread's (– : runs recorded before they were sampled).",), "sub"),
        table(["configuration", *[write_costs.HEADERS[c] for c in write_costs.COLUMNS]],
              cost_rows),
    ]
