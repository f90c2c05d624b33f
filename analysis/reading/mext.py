"""``mysqladmin ext`` samples the way Percona Toolkit's ``pt-mext`` prints them.

One row per counter, one column per sampler interval: the first column is the counter's
absolute value at the first sample shown, each further column the change since the sample
before it (``pt-mext -r``), or that change per second (``rate=True``). Derived rows the 2011
post computed from the same output come first: dirty pages % with InnoDB's own formula
``100 × dirty / (1 + data + free)``, and checkpoint age (``Log sequence number − Last
checkpoint at``), both levels, not deltas; and, where the server counts row-lock time, the
seconds waited on row locks per second of each interval (Δ ``Innodb_row_lock_time`` ms / the
interval's ms). Over the measurement window that is the connections waiting on row locks on
average, which :mod:`analysis.writes.bound` judges; per interval it can exceed the connections,
since InnoDB adds a wait's time when the wait ends: the interval that ends a stall carries
all of it.

A server restart inside the run (``Uptime`` goes down) resets every counter: the interval
that spans it has no delta (shown empty, its column marked ``restart``) rather than a negative
or a misleading one. Missed sampler ticks have no values; the next column's delta spans them
and its header says how long the interval was.
"""

from __future__ import annotations

import json
import math
import re
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import regex

from analysis.reading.query import DB, sample_levels, session_scope, utc, window_of
from core.errors import AnalysisError, quote
from store.models import Run

MB = 1024.0 * 1024.0
#: How long ``--grep``'s expression may take over all of a run's counter names (a sane one
#: takes milliseconds).
GREP_BUDGET_S = 2.0
GREP_EXAMPLE = "e.g. --grep 'innodb_(buffer|log)'"
#: The longest ``--grep`` read (counter names are under 64 characters), the largest counted
#: repetition (``x{1000}``) and the largest product of them all: compiling ``a{1000000000}``
#: or repeats of repeats allocates gigabytes before any timeout applies.
GREP_MAX_CHARS = 1000
GREP_MAX_REPEAT = 1000
GREP_MAX_REPEAT_PRODUCT = 100_000
#: A counted repetition, ``{m}``, ``{m,}``, ``{,n}`` or ``{m,n}`` (not an escaped brace).
_COUNTED = re.compile(r"(?<!\\)\{(\d*)(?:,(\d*))?\}")
#: Derived rows, shown above the counters (levels per sample, not deltas).
DIRTY_ROW = "[derived] dirty pages %"
AGE_ROW = "[derived] checkpoint age MiB"
LOCK_ROW = "[derived] row-lock wait s per s"


@dataclass(frozen=True)
class MextTable:
    """The table and what a reader needs to interpret it.

    Attributes
    ----------
    values:
        Rows: derived rows, then counters alphabetically. Columns: one per shown sample,
        labelled by seconds since the measurement started (``t=+20s``); the first holds
        absolute values, the others deltas (or rates), the derived rows levels throughout.
    restarts:
        Column labels whose interval spans a server restart (no deltas there).
    interval_s:
        Real seconds covered by each column (NaN for the first).
    t_s:
        Each column's sample time in seconds since the measurement started (the labels round
        it to whole seconds).
    """

    values: pd.DataFrame
    restarts: list[str]
    interval_s: list[float]
    t_s: list[float]


def _decode(blob: bytes | None) -> dict[str, float]:
    """Every numeric counter of one stored ``SHOW GLOBAL STATUS``."""
    if not blob:
        return {}
    out: dict[str, float] = {}
    for name, value in json.loads(zlib.decompress(blob)).items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[name] = number
    return out


