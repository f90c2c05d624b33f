"""Shared helpers for per-interval series: cleaning, detrending, the frequency grid, AR(1)
noise and surrogates."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

#: Largest AR(1) coefficient a surrogate uses: beyond it the "noise" is a random walk and
#: nothing could ever be told apart from it.
PHI_MAX = 0.95


def clean_series(
    values: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray | None,
    interval_s: float | None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Finite values with their times (sorted) and the typical spacing ``dt``.

    ``times_s`` defaults to ``0, interval_s, 2 interval_s…``; ``interval_s`` defaults to the
    median spacing of the times (missing intervals are gaps, not closed up).
    """
    y = np.asarray(values, dtype=float)
    if times_s is None:
        step = 1.0 if interval_s is None else float(interval_s)
        t = np.arange(y.size, dtype=float) * step
    else:
        t = np.asarray(times_s, dtype=float)
        if t.shape != y.shape:
            raise ValueError(f"{t.size} times for {y.size} values")
    keep = np.isfinite(y) & np.isfinite(t)
    y, t = y[keep], t[keep]
    order = np.argsort(t, kind="stable")
    y, t = y[order], t[order]
    if interval_s is not None:
        dt = float(interval_s)
    elif t.size > 1:
        dt = float(np.median(np.diff(t)))
    else:
        dt = 1.0
    return y, t, dt


def trend_projector(t: np.ndarray) -> np.ndarray:
    """Matrix that removes the least-squares line in ``t`` (``r = y @ P``; P symmetric)."""
    x = np.column_stack([np.ones_like(t), t - t.mean()])
    q, _ = np.linalg.qr(x)
    return np.eye(t.size) - q @ q.T


def search_grid(t: np.ndarray, dt: float, *, min_cycles: float,
                min_period_intervals: float, oversample: int) -> np.ndarray:
    """Trial frequencies (Hz) for a series sampled at ``t`` with spacing ``dt``: from
    ``min_cycles`` full cycles per span to ``min_period_intervals`` intervals per period, in
    steps of 1/(``oversample`` × span); empty when the span holds no such period."""
    span = float(t[-1] - t[0] + dt) if t.size else 0.0
    if span <= 0:
        return np.empty(0)
    f_lo = min_cycles / span
    f_hi = 1.0 / (min_period_intervals * dt)
    if f_lo > f_hi:
        return np.empty(0)
    step = 1.0 / (oversample * span)
    return np.arange(f_lo, f_hi + step / 2, step)


def ar1_coefficient(resid: np.ndarray, t: np.ndarray, dt: float) -> float:
    """Lag-one autocorrelation from consecutive samples one ``dt`` apart, bias-corrected.

    The plain estimate is biased low at small n (Kendall 1954: E φ̂ ≈ φ − (1 + 3φ)/n), which
    would make surrogates too white and the tests too eager; the correction
    ``φ̂ + (1 + 3φ̂)/n`` undoes most of it. Clipped to [−0.5, :data:`PHI_MAX`].
    """
    n = resid.size
    if n < 3:
        return 0.0
    gaps = np.diff(t)
    adjacent = np.abs(gaps - dt) <= 0.5 * dt
    denom = float(resid @ resid) / n
    if denom <= 0 or not adjacent.any():
        return 0.0
    num = float((resid[1:][adjacent] * resid[:-1][adjacent]).mean())
    phi = num / denom
    phi = phi + (1 + 3 * phi) / n
    return float(np.clip(phi, -0.5, PHI_MAX))


#: Loop steps (one multiply-add across every surrogate) a process runs before it imports
#: ``scipy.signal.lfilter`` instead: ≈ 3 µs each, so about the import's 0.7 CPU-s in all.
LOOP_STEPS = 200_000
_loop_steps_left = LOOP_STEPS


