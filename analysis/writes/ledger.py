"""The write-path ledger: where every byte a transaction made the device write went, and why.

On a device that meters bytes, throughput is bytes per transaction; the ledger splits those
bytes by cause. Per run (over its measurement window, the span :mod:`analysis.writes.cost` divides),
per cell (the median of its counted runs) and per sampler interval (:func:`per_interval`), each
part in KiB per transaction of the workload's metric (New-Orders for TPC-C), from the server's
own ``SHOW GLOBAL STATUS`` counters:

=====================  =============================================================  =====
column                 growth over the window                                         note
=====================  =============================================================  =====
``redo_kib``           ``Innodb_os_log_written``                                      all
``doublewrite_kib``    ``Innodb_dblwr_pages_written`` × ``innodb_page_size``          all
``pages_kib``          ``Innodb_pages_written`` × page size (every buffer-pool page:  all
                       tables, indexes, undo, system and temporary tablespace pages)
``pages_lru_kib``      ``Innodb_buffer_pool_pages_LRU_flushed`` (XtraDB 5.5) or        1
                       ``…_lru_flushed`` (MariaDB 10.5+) × page size
``pages_flush_list``   ``pages_kib`` − ``pages_lru_kib``: flush-list flushing          1
``_kib``               (adaptive, background and checkpoint-forced together)
``binlog_kib``         ``Binlog_bytes_written`` (MariaDB), else the binary logs' size  2
                       (``SHOW BINARY LOGS``); 0 when ``log_bin`` is OFF
``device_kib``         the throttle group's ``write_bytes`` (cgroup ``io.stat``), else
                       the datadir device's sectors written × 512 (``/proc/diskstats``)
``residual_kib``       ``device_kib`` − (redo + doublewrite + pages + binlog): the
                       file system's journal and metadata, other files, other processes
=====================  =============================================================  =====

1. Where the server has no LRU counter (MySQL 5.5, MariaDB 10.2, MariaDB 10.3–10.4), both are
   NaN — unless its ``INNODB_METRICS`` counted ``buffer_LRU_batch_flush_total_pages``: its page
   writes are not split by the flush that wrote them. No server here splits checkpoint-forced
   (sync) flushes in ``SHOW GLOBAL STATUS``; InnoDB 5.6+'s ``INNODB_METRICS`` does, when
   ``innodb_monitor_enable`` enables them: ``pages_adaptive_kib``, ``pages_background_kib``,
   ``pages_sync_kib`` (``buffer_flush_{adaptive,background,sync}_total_pages``). The sampler
   stores the enabled ones from issue 53 on; no committed study has them
   (``docs/statistics.md``, "The write-path ledger").
2. MySQL and Percona Server have no binlog byte counter: the sampler sums ``File_size`` over
   ``SHOW BINARY LOGS`` there (``BINARY_LOGS.file_bytes``, stored from issue 53's binlog
   sampling on), and its growth is the part. A run recorded before that, with ``log_bin`` ON,
   has the binlog in its residual (``binlog_kib`` NaN); a shrinking size (a purge inside the
   window) is NaN too, never a negative part. Undo and temporary-tablespace pages are in
   ``pages_kib`` on every server (they are buffer-pool pages; no status counter splits them
   out).

**The floor** is the fewest bytes per transaction its redo and the pages it held dirty allow:
the redo it generated (the LSN's growth, once) plus one write of each dirty page per the
longest time a page may stay dirty. By Little's law the buffer pool's mean dirty pages *D*
equal the page writes per transaction *w* times the mean transactions a page stays dirty; a
page cannot stay dirty past the checkpoint age limit *A* (bytes of redo), i.e. for more than
*A* / *r* transactions at *r* bytes of redo each, so ``w ≥ D × r / A`` — ``floor_pages``. The
floor is ``r + floor_pages × page size``; ``amplification`` is ``device_kib`` / ``floor_kib``,
and the bytes above the floor are named by cause: ``above_redo_kib`` (redo written beyond the
LSN's growth: a log block rewritten as it fills), ``above_doublewrite_kib`` (the second copy of
every page), ``above_pages_kib`` (page writes beyond ``floor_pages``: pages flushed before the
redo forced them, so dirtied and written again), ``above_binlog_kib`` and
``above_residual_kib`` (``residual_kib``); the floor and the five add up to ``device_kib``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.reading.query import DB, run_variables
from analysis.reading.series import window_edges, window_transactions
from analysis.steadiness.disturbed import counted
from store.models import RunStatus

if TYPE_CHECKING:
    from analysis.writes.digests import RunDigests

#: Status counters whose window growth the ledger reads (kept by :mod:`analysis.writes.run_digest`).
#: ``INNODB_METRICS`` counters the sampler stores when enabled (``runner/run/sampler.py``):
#: part → counter.
METRICS = {
    "pages_adaptive_kib": "INNODB_METRICS.buffer_flush_adaptive_total_pages",
    "pages_background_kib": "INNODB_METRICS.buffer_flush_background_total_pages",
    "pages_sync_kib": "INNODB_METRICS.buffer_flush_sync_total_pages",
}
#: The LRU batch's pages in ``INNODB_METRICS`` (for servers without an LRU status counter).
LRU_METRIC = "INNODB_METRICS.buffer_LRU_batch_flush_total_pages"
#: The binary logs' size where the server has no ``Binlog_bytes_written`` (the sampler's
#: ``BINLOG_FILES_COUNTER``, ``runner/run/sampler.py``).
BINLOG_FILES = "BINARY_LOGS.file_bytes"
COUNTERS = ("Innodb_os_log_written", "Innodb_dblwr_pages_written", "Innodb_pages_written",
            "Innodb_buffer_pool_pages_LRU_flushed", "Innodb_buffer_pool_pages_lru_flushed",
            "Binlog_bytes_written", "Innodb_data_fsyncs", "Innodb_data_written",
            *METRICS.values(), LRU_METRIC, BINLOG_FILES)
#: Window figures of the sample columns the floor needs (:func:`window_state`).
STATE_COLUMNS = ("dirty_pages_mean", "max_checkpoint_age_mean", "lsn_growth")
#: The parts the device's bytes are split into, in the order tables show them.
PARTS = ("redo_kib", "doublewrite_kib", "pages_flush_list_kib", "pages_lru_kib", "binlog_kib",
         "residual_kib")
#: The write sources a "largest" is chosen from (the data pages whole).
SOURCES = ("redo_kib", "doublewrite_kib", "pages_kib", "binlog_kib", "residual_kib")
#: The causes of the bytes above the floor (with the floor, they add up to ``device_kib``).
CAUSES = ("above_redo_kib", "above_doublewrite_kib", "above_pages_kib", "above_binlog_kib",
          "above_residual_kib")
#: Every per-transaction column of :func:`per_run`, in the order tables and exports show them.
COLUMNS = ("device_kib", "redo_kib", "doublewrite_kib", "pages_kib", "pages_flush_list_kib",
           "pages_lru_kib", *METRICS, "binlog_kib", "counted_kib", "residual_kib", "residual_pct",
           "pages_written", "fsyncs", "floor_pages", "floor_kib", "amplification", *CAUSES)
#: Each part's name in sentences and table headers.
NAMES = {
    "redo_kib": "redo", "doublewrite_kib": "doublewrite", "pages_kib": "data pages",
    "pages_flush_list_kib": "data pages (flush list)", "pages_lru_kib": "data pages (LRU)",
    "binlog_kib": "binlog", "residual_kib": "residual",
    "above_redo_kib": "redo rewrites", "above_doublewrite_kib": "doublewrite",
    "above_pages_kib": "pages written early", "above_binlog_kib": "binlog",
    "above_residual_kib": "residual",
}
#: Parts are checked against the device's bytes within this share (else the residual is named).
TOLERANCE = 0.05
DEFAULT_PAGE_SIZE = 16384
SECTOR = 512
KIB = 1024.0


def window_state(samples_df: pd.DataFrame) -> pd.DataFrame:
    """Per run (index: run id), the window's mean dirty pages, mean checkpoint age limit
    (bytes) and the LSN's growth between its first and last window sample.

    ``samples_df``: :func:`analysis.reading.series.samples` (counters are not needed).
    """
    edges = window_edges(samples_df)
    out = pd.DataFrame(index=edges.index, columns=list(STATE_COLUMNS), dtype=float)
    if edges.empty:
        return out
    inside = samples_df[samples_df["in_window"] & ~samples_df["missed"]]
    by_run = inside.groupby("run_id")
    out["dirty_pages_mean"] = by_run["pages_dirty"].mean().reindex(out.index)
    out["max_checkpoint_age_mean"] = by_run["max_checkpoint_age_bytes"].mean().reindex(
        out.index)
    by_key = samples_df.set_index(["run_id", "seq"])["lsn"]
    first = by_key.reindex(list(zip(edges.index, edges["first_seq"], strict=True)))
    last = by_key.reindex(list(zip(edges.index, edges["last_seq"], strict=True)))
    out["lsn_growth"] = last.to_numpy(dtype=float) - first.to_numpy(dtype=float)
    return out


def _growth(grown: pd.DataFrame, name: str) -> pd.Series:
    """A counter's growth (NaN where the frame lacks it)."""
    return grown[name].astype(float) if name in grown else pd.Series(np.nan, index=grown.index)