def _samples(db: DB, run_id: int) -> tuple[pd.DataFrame, pd.Timestamp | None, float, float]:
    """Good samples of one run (time, derived levels, counters) and its window bounds."""
    with session_scope(db) as s:
        run = s.get(Run, run_id)
        if run is None:
            raise AnalysisError(f"no run {run_id}", where="runs",
                                fix="list runs with `flushbench status`")
        window = window_of(run.cell.experiment.window)
        measure_start = run.measure_started_at
        rows = sample_levels(s, run_id)
    good = [r for r in rows if not r.missed and r.ts is not None and r.status_z]
    if not good:
        raise AnalysisError(f"run {run_id} has no stored samples", where=f"run {run_id}",
                            fix="a run with sampling enabled (sampling.enabled) records them")
    frame = pd.DataFrame({
        "ts": utc(pd.Series([r.ts for r in good])),
        "dirty": [_dirty(r) for r in good],
        "age": [(r.lsn - r.checkpoint_lsn) / MB if r.lsn is not None
                and r.checkpoint_lsn is not None else math.nan for r in good],
    })
    counters = pd.DataFrame([_decode(r.status_z) for r in good])
    start = utc(pd.Series([measure_start])).iloc[0] if measure_start is not None else None
    return pd.concat([frame, counters], axis=1), start, window.start, window.end


def _dirty(row: object) -> float:
    dirty, data, free = (getattr(row, n) for n in ("pages_dirty", "pages_data", "pages_free"))
    if dirty is None or data is None or free is None:
        return math.nan
    return 100.0 * dirty / (1.0 + data + free)


def _chosen(names: Sequence[str], counters: Sequence[str] | None, grep: str | None) -> list[str]:
    """Counter names to show, alphabetically: named ones (case-insensitive) and/or a regex."""
    chosen = list(names)
    if counters:
        wanted = {c.lower() for c in counters}
        chosen = [n for n in chosen if n.lower() in wanted]
        unknown = wanted - {n.lower() for n in names}
        if unknown:
            raise AnalysisError(f"no such counter in this run: {', '.join(sorted(unknown))}",
                                where="--counters", fix="see the names with --grep PATTERN")
    if grep:
        chosen = grep_names(grep, chosen)
    return sorted(chosen, key=str.lower)


def grep_names(grep: str, names: Sequence[str]) -> list[str]:
    """The ``names`` a case-insensitive regular expression finds, in their order.

    The expression is the user's, so it runs under the ``regex`` module's timeout: a pattern
    that backtracks without end (``(a|aa)+$`` against a long name) ends in one sentence after
    :data:`GREP_BUDGET_S` seconds over all names instead of hanging the command.

    Raises
    ------
    AnalysisError
        ``grep`` is not a regular expression, or takes longer than the budget.
    """
    too_big = _too_big(grep)
    if too_big:
        raise AnalysisError(f"--grep {quote(grep)} {too_big}", where="--grep",
                            fix=f"a shorter pattern, {GREP_EXAMPLE}")
    try:
        pattern = regex.compile(grep, regex.IGNORECASE)
    except (regex.error, ValueError, OverflowError) as exc:
        raise AnalysisError(f"--grep {quote(grep)} is not a regular expression ({exc})",
                            where="--grep", fix=GREP_EXAMPLE) from None
    except (RecursionError, MemoryError):
        # The regex module parses groups recursively: thousands nested run out of stack.
        raise AnalysisError(f"--grep {quote(grep)} is too deeply nested to compile",
                            where="--grep", fix=f"a flatter pattern, {GREP_EXAMPLE}") from None
    deadline = time.monotonic() + GREP_BUDGET_S
    found = []
    try:
        for name in names:
            if pattern.search(name, timeout=max(deadline - time.monotonic(), 0.001)):
                found.append(name)
    except TimeoutError:
        raise AnalysisError(
            f"--grep {quote(grep)} took longer than {GREP_BUDGET_S:g} s to match"
            f" {len(names)} counter names (nested repeats such as (a|aa)+ backtrack without end)",
            where="--grep", fix=f"simplify the pattern, {GREP_EXAMPLE}") from None
    return found


