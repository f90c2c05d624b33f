"""Host pauses seen from inside: the wall clock running ahead of the monotonic clock.

A virtual machine whose host stops running it (a pause, a snapshot, a host too busy to
schedule its vCPUs for many seconds) freezes every process in it — mysqld, the driver and the
sampler alike. Inside the guest that is invisible to ``CLOCK_MONOTONIC``, which does not count
the frozen time, but the wall clock is stepped forward when the guest resumes. So
``time.time() - time.monotonic()`` stays constant (NTP slews it by at most milliseconds per
minute) and jumps by the length of each pause. Measured on the development VM
(docs/allocators/README.md): during a 110 s sysbench run the wall clock moved 65 s more than the
monotonic one, the kernel logged "workqueue lockup … stuck for 30s!" twice, and the sampler's
ticks around it were missed.

A run during which the host paused is not a measurement of the server alone: its driver
intervals around the pause mix frozen time with real time. :class:`ClockWatch` measures the
jump over a run; :func:`pause_warning` turns it into the run warning.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

#: Jumps below this are clock noise (NTP slewing, scheduling): not a pause.
PAUSE_WARN_S = 2.0


def wall_minus_monotonic() -> float:
    """Seconds between the wall clock and the monotonic clock, now."""
    return time.time() - time.monotonic()


@dataclass
class ClockWatch:
    """The wall clock's lead over the monotonic clock since this watch was made."""

    start: float = field(default_factory=wall_minus_monotonic)

    def jump_s(self) -> float:
        """Seconds the wall clock has gained on the monotonic clock (≈ seconds paused)."""
        return wall_minus_monotonic() - self.start


def pause_warning(jump_s: float) -> str | None:
    """The run warning for a clock jump of ``jump_s`` seconds (None below PAUSE_WARN_S).

    A negative jump (the wall clock stepped back) is reported too: intervals timed by the
    wall clock are then wrong as well.
    """
    if abs(jump_s) < PAUSE_WARN_S:
        return None
    if jump_s > 0:
        return (f"host paused: the wall clock moved {jump_s:.0f} s more than the monotonic "
                "clock during the run (the VM was not running, or its clock was stepped); "
                "throughput around the pause is not the server's")
    return (f"host clock stepped back {-jump_s:.0f} s during the run; intervals timed by "
            "the wall clock are not reliable")
