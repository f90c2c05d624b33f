"""What bound a run: the storage limit, the CPU, redo pressure, free-page waits, row-lock waits
— or none of them clearly.

Every figure comes from the samples of the run's measurement window (computed once per run
with its digest: :func:`window_pressure`, :func:`analysis.writes.cost.window_usage` and the
digest's counter growth), and each has a threshold (``docs/statistics.md``, "What bound a
run"; the figures' meaning and units: ``docs/domain.md``):

================  ==========================================================  ==============
candidate         figure                                                      named when
================  ==========================================================  ==============
storage limit     share of the window's sampler intervals in which the         ≥ 50 %
                  throttle group's own counter ran at ≥ 90 % of a limit set
                  (:func:`core.storage_limits.limit_figures`); without those
                  counters, the run's storage proof: its mean rate over the    ≥ 85 %
                  measured time, as a share of the limit
CPU               the host's CPU busy share over the window (``/proc/stat``:   ≥ 90 %
                  busy / (busy + idle)); without it, mysqld's and the
                  driver's CPU as a share of the machine's CPUs
redo pressure     share of the window's samples whose checkpoint age is past  ≥ 50 %
                  InnoDB's asynchronous flush point (7/8 of the maximum)
free-page waits   ``Innodb_buffer_pool_wait_free`` growth per second           ≥ 1 /s
row-lock waits    connections waiting on row locks on average:                ≥ 25 % of the
                  Δ ``Innodb_row_lock_time`` (ms) / Δ wall time (ms)           connections
================  ==========================================================  ==============

The first candidate past its threshold in that order is what bound the run; the others past
theirs are named after it ("also"). The order puts the hard limits first: a throttled device
at its limit and a busy CPU cap everything above them, while redo pressure, free-page waits
and row-lock waits are InnoDB's own waits, which a capped device or CPU lengthens — they are
the bound only when neither cap is reached. None past its threshold: "none of them clearly",
with the figures. A cell's attribution is the one most of its counted runs share.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.reading.query import DB, session_scope, storage_evidence
from analysis.steadiness.disturbed import counted
from analysis.steadiness.transients import AGE_LIMIT_PCT
from core.storage_limits import AT_LIMIT, limit_figures
from store.models import RunStatus

if TYPE_CHECKING:
    from analysis.writes.digests import RunDigests
    from core.experiment.spec import ExperimentSpec

#: Status counters whose window growth the attribution reads (from the digest's window).
COUNTERS = ("Innodb_row_lock_time", "Innodb_buffer_pool_wait_free")
#: Run metadata key (``extra``) → the limit name of :func:`core.storage_limits.
#: limit_figures`.
LIMIT_KEYS = {"storage_write_bandwidth": "write_bandwidth", "storage_write_iops": "write_iops",
              "storage_read_bandwidth": "read_bandwidth", "storage_read_iops": "read_iops"}
#: Limit name → the storage proof's measured mean (``storage`` run event evidence).
PROOF_KEYS = {"write_bandwidth": "io_write_bps", "write_iops": "io_write_iops",
              "read_bandwidth": "io_read_bps", "read_iops": "io_read_iops"}
#: Sample columns of the throttle group's counters (a run that has none was not throttled,
#: or was recorded before the sampler read them).
GROUP_COLUMNS = ("group_read_ios", "group_write_ios", "group_read_bytes", "group_write_bytes")

#: Share of the window's intervals at ≥ :data:`core.storage_limits.AT_LIMIT` of a limit.
STORAGE_MIN_SHARE = 0.50
#: Without the group's counters per sample: the storage proof's mean, share of the limit.
STORAGE_PROOF_MIN_SHARE = 0.85
#: The host's CPU busy share.
CPU_MIN_BUSY = 0.90
#: Share of the window's samples with the checkpoint age past the async flush point.
REDO_MIN_SHARE = 0.50
#: ``Innodb_buffer_pool_wait_free`` per second.
FREE_PAGE_MIN_PER_S = 1.0
#: Connections waiting on row locks on average, share of the driver's connections.
ROW_LOCK_MIN_SHARE = 0.25

#: The candidates in the order they are judged: kind → what a table calls it.
KINDS = {
    "storage-bytes": "storage byte limit",
    "storage-operations": "storage operation limit",
    "cpu": "CPU",
    "redo": "redo pressure",
    "free-pages": "free-page waits",
    "row-locks": "row-lock waits",
}
NONE = "none"
NONE_TEXT = "none of them clearly"
#: Columns of :func:`per_run` besides ``bound``, ``bound_also`` and ``bound_text``.
FIGURES = ("storage_limit", "storage_limit_value", "storage_at_limit_share",
           "storage_mean_share", "storage_intervals", "storage_source", "cpu_busy_share",
           "cpu_source", "redo_past_async_share", "redo_samples", "wait_free_per_s",
           "row_lock_waiting", "connections")


# ---------------------------------------------------------------------------- digest figures


def run_limits(runs_df: pd.DataFrame) -> dict[int, dict[str, float]]:
    """Per run, the storage limits set (limit name → value; empty when unthrottled), from
    the run metadata's ``extra`` (``runs_df``: :func:`analysis.reading.query.runs`)."""
    out: dict[int, dict[str, float]] = {}
    for run_id, extra in zip(runs_df["run_id"], runs_df["extra"], strict=True):
        known = extra if isinstance(extra, dict) else {}
        out[int(run_id)] = {name: float(known[key]) for key, name in LIMIT_KEYS.items()
                            if isinstance(known.get(key), (int, float)) and known[key] > 0}
    return out


