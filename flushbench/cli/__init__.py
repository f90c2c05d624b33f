"""The ``flushbench`` command: one error boundary around verbs that call library functions.

Each verb group lives in a small module of this package (``setup_verbs``: validate/plan/
doctor/db, ``run_verbs``: run/queue/worker/status, ``results_verbs``: report/compare/show/
export) and calls library functions of ``runner`` (which starts processes) or ``analysis``
(which reads results); those two packages never import each other, only this one imports both.
Heavy imports (pandas, scipy, plotly) stay inside the verbs so ``flushbench --help`` is fast.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import stat
import sys
from pathlib import Path
from typing import NoReturn

import typer
from typer._click import exceptions as click_exceptions  # typer vendors its own click

from core.errors import FlushbenchError, bounded
from core.paths import open_private, work_dir
from core.redaction import remember_url
from flushbench.cli.console import make_console, say

app = typer.Typer(
    name="flushbench",
    help="Declarative InnoDB flushing experiments on real mysqld sandboxes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = make_console(stderr=True)


def _print_version(value: bool) -> None:
    """``flushbench --version``: the version, the commit of the checkout whose code runs (and
    whether its code differs from it), and where that code is — the same record every run
    stores, so a pinned checkout (``scripts/pinned.sh``) can be checked before a long queue."""
    if not value:
        return
    from core.paths import REPO_ROOT
    from runner.run.metadata import code_version

    v = code_version()
    state = " (code modified)" if v["modified"] else ""
    typer.echo(f"flushbench {v['version']} at {v['commit'] or _no_commit(REPO_ROOT)}{state}"
               f" from {REPO_ROOT}")
    raise typer.Exit()


def _no_commit(root: Path) -> str:
    """Why ``--version`` names no commit: git missing, no checkout, or git cannot read it."""
    import shutil

    if not (root / ".git").exists():
        return "no git checkout"
    if shutil.which("git") is None:
        return "an unknown commit (git is not installed, so the checkout cannot be read)"
    return "an unknown commit (git cannot read the checkout: try `git status` in it)"


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the version, commit and code location, then exit."),
) -> None:
    """Declarative InnoDB flushing experiments on real mysqld sandboxes."""


def build_app() -> typer.Typer:
    """The app with every verb registered (idempotent; tests drive it with CliRunner)."""
    _register()
    return app


def _register() -> None:
    """Import the verb modules; each adds its commands to :data:`app`; ``--help`` names
    types in words and its descriptions flow (:mod:`flushbench.cli.help_text`)."""
    import importlib

    from flushbench.cli.options import use_help_words

    use_help_words()

    for module in ("setup_verbs", "run_verbs", "results_verbs", "mext_verb",
                   "bundle_verbs", "plot_verbs", "server_verbs"):
        importlib.import_module(f"{__name__}.{module}")
    importlib.import_module(f"{__name__}.disturbed_verb")  # flushbench disturbed
    from flushbench.cli.help_text import flow_app

    flow_app(app)  # the docstrings' paragraphs flow to the terminal's width


def _crash_log(exc: BaseException) -> str:
    """Write the full traceback of a bug to a log file (mode 0600, redacted); return where."""
    import datetime as dt
    import tempfile
    import traceback

    from core.redaction import redact, redact_argv

    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # noqa: BLE001 - a traceback that cannot be formatted still gets a log
        text = f"{type(exc).__name__} (traceback could not be formatted)\n"
    text = redact(bounded(text, 200_000))
    argv = " ".join(redact_argv(sys.argv))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for folder in (work_dir() / "logs", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"flushbench-crash-{stamp}-{os.getpid()}.log"
            with open_private(path, "w") as handle:
                handle.write(argv + "\n\n" + text)
            return str(path)
        except OSError:
            continue
    return "(no writable folder for the log; traceback follows)\n" + text


def _say(text: str) -> None:
    """Print user text literally (no markup, no emoji, controls escaped) and redacted."""
    say(err_console, text)


#: errno values that mean "the user's file or folder", not a flushbench bug.
_USER_ERRNOS = frozenset({
    errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EISDIR,
    errno.ENOTDIR, errno.ENOENT, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP, errno.EBUSY,
    errno.ETXTBSY, errno.ENXIO, errno.EFBIG,
})


def _os_error_message(exc: OSError) -> str:
    """``error: PATH: permission denied — fix`` for a file problem the user can fix."""
    where = exc.filename if exc.filename is not None else "(a file flushbench opened)"
    reason = (exc.strerror or str(exc)).lower()
    fix = {
        errno.EACCES: "check the permissions of the file and its folder",
        errno.EPERM: "the file is immutable or owned by someone else (lsattr, ls -l)",
        errno.EROFS: "the file system is read-only: choose a writable place",
        errno.ENOSPC: "free space on that disk, or choose another place",
        errno.EDQUOT: "free space within your quota, or choose another place",
        errno.EISDIR: "name a file, not a folder",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.ENOENT: "check the path",
    }.get(exc.errno or 0, "check the path")
    return f"error: {where}: {reason} — {fix}"


def _internal_error(exc: BaseException) -> str:
    """The one-line message for a bug; bounded, and itself unable to fail."""
    try:
        detail = bounded(str(exc), 300)
    except Exception:  # noqa: BLE001 - str() of the exception itself failed
        detail = "(message unavailable)"
    try:
        where = _crash_log(exc)
    except Exception:  # noqa: BLE001 - the crash handler must never fail
        where = "(the crash log could not be written)"
    return (f"error: internal error ({type(exc).__name__}: {detail}) — this is a flushbench"
            f" bug; the full traceback is in {where}")


def _closed_outputs() -> list[int]:
    """The descriptors of stdout and stderr whose reader closed its end (`flushbench status |
    head`): poll reports an error on the write end of a pipe nobody reads any more."""
    gone = []
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            fd = stream.fileno() if stream is not None else -1
            if fd < 0:
                continue
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            if any(event & select.POLLERR for _, event in poller.poll(0)):
                gone.append(fd)
        except (OSError, ValueError):
            continue
    return gone


def _reader_left() -> bool:
    """Whether the user's reader of our output left (a BrokenPipeError is then theirs, not
    a pipe to a child process)."""
    return bool(_closed_outputs())


def _is_pipe(fd: int) -> bool:
    """Whether ``fd`` is a pipe (or FIFO)."""
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def _is_devnull(fd: int) -> bool:
    """Whether ``fd`` is /dev/null (where rich points stdout after a broken pipe)."""
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (null.st_dev, null.st_ino)


def _quiet_exit() -> NoReturn:
    """Exit 0 after the reader left, as `head` expects of a producer: nothing is wrong and
    nothing to say. The closed descriptors are pointed at /dev/null, so the output still
    buffered for them is flushed there at exit instead of failing again."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in _closed_outputs():
            os.dup2(devnull, fd)
    sys.exit(0)


