"""The host as a block: comparing cells of an experiment whose runs were spread over hosts.

With ``placement: spread`` several hosts of one class share an experiment. "Identical" hosts
still differ (a disk a few percent faster, another firmware), so runs from different hosts
are never compared with each other directly. Each cell is compared with the baseline *within
each host* (ratio of window means, the log ratio's variance by the delta method), and the
per-host log ratios are pooled with inverse-variance weights — a stratified (fixed-effect)
test. Cochran's Q says when the hosts disagree about an effect, which the report must show
rather than average away.

A host is the run's ``host_id`` (stored in ``run_metadata.extra`` by the worker), else its
hostname.

The same machinery blocks on time: with ``order: {mode: blocks}`` block r is every cell's r-th
repetition, run back to back in a fresh random order (:func:`block_of`). Such a block holds
one run per cell, so there is no within-block variance to weight by: the per-block log ratios
are then averaged with a paired t interval across blocks (:func:`_paired`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from analysis.statistics.probability import chi2_sf, f_sf, norm_ppf, norm_sf, t_ppf, t_sf
from store.models import RunStatus

#: What the report says about the method when the experiment spans hosts.
METHOD_NOTE = (
    "Runs of this experiment ran on {n} hosts; the host is treated as a block: each cell is "
    "compared with the baseline within each host, and the per-host log ratios are pooled "
    "with inverse-variance weights (stratified fixed-effect test; Cochran's Q for hosts that "
    "disagree)."
)
#: Confidence level of the pooled ratio's interval.
LEVEL = 0.95


def host_of(runs_df: pd.DataFrame) -> pd.Series:
    """Each run's host: ``extra["host_id"]`` when the worker stored it, else ``hostname``."""
    hostname = runs_df["hostname"] if "hostname" in runs_df else pd.Series(
        [None] * len(runs_df), index=runs_df.index)
    if "extra" not in runs_df:
        return hostname.fillna("?").astype(str)
    ids = runs_df["extra"].map(lambda e: e.get("host_id") if isinstance(e, dict) else None)
    return ids.fillna(hostname).fillna("?").astype(str)


def block_of(runs_df: pd.DataFrame, *, by_host: bool, by_repetition: bool) -> pd.Series:
    """Each run's block: its host, its repetition (``order: blocks``), or both."""
    parts = []
    if by_host:
        parts.append(host_of(runs_df))
    if by_repetition:
        parts.append("block " + runs_df["repetition"].astype(int).astype(str))
    if not parts:
        return pd.Series("all", index=runs_df.index)
    out = parts[0]
    for p in parts[1:]:
        out = out + " / " + p
    return out


def _log_ratio(base: np.ndarray, cell: np.ndarray) -> tuple[float, float]:
    """Log ratio of means and its delta-method variance (NaN variance below 2 runs a side)."""
    mb, mc = float(np.mean(base)), float(np.mean(cell))
    if mb <= 0 or mc <= 0:
        return math.nan, math.nan
    if len(base) < 2 or len(cell) < 2:
        return math.log(mc / mb), math.nan
    var = (np.var(cell, ddof=1) / (len(cell) * mc**2)
           + np.var(base, ddof=1) / (len(base) * mb**2))
    return math.log(mc / mb), float(var)


#: The columns of :func:`blocked_comparison` (also when it has no row: a queue whose baseline
#: has not run yet, or a baseline alone).
BLOCKED_COLUMNS = ("cell_id", "n_hosts", "per_host", "ratio", "ratio_ci_low", "ratio_ci_high",
                   "p_value", "heterogeneity_p")


def blocked_comparison(run_summary_df: pd.DataFrame, value: str = "notpm",
                       blocks: pd.Series | None = None) -> pd.DataFrame:
    """Per cell: the baseline ratio within each host, pooled over hosts (stratified test).

    Parameters
    ----------
    run_summary_df:
        :func:`analysis.tables.summaries.run_summary` output (``cell_id``, ``is_baseline``,
        ``status``, the value column, ``hostname`` and/or ``extra``).
    value:
        The per-run figure compared (the window mean of the primary metric).
    blocks:
        Each run's block (:func:`block_of`); default: its host.

    Returns
    -------
    pandas.DataFrame
        One row per non-baseline cell: ``cell_id``, ``n_hosts`` (hosts where both the cell and
        the baseline have runs), ``ratio``, ``ratio_ci_low``, ``ratio_ci_high``, ``p_value``
        (pooled z test of log ratio 0), ``heterogeneity_p`` (Cochran's Q; NaN with one host),
        ``per_host`` ({host: ratio}). Hosts without a variance (one run a side) count in
        ``per_host`` but not in the pooled test.
    """
    ok = (run_summary_df["status"] == RunStatus.DONE) & run_summary_df[value].notna()
    if "excluded" in run_summary_df:  # a disturbed run the policy leaves out
        ok &= ~run_summary_df["excluded"].fillna(False).astype(bool)
    df = run_summary_df[ok]
    df = df.assign(_host=host_of(df) if blocks is None else blocks.reindex(df.index))
    base_ids = df.loc[df["is_baseline"].astype(bool), "cell_id"].unique()
    if len(base_ids) == 0:  # the baseline has no counted run (yet): nothing to compare with
        return pd.DataFrame(columns=list(BLOCKED_COLUMNS))
    base_id = base_ids[0]
    rows: list[dict[str, Any]] = []
    for cell_id in sorted(c for c in df["cell_id"].unique() if c != base_id):
        per_host: dict[str, float] = {}
        logs, variances, all_logs = [], [], []
        for host, group in df.groupby("_host"):
            base = group.loc[group["cell_id"] == base_id, value].to_numpy(dtype=float)
            cell = group.loc[group["cell_id"] == cell_id, value].to_numpy(dtype=float)
            if len(base) == 0 or len(cell) == 0:
                continue
            log_ratio, var = _log_ratio(base, cell)
            per_host[str(host)] = math.exp(log_ratio) if math.isfinite(log_ratio) else math.nan
            if math.isfinite(log_ratio):
                all_logs.append(log_ratio)
            if math.isfinite(var) and var > 0:
                logs.append(log_ratio)
                variances.append(var)
        pooled = (_pool(np.array(logs), np.array(variances)) if logs
                  else _paired(np.array(all_logs)))
        rows.append({"cell_id": cell_id, "n_hosts": len(per_host), "per_host": per_host,
                     **pooled})
    return pd.DataFrame(rows, columns=list(BLOCKED_COLUMNS))