def window_pressure(samples_df: pd.DataFrame, limits: Mapping[int, Mapping[str, float]]
                    ) -> dict[int, dict[str, Any]]:
    """Per run with window samples: each storage limit's :func:`core.storage_limits.
    limit_figures` over the window's samples (``limits``: empty without the group's
    counters), and how many window samples have a checkpoint age, and how many of them are
    past the asynchronous flush point (``age_samples``, ``age_past_async``).

    ``samples_df``: :func:`analysis.reading.series.samples` (counters are not needed).
    """
    window = samples_df[samples_df["in_window"]].sort_values(["run_id", "seq"], kind="stable")
    out: dict[int, dict[str, Any]] = {}
    for run_id, g in window.groupby("run_id", sort=True):
        run_limits = limits.get(int(run_id)) or {}
        figures: dict[str, dict[str, float]] = {}
        if run_limits and g[list(GROUP_COLUMNS)].notna().any().any():
            records = [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                        for k, v in row.items()}
                       for row in g[["ts", "missed", *GROUP_COLUMNS]].to_dict("records")]
            figures = limit_figures(records, run_limits)
        age = g["checkpoint_age_pct"].to_numpy(dtype=float)
        known = age[np.isfinite(age)]
        out[int(run_id)] = {
            "limits": figures,
            "age_samples": int(known.size),
            "age_past_async": int((known >= AGE_LIMIT_PCT).sum()),
        }
    return out


# ---------------------------------------------------------------------------- per run


