"""What each transaction cost: CPU, storage operations and bytes, row-lock waits.

Per done run, over its measurement window — from its first to its last window sample, the span
:mod:`analysis.tables.io_breakdown` divides too — each figure's growth divided by the transactions
of the workload's metric counted in that span (New-Orders for TPC-C, transactions for sysbench):

=====================  ==========================================================  ======
column                 growth over the window, from the sampler's counters          unit
=====================  ==========================================================  ======
``mysqld_cpu_us``      mysqld's user + system CPU (``/proc/PID/stat``)                µs
``client_cpu_us``      the driver process's user + system CPU (the same)              µs
``mysqld_ctxsw``       mysqld's voluntary + involuntary context switches, every       —
                       thread's (``/proc/PID/task/TID/status``)
``client_ctxsw``       the driver process's context switches (the same)               —
``read_ops``           reads completed on the datadir's device (``/proc/diskstats``)  —
``read_kib``           sectors read on that device × 512 B                           KiB
``write_ops``          writes completed on that device                               —
``write_kib``          sectors written on that device × 512 B                        KiB
``row_lock_waits``     ``Innodb_row_lock_waits`` (``SHOW GLOBAL STATUS``)             —
=====================  ==========================================================  ======

The storage figures are the device's, as ``iostat`` counts them (merged requests, every
process's I/O on that device: a ``disturbed-io`` warning says when others moved a share of
it); a datadir on a RAM file system has no device line, so they are NaN. Context switches
are sampled from schema revision 0008 on: a run recorded before has none, and its figures are
NaN (shown "–", never 0). The sampler keeps them cumulative over every thread the process has
had (``runner.run.sampler.ProcessSwitches``); what a thread did between its last sample and
its end is not counted. A cell's figure is the median of its counted runs.

The growth of the sample columns is computed once per run with its digest
(:func:`window_usage`, kept by :mod:`analysis.writes.run_digest`), the counters' growth is the
digest's window (:data:`COUNTERS` are among ``run_digest.WINDOW_COUNTERS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.reading.series import window_edges, window_transactions
from analysis.steadiness.disturbed import counted
from store.models import RunStatus

if TYPE_CHECKING:
    from analysis.writes.digests import RunDigests

#: Status counters whose window growth the cost reads (from the digest's window).
COUNTERS = ("Innodb_row_lock_waits",)
#: Figures of :func:`window_usage`: name → the sample columns whose growth it sums.
USAGE: dict[str, tuple[str, ...]] = {
    "mysqld_cpu_s": ("mysqld_cpu_user_s", "mysqld_cpu_sys_s"),
    "client_cpu_s": ("driver_cpu_user_s", "driver_cpu_sys_s"),
    "mysqld_ctxsw": ("mysqld_ctxsw_voluntary", "mysqld_ctxsw_involuntary"),
    "client_ctxsw": ("driver_ctxsw_voluntary", "driver_ctxsw_involuntary"),
    "disk_reads": ("disk_reads",),
    "disk_writes": ("disk_writes",),
    "disk_read_sectors": ("disk_read_sectors",),
    "disk_write_sectors": ("disk_write_sectors",),
    # The throttle group's own written bytes: the device's bytes of the write-path ledger.
    "group_write_bytes": ("group_write_bytes",),
    "host_cpu_busy_s": ("host_cpu_busy_s",),
    "host_cpu_idle_s": ("host_cpu_idle_s",),
    "host_cpu_steal_s": ("host_cpu_steal_s",),
}
#: The per-transaction columns of :func:`per_run`, in the order tables show them.
COLUMNS = ("mysqld_cpu_us", "client_cpu_us", "mysqld_ctxsw", "client_ctxsw", "read_ops",
           "read_kib", "write_ops", "write_kib", "row_lock_waits")
#: Each column's header in tables (``{unit}``: New-Order or transaction).
LABELS = {
    "mysqld_cpu_us": "mysqld CPU µs", "client_cpu_us": "client CPU µs",
    "mysqld_ctxsw": "mysqld context switches", "client_ctxsw": "client context switches",
    "read_ops": "reads", "read_kib": "KiB read", "write_ops": "writes",
    "write_kib": "KiB written", "row_lock_waits": "row-lock waits",
}
#: Each column's number format in tables.
FORMATS = {"mysqld_cpu_us": ",.0f", "client_cpu_us": ",.0f", "mysqld_ctxsw": ",.1f",
           "client_ctxsw": ",.1f", "read_ops": ".2f",
           "read_kib": ".1f", "write_ops": ".2f", "write_kib": ".1f", "row_lock_waits": ".3f"}
SECTOR = 512
KIB = 1024.0


def window_usage(samples_df: pd.DataFrame) -> pd.DataFrame:
    """Per run (index: run id), how much each :data:`USAGE` figure grew between the first and
    the last sample of its measurement window (NaN where either sample lacks a column).

    ``samples_df``: :func:`analysis.reading.series.samples` (counters are not needed).
    """
    edges = window_edges(samples_df)
    out = pd.DataFrame(index=edges.index, columns=list(USAGE), dtype=float)
    if edges.empty:
        return out
    by_key = samples_df.set_index(["run_id", "seq"])
    first = by_key.loc[list(zip(edges.index, edges["first_seq"], strict=True))]
    last = by_key.loc[list(zip(edges.index, edges["last_seq"], strict=True))]
    for name, columns in USAGE.items():
        grown = sum(last[c].to_numpy(dtype=float) - first[c].to_numpy(dtype=float)
                    for c in columns)
        out[name] = np.asarray(grown, dtype=float)
    return out


def per_run(window: pd.DataFrame, usage: pd.DataFrame, intervals: pd.DataFrame,
            run_ids: Sequence[int]) -> pd.DataFrame:
    """Per run (index: run id, in the order given) the cost per transaction (:data:`COLUMNS`),
    with ``transactions`` and ``window_s`` (the span they were counted in).

    ``window`` and ``usage``: the digest's (:class:`analysis.writes.digests.RunDigests`);
    ``intervals``: :func:`analysis.reading.series.intervals` of these runs. A run without window
    samples, or without a transaction in their span, has NaN figures.
    """
    ids = pd.Index([int(r) for r in run_ids], name="run_id")
    w = window[window.index.isin(ids)].dropna(subset=["t_min", "t_max"])
    out = pd.DataFrame(index=ids, columns=["transactions", "window_s", *COLUMNS], dtype=float)
    if w.empty:
        return out
    tx = window_transactions(intervals, w).reindex(ids)
    n = tx.where(tx > 0)
    u = usage.reindex(ids)
    grown = w.reindex(ids)
    out["transactions"] = tx
    out["window_s"] = grown["t_max"] - grown["t_min"]
    out["mysqld_cpu_us"] = u["mysqld_cpu_s"] * 1e6 / n
    out["client_cpu_us"] = u["client_cpu_s"] * 1e6 / n
    out["mysqld_ctxsw"] = u["mysqld_ctxsw"] / n
    out["client_ctxsw"] = u["client_ctxsw"] / n
    out["read_ops"] = u["disk_reads"] / n
    out["read_kib"] = u["disk_read_sectors"] * SECTOR / KIB / n
    out["write_ops"] = u["disk_writes"] / n
    out["write_kib"] = u["disk_write_sectors"] * SECTOR / KIB / n
    out["row_lock_waits"] = grown["Innodb_row_lock_waits"] / n
    return out


def per_cell(runs: pd.DataFrame, run_summary: pd.DataFrame) -> pd.DataFrame:
    """Per cell (index: cell id, in the experiment's row order) the median of its counted
    runs' :data:`COLUMNS` and ``runs``, how many runs have figures."""
    counted_ids = run_summary.loc[counted(run_summary), ["run_id", "cell_id", "position"]]
    joined = counted_ids.join(runs[list(COLUMNS)], on="run_id")
    has = joined[list(COLUMNS)].notna().any(axis=1)
    by_cell = joined[has].groupby("cell_id")
    out = by_cell[list(COLUMNS)].median()
    out["runs"] = by_cell.size()
    order = counted_ids.drop_duplicates("cell_id").sort_values("position")["cell_id"]
    return out.reindex([c for c in order if c in out.index])


def for_runs(digests: RunDigests, intervals: pd.DataFrame, run_summary: pd.DataFrame
             ) -> pd.DataFrame:
    """:func:`per_run` of the done runs of ``run_summary``, from their digests."""
    done = [int(r) for r in run_summary.loc[run_summary["status"] == RunStatus.DONE, "run_id"]]
    return per_run(digests.window, digests.usage, intervals, done)


def with_cost(run_summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``run_summary`` with each run's :data:`COLUMNS` as ``<column>_per_tx`` (NaN for runs
    without figures): the cost columns ``flushbench export --what runs`` writes."""
    out = run_summary.copy()
    mine = runs.reindex(out["run_id"].astype(int).to_numpy())
    for column in COLUMNS:
        out[f"{column}_per_tx"] = mine[column].to_numpy(dtype=float)
    out.attrs = dict(run_summary.attrs)
    return out
