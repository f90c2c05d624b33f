"""How a workload reaches a server: one small value shared by the sandbox and every driver.

The password is never printed: it is left out of ``repr`` and handed to child processes only
through the ``MYSQL_PWD`` environment variable (never on a command line, where ``ps`` shows it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ConnectionInfo:
    """Where and as whom to connect.

    Parameters
    ----------
    socket:
        Unix socket path; when set it wins over ``host``/``port`` (sandboxes use sockets).
    host, port:
        TCP address, used when ``socket`` is None.
    user:
        Account name.
    password:
        Account password, or None for none. Hidden from ``repr``.
    database:
        Default schema, or None.
    """

    socket: Path | None = None
    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    password: str | None = field(default=None, repr=False)
    database: str | None = None

    def __repr__(self) -> str:
        where = (
            f"socket={str(self.socket)!r}"
            if self.socket
            else f"host={self.host!r}, port={self.port}"
        )
        pw = "'***'" if self.password else "None"
        return (
            f"ConnectionInfo({where}, user={self.user!r}, password={pw}, "
            f"database={self.database!r})"
        )

    __str__ = __repr__

    def with_database(self, database: str | None) -> ConnectionInfo:
        """Return a copy that uses ``database`` as the default schema."""
        return replace(self, database=database)

    def pymysql_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`pymysql.connect` (socket preferred over TCP)."""
        kwargs: dict[str, Any] = {"user": self.user, "password": self.password or ""}
        if self.socket is not None:
            kwargs["unix_socket"] = str(self.socket)
        else:
            kwargs["host"] = self.host
            kwargs["port"] = self.port
        if self.database:
            kwargs["database"] = self.database
        return kwargs

    def client_env(self) -> dict[str, str]:
        """Environment additions for a client process (``MYSQL_PWD`` when a password is set)."""
        return {"MYSQL_PWD": self.password} if self.password else {}
