"""The ``flushbench`` command: one error boundary around verbs that call library functions.

Each verb lives in a small module (``cli_setup``: validate/plan/doctor/db, ``cli_run``:
run/queue/worker/status, ``analysis.cli``: report/compare/show/export) and is registered here.
Heavy imports (pandas, scipy, plotly) stay inside the verbs so ``flushbench --help`` is fast.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from flushbench.errors import FlushbenchError

app = typer.Typer(
    name="flushbench",
    help="Declarative InnoDB flushing experiments on real mysqld sandboxes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True, highlight=False)


def _register() -> None:
    """Import the verb modules; each adds its commands to :data:`app`."""
    import importlib

    for module in ("runner.cli_setup", "runner.cli_run"):
        importlib.import_module(module)
    try:
        analysis_cli = importlib.import_module("analysis.cli")
    except ModuleNotFoundError as exc:
        if exc.name != "analysis.cli":
            raise
    else:
        analysis_cli.register(app)


def main() -> None:
    """Console-script entry point: expected failures print ``error: …`` and exit 2."""
    from typer._click import exceptions as click_exceptions  # typer vendors its own click

    _register()
    try:
        code = app(standalone_mode=False)
    except FlushbenchError as exc:
        err_console.print(f"[bold red]error:[/] {exc.render()}", soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except click_exceptions.ClickException as exc:  # usage errors in standalone_mode=False
        exc.show()
        sys.exit(exc.exit_code)
    except click_exceptions.Abort:
        sys.exit(1)
    # typer.Exit(n) comes back as the return value when standalone_mode is False.
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
