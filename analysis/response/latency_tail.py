"""The window's tail with the waits no completion measured: stalls and transactions in flight.

A response time is recorded when its transaction completes. A stall — intervals in which no
transaction of the metric completes — is then missing from the window's tail twice over: the
transactions waiting through it complete later (or after the window), and the ones the clients
would have started during it are never started (a closed loop stops issuing while it waits).
The rules here put both back as *censored* entries, waits of at least a known length
(docs/statistics.md, "Response time"):

* **a stall's waits** (every driver): a stretch of consecutive window intervals with no
  completion, S seconds long, stands for the transactions the run completes in S seconds
  elsewhere in its window, m = max(1, round(rate × S)), the j-th of them (j = 1 … m) a wait of
  at least S × j / m: the one due at the stall's start waited all of it, the last almost none.
  A 40 s stall is a wait of at least 40 s (:func:`stall_waits_ms`);
* **in flight at the window's end** (the Go driver's ``"open"``): each transaction still
  waiting when the window's last interval ends, at its age then
  (:func:`analysis.response.latency_histograms.merge_runs`).

With the Go driver's histograms the window's percentiles are read off the merge of the
completed transactions, both kinds of censored entries (exact within the layout's precision
for what they count). The other drivers print one percentile per interval, which does not
merge: their window figure stays the median of it, raised to what the stall waits alone
prove (:func:`stall_bound_ms`, a lower bound of the window's percentile: those waits are at
least that long, and they are that many of the window's entries).
"""

from __future__ import annotations

import math

import numpy as np


def stalls_s(count: np.ndarray, length_s: np.ndarray) -> np.ndarray:
    """The length in seconds of each stretch of consecutive intervals (in order) that completed
    nothing (``count`` 0): a stall's intervals add up."""
    empty = np.asarray(count, dtype=float) <= 0
    lengths = np.asarray(length_s, dtype=float)
    out: list[float] = []
    run = 0.0
    for is_empty, seconds in zip(empty.tolist(), lengths.tolist(), strict=True):
        if is_empty:
            run += seconds
        elif run:
            out.append(run)
            run = 0.0
    if run:
        out.append(run)
    return np.array(out, dtype=float)


def stall_waits_ms(count: np.ndarray, length_s: np.ndarray) -> np.ndarray:
    """The censored waits (ms) of a run's stalls, from its window intervals in order: their
    completions (``count``) and lengths in seconds.

    The rate is the window's completions per second outside its stalls; a window that
    completed nothing has no rate, and each stall then counts once, at its length.
    """
    count = np.asarray(count, dtype=float)
    length = np.asarray(length_s, dtype=float)
    stalls = stalls_s(count, length)
    if not stalls.size:
        return np.zeros(0)
    active = float(length[count > 0].sum())
    rate = float(count.sum()) / active if active > 0 else 0.0
    parts = []
    for s in stalls.tolist():
        m = max(1, round(rate * s))
        parts.append(s * 1000 * np.arange(1, m + 1) / m)
    return np.concatenate(parts)


def stall_bound_ms(waits_ms: np.ndarray, completed: float, p: float) -> float:
    """The ``p``-th percentile of the window (its ``completed`` transactions and these
    censored waits) is at least this; 0 when the waits are too few to reach it.

    The value at rank ⌈p/100 × n⌉ of the n = completed + waits entries is at least the k-th
    largest wait, k = n − rank + 1, whatever the completed ones were.
    """
    waits = np.sort(np.asarray(waits_ms, dtype=float))[::-1]
    n = completed + waits.size
    if not waits.size or n <= 0:
        return 0.0
    k = int(n - max(1, math.ceil(p / 100 * n)) + 1)
    return float(waits[k - 1]) if k <= waits.size else 0.0