def ledger(grown: pd.DataFrame, transactions: pd.Series, page_size: pd.Series,
           binlog_on: pd.Series) -> pd.DataFrame:
    """The ledger's arithmetic (:data:`COLUMNS`) from growths over one span per row.

    ``grown`` (one row per run or interval): the growth of :data:`COUNTERS`, ``device_bytes``
    (the device's written bytes over the same span) and :data:`STATE_COLUMNS`;
    ``transactions``: the metric's transactions in the span; ``page_size`` in bytes;
    ``binlog_on``: whether ``log_bin`` was ON (False: no binlog part, not NaN). Pure.
    """
    n = transactions.astype(float).where(transactions > 0)
    page = page_size.astype(float)
    out = pd.DataFrame(index=grown.index)
    out["device_kib"] = _growth(grown, "device_bytes") / n / KIB
    out["redo_kib"] = _growth(grown, "Innodb_os_log_written") / n / KIB
    out["doublewrite_kib"] = _growth(grown, "Innodb_dblwr_pages_written") * page / n / KIB
    pages = _growth(grown, "Innodb_pages_written")
    out["pages_kib"] = pages * page / n / KIB
    # XtraDB 5.5 spells the counter in capitals, MariaDB 10.5+ in lower case; never both.
    lru = _growth(grown, "Innodb_buffer_pool_pages_LRU_flushed").fillna(
        _growth(grown, "Innodb_buffer_pool_pages_lru_flushed")).fillna(
        _growth(grown, LRU_METRIC))
    out["pages_lru_kib"] = lru * page / n / KIB
    out["pages_flush_list_kib"] = out["pages_kib"] - out["pages_lru_kib"]
    # Within the flush list, where the server's INNODB_METRICS counted them (NaN: not
    # enabled, or no such table): adaptive, background (idle) and sync (checkpoint-forced).
    for part, counter in METRICS.items():
        out[part] = _growth(grown, counter) * page / n / KIB
    # MariaDB counts the bytes; elsewhere the files' growth (a purge shrinks them: unknown).
    binlog = _growth(grown, "Binlog_bytes_written").fillna(
        _growth(grown, BINLOG_FILES).where(lambda g: g >= 0)).where(binlog_on, 0.0)
    out["binlog_kib"] = binlog / n / KIB
    out["counted_kib"] = (out["redo_kib"] + out["doublewrite_kib"] + out["pages_kib"]
                          + out["binlog_kib"].fillna(0.0))
    out["residual_kib"] = out["device_kib"] - out["counted_kib"]
    out["residual_pct"] = 100.0 * out["residual_kib"] / out["device_kib"].where(
        out["device_kib"] > 0)
    out["pages_written"] = pages / n
    out["fsyncs"] = _growth(grown, "Innodb_data_fsyncs") / n
    # The floor (module docstring): the redo generated once, and the page writes that the
    # dirty pages held and the checkpoint age limit force at the least.
    lsn = _growth(grown, "lsn_growth").where(lambda s: s > 0)
    age = _growth(grown, "max_checkpoint_age_mean").where(lambda s: s > 0)
    r = lsn / n
    out["floor_pages"] = _growth(grown, "dirty_pages_mean") * r / age
    out["floor_kib"] = (r + out["floor_pages"] * page) / KIB
    out["amplification"] = out["device_kib"] / out["floor_kib"].where(out["floor_kib"] > 0)
    out["above_redo_kib"] = out["redo_kib"] - r / KIB
    out["above_doublewrite_kib"] = out["doublewrite_kib"]
    out["above_pages_kib"] = out["pages_kib"] - out["floor_pages"] * page / KIB
    out["above_binlog_kib"] = out["binlog_kib"].fillna(0.0)
    out["above_residual_kib"] = out["residual_kib"]
    return out[list(COLUMNS)]


