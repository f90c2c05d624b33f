"""What the disk's writes went to, per transaction: data pages, doublewrite and redo.

The 2011 post's doublewrite result is an I/O budget result: with doublewrite on, every data
page is written twice, and on a device whose limit is bytes that second copy is what costs.
Per run, over the measurement window, from the sampler's ``SHOW GLOBAL STATUS`` counters:

=============  ====================================  ====================================
part           write operations                      bytes
=============  ====================================  ====================================
data pages     ``Innodb_pages_written``              × ``innodb_page_size``
doublewrite    ``Innodb_dblwr_writes`` (one batch)    ``Innodb_dblwr_pages_written`` × page
redo           ``Innodb_log_writes``                  ``Innodb_os_log_written``
=============  ====================================  ====================================

each divided by the run's transactions of the workload's metric in the same window (New-Orders
for TPC-C), so cells that ran at different speeds compare per unit of work. A cell's figure is
the median of its runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures.plots import PALETTE, axis_label, row_px, template
from analysis.reading.query import DB, run_variables
from analysis.reading.series import samples, window_growth, window_transactions
from analysis.tables.frames import Frames
from store.models import RunStatus

#: (part, operations counter, bytes counter or None for pages × page size, pages counter).
PARTS = (
    ("data pages", "Innodb_pages_written", None, "Innodb_pages_written"),
    ("doublewrite", "Innodb_dblwr_writes", None, "Innodb_dblwr_pages_written"),
    ("redo", "Innodb_log_writes", "Innodb_os_log_written", None),
)
COUNTERS = tuple(sorted({c for _, ops, by, pages in PARTS for c in (ops, by, pages) if c}))
DEFAULT_PAGE_SIZE = 16384
KIB = 1024.0


def per_run(db: DB, fr: Frames, samples_df: pd.DataFrame | None = None, *,
            window: pd.DataFrame | None = None) -> pd.DataFrame:
    """Write operations and KiB per transaction of each done run, by part.

    Columns ``<part> ops`` and ``<part> KiB`` for each part of :data:`PARTS`, plus
    ``transactions`` (counted over the same samples' time span) and ``cell_id``.
    ``window`` (:func:`analysis.reading.series.window_growth` of :data:`COUNTERS`, or
    :mod:`analysis.writes.run_digest`'s copy of it) or ``samples_df`` (the done runs' samples,
    counters not needed) saves reading every sample again; the counters are read for the first
    and last window sample of each run only.
    """
    done = fr.run_summary[fr.run_summary["status"] == RunStatus.DONE]
    ids = [int(r) for r in done["run_id"]]
    if not ids:
        return pd.DataFrame()
    if window is None:
        s = samples_df if samples_df is not None else samples(
            db, fr.experiment["id"], run_ids=ids, counters=None)
        window = window_growth(db, s[s["run_id"].isin(ids)], COUNTERS)
    window = window[window.index.isin(ids)].dropna(subset=["first_seq", "last_seq"])
    if window.empty:
        return pd.DataFrame()  # runs recorded without samples: nothing to break down
    # MySQL 5.5 has no innodb_page_size (its pages are 16K): an experiment of such servers
    # only has no value at all, so every run is reindexed before the default fills it.
    page = pd.to_numeric(run_variables(db, ids, ["innodb_page_size"]).get(
        "innodb_page_size", pd.Series(dtype=float)), errors="coerce").reindex(ids).fillna(
        DEFAULT_PAGE_SIZE)
    out = pd.DataFrame(index=pd.Index(ids, name="run_id"))
    out["transactions"] = window_transactions(fr.intervals, window)
    for part, ops, by, pages in PARTS:
        n = out["transactions"].where(out["transactions"] > 0)
        out[f"{part} ops"] = window[ops] / n
        grown = window[by] if by is not None else window[pages] * page
        out[f"{part} KiB"] = grown / n / KIB
    out["cell_id"] = done.set_index("run_id")["cell_id"]
    return out


def per_cell(db: DB, fr: Frames, samples_df: pd.DataFrame | None = None, *,
             window: pd.DataFrame | None = None) -> pd.DataFrame:
    """Medians of :func:`per_run` per cell, in the experiment's row order (index: label)."""
    runs = per_run(db, fr, samples_df, window=window)
    cells = fr.cell_summary.sort_values("position")
    if runs.empty:
        return pd.DataFrame()
    table = runs.groupby("cell_id").median(numeric_only=True).drop(columns="transactions",
                                                                    errors="ignore")
    table["runs"] = runs.groupby("cell_id").size()
    table = table.reindex([c for c in cells["cell_id"] if c in table.index])
    table.index = cells.set_index("cell_id").loc[table.index, "cell_label"]
    return table


def figure(table: pd.DataFrame, *, unit: str = "New-Order",
           title: str = "What each transaction wrote") -> go.Figure:
    """Two stacked-bar panels per cell: write operations and KiB per transaction, by part."""
    fig = go.Figure()
    fig.update_layout(template=template(), title=dict(text=(
        f"{title}<br><span style='font-size:13px;color:#666'>per {unit}, median of each"
        " cell's runs over the measurement window</span>")), barmode="stack",
        margin=dict(l=20, r=20, t=110, b=60),
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    labels = [axis_label(str(lbl)) for lbl in table.index]
    fig.update_layout(height=180 + row_px(labels, 34) * max(1, len(table)))
    for i, (part, *_rest) in enumerate(PARTS):
        for col, axis, show in ((f"{part} ops", "x", True), (f"{part} KiB", "x2", False)):
            values = table[col].to_numpy(dtype=float) if col in table else np.full(len(table),
                                                                                   np.nan)
            fig.add_trace(go.Bar(y=labels, x=values, orientation="h", name=part,
                                 legendgroup=part, showlegend=show, xaxis=axis, yaxis="y",
                                 marker_color=PALETTE[i],
                                 hovertemplate="%{x:.2f}<extra>" + part + "</extra>"))
    fig.update_layout(
        xaxis=dict(domain=[0.42, 0.69], title=dict(text=f"write operations per {unit}")),
        xaxis2=dict(domain=[0.73, 1.0], anchor="y", title=dict(text=f"KiB written per {unit}")),
        yaxis=dict(domain=[0, 1], autorange="reversed", automargin=True, rangemode="normal"),
    )
    return fig