def _too_big(grep: str) -> str | None:
    """Why ``grep`` is too large to compile safely (length, repetition counts), or None."""
    if len(grep) > GREP_MAX_CHARS:
        return f"is {len(grep):,} characters long, more than the {GREP_MAX_CHARS:,} read"
    product = 1
    for m in _COUNTED.finditer(grep):
        bound = max((int(x) for x in m.groups() if x), default=0)
        if bound > GREP_MAX_REPEAT:
            return (f"repeats {bound:,} times, more than the {GREP_MAX_REPEAT:,} read (counter"
                    " names are under 64 characters)")
        product *= max(bound, 1)
        if product > GREP_MAX_REPEAT_PRODUCT:
            return (f"has repetition counts multiplying past {GREP_MAX_REPEAT_PRODUCT:,}"
                    " (counter names are under 64 characters)")
    return None


def mext(db: DB, run_id: int, *, counters: Sequence[str] | None = None,
         grep: str | None = None, window_only: bool = False, rate: bool = False) -> MextTable:
    """The ``pt-mext`` table of one run's stored samples (see the module docstring).

    Parameters
    ----------
    counters, grep:
        Which counter rows to show (names, a case-insensitive regex; both: both must match).
    window_only:
        Only the samples inside the run's measurement window.
    rate:
        Deltas per second instead of per interval.

    Raises
    ------
    AnalysisError
        No such run, no samples (or none in the window), an unknown counter, a bad regex.
    """
    df, start, w_start, w_end = _samples(db, run_id)
    t = ((df["ts"] - start).dt.total_seconds() if start is not None
         else (df["ts"] - df["ts"].iloc[0]).dt.total_seconds())
    if window_only:
        keep = ((t >= w_start) & (t <= w_end)).to_numpy()
        if not keep.any():
            raise AnalysisError(f"run {run_id} has no samples in its measurement window",
                                where=f"run {run_id}", fix="drop --window to see all samples")
        df, t = df[keep].reset_index(drop=True), t[keep].reset_index(drop=True)
    names = [c for c in df.columns if c not in ("ts", "dirty", "age")]
    shown = _chosen(names, counters, grep)
    labels = [f"t={x:+.0f}s" for x in t]
    seconds = df["ts"].diff().dt.total_seconds().to_numpy()
    uptime = df["Uptime"].to_numpy(dtype=float) if "Uptime" in df.columns else None
    restarted = np.zeros(len(df), dtype=bool)
    if uptime is not None:
        restarted[1:] = uptime[1:] < uptime[:-1]
    raw = df[shown].to_numpy(dtype=float) if shown else np.empty((len(df), 0))
    deltas = np.vstack([raw[:1], np.diff(raw, axis=0)]) if len(df) else raw
    if rate and len(df) > 1:
        deltas[1:] = deltas[1:] / seconds[1:, None]
    deltas[restarted] = np.nan
    body = pd.DataFrame(deltas.T, index=shown, columns=labels)
    derived = pd.DataFrame([df["dirty"].to_numpy(float), df["age"].to_numpy(float)],
                           index=[DIRTY_ROW, AGE_ROW], columns=labels)
    if "Innodb_row_lock_time" in df.columns:
        derived.loc[LOCK_ROW] = _lock_waiting(df, seconds, restarted)
    if counters:
        derived = derived.iloc[0:0]
    elif grep:
        derived = derived.loc[grep_names(grep, list(derived.index))]
    table = pd.concat([derived, body])
    return MextTable(table, [labels[i] for i in np.flatnonzero(restarted)],
                     [math.nan, *seconds[1:].tolist()], [float(x) for x in t])


def _lock_waiting(df: pd.DataFrame, seconds: np.ndarray, restarted: np.ndarray) -> np.ndarray:
    """Seconds waited on row locks per second of each interval: Δ ``Innodb_row_lock_time``
    (ms) / the interval's ms (none for the first column or across a restart)."""
    waited = np.diff(df["Innodb_row_lock_time"].to_numpy(dtype=float), prepend=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = waited / (seconds * 1000.0)
    out[restarted | ~np.isfinite(seconds) | (seconds <= 0)] = np.nan
    return out


def format_value(value: float, *, rate: bool = False) -> str:
    """A cell as pt-mext prints it: integers plainly, rates and levels with one decimal."""
    if not math.isfinite(value):
        return ""
    if not rate and float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.1f}"