def run_facts(db: DB, run_ids: Sequence[int]) -> pd.DataFrame:
    """Per run (index: run id): ``page_size`` (16K where the server has no variable: MySQL
    5.5) and ``binlog_on`` (``log_bin`` ON)."""
    ids = [int(r) for r in run_ids]
    var = run_variables(db, ids, ["innodb_page_size", "log_bin"]).reindex(ids)
    out = pd.DataFrame(index=pd.Index(ids, name="run_id"))
    page = var["innodb_page_size"] if "innodb_page_size" in var else pd.Series(np.nan, ids)
    out["page_size"] = pd.to_numeric(page, errors="coerce").fillna(DEFAULT_PAGE_SIZE)
    log_bin = var["log_bin"] if "log_bin" in var else pd.Series(None, ids, dtype=object)
    out["binlog_on"] = log_bin.astype(str).str.upper().isin(["ON", "1"])
    return out


def per_run(db: DB, window: pd.DataFrame, usage: pd.DataFrame, intervals: pd.DataFrame,
            run_ids: Sequence[int]) -> pd.DataFrame:
    """Per run (index: run id, in the order given) the ledger (:data:`COLUMNS`), with
    ``transactions``, ``device_source`` (``throttle group`` or ``/proc/diskstats``) and
    ``largest`` (the part of :data:`PARTS` with the most bytes).

    ``window`` and ``usage``: the digest's (:class:`analysis.writes.digests.RunDigests`);
    ``intervals``: :func:`analysis.reading.series.intervals` of these runs.
    """
    ids = pd.Index([int(r) for r in run_ids], name="run_id")
    w = window[window.index.isin(ids)].dropna(subset=["t_min", "t_max"])
    out = pd.DataFrame(index=ids, columns=["transactions", *COLUMNS], dtype=float)
    out["device_source"] = None
    out["largest"] = None
    if w.empty:
        return out
    tx = window_transactions(intervals, w).reindex(ids)
    grown = w.reindex(ids).copy()
    u = usage.reindex(ids)
    group = u["group_write_bytes"] if "group_write_bytes" in u else pd.Series(np.nan, ids)
    disk = u["disk_write_sectors"] * SECTOR
    grown["device_bytes"] = group.where(group.notna(), disk)
    facts = run_facts(db, list(ids))
    out[list(COLUMNS)] = ledger(grown, tx, facts["page_size"], facts["binlog_on"])
    out["transactions"] = tx
    out["device_source"] = np.where(group.notna(), "throttle group",
                                    np.where(disk.notna(), "/proc/diskstats", None))
    out["largest"] = largest(out)
    return out


