"""A throwaway PostgreSQL cluster for tests: ``initdb`` into a temp dir, unix socket only.

No system service, no TCP port: the server listens on a socket in its own directory and trusts
local connections. Started the way the tests start mysqld sandboxes — a real server, stopped
(and its directory removed) when the test session ends.

PostgreSQL refuses to run as root; when the tests run as root the server runs as the
``postgres`` account Debian's package creates (the cluster directory is handed to it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from itertools import count
from pathlib import Path

from tests.support import system_tools

#: Where Debian's postgresql-15 keeps its server binaries when ``pg_config`` is missing.
FALLBACK_BINDIR = Path("/usr/lib/postgresql/15/bin")
#: Names the socket file (``.s.PGSQL.<port>``); nothing listens on TCP.
SOCKET_PORT = 54329


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries are not installed (or cannot run here)."""


def server_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl`` (``pg_config --bindir`` first).

    Raises
    ------
    PostgresUnavailable
        When neither ``pg_config`` nor the Debian path has them.
    """
    candidates: list[Path] = []
    pg_config = system_tools.which("pg_config")
    if pg_config:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.strip():
            candidates.append(Path(done.stdout.strip()))
    candidates.append(FALLBACK_BINDIR)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, pg_ctl) not found in "
        + ", ".join(str(c) for c in candidates)
    )


def _server_account() -> tuple[int | None, int | None]:
    """When root: uid and gid of ``postgres`` (the server refuses root); else Nones."""
    if os.geteuid() != 0:
        return None, None
    try:
        account = pwd.getpwnam("postgres")
    except KeyError as exc:
        raise PostgresUnavailable("running as root and no `postgres` account exists") from exc
    return account.pw_uid, account.pw_gid


class PgCluster:
    """One initialized, running PostgreSQL cluster in a private temp directory.

    Parameters
    ----------
    root:
        Parent of the cluster directory (default: the system temp dir). Must be traversable by
        the ``postgres`` account when running as root (pytest's own temp dirs are not).
    """

    def __init__(self, root: Path | None = None) -> None:
        self.bindir = server_bindir()
        self._uid, self._gid = _server_account()
        self.dir = Path(tempfile.mkdtemp(prefix="flushbench-pg-", dir=root))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self._names = count(1)
        if self._uid is not None:
            os.chown(self.dir, self._uid, self._gid or -1)
        os.chmod(self.dir, 0o755)

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(args), capture_output=True, text=True, check=False, timeout=timeout,
            user=self._uid, group=self._gid, extra_groups=[] if self._uid is not None else None,
            cwd=self.dir,
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise PostgresUnavailable(
                f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}\n{log}"
            )
        return done

    def init(self) -> PgCluster:
        """``initdb`` (trust auth, UTF8, superuser ``postgres``)."""
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync",
        )
        return self

    def start(self) -> PgCluster:
        """Start the server on a unix socket in the cluster directory; wait until it accepts."""
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.dir}' "
            f"-p {SOCKET_PORT} -c fsync=off -c max_connections=200 -c shared_buffers=32MB"
        )
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-o", options, "-w", "-t", "60", "start",
        )
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast`` disconnects clients; ``immediate`` is a crash)."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, down_for: float = 0.0) -> None:
        """Stop the server, stay down ``down_for`` seconds, start it again."""
        self.stop()
        time.sleep(down_for)
        self.start()

    def destroy(self) -> None:
        """Stop the server if it runs and remove the cluster directory."""
        if (self.data / "postmaster.pid").exists():
            try:
                self.stop("immediate")
            except PostgresUnavailable:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL of a database on this cluster (psycopg 3, unix socket)."""
        return f"postgresql+psycopg://postgres@/{database}?host={self.dir}&port={SOCKET_PORT}"

    def create_database(self, prefix: str = "t") -> str:
        """Create a fresh empty database; return its URL."""
        import sqlalchemy as sa

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        engine = sa.create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        finally:
            engine.dispose()
        return self.url(name)
