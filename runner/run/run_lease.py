"""What one run needs of the lease its worker holds on it, and the error a lost lease raises.

The worker (:mod:`runner.fleet.worker`) hands its heartbeat (:class:`runner.fleet.lease.Heartbeat`)
down to the run as a :class:`RunLease`: the run tells it its phase, hands it the recorder's
flush, checks it between phases and releases it before writing its final status. The run
imports nothing of the fleet, so calls go one way: worker → run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from core.errors import FlushbenchError
from runner.host.identity import Identity


class LeaseLost(FlushbenchError):
    """This worker no longer holds its run (taken over, or the database was down too long)."""


class RunLease(Protocol):
    """The lease on a claimed run, kept alive by the worker while the run executes."""

    #: Who holds the lease (host id, class, pid): written on the run's metadata.
    identity: Identity
    #: The lease length in seconds: how long a final write may wait for the database.
    lease_s: float
    #: Set when the lease is lost (the measure loop stops the driver on it).
    lost: threading.Event
    #: Why the lease was lost (None while it holds).
    lost_reason: str | None

    def set_phase(self, phase: str) -> None:
        """The current phase of the run (``restoring datadir``, ``measuring``...)."""

    def add_flusher(self, flush: Callable[[], object]) -> None:
        """Also call ``flush`` on every beat (the run's buffered writes drain between
        intervals)."""

    def check(self) -> None:
        """Raise :class:`LeaseLost` when the lease is lost."""

    def release(self) -> None:
        """The run is over: stop renewing its lease (before its final status is written)."""