def largest(table: pd.DataFrame) -> pd.Series:
    """Per row, the name of the source (:data:`SOURCES`: the data pages whole, whichever
    flush wrote them) with the most KiB; None where no source is known."""
    parts = table[list(SOURCES)].astype(float)
    known = parts.notna().any(axis=1)
    best = parts[known].fillna(-np.inf).idxmax(axis=1).map(NAMES).reindex(table.index)
    return best.astype(object).where(best.notna(), None)


def per_cell(runs: pd.DataFrame, run_summary: pd.DataFrame) -> pd.DataFrame:
    """Per cell (index: cell id, in the experiment's row order) the median of its counted
    runs' :data:`COLUMNS`, ``runs`` (how many have figures) and ``largest``."""
    counted_ids = run_summary.loc[counted(run_summary), ["run_id", "cell_id", "position"]]
    joined = counted_ids.join(runs[list(COLUMNS)], on="run_id")
    has = joined["device_kib"].notna() | joined["redo_kib"].notna()
    by_cell = joined[has].groupby("cell_id")
    out = by_cell[list(COLUMNS)].median()
    out["runs"] = by_cell.size()
    order = counted_ids.drop_duplicates("cell_id").sort_values("position")["cell_id"]
    out = out.reindex([c for c in order if c in out.index])
    out["largest"] = largest(out)
    return out


