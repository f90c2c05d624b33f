"""A cell's knobs in server terms: what translation produces and the queued record keeps.

Its own module in the model (not the translation's) because the queued record stores one per
cell and a worker reads it back (:mod:`core.experiment.queued`), while producing one needs a
server's flavor, version and option list (:mod:`runner.knobs.translate`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Translation:
    """One cell's knobs in server terms.

    Attributes
    ----------
    server_options:
        my.cnf lines (underscored name → value text).
    expected:
        What ``SHOW GLOBAL VARIABLES`` must show after start, in the server's representation
        (ON/OFF, bytes, enum names, ``60.000000``); compare with
        :func:`core.flavors.values_equal`.
    allocator:
        Library to ``LD_PRELOAD`` (None for glibc's malloc).
    large_pages:
        Whether the server is asked to use huge pages.
    thp:
        The host's transparent huge pages mode (``always``/``madvise``/``never``) to set
        before mysqld starts and restore after it stopped; None: leave the host as it is.
    connections:
        Client connections (None: the workload's default).
    rate:
        The Go tpcc driver's fixed rate in NOTPM (None: ``workload.rate``, or the closed
        loop).
    storage:
        The emulated storage's limits, applied by a cgroup I/O throttle around mysqld.
    origin:
        Server variable → the knob it came from (``var.NAME`` for raw variables), to map a
        server complaint back to an experiment key.
    notes:
        Things worth saying in ``plan`` (a knob that is built-in behaviour on this server).
    """

    server_options: dict[str, str] = field(default_factory=dict)
    expected: dict[str, str] = field(default_factory=dict)
    allocator: str | None = None
    large_pages: bool = False
    thp: str | None = None
    connections: int | None = None
    rate: float | None = None
    #: I/O limits (``core.experiment.storage.StorageSpec`` as a dict), None: the machine's disk.
    storage: dict[str, Any] | None = None
    origin: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
