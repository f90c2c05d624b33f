"""The ``flushbench`` command: one error boundary around verbs that call library functions.

Each verb group lives in a small module of this package (``setup_verbs``: validate/plan/
doctor/db, ``run_verbs``: run/queue/worker/status, ``results_verbs``: report/compare/show/
export) and calls library functions of ``runner`` (which starts processes) or ``analysis``
(which reads results); those two packages never import each other, only this one imports both.
Heavy imports (pandas, scipy, plotly) stay inside the verbs so ``flushbench --help`` is fast.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import typer
from rich.console import Console
from typer._click import exceptions as click_exceptions  # typer vendors its own click

from flushbench.errors import FlushbenchError
from flushbench.paths import work_dir

app = typer.Typer(
    name="flushbench",
    help="Declarative InnoDB flushing experiments on real mysqld sandboxes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True, highlight=False)


def build_app() -> typer.Typer:
    """The app with every verb registered (idempotent; tests drive it with CliRunner)."""
    _register()
    return app


def _register() -> None:
    """Import the verb modules; each adds its commands to :data:`app`."""
    import importlib

    for module in ("setup_verbs", "run_verbs", "results_verbs"):
        importlib.import_module(f"{__name__}.{module}")


def _crash_log(exc: BaseException) -> str:
    """Write the full traceback of a bug to a log file; return where it went."""
    import datetime as dt
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(exc))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for folder in (work_dir() / "logs", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"flushbench-crash-{stamp}-{os.getpid()}.log"
            path.write_text(" ".join(sys.argv) + "\n\n" + text)
            return str(path)
        except OSError:
            continue
    return "(no writable folder for the log; traceback follows)\n" + text


def _say(text: str) -> None:
    """Print user text literally: brackets in keys, values and paths are not markup."""
    try:
        err_console.print(text, markup=False, soft_wrap=True)
    except Exception:  # noqa: BLE001 - the error boundary itself must never fail
        sys.stderr.write(text + "\n")


def main() -> None:
    """Console-script entry point: the one error boundary.

    Exit codes: 0 ok, 1 a verb's own failure (failed runs, doctor), 2 an expected failure
    (``error: where: what — fix``) or a usage error, 70 a bug (short message; the traceback
    goes to a log file), 130 interrupted.
    """
    _register()
    try:
        code = app(standalone_mode=False)
    except FlushbenchError as exc:
        _say(f"error: {exc.render()}")
        sys.exit(2)
    except KeyboardInterrupt:
        _say("interrupted")
        sys.exit(130)
    except click_exceptions.ClickException as exc:  # usage errors in standalone_mode=False
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except BrokenPipeError:
        # `flushbench status | head`: the reader left; nothing is wrong and nothing to say.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - interpreter exit closes it
        sys.exit(0)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug: short message, traceback to a file
        if type(exc).__module__.startswith("sqlalchemy.") and hasattr(exc, "orig"):
            # The database went away or refused mid-command (read-only, locked, dropped).
            orig = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
            _say(f"error: the results database failed: {orig} — check that it is reachable"
                 " and writable (--db / $FLUSHBENCH_DB)")
            sys.exit(2)
        where = _crash_log(exc)
        _say(f"error: internal error ({type(exc).__name__}: {exc}) — this is a flushbench bug;"
             f" the full traceback is in {where}")
        sys.exit(70)
    # typer.Exit(n) comes back as the return value when standalone_mode is False.
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