def for_runs(db: DB, digests: RunDigests, intervals: pd.DataFrame, run_summary: pd.DataFrame
             ) -> pd.DataFrame:
    """:func:`per_run` of the done runs of ``run_summary``, from their digests."""
    done = [int(r) for r in run_summary.loc[run_summary["status"] == RunStatus.DONE, "run_id"]]
    return per_run(db, digests.window, digests.usage, intervals, done)


def per_interval(samples_df: pd.DataFrame, intervals: pd.DataFrame, facts: pd.DataFrame
                 ) -> pd.DataFrame:
    """The ledger per sampler interval: one row per pair of consecutive good window samples
    of each run (``run_id``, ``t`` at the interval's end), the transactions of the intervals
    ending in it.

    ``samples_df``: :func:`analysis.reading.series.samples` with :data:`COUNTERS`; ``facts``:
    :func:`run_facts`. An interval's floor uses the dirty pages and checkpoint age limit at
    its end.
    """
    s = samples_df[samples_df["in_window"] & ~samples_df["missed"]].sort_values(
        ["run_id", "seq"], kind="stable")
    rows = []
    for run_id, g in s.groupby("run_id"):
        if len(g) < 2:
            continue
        cum = pd.DataFrame({c: g[c] if c in g else np.nan for c in COUNTERS})
        cum["device_bytes"] = (g["group_write_bytes"].astype(float)
                               if "group_write_bytes" in g and g["group_write_bytes"].notna().all()
                               else g["disk_write_sectors"].astype(float) * SECTOR)
        cum["lsn_growth"] = g["lsn"].astype(float)
        grown = cum.diff().iloc[1:]
        grown["dirty_pages_mean"] = g["pages_dirty"].to_numpy(dtype=float)[1:]
        grown["max_checkpoint_age_mean"] = g["max_checkpoint_age_bytes"].to_numpy(
            dtype=float)[1:]
        t = g["t"].to_numpy(dtype=float)
        iv = intervals[intervals["run_id"] == run_id]
        tx = pd.Series([float(iv.loc[(iv["t"] > a) & (iv["t"] <= b), "primary_count"].sum())
                        for a, b in zip(t[:-1], t[1:], strict=True)], index=grown.index)
        grown, tx, t_end = _join_empty_spans(grown, tx, t[1:])
        n = len(grown)
        part = ledger(grown, tx, pd.Series(float(facts.loc[run_id, "page_size"]), grown.index),
                      pd.Series(bool(facts.loc[run_id, "binlog_on"]), grown.index))
        part.insert(0, "transactions", tx.to_numpy())
        part.insert(0, "t", t_end)
        part.insert(0, "run_id", [int(run_id)] * n)
        rows.append(part)
    return (pd.concat(rows, ignore_index=True) if rows
            else pd.DataFrame(columns=["run_id", "t", "transactions", *COLUMNS]))