def main() -> None:
    """Console-script entry point: the one error boundary.

    Exit codes: 0 ok, 1 a verb's own failure (failed runs, doctor), 2 an expected failure
    (``error: where: what — fix``) or a usage error, 70 a bug (short message; the traceback
    goes to a log file), 130 interrupted.
    """
    _register()
    # Every password given on the command line or in $FLUSHBENCH_DB is masked wherever it
    # would be printed or written, even inside a driver's own message (core.redaction).
    for value in [*sys.argv[1:], os.environ.get("FLUSHBENCH_DB", "")]:
        remember_url(value)
    piped = _is_pipe(1)
    try:
        code = app(standalone_mode=False)
    except FlushbenchError as exc:
        _say(f"error: {exc.render()}")
        sys.exit(2)
    except KeyboardInterrupt:
        _say("interrupted")
        sys.exit(130)
    except click_exceptions.ClickException as exc:  # usage errors in standalone_mode=False
        _say(f"error: {exc.format_message()}" if not isinstance(exc, click_exceptions.UsageError)
             else _usage_text(exc))
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except BrokenPipeError as exc:
        if not _reader_left():
            _say(_internal_error(exc))  # a pipe to a child process, not the user's reader
            sys.exit(70)
        _quiet_exit()
    except SystemExit as exc:
        # typer and rich turn EPIPE into exit 1 (rich after pointing stdout at /dev/null);
        # `flushbench status | head` is no failure.
        if isinstance(exc.__context__, BrokenPipeError) and (
                _reader_left() or (piped and _is_devnull(1))):
            _quiet_exit()
        raise
    except OSError as exc:
        if exc.errno not in _USER_ERRNOS:
            _say(_internal_error(exc))
            sys.exit(70)
        # A file or folder the user named cannot be used (read-only, immutable, full disk).
        _say(_os_error_message(exc))
        sys.exit(2)
    except RuntimeError as exc:
        if not str(exc).startswith("Symlink loop from "):
            _say(_internal_error(exc))
            sys.exit(70)
        # pathlib's resolve() of a path whose symlinks loop (Python < 3.13 raises this, not
        # OSError ELOOP): the path the user gave cannot be used.
        looped = str(exc).removeprefix("Symlink loop from ").strip("'")
        _say(f"error: {looped}: too many levels of symbolic links — check the path")
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - a bug: short message, traceback to a file
        if type(exc).__module__.startswith("sqlalchemy.") and hasattr(exc, "orig"):
            # The database went away or refused mid-command (read-only, locked, dropped):
            # named, with a fix that fits the driver's reason (store.db.database_failure).
            from store.db import database_failure

            _say(f"error: {database_failure(exc).render()}")
            sys.exit(2)
        _say(_internal_error(exc))
        sys.exit(70)
    # typer.Exit(n) comes back as the return value when standalone_mode is False.
    sys.exit(code if isinstance(code, int) else 0)


def _usage_text(exc: click_exceptions.UsageError) -> str:
    """click's usage error (``Usage: … Try --help … Error: …``), user text shown literally."""
    import io

    buffer = io.StringIO()
    ctx = exc.ctx
    if ctx is not None:
        buffer.write(ctx.get_usage() + "\n")
        if ctx.command.get_help_option(ctx) is not None:
            buffer.write(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.\n")
    buffer.write(f"\nError: {exc.format_message()}")
    return buffer.getvalue()


if __name__ == "__main__":
    main()
