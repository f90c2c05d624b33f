"""CLI verbs that prepare, without running anything: validate, plan, doctor, db upgrade.

Each verb is a thin wrapper over a library function (:func:`runner.preflight.validate_file`,
:func:`runner.planning.plan`, :func:`runner.doctor.run_doctor`, :func:`store.db.upgrade`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flushbench.cli import app
from flushbench.cli.options import DbOption, dry_run_progress
from flushbench.errors import ConfigError, FlushbenchError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

db_app = typer.Typer(help="Results database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")



@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Experiment files to check.")],
) -> None:
    """Load, expand and preflight experiment files; no server is started."""
    from runner.preflight import validate_file

    failures: list[FlushbenchError] = []
    for path in files:
        try:
            with dry_run_progress(f"{path}: the server parses each option set") as progress:
                report = validate_file(path, progress=progress)
        except FlushbenchError as exc:
            failures.append(exc)
            continue
        exp = report.experiment
        console.print(f"{path}: ok: {len(report.cells)} cells × {exp.repetitions_label()}"
                      f" on {report.server.label}", soft_wrap=True)
        for note in report.notes:
            console.print(f"  note: {note}", soft_wrap=True)
    if len(failures) == 1 and len(files) == 1:
        raise failures[0]
    if failures:
        raise ConfigError(
            f"{len(failures)} of {len(files)} files are invalid:\n"
            + "\n".join(f.render() for f in failures)
        )


@app.command()
def plan(file: Annotated[Path, typer.Argument(help="Experiment file.")]) -> None:
    """Print cells, translated server variables, run order, ETA and disk needed."""
    from runner.planning import plan as make_plan
    from runner.planning import render_plan
    from runner.spec import load_experiment

    exp = load_experiment(file)
    render_plan(make_plan(exp, str(file)), Console(highlight=False, width=max(console.width, 140)))


@app.command()
def doctor(
    db: DbOption = None,
) -> None:
    """Check the environment: servers, drivers, allocators, huge pages, disk, permissions."""
    from runner.doctor import run_doctor

    checks = run_doctor(db=db)
    table = Table(title="flushbench doctor")
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail")
    table.add_column("fix")
    colors = {"ok": "green", "FAIL": "bold red", "warn": "yellow"}
    for c in checks:
        table.add_row(c.name, f"[{colors[c.status]}]{c.status}[/]", c.detail, c.fix or "")
    Console(highlight=False, width=max(console.width, 160)).print(table)
    failed = [c for c in checks if c.status == "FAIL"]
    if failed:
        err_console.print(f"{len(failed)} required check(s) failed: "
                          + ", ".join(c.name for c in failed))
        # SystemExit, not typer.Exit: main() runs click with standalone_mode=False, which turns
        # typer.Exit into a return value that would be lost.
        raise SystemExit(1)
    console.print("all required checks passed")


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Create or migrate the results database to the latest schema."""
    from sqlalchemy.exc import SQLAlchemyError

    from flushbench.errors import StoreError
    from store.db import redacted, resolve_url, upgrade

    url = resolve_url(db)
    try:
        revision = upgrade(url)
    except SQLAlchemyError as exc:
        # The driver's message names host and port, never the password; the URL is redacted.
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StoreError(f"cannot upgrade the results database: {reason}", where=redacted(url),
                         fix="check the URL, that the server is up, and the credentials") from None
    console.print(f"{redacted(url)}: at revision {revision}", soft_wrap=True)
