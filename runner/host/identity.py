"""Who a worker is: its host id (locking, reaping, placement), its host class, its pid.

The host id is explicit so one machine can stand in for several hosts (tests, or two disks of
one box used as two "hosts"): ``--host-id`` wins, then ``$FLUSHBENCH_HOST_ID``, then the
machine id systemd writes at install (``/etc/machine-id``), then the hostname. The host class
names a group of interchangeable hosts (same hardware, same OS image); it defaults to the
host id, so out of the box every host is its own class.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError

MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")


def machine_id() -> str:
    """This machine's id (``/etc/machine-id``), or its hostname when there is none."""
    for path in MACHINE_ID_FILES:
        try:
            value = path.read_text().strip()
        except OSError:
            continue
        if value:
            return value
    return socket.gethostname()


def _checked(value: str, option: str) -> str:
    if not _NAME.match(value):
        raise ConfigError(
            f"{option} {value!r} is not a usable name",
            where=option,
            fix="use letters, digits, '.', '_', '-', '@' (at most 128 characters)",
        )
    return value


@dataclass(frozen=True)
class Identity:
    """A worker's identity as written in the queue (lease owner) and the workers table."""

    host_id: str
    host_class: str
    pid: int
    hostname: str

    @property
    def owner(self) -> str:
        """``host-id:pid``: the lease owner written on the runs this worker claims."""
        return f"{self.host_id}:{self.pid}"


def local_identity(host_id: str | None = None, host_class: str | None = None) -> Identity:
    """This process's identity (see the module docstring for the defaults).

    Raises
    ------
    ConfigError
        When a given host id or class is not a plain name (they name lock files).
    """
    hid = _checked(host_id or os.environ.get("FLUSHBENCH_HOST_ID") or machine_id(), "--host-id")
    cls = _checked(host_class or os.environ.get("FLUSHBENCH_HOST_CLASS") or hid, "--host-class")
    return Identity(host_id=hid, host_class=cls, pid=os.getpid(), hostname=socket.gethostname())