def _join_empty_spans(grown: pd.DataFrame, tx: pd.Series, t_end: np.ndarray
                      ) -> tuple[pd.DataFrame, pd.Series, np.ndarray]:
    """Join each sampler interval in which no driver interval ended to the next one (the last
    ones to the one before), so every row has transactions and the rows still tile the window.

    The driver's and the sampler's intervals are not aligned: a tick that comes late can leave
    one sampler interval without a driver interval's end, and its bytes over no transaction
    would drop out of every per-transaction sum. Growths add up; the state at a row's end
    (dirty pages, checkpoint age limit) is that of its last interval.
    """
    group = np.zeros(len(tx), dtype=int)
    current = 0
    for i, count in enumerate(tx.to_numpy()):
        group[i] = current
        if count > 0:
            current += 1
    if current and tx.to_numpy()[-1] <= 0:  # empty spans at the end: into the last full one
        group[group == current] = current - 1
    if current == 0 or (group == np.arange(len(group))).all():
        return grown, tx, t_end
    state = ["dirty_pages_mean", "max_checkpoint_age_mean"]
    keys = pd.Series(group, index=grown.index)
    joined = grown.drop(columns=state).groupby(keys).sum(min_count=1)
    joined[state] = grown[state].groupby(keys).last()
    ends = pd.Series(t_end, index=grown.index).groupby(keys).last().to_numpy()
    return joined, tx.groupby(keys).sum(), ends


def largest_text(row: Any, unit: str) -> str:
    """One sentence naming a run's or cell's largest write source, its share of the device's
    bytes and whether the parts account for them (``show``)."""
    name = row.get("largest")
    if not isinstance(name, str):
        return "– (no counters in the window)"
    key = next(k for k in SOURCES if NAMES[k] == name)
    kib = float(row[key])
    device = float(row["device_kib"])
    share = f", {100.0 * kib / device:.0f} % of the device's {device:,.1f}" if device > 0 else ""
    detail = ""
    if key == "pages_kib":
        detail = f" ({float(row['pages_written']):.2f} pages"
        if np.isfinite(float(row["pages_lru_kib"])):
            detail += (f"; flush list {float(row['pages_flush_list_kib']):,.1f},"
                       f" LRU {float(row['pages_lru_kib']):,.1f}")
        detail += ")"
    return f"{name}: {kib:,.1f} KiB per {unit}{detail}{share}"


def accounted(row: Any) -> bool:
    """Whether the parts add up to the device's bytes within :data:`TOLERANCE`."""
    pct = row.get("residual_pct")
    return pct is not None and np.isfinite(pct) and abs(pct) <= 100.0 * TOLERANCE


def with_ledger(run_summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``run_summary`` with each run's ledger columns as ``ledger_<column>_per_tx`` (KiB per
    transaction of the metric; ``ledger_amplification`` and ``ledger_largest`` as they are):
    the ledger columns ``flushbench export --what runs`` writes."""
    out = run_summary.copy()
    mine = runs.reindex(out["run_id"].astype(int).to_numpy())
    for column in COLUMNS:
        name = (f"ledger_{column}" if column in ("amplification", "residual_pct")
                else f"ledger_{column}_per_tx")
        out[name] = mine[column].to_numpy(dtype=float)
    out["ledger_device_source"] = mine["device_source"].to_numpy()
    out["ledger_largest"] = mine["largest"].to_numpy()
    out.attrs = dict(run_summary.attrs)
    return out