def ar1_surrogates(
    t: np.ndarray, dt: float, phi: float, count: int, rng: np.random.Generator
) -> np.ndarray:
    """``count`` unit-variance AR(1) series sampled at the real times ``t``.

    Between samples ``Δt`` apart the correlation is ``φ^(Δt/dt)`` (the continuous-time AR(1),
    so a missing interval weakens the link exactly as it would in the server's own noise).
    """
    n = t.size
    eps = rng.standard_normal((count, n))
    if n < 2:
        return eps
    gaps = np.diff(t) / dt
    if phi >= 0:
        rho = phi ** gaps
    else:
        rho = phi ** np.maximum(np.rint(gaps), 1)
    scale = np.sqrt(np.clip(1 - rho * rho, 0.0, None))
    # out[i] = rho[i-1]·out[i-1] + scale[i-1]·eps[i]. The recursion runs in C (lfilter), one
    # call per stretch of equal spacing: with zi = rho·out[start-1] it does the very same
    # multiply-adds in the same order as a Python loop over i, so the draws are bit-identical
    # (tests/analysis/statistics/test_surrogate_recursion.py), at a fraction of the loop's cost.
    # But scipy.signal costs ≈ 0.7 CPU-s to import: a process whose series are short (a test's
    # seconds-long runs, a small study) runs the loop instead, until its steps would cost about
    # as much as the import; a report whose stability figures all come from the cache
    # (analysis/steadiness/stability_cache.py) never draws a surrogate.
    x = eps.copy()
    x[:, 1:] *= scale
    out = np.empty((count, n))
    out[:, 0] = x[:, 0]
    global _loop_steps_left
    if n - 1 <= _loop_steps_left:
        _loop_steps_left -= n - 1
        for i in range(1, n):
            out[:, i] = rho[i - 1] * out[:, i - 1] + x[:, i]
        return out
    from scipy.signal import lfilter

    bounds = (np.flatnonzero(rho[1:] != rho[:-1]) + 2).tolist()  # where a stretch starts
    for lo, hi in zip([1, *bounds], [*bounds, n], strict=True):
        r = float(rho[lo - 1])
        out[:, lo:hi], _ = lfilter([1.0], [1.0, -r], x[:, lo:hi], axis=1,
                                   zi=(r * out[:, lo - 1])[:, None])
    return out


#: Surrogates in the first batch of a sequential Monte Carlo test.
FIRST_BATCH = 19


def monte_carlo_p(
    observed: float,
    surrogate_statistics: Callable[[int], np.ndarray],
    surrogates: int,
    level: float,
) -> float:
    """Monte Carlo p-value of ``observed`` against surrogate statistics, stopped early.

    Sequential Monte Carlo (Besag & Clifford 1991): the result is significant at ``level``
    only if at most ``floor(level × (surrogates + 1)) − 1`` surrogates reach ``observed``; once
    more than that reach it in a first batch of :data:`FIRST_BATCH`, the full test could only
    say "not significant" too, so the rest is skipped. The decision at ``level`` is the full
    test's; a p-value above the level is then estimated from the batch alone (coarser).

    Parameters
    ----------
    observed:
        The statistic of the series (larger = stronger evidence).
    surrogate_statistics:
        ``count`` → that many surrogate statistics (draws from one seeded generator).
    surrogates:
        Surrogates of the full test.
    level:
        The significance level the caller decides at.
    """
    allowed = max(0, math.floor(level * (surrogates + 1)) - 1)
    first = min(surrogates, FIRST_BATCH)
    used = exceed = 0
    for count in (first, surrogates - first):
        if count <= 0:
            continue
        exceed += int(np.sum(surrogate_statistics(count) >= observed))
        used += count
        if exceed > allowed:
            break
    return (exceed + 1) / (used + 1)


@functools.lru_cache(maxsize=16)
def pair_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(n, k=1)``, memoized and read-only: every run of a window has the same n."""
    i, j = np.triu_indices(n, k=1)
    i.flags.writeable = False
    j.flags.writeable = False
    return i, j
