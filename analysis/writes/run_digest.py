"""Per-run figures drawn from every sample of a done run, computed once per run.

A report needs, for every done run, a few figures that only its whole sample series gives:
its memory row (:func:`analysis.reading.memory.run_memory`), the highest checkpoint age of its
window (:func:`analysis.steadiness.claims.checkpoint_age_peaks`), its first and last window sample
with the growth of the I/O breakdown's counters between them
(:func:`analysis.reading.series.window_growth`) and the trends of its checkpoint age and dirty share
across the window (:func:`analysis.steadiness.transients.run_figures`: whether it reached steady
state), and what it used and how close it ran to each limit
(:func:`analysis.writes.cost.window_usage`, :func:`analysis.writes.bound.window_pressure`: what each
transaction cost and what bound the run). Reading and deriving every sample of a 500-run experiment
costs ≈ 3 s of the report (``docs/benchmarks.md``), while a done run's samples never change. So the
figures are kept in the analysis cache (:mod:`analysis.reading.figure_cache`) under

    sha256(code fingerprint, the run's sample fingerprint, its window, its limits)

where the *sample fingerprint* is one aggregate query over the run's samples — how many,
missed ticks, first and last time stamps, the sum of every column the figures read and the
total size of its compressed ``SHOW GLOBAL STATUS`` snapshots — the *window* is the run's
measurement start and window bounds, and the *limits* are the variables the maximum
checkpoint age and ``max_dirty_pages_pct`` are computed from and the storage limits of its
run metadata. The aggregate is not the samples
themselves: two runs whose samples differ but agree on count, times and every column's sum
would share a key; for recorded series of real counters that does not happen by accident.
Nothing else about the database enters the key, so it serves SQLite and PostgreSQL stores,
read-only committed databases and opened bundles alike.

The aggregate itself reads every sample row; on a SQLite file it is kept too, under the file's
stamp (:mod:`store.file_stamp`: its identity, size, modification time and SQLite's change
counters), so a report of an unchanged file skips that read. That one cache entry is keyed on
the file rather than on what was read: a file rewritten with its size, modification time and
headers all restored would be taken as unchanged.

The figures are the same whether stored or computed (``tests/analysis/test_run_digest.py``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.orm import Session

from analysis.reading.figure_cache import get_or_compute, source_fingerprint
from analysis.reading.memory import MEMORY_COLUMNS, run_memory
from analysis.reading.query import (
    DB,
    run_context,
    run_variables,
    runs,
    sample_aggregates,
    session_scope,
    window_columns,
)
from analysis.reading.series import samples, window_growth
from analysis.steadiness.claims import checkpoint_age_peaks
from analysis.steadiness.transients import run_figures as transient_figures
from analysis.writes.bound import COUNTERS as BOUND_COUNTERS
from analysis.writes.bound import GROUP_COLUMNS, run_limits, window_pressure
from analysis.writes.cost import COUNTERS as COST_COUNTERS
from analysis.writes.cost import USAGE, window_usage
from analysis.writes.digests import RunDigests
from analysis.writes.ledger import COUNTERS as LEDGER_COUNTERS
from analysis.writes.ledger import STATE_COLUMNS as LEDGER_STATE
from analysis.writes.ledger import window_state
from store.file_stamp import file_stamp

#: Modules whose source decides the figures (their text is part of every key).
SOURCES = (
    "analysis/writes/run_digest.py",
    "analysis/writes/digests.py",
    "analysis/steadiness/claims.py",
    "analysis/steadiness/disturbed.py",
    "analysis/reading/memory.py",
    "analysis/reading/one_reading.py",
    "analysis/reading/query.py",
    "analysis/reading/series.py",
    "analysis/reading/window_cycles.py",
    "analysis/statistics/cycles.py",
    "analysis/statistics/power.py",
    "analysis/statistics/hypothesis_tests.py",
    "analysis/statistics/blocked.py",
    "analysis/statistics/verdicts.py",
    "analysis/statistics/_series.py",
    "analysis/statistics/checkpoint.py",
    "analysis/statistics/intervals.py",
    "analysis/statistics/probability.py",
    "analysis/statistics/shape.py",
    "analysis/statistics/rates.py",
    "analysis/steadiness/transients.py",
    "analysis/writes/cost.py",
    "analysis/writes/bound.py",
    "analysis/writes/ledger.py",
    "core/storage_limits.py",
    "core/flavors.py",
)
#: The cache table of these figures.
TABLE = "run_digest"
#: The cache table of each run's sample fingerprint, keyed by the SQLite file's stamp and the
#: run id (:func:`_sample_fingerprints`).
PRINTS_TABLE = "run_sample_prints"
#: Sample columns whose per-run sums enter the fingerprint: every one the figures read.
_SUMMED = ("lsn", "checkpoint_lsn", "pages_dirty", "pages_data", "pages_free",
           *MEMORY_COLUMNS,
           *dict.fromkeys(c for cols in USAGE.values() for c in cols),
           *GROUP_COLUMNS)
#: Counters whose growth over the window is kept (those the I/O breakdown divides:
#: ``analysis.tables.io_breakdown.COUNTERS``, and the cost's and the attribution's:
#: ``analysis.writes.cost.COUNTERS``, ``analysis.writes.bound.COUNTERS``, the write-path ledger's
#: ``analysis.writes.ledger.COUNTERS``; a test checks they are all here).
WINDOW_COUNTERS = tuple(dict.fromkeys((
    "Innodb_dblwr_pages_written", "Innodb_dblwr_writes", "Innodb_log_writes",
    "Innodb_os_log_written", "Innodb_pages_written", *COST_COUNTERS, *BOUND_COUNTERS,
    *LEDGER_COUNTERS)))
#: Columns of :attr:`RunDigests.window` (those of :func:`analysis.reading.series.window_growth`, and
#: the ledger's window figures of the samples, :func:`analysis.writes.ledger.window_state`).
WINDOW_COLUMNS = ("first_seq", "last_seq", "t_min", "t_max", *WINDOW_COUNTERS, *LEDGER_STATE)
#: Where a Session keeps the figures it has read (``Session.info``).
_SESSION_MEMO = "flushbench.run_digests"


@functools.cache
def code_fingerprint() -> str:
    """A hash of the figures' source code and the numeric libraries' versions."""
    import scipy

    return source_fingerprint(
        SOURCES, f"numpy {np.__version__} scipy {scipy.__version__} pandas {pd.__version__}")


def run_digests(db: DB, run_ids: Sequence[int]) -> RunDigests:
    """The digest figures of these done runs, from the cache where known, else from their
    samples (read once, for the runs not known, and stored).

    Equal to :func:`from_samples` of the runs' samples (``counters=None``). Given a Session,
    the figures are also kept for the session's life: a report reads them in the run summary
    (the ``not-steady`` warnings) and again for its tables, and the second read then costs
    nothing (a done run's samples do not change).
    """
    ids = [int(r) for r in run_ids]
    if not ids:
        return _assemble({})
    with session_scope(db) as s:
        known: dict[int, dict[str, Any]] = s.info.setdefault(_SESSION_MEMO, {})
        todo = [r for r in dict.fromkeys(ids) if r not in known]
        if todo:
            keys = run_keys(s, todo)

            def compute(positions: list[int]) -> list[str]:
                missing = [todo[i] for i in positions]
                per_run = _figures(s, samples(s, run_ids=missing, counters=None), missing)
                return [json.dumps(per_run[r]) for r in missing]

            texts = get_or_compute(TABLE, [keys[r] for r in todo], compute, _decode)
            known.update(zip(todo, texts, strict=True))
        return _assemble({r: known[r] for r in ids})


def from_samples(db: DB, samples_df: pd.DataFrame, run_ids: Sequence[int]) -> RunDigests:
    """The digest figures computed from samples already read (no cache; the window's counters
    are read from ``db``)."""
    ids = [int(r) for r in run_ids]
    per_run = _figures(db, samples_df[samples_df["run_id"].isin(ids)], ids)
    return _assemble({r: _decode(json.dumps(per_run[r])) for r in ids})


def run_keys(db: DB, run_ids: Sequence[int]) -> dict[int, str]:
    """Each run's cache key (see the module docstring)."""
    ids = [int(r) for r in run_ids]
    prints = _sample_fingerprints(db, ids)
    rdf, windows = run_context(db, None, ids, only_done=False)
    edges = ("started_at", "measure_started_at", "warmup", "w_start", "w_end")
    ctx = window_columns(rdf, windows)[list(edges)].to_dict("index")
    # The variables the limits are computed from, as stored: the same inputs give the same
    # limits (series.py and checkpoint.py are in the code fingerprint), and hashing them is
    # ten times cheaper than computing the limits of 500 runs.
    variables = run_variables(db, ids).to_dict("index")
    limits = run_limits(rdf)
    out = {}
    for r in ids:
        h = hashlib.sha256(code_fingerprint().encode())
        w, var = ctx.get(r), variables.get(r)
        h.update(repr((
            prints.get(r),
            None if w is None else [str(w[c]) for c in edges],
            None if var is None else sorted((k, v) for k, v in var.items()
                                            if isinstance(v, str)),
            sorted(limits.get(r, {}).items()),
        )).encode())
        out[r] = h.hexdigest()
    return out


def _sample_fingerprints(db: DB, ids: list[int]) -> dict[int, tuple[str, ...]]:
    """One aggregate row per run that has samples: count, missed ticks, first/last times,
    column sums and the status snapshots' total size.

    The aggregate reads every sample row of these runs (≈ 0.3 s for 500 runs). On a SQLite
    file it is kept in the analysis cache under the file's stamp (:mod:`store.file_stamp`):
    the file unchanged since the last analysis, the aggregate is read from there; any commit
    to the file is a new stamp and the aggregate is read again.
    """
    with session_scope(db) as s:
        stamp = file_stamp(s)  # taken before the read: a commit during it is a new stamp
        if stamp is None:
            return _aggregate(s, ids)

        def compute(positions: list[int]) -> list[str]:
            found = _aggregate(s, [ids[i] for i in positions])
            return [json.dumps(found.get(ids[i])) for i in positions]

        # The code's fingerprint too: another set of summed columns is another aggregate.
        keys = [hashlib.sha256(f"{code_fingerprint()} {stamp} {r}".encode()).hexdigest()
                for r in ids]
        prints = get_or_compute(PRINTS_TABLE, keys, compute, _decode_print)
    return {r: p for r, p in zip(ids, prints, strict=True) if p is not None}


def _aggregate(s: Session, ids: list[int]) -> dict[int, tuple[str, ...]]:
    """:func:`analysis.reading.query.sample_aggregates` of these runs, each figure as text."""
    # The window's counters come from the status blobs: their total size stands in.
    rows = sample_aggregates(s, ids, _SUMMED)
    # str() of every figure: PostgreSQL's sums are Decimals, SQLite's ints.
    return {int(row[0]): tuple(str(v) for v in row[1:]) for row in rows}


def _decode_print(text: str) -> tuple[str, ...] | None:
    """One run's sample fingerprint back from JSON (None: the run has no samples)."""
    raw = json.loads(text)
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise ValueError(f"not a sample fingerprint: {text[:60]}")
    return tuple(raw)


def _figures(db: DB, samples_df: pd.DataFrame, ids: list[int]) -> dict[int, dict[str, Any]]:
    """Each run's figures as plain JSON-able values."""
    memory = run_memory(samples_df).set_index("run_id") if len(samples_df) else pd.DataFrame()
    peaks = checkpoint_age_peaks(samples_df) if len(samples_df) else pd.Series(dtype=float)
    window = window_growth(db, samples_df, WINDOW_COUNTERS) if len(samples_df) else \
        pd.DataFrame()
    if len(window):
        window = window.join(window_state(samples_df))
    trends = transient_figures(samples_df) if len(samples_df) else {}
    usage = window_usage(samples_df) if len(samples_df) else pd.DataFrame()
    pressure = window_pressure(samples_df, run_limits(runs(db, run_ids=ids))) \
        if len(samples_df) else {}
    out: dict[int, dict[str, Any]] = {}
    for r in ids:
        out[r] = {
            "memory": ({k: _plain(v) for k, v in memory.loc[r].items()}
                       if r in memory.index else None),
            "checkpoint_age_peak_pct": float(peaks[r]) if r in peaks.index else math.nan,
            "window": ({c: _plain(window.loc[r, c]) for c in WINDOW_COLUMNS}
                       if r in window.index else None),
            "transients": trends.get(r),
            "usage": ({c: _plain(usage.loc[r, c]) for c in USAGE}
                      if r in usage.index else None),
            "pressure": pressure.get(r),
        }
    return out


def _plain(value: Any) -> Any:
    """numpy scalars as Python's (JSON writes and reads NaN)."""
    return value.item() if isinstance(value, np.generic) else value


def _decode(text: str) -> dict[str, Any]:
    """One run's figures back from JSON; ValueError when they do not fit."""
    raw = json.loads(text)
    if set(raw) != {"memory", "checkpoint_age_peak_pct", "window", "transients", "usage",
                    "pressure"}:
        raise ValueError(f"unexpected fields {sorted(raw)}")
    return raw


def _assemble(per_run: dict[int, dict[str, Any]]) -> RunDigests:
    """The consumers' frames from each run's figures (in the order given)."""
    memory_rows = [{"run_id": r, **d["memory"]} for r, d in per_run.items() if d["memory"]]
    memory = pd.DataFrame(memory_rows, columns=run_memory(_EMPTY_SAMPLES).columns)
    peaks = pd.Series({r: d["checkpoint_age_peak_pct"] for r, d in per_run.items()
                       if not math.isnan(d["checkpoint_age_peak_pct"])}, dtype=float)
    peaks.index.name = "run_id"
    window = pd.DataFrame([{**d["window"], "run_id": r} for r, d in per_run.items()
                           if d["window"]], columns=["run_id", *WINDOW_COLUMNS])
    usage = pd.DataFrame([{**d["usage"], "run_id": r} for r, d in per_run.items()
                          if d["usage"]], columns=["run_id", *USAGE], dtype=float)
    usage["run_id"] = usage["run_id"].astype(int)
    return RunDigests(memory=memory, checkpoint_age_peaks=peaks,
                      window=window.set_index("run_id"),
                      transients={r: d["transients"] for r, d in per_run.items()
                                  if d["transients"]},
                      usage=usage.set_index("run_id"),
                      pressure={r: d["pressure"] for r, d in per_run.items() if d["pressure"]})


#: A sample frame with no rows (for the empty memory frame's columns).
_EMPTY_SAMPLES = pd.DataFrame({"run_id": pd.Series(dtype=int), "t": pd.Series(dtype=float),
                               "missed": pd.Series(dtype=bool),
                               "in_window": pd.Series(dtype=bool)})
