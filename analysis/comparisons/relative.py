"""The relative table a blog prints: each row's headline figures as ratios to its baseline.

In the style of Small Datum's posts (smalldatum.blogspot.com): one line per configuration, each
column a figure of that row divided by the same figure of the row's own baseline
(:func:`analysis.reading.baselines.baseline_of`: its server's, where an experiment has one
baseline per server), so every baseline row reads 1.00 and a reader sees at a glance what each
change did. The columns:

* NOTPM (the workload's throughput, mean of the row's runs): the ratio ``compare`` judges
  (``Comparison.cells`` ``ratio``: over the runs, on the log scale, blocked by round where the
  design has rounds), so the table and the verdict column never disagree — which is why it can
  differ a little from the ratio of the two means beside it;
* the cell's window response-time percentile (p99, else the driver's p95;
  :mod:`analysis.response.latency`): row ÷ baseline; above 1 is slower;
* the stability score (median of the row's runs; higher is steadier): row ÷ baseline;
* KiB written to the device per transaction of the metric (the write-path ledger's
  ``device_kib``): row ÷ baseline; above 1 writes more.

Each ratio sits beside the row's own figure (the CSV keeps both at full precision): every ratio
but NOTPM's is that figure over the baseline's. A figure unknown for the row or its baseline (or a
baseline's of 0: a stability score of 0) leaves the ratio empty (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from analysis.reading.baselines import baseline_of

#: (key, header of the figure, header of its ratio, number format of the figure).
COLUMNS = (
    ("notpm", "NOTPM", "NOTPM ×", ",.0f"),
    ("latency_ms", "{p} ms", "{p} ×", ",.1f"),
    ("stability", "stability score", "stability ×", ".1f"),
    ("write_kib", "KiB written/{unit}", "KiB written ×", ",.1f"),
)


@dataclass(frozen=True)
class RelativeTable:
    """The table and what its headers need.

    ``rows`` has, per cell in the experiment's row order: ``cell_id``, ``row`` (its name),
    ``baseline`` (its baseline's name), then per :data:`COLUMNS` key the figure and
    ``<key>_x`` (× the baseline's). ``percentile`` is ``p99`` or ``p95``; ``unit`` the
    transaction the write column counts per (``New-Order`` for TPC-C); ``throughput`` the
    throughput's name (``NOTPM``, or sysbench's ``TPS``).
    """

    rows: pd.DataFrame
    percentile: str
    unit: str
    throughput: str

    def headers(self) -> list[str]:
        """Column headers in order: row, baseline, then each figure and its ratio."""
        out = ["row", "baseline"]
        for _key, head, ratio_head, _fmt in COLUMNS:
            out += [self._fill(head), self._fill(ratio_head)]
        return out

    def _fill(self, text: str) -> str:
        return (text.replace("NOTPM", self.throughput).replace("{p}", self.percentile)
                .replace("{unit}", self.unit))


def table(cells: pd.DataFrame, latency_cells: pd.DataFrame, ledger_cells: pd.DataFrame,
          names: Mapping[int, str], *, percentile: str, unit: str,
          throughput: str = "NOTPM") -> RelativeTable:
    """The relative table of one experiment.

    Parameters
    ----------
    cells:
        ``Comparison.cells`` (``cell_id``, ``position``, ``is_baseline``, ``knobs``,
        ``notpm_mean``, ``ratio``, ``score_median``).
    latency_cells:
        :attr:`analysis.response.latency.Latency.cells` (index cell id: ``value_ms``,
        ``ratio``).
    ledger_cells:
        :func:`analysis.writes.ledger.per_cell` (index cell id: ``device_kib``).
    names:
        Cell id → the row's name (rows without one are named ``C<n>``).
    """
    ordered = cells.sort_values("position")
    base_of = baseline_of(ordered)
    name = {int(c): names.get(int(c)) or f"C{int(p) + 1}"
            for c, p in zip(ordered["cell_id"], ordered["position"], strict=True)}
    by_id = ordered.set_index("cell_id")
    rows = []
    for cell_id in (int(c) for c in ordered["cell_id"]):
        base = base_of[cell_id]
        row = {"cell_id": cell_id, "row": name[cell_id], "baseline": name[base]}
        row["notpm"] = float(by_id.at[cell_id, "notpm_mean"])
        # compare's own ratio: the one its verdict judges (1 for a baseline).
        row["notpm_x"] = float(by_id.at[cell_id, "ratio"])
        for key, frame, column in (("latency_ms", latency_cells, "value_ms"),
                                   ("stability", by_id, "score_median"),
                                   ("write_kib", ledger_cells, "device_kib")):
            row[key] = _at(frame, cell_id, column)
            # A baseline reads 1.00 wherever its figure is known (even a score of 0).
            row[f"{key}_x"] = (1.0 if cell_id == base and math.isfinite(row[key])
                               else _ratio(row[key], _at(frame, base, column)))
        rows.append(row)
    return RelativeTable(pd.DataFrame(rows), percentile, unit, throughput)


def _at(frame: pd.DataFrame, cell_id: int, column: str) -> float:
    """``frame[column]`` at ``cell_id`` as a float (NaN when absent)."""
    if column not in frame.columns or cell_id not in frame.index:
        return math.nan
    value = frame.at[cell_id, column]
    return float(value) if value is not None and pd.notna(value) else math.nan


def _ratio(value: float, base: float) -> float:
    """``value / base``; NaN when either is unknown or the base is not positive."""
    if not (math.isfinite(value) and math.isfinite(base)) or base <= 0:
        return math.nan
    return value / base


def formatted_rows(rel: RelativeTable) -> list[list[str]]:
    """The table's cells as text: figures in their format, ratios to two decimals (``–``
    where unknown)."""
    out = []
    for _, r in rel.rows.iterrows():
        line = [str(r["row"]), str(r["baseline"])]
        for key, _head, _ratio_head, fmt in COLUMNS:
            line += [_text(r[key], fmt), _text(r[f"{key}_x"], ".2f")]
        out.append(line)
    return out


def _text(value: float, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, float) and math.isfinite(value) else "–"


def csv_rows(rel: RelativeTable) -> list[list[str]]:
    """The table for a CSV file: the headers, then per row its name, its baseline's and each
    figure and ratio at full precision (empty where unknown)."""
    out = [rel.headers()]
    for _, r in rel.rows.iterrows():
        line = [str(r["row"]), str(r["baseline"])]
        for key, *_ in COLUMNS:
            line += [_plain(r[key]), _plain(r[f"{key}_x"])]
        out.append(line)
    return out


def _plain(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) and math.isfinite(value) else ""
