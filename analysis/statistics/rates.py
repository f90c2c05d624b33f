"""Per-second rates from cumulative counters, broken (NaN) where the server restarted.

SHOW GLOBAL STATUS counters start again from zero when mysqld restarts. A counter that went
down is an obvious restart, but a restart followed by enough work can leave the counter
*higher* than before, and a plain difference would then report a bogus rate. ``Uptime``
settles it: the server restarted between two samples when its uptime went back or grew by
less than the wall-clock time between them (with :data:`UPTIME_SLACK_S` for the 1-second
resolution of ``Uptime``). Rates use the real sample timestamps, never the schedule.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: ``Uptime`` has 1-second resolution and is read a little after the timestamp is taken.
UPTIME_SLACK_S = 2.0


def restarts(
    times_s: Sequence[float] | np.ndarray, uptime_s: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Boolean per sample: True when the server restarted since the previous sample.

    The first sample is never a restart (nothing to compare with); a sample whose uptime is
    unknown (NaN) is not flagged (counters still catch a decrease).
    """
    t = np.asarray(times_s, dtype=float)
    up = np.asarray(uptime_s, dtype=float)
    out = np.zeros(t.size, dtype=bool)
    if t.size < 2:
        return out
    elapsed = np.diff(t)
    grown = np.diff(up)
    with np.errstate(invalid="ignore"):
        out[1:] = (grown < 0) | (grown < elapsed - UPTIME_SLACK_S)
    out[1:] &= np.isfinite(grown) & np.isfinite(elapsed)
    return out


def counter_rates(
    counter: Sequence[float] | np.ndarray,
    times_s: Sequence[float] | np.ndarray,
    uptime_s: Sequence[float] | np.ndarray | None = None,
    *,
    divisor: float = 1.0,
) -> np.ndarray:
    """Rate per second between consecutive samples: ``Δcounter / divisor / Δt``.

    Parameters
    ----------
    counter:
        Cumulative counter per sample (NaN = not read).
    times_s:
        Real time of each sample in seconds (any origin).
    uptime_s:
        ``Uptime`` per sample; without it only a decreasing counter marks a restart.
    divisor:
        Unit conversion (e.g. 2**20 for bytes → MiB).

    Returns
    -------
    ndarray
        Same length as ``counter``; element ``i`` is the rate over ``(t[i-1], t[i]]``.
        NaN for the first sample, where either value is missing, where time did not move
        forward, where the counter decreased, and across a restart.
    """
    c = np.asarray(counter, dtype=float)
    t = np.asarray(times_s, dtype=float)
    if c.shape != t.shape:
        raise ValueError(f"{c.size} counter values for {t.size} timestamps")
    out = np.full(c.size, np.nan)
    if c.size < 2:
        return out
    dc = np.diff(c)
    dt = np.diff(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = dc / divisor / dt
        bad = ~np.isfinite(rate) | (dt <= 0) | (dc < 0)
    if uptime_s is not None:
        bad |= restarts(t, uptime_s)[1:]
    rate[bad] = np.nan
    out[1:] = rate
    return out
