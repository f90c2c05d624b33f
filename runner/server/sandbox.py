"""The mysqld sandbox: starting, verifying and stopping one mysqld.

One sandbox is one mysqld with its own datadir, unix socket, pid file, error log and tmpdir,
started from a generated ``my.cnf`` (``--defaults-file``, so no global option file leaks in).
The process is started through :func:`runner.proc.child`, so it lives in its own process group
and is always reaped, whatever happens to flushbench.

mysqld runs in the server's own environment (:meth:`ResolvedServer.env`, the profile's
``lib_dirs``), plus ``LD_PRELOAD`` for the allocator under test.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql

from core.errors import PreflightError, ServerError
from core.flavors import resizes_redo, values_equal
from runner.connection import ConnectionInfo
from runner.proc import child
from runner.server.layout import SandboxLayout, tail_lines
from runner.server.profiles import ResolvedServer

# --- what the error log says ---------------------------------------------------------------

_HUGE_FAIL_RE = re.compile(
    r"(couldn't|failed to|unable to) allocate|hugetlb|large page|conventional memory", re.I
)
_SHUTDOWN_RE = re.compile(r"Shutdown complete(?!d)")
#: How long a stop of a discarded datadir waits for mysqld to exit before SIGKILL. The datadir
#: is deleted next, so nothing it would still write matters; but a MySQL 5.5 master thread
#: finishes its flush batch (up to ``innodb_io_capacity`` pages) before it notices the
#: shutdown, which took a minute per run of the 2011 flash study (io_capacity 20000 under a
#: storage limit) even with ``innodb_fast_shutdown=2``.
DISCARD_GRACE_S = 10.0


@dataclass(frozen=True)
class StopResult:
    """How a sandbox stopped: exit code, whether the shutdown was clean, how long it took."""

    exit_code: int | None
    clean: bool
    seconds: float
    killed: bool


@dataclass
class MysqldSandbox:
    """One mysqld process on one datadir, used as a context manager.

    Parameters
    ----------
    server:
        The resolved server build.
    layout:
        The sandbox's paths; ``layout.cnf`` must have been written (:func:`write_mycnf`).
    allocator:
        Library to ``LD_PRELOAD`` into mysqld (jemalloc, tcmalloc), or None for glibc malloc.
    env:
        Extra environment for mysqld.
    argv_wrap:
        Prefixes mysqld's command line so host controls apply from its first instruction
        (a cgroup I/O throttle, CPU pinning: :mod:`runner.host`); the process keeps its pid.

    Notes
    -----
    Leaving the ``with`` block normally stops mysqld cleanly; leaving it on an exception
    kills it (SIGKILL). Either way the process is reaped.
    """

    server: ResolvedServer
    layout: SandboxLayout
    allocator: Path | str | None = None
    env: Mapping[str, str] | None = None
    argv_wrap: Callable[[list[str]], list[str]] | None = None
    proc: subprocess.Popen | None = field(default=None, init=False, repr=False)
    stop_result: StopResult | None = field(default=None, init=False)
    _stack: contextlib.ExitStack | None = field(default=None, init=False, repr=False)
    _admin: Any = field(default=None, init=False, repr=False)
    _log_offset: int = field(default=0, init=False, repr=False)

    # --- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> MysqldSandbox:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.proc is None:
            return
        if exc_type is not None:
            self.kill()
        elif self.alive():
            self.stop()
        self._release()

    def start(self, timeout: float = 120.0) -> MysqldSandbox:
        """Launch mysqld and wait until it accepts connections on the socket.

        Raises
        ------
        ServerError
            If mysqld exits during start-up (exit code and error-log tail in the message), or
            does not accept connections within ``timeout`` seconds (it is then killed).
        PreflightError
            If the allocator library does not exist.
        """
        if self.proc is not None and self.alive():
            raise ServerError("sandbox already running", str(self.layout.run_dir))
        self._release()
        self.stop_result = None
        if not self.layout.cnf.is_file():
            raise ServerError("my.cnf not written", str(self.layout.cnf), "call write_mycnf first")
        self.layout.create()
        self._drop_stale_redo()
        env = self.server.env()
        env.update(self.env or {})
        if self.allocator:
            lib = Path(self.allocator)
            if not lib.is_file():
                raise PreflightError(
                    "allocator library not found",
                    str(lib),
                    "install it (libjemalloc2 / libtcmalloc-minimal4) or fix the path",
                )
            env["LD_PRELOAD"] = str(lib)
        else:
            env.pop("LD_PRELOAD", None)
        self._log_offset = (
            self.layout.error_log.stat().st_size if self.layout.error_log.exists() else 0
        )
        argv = [str(self.server.mysqld), f"--defaults-file={self.layout.cnf}",
                *self.server.start_args()]
        if self.server.flavor == "mariadb" and self.server.version >= (11, 4):
            # MariaDB 11.4 makes a self-signed TLS certificate at every start when none is
            # configured: an RSA key, 12-40 s of CPU on a 2-core machine. A sandbox is reached
            # over its unix socket only, where clients use no TLS, so it starts without.
            argv.append("--skip-ssl")
        if self.argv_wrap is not None:
            argv = self.argv_wrap(argv)
        self._stack = contextlib.ExitStack()
        self.proc = self._stack.enter_context(
            child(
                argv,
                env=env,
                stdout_path=self.layout.console_log,
                stderr_path=self.layout.console_log,
                grace_s=30.0,
            )
        )
        try:
            self._wait_ready(timeout)
        except BaseException:
            # Whatever stopped the wait (error, Ctrl-C), no half-started mysqld survives it.
            self.kill()
            self._release()
            raise
        return self

    def _drop_stale_redo(self) -> None:
        """Remove redo files a 5.5 server would refuse (see :mod:`runner.server.redo`)."""
        from runner.server.options import option_list
        from runner.server.redo import effective_options, stale_redo_files

        if resizes_redo(self.server.flavor, self.server.version):
            return
        stale = stale_redo_files(self.server, self.layout.datadir,
                                 effective_options(self.layout.cnf), option_list(self.server))
        for path in stale:
            path.unlink()
        if stale:
            with self.layout.error_log.open("a") as log:
                log.write(f"flushbench: removed {', '.join(p.name for p in stale)} (redo size"
                          f" changed; {self.server.label} recreates them at start)\n")

    def _wait_ready(self, timeout: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        last_err: Exception | None = None
        while True:
            code = self.proc.poll()
            if code is not None:
                raise ServerError(
                    f"mysqld exited with code {code} during start-up:\n{self.error_log_tail()}",
                    str(self.layout.error_log),
                    "fix the option the error log names",
                )
            if self.layout.socket.exists():
                try:
                    self._admin = self.connect(connect_timeout=5)
                    return
                except pymysql.MySQLError as exc:
                    last_err = exc  # socket file exists before the server accepts logins
            if time.monotonic() > deadline:
                raise ServerError(
                    f"mysqld did not accept connections within {timeout:.0f} s "
                    f"(last error: {last_err}); it was killed:\n{self.error_log_tail()}",
                    str(self.layout.error_log),
                    "raise the start timeout or check the error log",
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 120.0, slow: bool = False,
             discard: bool = False) -> StopResult:
        """Shut mysqld down cleanly, SIGKILL it after ``timeout`` seconds.

        Parameters
        ----------
        slow:
            Set ``innodb_fast_shutdown=0`` first (full purge and change-buffer merge), so a
            datadir snapshot carries no background work into the runs restored from it.
        discard:
            The datadir is thrown away after this stop: set ``innodb_fast_shutdown=2`` first,
            so InnoDB writes its redo log to disk but not the buffer pool's dirty pages (a
            server started on the datadir again recovers them from the redo log). Under a
            storage limit, flushing up to the whole buffer pool took a minute per run of the
            2011 flash study, measuring nothing. A server still running after
            :data:`DISCARD_GRACE_S` is killed (``killed`` in the result).

        Returns
        -------
        StopResult
            ``clean`` is true when mysqld exited 0 and the error log says "Shutdown complete".
        """
        if self.proc is None:
            raise ServerError("sandbox was never started", str(self.layout.run_dir))
        started = time.monotonic()
        if self.proc.poll() is None:
            sent = False
            try:
                conn = self._admin_conn()
                with conn.cursor() as cur:
                    if slow or discard:
                        mode = 0 if slow else 2
                        cur.execute(f"SET GLOBAL innodb_fast_shutdown = {mode}")
                    cur.execute("SHUTDOWN")
                sent = True
            except pymysql.MySQLError:
                sent = False  # old servers have no SHUTDOWN statement: SIGTERM is equivalent
            finally:
                self._close_admin()
            if not sent:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGTERM)
        killed = False
        limit = min(timeout, DISCARD_GRACE_S) if discard and not slow else timeout
        try:
            self.proc.wait(timeout=max(0.0, limit - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            killed = True
            self.kill()
        code = self.proc.returncode
        # "Shutdown complete" is the server's last word; InnoDB's "Shutdown completed;" is not.
        clean = (not killed) and code == 0 and bool(_SHUTDOWN_RE.search(self._log_since_start()))
        self.stop_result = StopResult(code, clean, time.monotonic() - started, killed)
        self._release()
        return self.stop_result

    def kill(self) -> int | None:
        """SIGKILL mysqld's process group and reap it; return the exit code."""
        if self.proc is None:
            return None
        self._close_admin()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=60)
            # A killed mysqld leaves its socket file: a server started next in this layout
            # would be polled through it (refused) until it replaces the file.
            self.layout.socket.unlink(missing_ok=True)
        return self.proc.returncode

    def _release(self) -> None:
        self._close_admin()
        if self._stack is not None:
            stack, self._stack = self._stack, None
            stack.close()

    # --- state ------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """mysqld's process id (a wrapper, if any, execs mysqld: the pid stays mysqld's)."""
        return self.proc.pid if self.proc is not None else None

    @property
    def exit_code(self) -> int | None:
        """Exit code once mysqld has ended (negative: killed by that signal), else None."""
        return self.proc.poll() if self.proc is not None else None

    def alive(self) -> bool:
        """True while the mysqld process is running."""
        return self.proc is not None and self.proc.poll() is None

    def _log_since_start(self) -> str:
        try:
            with open(self.layout.error_log, "rb") as f:
                f.seek(self._log_offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def error_log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines this start wrote to the error log (and to stderr)."""
        text = self._log_since_start()
        with contextlib.suppress(FileNotFoundError):
            console = self.layout.console_log.read_text(errors="replace").strip()
            if console:
                text = console[-4000:] + "\n" + text
        return tail_lines(text, lines) or "(error log is empty)"

    # --- SQL ------------------------------------------------------------------------------

    def connection_info(self, database: str | None = None) -> ConnectionInfo:
        """How clients reach this sandbox (unix socket, root, no password)."""
        return ConnectionInfo(socket=self.layout.socket, user="root", database=database)

    def connect(self, database: str | None = None, connect_timeout: float = 10) -> Any:
        """A new pymysql connection (autocommit) over the socket as root."""
        return pymysql.connect(
            **self.connection_info(database).pymysql_kwargs(),
            autocommit=True,
            connect_timeout=connect_timeout,
        )

    def _admin_conn(self) -> Any:
        if self._admin is not None:
            try:
                self._admin.ping()
            except pymysql.MySQLError:
                self._close_admin()  # the server restarted or dropped us: open a new one
        if self._admin is None:
            self._admin = self.connect()
        return self._admin

    def _close_admin(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None

    def _pairs(self, sql: str) -> dict[str, str]:
        if not self.alive():
            raise ServerError(
                f"mysqld is not running (exit code {self.exit_code})", str(self.layout.error_log)
            )
        with self._admin_conn().cursor() as cur:
            cur.execute(sql)
            return {str(k).lower(): "" if v is None else str(v) for k, v in cur.fetchall()}

    def server_version(self) -> str:
        """``SELECT VERSION()``: what the running server says it is (``11.4.5-MariaDB``)."""
        with self._admin_conn().cursor() as cur:
            cur.execute("SELECT VERSION()")
            row = cur.fetchone()
        return str(row[0]) if row else ""

    def global_variables(self) -> dict[str, str]:
        """``SHOW GLOBAL VARIABLES`` as ``{lowercase name: value}``."""
        return self._pairs("SHOW GLOBAL VARIABLES")

    def global_status(self) -> dict[str, str]:
        """``SHOW GLOBAL STATUS`` as ``{lowercase name: value}``."""
        return self._pairs("SHOW GLOBAL STATUS")

    def verify_applied(self, expected: Mapping[str, str]) -> None:
        """Check that the server runs with every requested value.

        Raises
        ------
        ServerError
            Listing each variable that is absent or whose value differs (see
            :func:`core.flavors.values_equal` for what counts as equal).
        """
        actual = self.global_variables()
        problems = []
        for name, want in expected.items():
            key = name.strip().lower().replace("-", "_")
            if key not in actual:
                problems.append(f"{key}: expected {want}, the server has no such variable")
            elif not values_equal(str(want), actual[key]):
                problems.append(f"{key}: expected {want}, server has {actual[key]}")
        if problems:
            raise ServerError(
                "requested values did not apply: " + "; ".join(problems),
                str(self.layout.cnf),
                "the server adjusted or ignored them; check its range/limits and the error log",
            )

    # --- process facts --------------------------------------------------------------------

    def mapped_libraries(self) -> list[str]:
        """Shared objects mapped into mysqld, from ``/proc/PID/maps`` (sorted, unique)."""
        if not self.alive():
            raise ServerError("mysqld is not running", str(self.layout.run_dir))
        libs: set[str] = set()
        with open(f"/proc/{self.pid}/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and ".so" in parts[5]:
                    libs.add(parts[5].strip().removesuffix(" (deleted)"))
        return sorted(libs)

    def hugetlb_bytes(self) -> int:
        """Bytes of huge pages mysqld holds (``HugetlbPages`` in ``/proc/PID/status``)."""
        if not self.alive():
            raise ServerError("mysqld is not running", str(self.layout.run_dir))
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("HugetlbPages:"):
                    return int(line.split()[1]) * 1024
        return 0

    def verify_large_pages(self) -> None:
        """Raise :class:`ServerError` unless mysqld really holds huge pages.

        ``large_pages=ON`` alone proves nothing: when ``vm.nr_hugepages`` is too small,
        MariaDB and MySQL log a warning and continue with normal pages.
        """
        if self.hugetlb_bytes() > 0:
            return
        hits = [ln for ln in self._log_since_start().splitlines() if _HUGE_FAIL_RE.search(ln)]
        raise ServerError(
            "large_pages is requested but mysqld holds no huge pages:\n"
            + ("\n".join(hits[-10:]) if hits else self.error_log_tail(20)),
            str(self.layout.error_log),
            "reserve enough huge pages first (sysctl vm.nr_hugepages=N; 2 MiB each) "
            "and allow the mysqld user to use them",
        )

    def verify_allocator(self, lib_path: Path | str) -> None:
        """Raise :class:`ServerError` unless ``lib_path`` is mapped into mysqld."""
        want = os.path.realpath(lib_path)
        mapped = self.mapped_libraries()
        if not any(os.path.realpath(m) == want for m in mapped):
            raise ServerError(
                f"allocator {lib_path} is not mapped into mysqld (pid {self.pid}); "
                f"mapped: {', '.join(Path(m).name for m in mapped)}",
                str(self.layout.console_log),
                "check LD_PRELOAD and the console log",
            )


def drain_dirty_pages(conn: Any, below: int = 100, timeout: float = 300.0) -> float:
    """Flush the buffer pool until fewer than ``below`` pages are dirty (tpcc-mysql style).

    Sets ``innodb_max_dirty_pages_pct`` (and ``innodb_max_dirty_pages_pct_lwm`` where it
    exists) to 0, polls ``Innodb_buffer_pool_pages_dirty``, then restores the original values
    whatever happens.

    Returns
    -------
    float
        Seconds taken.

    Raises
    ------
    ServerError
        If the dirty pages do not drop below ``below`` within ``timeout`` seconds.
    """
    started = time.monotonic()

    def dirty() -> int:
        with conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
            row = cur.fetchone()
        return int(row[1])

    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES LIKE 'innodb_max_dirty_pages_pct%'")
        original = {str(k).lower(): str(v) for k, v in cur.fetchall()}
    # lwm first: MySQL warns/adjusts when the lwm would exceed the limit.
    order = [
        n for n in ("innodb_max_dirty_pages_pct_lwm", "innodb_max_dirty_pages_pct") if n in original
    ]
    try:
        with conn.cursor() as cur:
            for name in order:
                cur.execute(f"SET GLOBAL {name} = 0")
        n = dirty()
        while n >= below:
            if time.monotonic() - started > timeout:
                raise ServerError(
                    f"{n} dirty pages remain after {timeout:.0f} s (wanted < {below})",
                    "drain_dirty_pages",
                    "raise the timeout or io_capacity",
                )
            time.sleep(0.2)
            n = dirty()
    finally:
        with conn.cursor() as cur:
            for name in reversed(order):
                cur.execute(f"SET GLOBAL {name} = %s", (Decimal(original[name]),))
    return time.monotonic() - started
