"""mysqld's memory over a run: RSS and its split in MiB, peaks, end of window, growth.

The sampler stores, per tick, mysqld's VmRSS and VmSize and the RSS split of
``/proc/PID/status`` (RssAnon, RssFile, RssShmem), the anonymous transparent huge pages of
``smaps_rollup`` (AnonHugePages, part of RssAnon) and the hugetlbfs pages it holds
(HugetlbPages: ``large_pages``, outside VmRSS). Here they become MiB series and per-run and
per-cell figures:

- **peak RSS**: the highest RSS sampled in the run (warmup included: a peak is a peak);
- **end-of-window RSS**: the last good sample inside the measurement window;
- **RSS growth**: Theil–Sen slope of RSS over the window samples, MiB per minute, with the
  Mann–Kendall p-value corrected for autocorrelation (:func:`analysis.statistics.shape.trend`);
  a run whose RSS grows steadily (p ≤ 0.05 and growth over the window ≥ 1 % of its median RSS)
  gets a warning — an allocator that keeps growing is what a memory study looks for.

VSZ (reserved address space) is kept apart: mysqld reserves terabytes it never touches, so it
is reported as its own column, never on an RSS axis.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.statistics.intervals import mean_ci
from analysis.statistics.shape import theil_sen_slope, trend
from store.models import RunStatus

MB = 1024.0 * 1024.0
#: Raw sample column (bytes) → MiB column of :func:`memory_series`.
MEMORY_COLUMNS: dict[str, str] = {
    "mysqld_rss_bytes": "rss_mb",
    "mysqld_rss_anon_bytes": "rss_anon_mb",
    "mysqld_rss_file_bytes": "rss_file_mb",
    "mysqld_rss_shmem_bytes": "rss_shmem_mb",
    "mysqld_anon_hugepages_bytes": "anon_huge_mb",
    "mysqld_hugetlb_bytes": "hugetlb_mb",
    "mysqld_vsz_bytes": "vsz_mb",
}
#: Growth over the window, as a share of the median RSS, below which no warning is given.
GROWTH_WARN_SHARE = 0.01
#: Trend p-value at or below which growth counts as steady.
GROWTH_WARN_P = 0.05
#: Fewest window samples a growth figure needs.
MIN_GROWTH_SAMPLES = 5


def memory_series(samples_df: pd.DataFrame) -> pd.DataFrame:
    """Memory columns in MiB (2^20 bytes), one row per good sample.

    Parameters
    ----------
    samples_df:
        From :func:`analysis.reading.series.samples` (or any frame with ``run_id``, ``t``,
        ``missed``, ``in_window`` and raw ``mysqld_*_bytes`` columns; absent ones become NaN).

    Returns
    -------
    DataFrame
        ``run_id, seq, t, in_window`` and the MiB columns of :data:`MEMORY_COLUMNS`; missed
        ticks are dropped (they hold no figure).
    """
    keep = ~samples_df["missed"].astype(bool) if "missed" in samples_df else np.ones(
        len(samples_df), dtype=bool)
    df = samples_df[keep]
    out = pd.DataFrame({
        "run_id": df["run_id"].to_numpy(),
        "seq": df["seq"].to_numpy() if "seq" in df else np.arange(len(df)),
        "t": df["t"].to_numpy(dtype=float),
        "in_window": df["in_window"].to_numpy(dtype=bool) if "in_window" in df
        else np.zeros(len(df), dtype=bool),
    })
    for raw, name in MEMORY_COLUMNS.items():
        values = pd.to_numeric(df[raw], errors="coerce") if raw in df else pd.Series(
            np.nan, index=df.index)
        out[name] = values.to_numpy(dtype=float) / MB
    return out


def _peak(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else math.nan


def run_memory(samples_df: pd.DataFrame) -> pd.DataFrame:
    """Per run: peak and end-of-window RSS, RSS growth, peak VSZ and huge pages, warnings.

    Returns
    -------
    DataFrame
        Indexed by nothing; columns ``run_id, n_window_samples, rss_peak_mb, rss_end_mb,
        rss_anon_end_mb, rss_median_mb, rss_growth_mb_per_min, rss_growth_p, vsz_peak_mb,
        anon_huge_peak_mb, hugetlb_peak_mb, memory_warning``.
    """
    mem = memory_series(samples_df)
    rows = []
    for run_id, g in mem.groupby("run_id", sort=False):
        g = g.sort_values("t", kind="stable")
        win = g[g["in_window"] & g["rss_mb"].notna()]
        rss = win["rss_mb"].to_numpy(dtype=float)
        t = win["t"].to_numpy(dtype=float)
        median = float(np.median(rss)) if rss.size else math.nan
        slope = p = math.nan
        if rss.size >= MIN_GROWTH_SAMPLES:
            slope = theil_sen_slope(rss, t) * 60.0
            _, p = trend(rss, t)
        warning = ""
        span_min = (t[-1] - t[0]) / 60.0 if rss.size else 0.0
        if (math.isfinite(slope) and slope > 0 and math.isfinite(p) and p <= GROWTH_WARN_P
                and median > 0 and slope * span_min >= GROWTH_WARN_SHARE * median):
            warning = (f"RSS grows steadily: {slope:+,.1f} MiB/min over the window "
                       f"(Theil–Sen, p={p:.3g})")
        rows.append({
            "run_id": int(run_id),
            "n_window_samples": int(rss.size),
            "rss_peak_mb": _peak(g["rss_mb"].to_numpy(dtype=float)),
            "rss_end_mb": float(rss[-1]) if rss.size else math.nan,
            "rss_anon_end_mb": float(win["rss_anon_mb"].iloc[-1]) if rss.size else math.nan,
            "rss_median_mb": median,
            "rss_growth_mb_per_min": slope,
            "rss_growth_p": p,
            "vsz_peak_mb": _peak(g["vsz_mb"].to_numpy(dtype=float)),
            "anon_huge_peak_mb": _peak(g["anon_huge_mb"].to_numpy(dtype=float)),
            "hugetlb_peak_mb": _peak(g["hugetlb_mb"].to_numpy(dtype=float)),
            "memory_warning": warning,
        })
    columns = ["run_id", "n_window_samples", "rss_peak_mb", "rss_end_mb", "rss_anon_end_mb",
               "rss_median_mb", "rss_growth_mb_per_min", "rss_growth_p", "vsz_peak_mb",
               "anon_huge_peak_mb", "hugetlb_peak_mb", "memory_warning"]
    return pd.DataFrame(rows, columns=columns)


def cell_memory(run_memory_df: pd.DataFrame, run_summary_df: pd.DataFrame) -> pd.DataFrame:
    """Per cell, over its done runs: peak and end-of-window RSS with 95 % CIs, growth, VSZ.

    Parameters
    ----------
    run_memory_df:
        From :func:`run_memory`.
    run_summary_df:
        From :func:`analysis.tables.summaries.run_summary` (gives each run's cell and status).

    Returns
    -------
    DataFrame
        One row per cell of ``run_summary_df`` (cells without memory data included, NaN):
        ``cell_id, cell_label, n_runs, rss_peak_mb, rss_peak_ci_low, rss_peak_ci_high,
        rss_end_mb, rss_end_ci_low, rss_end_ci_high, rss_growth_mb_per_min`` (median over
        runs), ``vsz_peak_mb, anon_huge_peak_mb, hugetlb_peak_mb`` (max over runs) and
        ``memory_warnings``. CIs: :func:`analysis.statistics.intervals.mean_ci`.
    """
    done = run_summary_df.loc[run_summary_df["status"] == RunStatus.DONE, ["run_id", "cell_id"]]
    merged = done.merge(run_memory_df, on="run_id", how="inner")
    rows = []
    cells = run_summary_df.drop_duplicates("cell_id")
    if "position" in cells:
        cells = cells.sort_values("position")
    for _, cell in cells.iterrows():
        g = merged[merged["cell_id"] == cell["cell_id"]]
        peak = mean_ci(g["rss_peak_mb"].to_numpy(dtype=float))
        end = mean_ci(g["rss_end_mb"].to_numpy(dtype=float))
        growth = g["rss_growth_mb_per_min"].to_numpy(dtype=float)
        growth = growth[np.isfinite(growth)]
        warned = [w for w in g["memory_warning"] if w]
        rows.append({
            "cell_id": int(cell["cell_id"]),
            "cell_label": cell.get("cell_label", str(cell["cell_id"])),
            "n_runs": int(g["rss_peak_mb"].notna().sum()),
            "rss_peak_mb": peak.estimate, "rss_peak_ci_low": peak.low,
            "rss_peak_ci_high": peak.high,
            "rss_end_mb": end.estimate, "rss_end_ci_low": end.low, "rss_end_ci_high": end.high,
            "rss_growth_mb_per_min": float(np.median(growth)) if growth.size else math.nan,
            "vsz_peak_mb": _peak(g["vsz_peak_mb"].to_numpy(dtype=float)),
            "anon_huge_peak_mb": _peak(g["anon_huge_peak_mb"].to_numpy(dtype=float)),
            "hugetlb_peak_mb": _peak(g["hugetlb_peak_mb"].to_numpy(dtype=float)),
            "memory_warnings": (f"{len(warned)} of {len(g)} runs: RSS grows steadily"
                                if warned else ""),
        })
    return pd.DataFrame(rows)


def load_memory(db: object, run_summary_df: pd.DataFrame,
                samples_df: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Memory figures of an experiment's done runs: ``(run_memory, cell_memory)``.

    Reads only the sampler's own columns (no ``SHOW GLOBAL STATUS`` decompression), or uses
    ``samples_df`` (those runs' samples, read once for the whole report).
    """
    from analysis.reading.series import samples

    ids = [int(r) for r in run_summary_df.loc[run_summary_df["status"] == RunStatus.DONE, "run_id"]]
    if samples_df is not None:
        smp = samples_df[samples_df["run_id"].isin(ids)]
    else:
        smp = samples(db, run_ids=ids, counters=None) if ids else pd.DataFrame(
            columns=["run_id", "seq", "t", "missed", "in_window"])
    per_run = run_memory(smp)
    return per_run, cell_memory(per_run, run_summary_df)


#: Knobs that change what mysqld holds in memory: when one varies, memory is part of the story.
MEMORY_KNOBS = ("buffer_pool_size", "buffer_pool_instances", "allocator", "large_pages",
                "transparent_hugepages")
#: Peak RSS differences smaller than this share of the lower cell's are not worth a figure.
MIN_MEMORY_SHARE = 0.02


def memory_matters(cell_memory_df: pd.DataFrame, varying: list[str]) -> tuple[bool, str]:
    """Whether memory figures say anything about this experiment, and why (one sentence).

    They do when a memory knob (:data:`MEMORY_KNOBS`) varies, or when the cells' peak RSS
    differ by more than the noise: the highest and the lowest cell differ by at least
    :data:`MIN_MEMORY_SHARE` and their 95 % intervals do not overlap (cells of one run have
    no interval; then the share alone decides). Otherwise every figure is the same flat line.
    """
    knobs = [k for k in varying if k in MEMORY_KNOBS]
    if knobs:
        return True, f"a memory knob varies ({', '.join(knobs)})"
    df = cell_memory_df[np.isfinite(cell_memory_df.get("rss_peak_mb", pd.Series(
        dtype=float)).astype(float))] if len(cell_memory_df) else cell_memory_df
    if len(df) < 2:
        return False, "fewer than two configurations have memory samples"
    hi = df.loc[df["rss_peak_mb"].idxmax()]
    lo = df.loc[df["rss_peak_mb"].idxmin()]
    gap = float(hi["rss_peak_mb"] - lo["rss_peak_mb"])
    spread = (f"peak RSS {lo['rss_peak_mb']:,.0f}–{hi['rss_peak_mb']:,.0f} MiB over the "
              "configurations")
    if gap < MIN_MEMORY_SHARE * float(lo["rss_peak_mb"]):
        return False, f"{spread}, within {100 * MIN_MEMORY_SHARE:g} %, and no memory knob varies"
    if math.isfinite(hi["rss_peak_ci_low"]) and math.isfinite(lo["rss_peak_ci_high"]) and \
            hi["rss_peak_ci_low"] <= lo["rss_peak_ci_high"]:
        return False, (f"{spread}, within the runs' noise (the 95 % intervals overlap), and "
                       "no memory knob varies")
    return True, f"{spread}: more than the runs' noise"