def _pool(logs: np.ndarray, variances: np.ndarray) -> dict[str, float]:
    nan = {"ratio": math.nan, "ratio_ci_low": math.nan, "ratio_ci_high": math.nan,
           "p_value": math.nan, "heterogeneity_p": math.nan}
    if len(logs) == 0:
        return nan
    weights = 1.0 / variances
    mean = float(np.sum(weights * logs) / np.sum(weights))
    se = math.sqrt(1.0 / float(np.sum(weights)))
    z = norm_ppf(0.5 + LEVEL / 2)
    q = float(np.sum(weights * (logs - mean) ** 2))
    return {
        "ratio": math.exp(mean),
        "ratio_ci_low": math.exp(mean - z * se),
        "ratio_ci_high": math.exp(mean + z * se),
        "p_value": 2 * norm_sf(abs(mean) / se),
        "heterogeneity_p": chi2_sf(q, len(logs) - 1) if len(logs) > 1 else math.nan,
    }


def _paired(logs: np.ndarray) -> dict[str, float]:
    """Blocks of one run a side: the mean per-block log ratio, a t interval across blocks.

    The heterogeneity test needs within-block variances, which such blocks do not have (NaN).
    """
    nan = {"ratio": math.nan, "ratio_ci_low": math.nan, "ratio_ci_high": math.nan,
           "p_value": math.nan, "heterogeneity_p": math.nan}
    if len(logs) < 2:
        return nan
    mean = float(np.mean(logs))
    se = float(np.std(logs, ddof=1) / math.sqrt(len(logs)))
    if se == 0:
        return {**nan, "ratio": math.exp(mean)}
    t = t_ppf(0.5 + LEVEL / 2, len(logs) - 1)
    return {"ratio": math.exp(mean), "ratio_ci_low": math.exp(mean - t * se),
            "ratio_ci_high": math.exp(mean + t * se),
            "p_value": 2 * t_sf(abs(mean) / se, len(logs) - 1),
            "heterogeneity_p": math.nan}


def host_effect(run_summary_df: pd.DataFrame, cell_id: int, value: str = "notpm"
                ) -> dict[str, Any] | None:
    """Does one configuration's throughput differ between the hosts (sessions) that ran it?

    A study that spans sessions runs its A/A cells in several of them; a session that is
    faster as a whole shows here first. One-way ANOVA of the runs' log ``value`` by host:
    ``per_host`` {host: (runs, mean)}, ``f``, ``p`` and ``df`` (between, within). ``p`` is
    NaN when no host ran the cell twice (nothing to measure the within-host spread by).
    None when the cell's counted runs come from a single host.
    """
    ok = (run_summary_df["status"] == RunStatus.DONE) & run_summary_df[value].notna() \
        & (run_summary_df["cell_id"] == cell_id)
    if "excluded" in run_summary_df:
        ok &= ~run_summary_df["excluded"].fillna(False).astype(bool)
    df = run_summary_df[ok]
    if df.empty:
        return None
    hosts = host_of(df)
    groups = {str(h): df.loc[hosts == h, value].to_numpy(dtype=float) for h in sorted(set(hosts))}
    if len(groups) < 2:
        return None
    logs = {h: np.log(v) for h, v in groups.items()}
    n, k = sum(v.size for v in logs.values()), len(logs)
    grand = float(np.concatenate(list(logs.values())).mean())
    between = sum(v.size * (v.mean() - grand) ** 2 for v in logs.values())
    within = sum(float(((v - v.mean()) ** 2).sum()) for v in logs.values())
    f = p = math.nan
    if n > k and within > 0:
        f = (between / (k - 1)) / (within / (n - k))
        p = f_sf(f, k - 1, n - k)
    return {"per_host": {h: (int(v.size), float(v.mean())) for h, v in groups.items()},
            "f": f, "p": p, "df": (k - 1, n - k)}


def method_note(run_summary_df: pd.DataFrame) -> str | None:
    """The report's sentence about the host blocks, or None when one host ran everything."""
    n = host_of(run_summary_df).nunique()
    return METHOD_NOTE.format(n=n) if n > 1 else None