def _ratio(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan


def _storage(pressure: Mapping[str, Any] | None, limits: Mapping[str, float],
             proof: Mapping[str, Any]) -> dict[str, Any]:
    """The limit closest to binding: from the group's counters per interval, else from the
    storage proof's mean."""
    found = (pressure or {}).get("limits") or {}
    if found:
        name = max(found, key=lambda n: (found[n]["intervals_at_limit"] / found[n]["intervals"],
                                         found[n]["share"]))
        f = found[name]
        return {"storage_limit": name, "storage_source": "group counters",
                "storage_at_limit_share": f["intervals_at_limit"] / f["intervals"],
                "storage_mean_share": f["share"], "storage_intervals": f["intervals"],
                "storage_limit_value": f["limit"]}
    shares = {name: _ratio(float(proof[PROOF_KEYS[name]]), limit)
              for name, limit in limits.items()
              if isinstance(proof.get(PROOF_KEYS[name]), (int, float))}
    shares = {n: s for n, s in shares.items() if math.isfinite(s)}
    if not shares:
        return {"storage_limit": None, "storage_source": None}
    name = max(shares, key=lambda n: shares[n])
    return {"storage_limit": name, "storage_source": "storage proof",
            "storage_at_limit_share": math.nan, "storage_mean_share": shares[name],
            "storage_intervals": math.nan, "storage_limit_value": limits[name]}


def _cpu(usage: Mapping[str, float], window_s: float, cpu_count: float) -> dict[str, Any]:
    busy, idle = usage.get("host_cpu_busy_s", math.nan), usage.get("host_cpu_idle_s", math.nan)
    share = _ratio(busy, busy + idle)
    if math.isfinite(share):
        return {"cpu_busy_share": share, "cpu_source": "host"}
    # Older samples have no host CPU: mysqld's and the driver's, of the machine's CPUs. A
    # driver gone before the window's last sample leaves mysqld's alone: a lower bound, and
    # named so.
    client = usage.get("client_cpu_s", math.nan)
    ours = usage.get("mysqld_cpu_s", math.nan) + (client if math.isfinite(client) else 0.0)
    share = _ratio(ours, window_s * cpu_count)
    source = "mysqld and driver" if math.isfinite(client) else "mysqld"
    return {"cpu_busy_share": share, "cpu_source": source if math.isfinite(share) else None}


def figures(window: Mapping[str, float], usage: Mapping[str, float],
            pressure: Mapping[str, Any] | None, *, limits: Mapping[str, float],
            proof: Mapping[str, Any], connections: float, cpu_count: float) -> dict[str, Any]:
    """One run's figures (:data:`FIGURES`) from its digest (``window``: counter growth and
    edges; ``usage``: :func:`analysis.writes.cost.window_usage`; ``pressure``:
    :func:`window_pressure`), its storage limits and proof, connections and CPUs."""
    window_s = float(window.get("t_max", math.nan)) - float(window.get("t_min", math.nan))
    age_n = (pressure or {}).get("age_samples", 0)
    out: dict[str, Any] = {
        **_storage(pressure, limits, proof),
        **_cpu(usage, window_s, cpu_count),
        "redo_past_async_share": (pressure["age_past_async"] / age_n) if age_n else math.nan,
        "redo_samples": age_n,
        "wait_free_per_s": _ratio(float(window.get("Innodb_buffer_pool_wait_free", math.nan)),
                                  window_s),
        # Innodb_row_lock_time is milliseconds spent waiting, summed over the waits that ended:
        # per millisecond of wall time, the connections waiting on average.
        "row_lock_waiting": _ratio(float(window.get("Innodb_row_lock_time", math.nan)),
                                   window_s * 1000.0),
        "connections": connections,
    }
    return out


def _past(fig: Mapping[str, Any]) -> list[str]:
    """The candidates past their threshold, in the order they are judged."""
    out = []
    limit = fig.get("storage_limit")
    if limit:
        kind = "storage-bytes" if limit.endswith("bandwidth") else "storage-operations"
        if fig["storage_source"] == "group counters":
            if fig["storage_at_limit_share"] >= STORAGE_MIN_SHARE:
                out.append(kind)
        elif fig["storage_mean_share"] >= STORAGE_PROOF_MIN_SHARE:
            out.append(kind)
    if fig.get("cpu_busy_share", math.nan) >= CPU_MIN_BUSY:
        out.append("cpu")
    if fig.get("redo_past_async_share", math.nan) >= REDO_MIN_SHARE:
        out.append("redo")
    if fig.get("wait_free_per_s", math.nan) >= FREE_PAGE_MIN_PER_S:
        out.append("free-pages")
    if _ratio(fig.get("row_lock_waiting", math.nan),
              fig.get("connections", math.nan)) >= ROW_LOCK_MIN_SHARE:
        out.append("row-locks")
    return out


def judge(fig: Mapping[str, Any]) -> tuple[str, list[str]]:
    """What bound the run (a :data:`KINDS` key, or :data:`NONE`) and the other candidates
    past their thresholds."""
    past = _past(fig)
    return (past[0], past[1:]) if past else (NONE, [])


def _pct(value: float) -> str:
    return f"{100 * value:.0f} %"


def _limit_text(name: str, value: float) -> str:
    what = name.replace("_", " ").replace("iops", "IOPS")
    if name.endswith("bandwidth"):
        return f"{what} limit of {value / 2**20:,.1f} MiB/s"
    return f"{what} limit of {value:,.0f}"


def describe(kind: str, fig: Mapping[str, Any]) -> str:
    """One candidate's figures in words (``kind``: a :data:`KINDS` key)."""
    if kind.startswith("storage"):
        limit = _limit_text(fig["storage_limit"], fig.get("storage_limit_value", math.nan))
        if fig["storage_source"] == "group counters":
            return (f"at ≥ {100 * AT_LIMIT:.0f} % of its {limit} in "
                    f"{_pct(fig['storage_at_limit_share'])} of the window's sampler intervals "
                    f"(mean {_pct(fig['storage_mean_share'])})")
        return (f"{_pct(fig['storage_mean_share'])} of its {limit} on average over the run"
                " (storage proof)")
    if kind == "cpu":
        if fig.get("cpu_source") == "host":
            return f"host CPU {_pct(fig['cpu_busy_share'])} busy"
        who = ("mysqld (the driver's CPU not known)" if fig.get("cpu_source") == "mysqld"
               else "mysqld and driver")
        return f"{who} {_pct(fig['cpu_busy_share'])} of the machine's CPUs"
    if kind == "redo":
        return (f"checkpoint age past 7/8 of its maximum in "
                f"{_pct(fig['redo_past_async_share'])} of the window's samples")
    if kind == "free-pages":
        return f"{fig['wait_free_per_s']:,.1f} free-page waits/s"
    connections = fig.get("connections", math.nan)
    of = f" of {connections:.0f}" if math.isfinite(connections) else ""
    return f"{fig['row_lock_waiting']:.1f}{of} connections waiting on row locks on average"


def sentence(primary: str, also: Sequence[str], fig: Mapping[str, Any]) -> str:
    """``storage byte limit — at ≥ 90 % of its write bandwidth limit of 10.0 MiB/s in 97 % of
    the window's intervals (mean 99 %); also row-lock waits (13.6 of 32 connections …)``;
    without a candidate past its threshold, :data:`NONE_TEXT` with the figures known."""
    if primary == NONE:
        known = [describe(k, fig) for k in _known(fig)]
        return NONE_TEXT + (f" ({'; '.join(known)})" if known else "")
    text = f"{KINDS[primary]} — {describe(primary, fig)}"
    if also:
        text += "; also " + ", ".join(f"{KINDS[k]} ({describe(k, fig)})" for k in also)
    return text


def _known(fig: Mapping[str, Any]) -> list[str]:
    """The candidates whose figure is known (for the "none of them clearly" sentence)."""
    def finite(key: str) -> bool:
        value = fig.get(key, math.nan)
        return isinstance(value, (int, float)) and math.isfinite(value)

    kinds = []
    limit = fig.get("storage_limit")
    if limit:
        kinds.append("storage-bytes" if limit.endswith("bandwidth") else "storage-operations")
    kinds += [k for k, key in (("cpu", "cpu_busy_share"), ("redo", "redo_past_async_share"),
                               ("free-pages", "wait_free_per_s"),
                               ("row-locks", "row_lock_waiting")) if finite(key)]
    return kinds


def storage_proofs(db: DB, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Each run's storage proof (the ``storage`` run event's evidence), where it has one."""
    with session_scope(db) as s:
        rows = storage_evidence(s, [int(r) for r in run_ids])
    out: dict[int, dict[str, Any]] = {}
    for run_id, evidence in rows:
        try:
            parsed = json.loads(evidence) if isinstance(evidence, str) else {}
        except ValueError:
            continue
        if isinstance(parsed, dict):
            out[int(run_id)] = parsed
    return out


def connections_of(run_summary: pd.DataFrame, spec: ExperimentSpec) -> pd.Series:
    """Per run (index: run id), the driver's connections: the cell's ``connections`` knob
    where it sets one, else the experiment's ``workload.connections``."""
    default = float(spec.workload.connections or math.nan)
    values = pd.Series(default, index=run_summary["run_id"].astype(int).to_numpy(), dtype=float)
    if "connections" in run_summary:
        own = pd.to_numeric(run_summary["connections"], errors="coerce").to_numpy(dtype=float)
        values = values.where(~np.isfinite(own), own)
    return values


def per_run(db: DB, run_summary: pd.DataFrame, digests: RunDigests,
            spec: ExperimentSpec) -> pd.DataFrame:
    """Per done run of ``run_summary`` (index: run id): ``bound`` (a :data:`KINDS` key or
    :data:`NONE`), ``bound_also`` (the others past their thresholds, ``, ``-joined),
    ``bound_text`` (:func:`sentence`) and the :data:`FIGURES`. Runs without window samples
    are absent."""
    done = run_summary[run_summary["status"] == RunStatus.DONE]
    ids = [int(r) for r in done["run_id"] if int(r) in digests.window.index]
    if not ids:
        return pd.DataFrame(columns=["bound", "bound_also", "bound_text", *FIGURES],
                            index=pd.Index([], name="run_id"))
    limits = run_limits(done)
    proofs = storage_proofs(db, ids)
    connections = connections_of(done, spec)
    cpus = pd.to_numeric(done.set_index("run_id")["cpu_count"], errors="coerce")
    rows = []
    for r in ids:
        fig = figures(digests.window.loc[r].to_dict(),
                      digests.usage.loc[r].to_dict() if r in digests.usage.index else {},
                      digests.pressure.get(r), limits=limits.get(r, {}),
                      proof=proofs.get(r, {}), connections=float(connections.get(r)),
                      cpu_count=float(cpus.get(r, math.nan)))
        primary, also = judge(fig)
        rows.append({"run_id": r, "bound": primary, "bound_also": ", ".join(also),
                     "bound_text": sentence(primary, also, fig), **fig})
    return pd.DataFrame(rows).set_index("run_id").reindex(
        columns=["bound", "bound_also", "bound_text", *FIGURES])


def per_cell(runs: pd.DataFrame, run_summary: pd.DataFrame) -> pd.DataFrame:
    """Per cell (index: cell id, in the experiment's row order): the attribution most of its
    counted runs share (``bound``; a tie goes to the candidate judged first), ``bound_runs``
    (``4 of 4``) and ``bound_text``: the sentence of the cell's median figures."""
    ids = run_summary.loc[counted(run_summary), ["run_id", "cell_id", "position"]]
    joined = ids.join(runs, on="run_id", how="inner")
    order = list(KINDS) + [NONE]
    rows = []
    for cell_id, g in joined.groupby("cell_id", sort=False):
        votes = g["bound"].value_counts()
        top = max(votes.index, key=lambda k: (votes[k], -order.index(k)))
        fig = _median_figures(g)
        also = [k for k in order[:-1] if k != top and _share_past(g, k) >= 0.5]
        text = sentence(top, also, fig)
        rows.append({"cell_id": cell_id, "position": g["position"].iloc[0], "bound": top,
                     "bound_runs": f"{int(votes[top])} of {len(g)}", "bound_text": text})
    if not rows:
        return pd.DataFrame(columns=["bound", "bound_runs", "bound_text"],
                            index=pd.Index([], name="cell_id"))
    return pd.DataFrame(rows).sort_values("position").set_index("cell_id").drop(
        columns="position")


def _share_past(g: pd.DataFrame, kind: str) -> float:
    """The share of these runs in which ``kind`` is past its threshold (bound or also)."""
    hit = [(b == kind) or kind in str(a).split(", ")
           for b, a in zip(g["bound"], g["bound_also"], strict=True)]
    return sum(hit) / len(hit) if hit else 0.0


def _median_figures(g: pd.DataFrame) -> dict[str, Any]:
    """The runs' figures, numbers as their median and names as the most common."""
    fig: dict[str, Any] = {}
    for column in FIGURES:
        if column not in g:
            continue
        values = g[column]
        numeric = pd.to_numeric(values, errors="coerce")
        if numeric.notna().any():
            fig[column] = float(numeric.median())
        elif values.notna().any():
            fig[column] = values.dropna().mode().iloc[0]
        else:
            fig[column] = None if values.dtype == object else math.nan
    return fig


#: What a narrow table calls each attribution.
SHORT = {"storage-bytes": "byte limit", "storage-operations": "operation limit", "cpu": "CPU",
         "redo": "redo", "free-pages": "free pages", "row-locks": "row locks",
         NONE: "none clearly"}


def short(kind: str) -> str:
    """What a narrow table calls an attribution (:data:`SHORT`)."""
    return SHORT.get(kind, kind)


def for_runs(db: DB, digests: RunDigests, run_summary: pd.DataFrame,
             spec: ExperimentSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`per_run` and :func:`per_cell` of ``run_summary``'s runs, from their digests."""
    runs = per_run(db, run_summary, digests, spec)
    return runs, per_cell(runs, run_summary)
