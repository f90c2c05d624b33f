"""Creating a datadir: the system tables a fresh sandbox needs.

MariaDB and MySQL/Percona 5.5/5.6 use their install script (``mariadb-install-db``,
``mysql_install_db``); MySQL/Percona 5.7+ use ``mysqld --initialize-insecure``. Either way root
gets no password and the tool runs in the profile's environment (``lib_dirs``).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from core.errors import PreflightError, ServerError
from runner.proc import is_root, run_checked
from runner.server.layout import SandboxLayout, tail_lines
from runner.server.optionfiles import check_option
from runner.server.profiles import ResolvedServer, find_install_db

_INSTALL_HELP_CACHE: dict[Path, str] = {}


def _install_db_help(server: ResolvedServer, install_db: Path) -> str:
    if install_db not in _INSTALL_HELP_CACHE:
        try:  # the profile's script: bounded like every probe of a binary the user named
            out = run_checked([install_db, "--help"], timeout=20, env=server.env())
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = (exc.strerror if isinstance(exc, OSError) else
                      "it did not answer within 20 s (killed)")
            raise PreflightError(
                f"cannot run `{install_db} --help`: {reason}", where=str(install_db),
                fix="check install_db (or basedir) in the server profile") from None
        _INSTALL_HELP_CACHE[install_db] = out.stdout + out.stderr
    return _INSTALL_HELP_CACHE[install_db]


def _install_argv(
    server: ResolvedServer, layout: SandboxLayout, options: Mapping[str, str]
) -> list[str]:
    root = is_root()
    extra = [f"--{k}={v}" if v != "" else f"--{k}" for k, v in options.items()]
    if server.init_kind == "initialize":
        argv = [
            str(server.mysqld),
            "--no-defaults",
            "--initialize-insecure",
            f"--datadir={layout.datadir}",
        ]
        if server.basedir:
            argv.append(f"--basedir={server.basedir}")
        if root:
            argv.append("--user=root")
        return argv + extra
    # MariaDB, and MySQL/Percona 5.5/5.6: the install script.
    install_db = server.install_db
    if install_db is None and server.basedir is not None:
        install_db = find_install_db(server.basedir)
    if install_db is None or not Path(install_db).is_file():
        raise PreflightError(
            "no datadir install script for this server",
            str(install_db or server.mysqld),
            "set install_db in the server profile (mariadb-install-db / mysql_install_db)",
        )
    install_db = Path(install_db)
    help_text = _install_db_help(server, install_db)
    argv = [str(install_db), "--no-defaults", f"--datadir={layout.datadir}"]
    if server.basedir:
        argv.append(f"--basedir={server.basedir}")
    # Flags appeared over versions (auth method: MariaDB 10.4, skip-test-db: 10.5): pass the
    # ones this script documents.
    if "--auth-root-authentication-method" in help_text:
        argv.append("--auth-root-authentication-method=normal")
    if "--skip-test-db" in help_text:
        argv.append("--skip-test-db")
    if root:
        argv.append("--user=root")
    return argv + extra


def initialize_datadir(
    server: ResolvedServer,
    layout: SandboxLayout,
    timeout: float = 300.0,
    options: Mapping[str, str] | None = None,
) -> None:
    """Create the system tables in an empty ``layout.datadir``.

    MariaDB uses ``mariadb-install-db`` (root without password, no test database); MySQL and
    Percona 5.7+ use ``mysqld --initialize-insecure``; 5.5/5.6 use ``scripts/mysql_install_db``.

    Parameters
    ----------
    options:
        Server options that must be fixed at creation, e.g. ``innodb_page_size``.

    Raises
    ------
    ServerError
        If the datadir is not empty, or the tool fails or times out (with its output's tail).
    """
    options = dict(options or {})
    for name, value in options.items():
        check_option(name, value, "initialize options")
    datadir = layout.datadir
    if datadir.exists() and any(datadir.iterdir()):
        raise ServerError(
            "datadir to initialize is not empty", str(datadir), "use a new run directory"
        )
    layout.create()
    if server.init_kind != "initialize":
        datadir.mkdir(parents=True, exist_ok=True)  # 5.7+ --initialize wants to create it
    argv = _install_argv(server, layout, options)
    log = layout.run_dir / "initialize.log"
    started = time.monotonic()
    # run_checked: its own process group, SIGKILLed when the tool exits or times out, so a
    # daemon the install script left in the background (holding its output open) dies with
    # it, and a probe deadline (``server add``) bounds it too.
    try:
        proc = run_checked(argv, timeout=timeout,
                           env={**server.env(), "TMPDIR": str(layout.tmpdir)})
    except subprocess.TimeoutExpired as exc:
        output = _text(exc.stdout) + _text(exc.stderr)
        code: int | None = None
        limit = exc.timeout
    else:
        output, code, limit = proc.stdout + proc.stderr, proc.returncode, timeout
    log.write_text(output or "")
    if code is None:
        raise ServerError(
            f"datadir initialization did not finish in {limit:.0f} s",
            " ".join(argv),
            f"see {log}",
        )
    if code != 0:
        raise ServerError(
            f"datadir initialization failed (exit code {code}) after "
            f"{time.monotonic() - started:.1f} s:\n{tail_lines(output, 25)}",
            " ".join(argv),
            f"see {log}",
        )


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data
