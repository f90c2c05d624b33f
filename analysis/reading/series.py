"""Per-interval and per-sample time series, with the values derived from the raw records.

Raw in, derived out: the store keeps cumulative counters and driver counts with real time
stamps; here they become NOTPM per interval, rates per second between consecutive samples,
InnoDB's dirty-page percentage and checkpoint age, and the measurement-window flags.

Time axes: ``t`` is seconds since the measurement started (warmup excluded: warmup intervals
have ``t <= 0``); ``in_window`` marks the declared measurement window (default: second half).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.reading.one_reading import read_once
from analysis.reading.query import (
    DB,
    DEFAULT_COUNTERS,
    INTERVAL_FIELDS,
    SAMPLE_COLUMNS,
    SAMPLE_FIELDS,
    ExperimentRef,
    counter_regex,
    frame,
    interval_rows,
    run_context,
    run_variables,
    sample_rows,
    session_scope,
    status_blobs,
    utc,
    window_columns,
)
from analysis.statistics.checkpoint import max_checkpoint_age
from analysis.statistics.rates import restarts
from core.flavors import redo_capacity

MB = 1024.0 * 1024.0
SECTOR = 512

#: Cumulative counters turned into per-second rates: counter → (column, divisor).
RATE_COUNTERS: dict[str, tuple[str, float]] = {
    "Innodb_buffer_pool_pages_flushed": ("pages_flushed_per_s", 1.0),
    "Innodb_os_log_written": ("log_mb_per_s", MB),
    "Innodb_dblwr_pages_written": ("dblwr_pages_per_s", 1.0),
    "Innodb_data_fsyncs": ("fsyncs_per_s", 1.0),
    "Innodb_data_written": ("data_written_mb_per_s", MB),
    "Innodb_pages_written": ("pages_written_per_s", 1.0),
    "Innodb_buffer_pool_wait_free": ("wait_free_per_s", 1.0),
    "Innodb_log_waits": ("log_waits_per_s", 1.0),
}


def per_run(df: pd.DataFrame, values: pd.Series) -> pd.Series:
    """``values`` (indexed by run id) for each row of ``df``, in its dtype.

    ``df["run_id"].map(values)`` does the same but fails on an empty frame with a datetime
    ``values`` (pandas casts the empty result to float).
    """
    # `.array`, not `.to_numpy()`: a tz-aware datetime column would become an object array of
    # Timestamps, one Python object per sample (half a second for 90,000 samples).
    return pd.Series(values.reindex(df["run_id"].to_numpy()).array, index=df.index,
                     dtype=values.dtype)


# ---------------------------------------------------------------------------- intervals


@read_once
def intervals(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    run_ids: Sequence[int] | None = None,
    only_done: bool = True,
    window_only: bool = False,
    detail: bool = True,
    cycles: str | None = None,
) -> pd.DataFrame:
    """Per-interval driver series with NOTPM, time since measurement start and window flag.

    Parameters
    ----------
    run_ids:
        Only these runs (default: every analyzable run of the experiment).
    only_done:
        Keep only runs whose status is ``done`` (the latest attempt of each repetition).
    window_only:
        Keep only intervals inside the measurement window.
    detail:
        Expand the ``detail`` JSON into ``<type>_count``, ``<type>_p95_ms``… and scalar columns
        (``qps`` for sysbench).
    cycles:
        ``whole`` or ``as-set`` for every run; default: each experiment's ``window.cycles``.
        ``whole`` cuts a periodic run's window to its whole flush cycles
        (:func:`analysis.reading.window_cycles.whole_cycle_flags`), so every figure from the
        intervals — window mean, stability, response time — uses the same window.

    Returns
    -------
    DataFrame
        ``run_id, seq, ts, elapsed_s, interval_s, phase, t, primary_count, notpm, per_s,
        p95_ms, p99_ms, max_ms, errors, retries, latency_bytes, in_window`` (+ detail
        columns); ``latency_bytes`` is the size of the interval's stored latency histograms
        (0: none; the blob itself is read by :mod:`analysis.response.latency_histograms`).
        ``notpm = primary_count × 60 / interval_s``; ``t = elapsed_s − warmup``; an interval is
        in the window when its midpoint lies in ``(start, end]``.
    """
    rdf, windows = run_context(db, experiment, run_ids, only_done)
    ids = [int(x) for x in rdf["run_id"]]
    with session_scope(db) as s:
        rows = interval_rows(s, ids, detail=detail)
    df = frame(rows, [*INTERVAL_FIELDS, *(["detail"] if detail else [])])
    df = df.sort_values(["run_id", "seq"], kind="stable").reset_index(drop=True)
    df["ts"] = utc(df["ts"])
    for c in ("elapsed_s", "interval_s", "primary_count", "p95_ms", "p99_ms", "max_ms",
              "errors", "retries"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    df["latency_bytes"] = pd.to_numeric(df["latency_bytes"], errors="coerce").fillna(0) \
        .astype("int64")
    ctx = window_columns(rdf, windows)
    warm = df["run_id"].map(ctx["warmup"]).to_numpy(dtype=float)
    w_start = df["run_id"].map(ctx["w_start"]).to_numpy(dtype=float)
    w_end = df["run_id"].map(ctx["w_end"]).to_numpy(dtype=float)
    df["t"] = df["elapsed_s"] - warm
    with np.errstate(divide="ignore", invalid="ignore"):
        df["notpm"] = df["primary_count"] * 60.0 / df["interval_s"]
        df["per_s"] = df["primary_count"] / df["interval_s"]
    mid = df["t"].to_numpy() - df["interval_s"].to_numpy() / 2
    df["in_window"] = (df["phase"].to_numpy() == "measure") & (mid > w_start) & (mid <= w_end)
    rule = df["run_id"].map(ctx["experiment_id"]).map(
        lambda e: cycles or windows[int(e)].cycles) if len(df) else pd.Series(dtype=object)
    whole = (rule == "whole").to_numpy(dtype=bool)
    if whole.any():
        from analysis.reading.window_cycles import whole_cycle_flags

        df.loc[whole, "in_window"] = whole_cycle_flags(df.loc[whole]).to_numpy(dtype=bool)
    if detail:
        df = _expand_detail(df)
    if window_only:
        df = df[df["in_window"]].reset_index(drop=True)
    return df


def _expand_detail(df: pd.DataFrame) -> pd.DataFrame:
    parsed = [json.loads(d) if isinstance(d, str) else (d or {}) for d in df.pop("detail")]
    columns: dict[str, np.ndarray] = {}
    n = len(parsed)

    def put(name: str, i: int, v: Any) -> None:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            col = columns.get(name)
            if col is None:
                col = columns[name] = np.full(n, np.nan)
            col[i] = v

    for i, d in enumerate(parsed):
        if not isinstance(d, dict):
            continue
        for key, value in d.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    put(f"{key}_{sub}", i, v)
            else:
                put(key, i, value)
    extra = {k: v for k, v in columns.items() if k not in df.columns}
    if extra:
        df = pd.concat([df, pd.DataFrame(extra, index=df.index, dtype=float)], axis=1)
    return df


# ---------------------------------------------------------------------------- samples


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def limits_from_variables(variables: pd.DataFrame) -> pd.DataFrame:
    """Per-run limits from the variables: ``max_dirty_pages_pct``, ``log_capacity_bytes`` and
    ``max_checkpoint_age_bytes``.

    Log capacity is :func:`core.flavors.redo_capacity` of each run's variables (they are
    ``SHOW GLOBAL VARIABLES``, so ``innodb_log_files_in_group`` is there wherever it exists).
    The maximum checkpoint age is InnoDB's own rule for the server's flavor and version
    (:func:`analysis.statistics.checkpoint.max_checkpoint_age`), for servers that do not report
    ``Innodb_checkpoint_max_age`` (MySQL); NaN where the rule's inputs are missing.
    """
    out = pd.DataFrame(index=variables.index)
    if "innodb_max_dirty_pages_pct" in variables.columns:
        out["max_dirty_pages_pct"] = variables["innodb_max_dirty_pages_pct"].map(_num)
    else:
        out["max_dirty_pages_pct"] = math.nan
    names = [c for c in ("innodb_redo_log_capacity", "innodb_log_file_size",
                         "innodb_log_files_in_group") if c in variables.columns]

    def capacity(row: pd.Series) -> float:
        known = {k: str(v) for k, v in row.items() if isinstance(v, str) or pd.notna(v)}
        value = redo_capacity(known)
        return math.nan if value is None else float(value)

    out["log_capacity_bytes"] = (
        variables[names].apply(capacity, axis=1) if names and len(variables) else math.nan
    )

    def checkpoint_limit(row: pd.Series) -> float:
        version = row.get("version")
        if not isinstance(version, str):
            return math.nan
        flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
        known = {k: v for k, v in row.items() if isinstance(v, str) or pd.notna(v)}
        try:
            return float(max_checkpoint_age(flavor, version, known).bytes)
        except (KeyError, ValueError):
            return math.nan

    out["max_checkpoint_age_bytes"] = (
        variables.apply(checkpoint_limit, axis=1) if len(variables) else math.nan
    )
    return out


@read_once
def samples(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    run_ids: Sequence[int] | None = None,
    counters: Sequence[str] | None = DEFAULT_COUNTERS,
    only_done: bool = True,
) -> pd.DataFrame:
    """Sampler series with derived values, one row per tick (missed ticks kept, values NaN).

    Parameters
    ----------
    run_ids:
        Only these runs (default: every analyzable run of the experiment).
    counters:
        SHOW GLOBAL STATUS counters to extract from ``status_z`` (None or empty: skip the
        decompression entirely — the derived values that need counters are then NaN, except
        the checkpoint figures, which also come from the ``lsn`` columns and the variables).

    Returns
    -------
    DataFrame
        Raw columns plus ``t`` (s since measurement start), ``in_window``, ``dt_s`` (real
        seconds since the previous good sample), ``dirty_pct`` (InnoDB's formula
        ``100 × dirty / (1 + data + free)``), ``checkpoint_age_bytes``, ``checkpoint_age_mb``,
        ``max_checkpoint_age_bytes`` (status ``Innodb_checkpoint_max_age``, else InnoDB's rule
        for the flavor and version, else the log capacity),
        ``max_checkpoint_age_mb``, ``checkpoint_age_pct``, ``max_dirty_pages_pct``,
        ``rss_mb``, ``vsz_mb``, ``disk_write_mb_per_s``, ``disk_write_iops``,
        ``disk_read_mb_per_s``, ``disk_read_iops``, ``mysqld_cpu_pct``, ``driver_cpu_pct``
        (% of one core) and one ``*_per_s`` column per counter in :data:`RATE_COUNTERS`.
    """
    rdf, windows = run_context(db, experiment, run_ids, only_done)
    names = list(counters or ())
    ids = [int(x) for x in rdf["run_id"]]
    with session_scope(db) as s:
        rows = sample_rows(s, ids, status=bool(names))
    df = frame(rows, [*SAMPLE_FIELDS, *(["status_z"] if names else [])])
    df = df.sort_values(["run_id", "seq"], kind="stable").reset_index(drop=True)
    df["missed"] = df["missed"].astype(bool) | df["ts"].isna()
    df["scheduled_ts"] = utc(df["scheduled_ts"])
    df["ts"] = utc(df["ts"])
    for c in SAMPLE_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    if names:
        df = _with_counters(df, names)
    _place_in_window(df, window_columns(rdf, windows))
    _add_levels(db, df, ids)
    # Rates between consecutive good samples of the same run (real time, not scheduled).
    df = _rates(df, names)
    return df


def _with_counters(df: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """``df`` with its ``status_z`` column replaced by one column per named counter (NaN
    where a sample does not have it)."""
    rx = counter_regex(names)
    values = {n: np.full(len(df), np.nan) for n in names}
    for i, blob in enumerate(df.pop("status_z")):
        if blob:
            for m in rx.finditer(zlib.decompress(blob)):
                values[m.group(1).decode()][i] = float(m.group(2))
    return pd.concat([df, pd.DataFrame(values, index=df.index)], axis=1)


def _place_in_window(df: pd.DataFrame, ctx: pd.DataFrame) -> None:
    """Add ``t`` (seconds since the run's measurement started: the real sample time, else the
    scheduled one) and ``in_window`` to the samples ``df``; ``ctx``: :func:`window_columns`."""
    when = df["ts"].where(df["ts"].notna(), df["scheduled_ts"])
    measure_start = per_run(df, ctx["measure_started_at"])
    fallback = per_run(df, ctx["started_at"]) + pd.to_timedelta(
        per_run(df, ctx["warmup"]), unit="s"
    )
    measure_start = measure_start.where(measure_start.notna(), fallback)
    df["t"] = (when - measure_start).dt.total_seconds()
    w_start = per_run(df, ctx["w_start"])
    w_end = per_run(df, ctx["w_end"])
    df["in_window"] = (~df["missed"]) & (df["t"] >= w_start) & (df["t"] <= w_end)


def _add_levels(db: DB, df: pd.DataFrame, ids: list[int]) -> None:
    """Add the level columns of :func:`samples` (dirty %, checkpoint age and its maximum, the
    dirty-page limit, RSS and VSZ in MiB) to the samples ``df`` of the runs ``ids``."""
    df["dirty_pct"] = 100.0 * df["pages_dirty"] / (1.0 + df["pages_data"] + df["pages_free"])
    age = df["lsn"] - df["checkpoint_lsn"]
    if "Innodb_checkpoint_age" in df.columns:
        age = age.where(age.notna(), df["Innodb_checkpoint_age"])
    df["checkpoint_age_bytes"] = age
    df["checkpoint_age_mb"] = age / MB
    limits = limits_from_variables(run_variables(db, ids)) if ids else pd.DataFrame(
        columns=["max_dirty_pages_pct", "log_capacity_bytes", "max_checkpoint_age_bytes"]
    )
    # InnoDB's own limit where the server does not report it; the raw capacity as a last resort.
    rule = limits["max_checkpoint_age_bytes"].where(
        limits["max_checkpoint_age_bytes"].notna(), limits["log_capacity_bytes"]
    ) if ids else pd.Series(dtype=float)
    max_age = df["run_id"].map(rule) if ids else pd.Series(dtype=float)
    if "Innodb_checkpoint_max_age" in df.columns:
        status_max = df.groupby("run_id")["Innodb_checkpoint_max_age"].transform("max")
        max_age = status_max.where(status_max.notna() & (status_max > 0), max_age)
    df["max_checkpoint_age_bytes"] = max_age.astype(float)
    df["max_checkpoint_age_mb"] = df["max_checkpoint_age_bytes"] / MB
    df["checkpoint_age_pct"] = 100.0 * age / df["max_checkpoint_age_bytes"]
    df["max_dirty_pages_pct"] = (
        df["run_id"].map(limits["max_dirty_pages_pct"]).astype(float) if ids else math.nan
    )
    df["rss_mb"] = df["mysqld_rss_bytes"] / MB
    df["vsz_mb"] = df["mysqld_vsz_bytes"] / MB


def _rates(df: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    good = df[~df["missed"]]
    run = good["run_id"].to_numpy()
    same = np.zeros(len(good), dtype=bool)
    same[1:] = run[1:] == run[:-1]
    secs = (good["ts"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy()
    dt_s = np.full(len(good), np.nan)
    dt_s[1:] = secs[1:] - secs[:-1]
    dt_s[~same] = np.nan
    dt_s[dt_s <= 0] = np.nan

    arr = {c: good[c].to_numpy(dtype=float) for c in good.columns if c in (
        *SAMPLE_COLUMNS, *names)}
    # A server restart between two samples (Uptime went back, or grew less than the wall
    # clock) breaks every server counter and mysqld's CPU time, even when a counter ends up
    # higher than before; the disk counters of the device are not affected.
    restarted = (restarts(secs, arr["Uptime"]) if "Uptime" in arr
                 else np.zeros(len(good), dtype=bool)) & same

    def rate(values: np.ndarray, divisor: float = 1.0, server: bool = True) -> np.ndarray:
        d = np.full(len(values), np.nan)
        d[1:] = values[1:] - values[:-1]
        d[d < 0] = np.nan  # a counter that went down means a restart: no rate across it
        if server:
            d[restarted] = np.nan
        return d / divisor / dt_s

    derived: dict[str, np.ndarray] = {"dt_s": dt_s}
    derived["disk_write_mb_per_s"] = rate(arr["disk_write_sectors"], MB / SECTOR, server=False)
    derived["disk_read_mb_per_s"] = rate(arr["disk_read_sectors"], MB / SECTOR, server=False)
    derived["disk_write_iops"] = rate(arr["disk_writes"], server=False)
    derived["disk_read_iops"] = rate(arr["disk_reads"], server=False)
    derived["server_restarted"] = restarted
    derived["mysqld_cpu_pct"] = 100.0 * rate(arr["mysqld_cpu_user_s"] + arr["mysqld_cpu_sys_s"])
    derived["driver_cpu_pct"] = 100.0 * rate(arr["driver_cpu_user_s"] + arr["driver_cpu_sys_s"])
    for counter, (column, divisor) in RATE_COUNTERS.items():
        if counter in arr:
            derived[column] = rate(arr[counter], divisor)
        else:
            derived[column] = np.full(len(good), np.nan)
    out = pd.DataFrame(derived, index=good.index).reindex(df.index)
    return pd.concat([df, out], axis=1)


def window_edges(samples_df: pd.DataFrame) -> pd.DataFrame:
    """Per run (index: run id), its first and last good sample inside the measurement window:
    ``first_seq``, ``last_seq``, ``t_min``, ``t_max`` (runs without one are absent).

    What a counter's growth over the window needs (:func:`counters_at` of the two samples) and
    the time span it grew in.
    """
    inside = samples_df[samples_df["in_window"]]
    by_run = inside.sort_values(["run_id", "seq"], kind="stable").groupby("run_id")
    out = pd.DataFrame({"first_seq": by_run["seq"].first(), "last_seq": by_run["seq"].last(),
                        "t_min": by_run["t"].min(), "t_max": by_run["t"].max()})
    out.index.name = "run_id"
    return out


def window_growth(db: DB, samples_df: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """Per run (index: run id), :func:`window_edges` and how much each cumulative counter of
    ``names`` grew between the first and the last window sample (NaN where neither has it;
    0 where only one has it). Only those two samples per run are decompressed."""
    edges = window_edges(samples_df)
    out = edges.copy()
    for n in names:
        out[n] = np.nan
    if edges.empty or not names:
        return out
    ids = edges.index.to_numpy()
    at = counters_at(db, pd.DataFrame({
        "run_id": np.r_[ids, ids],
        "seq": np.r_[edges["first_seq"].to_numpy(), edges["last_seq"].to_numpy()]}), names)
    at = at.sort_values(["run_id", "seq"])
    for n in names:
        have = at[at[n].notna()].groupby("run_id")[n]
        out[n] = (have.last() - have.first()).reindex(out.index)
    return out


def window_transactions(intervals: pd.DataFrame, window: pd.DataFrame) -> pd.Series:
    """Per run of ``window`` (its ``t_min``, ``t_max``: the first and last window sample),
    the transactions of the workload's metric counted in the time those samples span.

    Sample ticks and driver intervals are not aligned, so the intervals whose end falls
    inside the span count. ``intervals``: :func:`intervals` (``run_id``,
    ``t``, ``primary_count``). A run whose span holds no interval counts 0.
    """
    w = window[["t_min", "t_max"]].rename(columns={"t_min": "min", "t_max": "max"})
    # The merge's own index is dropped: with no interval at all it would be named run_id.
    iv = intervals[["run_id", "t", "primary_count"]].merge(
        w, left_on="run_id", right_index=True).reset_index(drop=True)
    mine = iv[(iv["t"] > iv["min"]) & (iv["t"] <= iv["max"])]
    # Counts are whole numbers: the sum is exact in any order.
    return mine.groupby("run_id")["primary_count"].sum().astype(float).reindex(
        w.index, fill_value=0.0)


def counters_at(db: DB, points: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """Status counters of a few chosen samples (``points``: ``run_id``, ``seq``), one row each.

    Decompressing ``status_z`` is most of what reading samples with counters costs; a figure
    that needs a counter's growth over a window needs only its first and last sample, so only
    those are read and decompressed (the I/O breakdown: 2 samples per run instead of 180).
    """
    names = list(names)
    out = points[["run_id", "seq"]].astype(int).drop_duplicates().reset_index(drop=True)
    for n in names:
        out[n] = np.nan
    if out.empty:
        return out
    keys = list(zip(out["run_id"], out["seq"], strict=True))
    row = {k: i for i, k in enumerate(keys)}
    rx = counter_regex(names)
    values = {n: out[n].to_numpy(dtype=float).copy() for n in names}
    with session_scope(db) as s:
        for run_id, seq, blob in status_blobs(s, keys):
            if blob:
                i = row[(int(run_id), int(seq))]
                for m in rx.finditer(zlib.decompress(blob)):
                    values[m.group(1).decode()][i] = float(m.group(2))
    for n in names:
        out[n] = values[n]
    return out
