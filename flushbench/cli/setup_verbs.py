"""CLI verbs that prepare, without running anything: validate, plan, doctor, db upgrade.

Each verb is a thin wrapper over a library function
(:func:`runner.admission.preflight.validate_file`, :func:`runner.admission.planning.plan`,
:func:`runner.admission.doctor.run_doctor`, :func:`store.db.upgrade`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from core.errors import ConfigError, FlushbenchError
from flushbench.cli import app, tables
from flushbench.cli.console import literal, make_console, para, shown
from flushbench.cli.options import DbOption, dry_run_progress

# Plain lines only (paths and URLs the user typed): no markup, so "[/b]" in a path prints.
console = make_console(markup=False)
err_console = make_console(stderr=True, markup=False)

db_app = typer.Typer(help="Results database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")



@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Experiment files to check.")],
) -> None:
    """Load, expand and preflight experiment files; no server is started."""
    from runner.admission.preflight import validate_file

    failures: list[FlushbenchError] = []
    for path in files:
        try:
            with dry_run_progress(f"{path}: the server parses each option set") as progress:
                report = validate_file(path, progress=progress)
        except FlushbenchError as exc:
            failures.append(exc)
            continue
        exp = report.experiment
        para(console, literal(f"{path}: ok: {len(report.cells)} cells ×"
                              f" {exp.repetitions_label()} on {report.servers_label()}"))
        controls = report.host_controls_summary()
        if controls is not None:
            para(console, literal(f"  {controls}"))
        for note in filter(None, [exp.workload.driver_choice, *report.notes]):
            para(console, literal(f"  note: {note}"))
    if len(failures) == 1 and len(files) == 1:
        raise failures[0]
    if failures:
        raise ConfigError(
            f"{len(failures)} of {len(files)} files are invalid:\n"
            + "\n".join(f.render() for f in failures)
        )


@app.command()
def plan(
    file: Annotated[Path, typer.Argument(help="Experiment file.")],
    detect: Annotated[str | None, typer.Option(
        help="A change to detect, e.g. 10%: print the runs each comparison needs for it.")] = None,
    cv: Annotated[str | None, typer.Option(
        help="With --detect: the run-to-run noise as a CV, e.g. 3%.")] = None,
    pilot: Annotated[str | None, typer.Option(
        help="With --detect: take the noise from this experiment's baseline runs; and look"
        " for flush cycles only in its runs.")] = None,
    db: DbOption = None,
) -> None:
    """Print cells, translated server variables, run order, ETA and disk needed.

    With --detect, also the repetitions each comparison needs to find that change with 80 %
    power by the report's own verdict rule, and the machine hours they cost; the noise comes
    from --cv, --pilot, or the experiment's own baseline runs already in the database.
    Warns when the window cannot hold 5 flush cycles of a period seen in earlier runs of the
    same configuration in the database (--pilot: that experiment's).
    """
    from core.experiment.loading import load_experiment
    from runner.admission.planning import plan as make_plan

    if detect is None and cv is not None:
        raise ConfigError("--cv only goes with --detect", where="plan",
                          fix="add --detect 10% (the change you want to find)")
    if cv is not None and pilot is not None:
        raise ConfigError("give --cv or --pilot, not both", where="plan",
                          fix="--cv states the noise; --pilot measures it from a database")
    effect = _percent(detect, "--detect") if detect is not None else None
    stated_cv = _percent(cv, "--cv") / 100 if cv is not None else None
    exp = load_experiment(file)
    made = make_plan(exp, str(file))
    out = make_console()
    tables.print_plan(made, out)
    _print_cycles(made, pilot, db, out)
    if effect is not None:
        _print_power(made, effect, stated_cv, pilot, db, out)


def _print_cycles(made, pilot: str | None, db: str | None, out) -> None:  # noqa: ANN001
    """Warn when the window cannot hold 5 cycles of a period earlier runs of a cell's
    configuration showed (analysis/steadiness/cycle_history.py); quiet without a results
    database."""
    from analysis.steadiness.cycle_history import cycles_warnings, earlier_periods

    exp = made.experiment
    window = exp.resolved_window()
    configs = [(c.label, c.knobs) for c in made.cells]
    try:
        periods = earlier_periods(db, [k for _, k in configs], pilot)
    except FlushbenchError:
        if pilot is not None:
            raise
        return  # no results database yet: nothing ran before
    for text in cycles_warnings(window["end"] - window["start"], configs, periods):
        para(out, literal(f"warning: {text}"))


def _percent(text: str, option: str) -> float:
    """``10%`` or ``10`` → 10.0; anything else, or outside (0, 1000), is a ConfigError."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (0 < value < 1000):
        raise ConfigError(f"{option} {shown(text)} is not a percentage between 0 and 1000",
                          where="plan", fix=f"write e.g. {option} 10%")
    return value


def _print_power(made, effect: float, cv: float | None, pilot: str | None,  # noqa: ANN001
                 db: str | None, out) -> None:  # noqa: ANN001 - a runner Plan, a Console
    """The power table of ``plan --detect``: per comparison, MDE now and runs needed."""
    import pandas as pd

    from analysis.comparisons.power_plan import Noise, comparison_power, pilot_noise, power_sentence

    exp = made.experiment
    if cv is not None:
        noise = Noise(cv, f"--cv {100 * cv:g} %")
    else:
        try:
            noise = pilot_noise(db, pilot or exp.name)
        except FlushbenchError as exc:
            if pilot is not None:
                raise
            raise ConfigError(
                f"--detect needs a noise figure, and the database has none for {exp.name!r}"
                f" ({exc.what})", where="plan",
                fix="give --cv 3% (a stated CV) or --pilot EXPERIMENT (measured)") from None
    seconds: dict[str, list[float]] = {}
    for run in made.runs:
        seconds.setdefault(run.cell.key, []).append(run.seconds)
    from analysis.reading.baselines import baseline_of

    own = baseline_of(pd.DataFrame([{"cell_id": i, "is_baseline": c.is_baseline,
                                     "knobs": c.knobs} for i, c in enumerate(made.cells)]))
    base = next((c for c in made.cells if c.is_baseline), None)
    if base is None:
        raise ConfigError("--detect compares cells with the baseline, and this experiment has"
                          " none", where=made.source, fix="set `baseline:` in the file")
    rows, short = [], []
    for i, cell in enumerate(made.cells):
        if cell.is_baseline:
            continue
        base = made.cells[own[i]]  # the cell's own baseline (one per server when several)
        per_run = max(seconds.get(cell.key, [0.0]) + seconds.get(base.key, [0.0]))
        row = comparison_power(cell.label, exp.repetitions_of(base), exp.repetitions_of(cell),
                               per_run, effect, noise,
                               blocked_cells=len(made.cells) if exp.order.mode == "blocks"
                               else None)
        rows.append((cell.label, row))
        if not row.can_detect:
            short.append(cell.label)
    out.print(tables.power_table(effect, rows))
    out.print(literal(power_sentence(effect, noise)))
    if short:
        out.print(f"[yellow]warning:[/] the declared repetitions cannot find {effect:g} % in"
                  f" {len(short)} of {len(made.cells) - 1} comparison(s); raise"
                  " `repetitions` (and `baseline_repetitions`) to the runs needed above")


@app.command()
def doctor(
    db: DbOption = None,
) -> None:
    """Check the environment: servers, drivers, allocators, huge pages, disk, permissions."""
    from runner.admission.doctor import run_doctor

    checks = [*run_doctor(db=db), _database_check(db)]
    table = tables.doctor_table(checks)
    make_console().print(table)
    failed = [c for c in checks if c.status == "FAIL"]
    if failed:
        err_console.print(f"{len(failed)} required check(s) failed: "
                          + shown(", ".join(c.name for c in failed)))
        # SystemExit, not typer.Exit: main() runs click with standalone_mode=False, which turns
        # typer.Exit into a return value that would be lost.
        raise SystemExit(1)
    console.print("all required checks passed")


def _database_check(db: str | None):  # noqa: ANN202 - a runner.admission.doctor.Check
    """Open the results database read-only-minded (never created here) and say what it is.

    A SQLite file that does not exist yet is fine (the first run creates it); one that exists,
    or a server database, must be a usable flushbench database at the latest schema —
    required when named by ``--db`` / ``$FLUSHBENCH_DB``, a warning for the default path.
    """
    import os

    from runner.admission.doctor import Check
    from store.db import ResultsDB, current_revision, redacted, resolve_url

    explicit = db is not None or bool(os.environ.get("FLUSHBENCH_DB"))
    url = resolve_url(db, write=False)  # doctor only reads: a study bundle is fine here
    from store.bundles import is_bundle_path

    named = db if db is not None else os.environ.get("FLUSHBENCH_DB")
    where = (f"{named} (a study bundle, read-only)" if named and is_bundle_path(named)
             else redacted(url))
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists() and not path.is_symlink():
            return Check("results database", True, f"{where}: not created yet (the first run"
                         " or `flushbench db upgrade` creates it)", None)
    try:
        with ResultsDB(db, create=False, write=False) as results:
            revision = current_revision(results.engine)
        return Check("results database", True, f"{where}: at revision {revision}", None)
    except FlushbenchError as exc:
        return Check("results database", False, f"{where}: {exc.what}",
                     exc.fix or "check --db / $FLUSHBENCH_DB", required=explicit)


@db_app.command("upgrade")
def db_upgrade(
    db: DbOption = None,
    i_have_a_backup: Annotated[bool, typer.Option(
        "--i-have-a-backup",
        help="PostgreSQL without pg_dump on PATH: migrate anyway; you took your own backup.",
    )] = False,
    backup_dir: Annotated[Path | None, typer.Option(
        help="Where pg_dump's backup goes (default results/backups). A SQLite backup always"
             " goes beside its file.",
    )] = None,
) -> None:
    """Create the results database, or migrate it to the latest schema without losing a row.

    An existing schema is backed up first (a copy beside a SQLite file; pg_dump for
    PostgreSQL), migrated in one transaction, and every table's row count is checked against
    the backup; on any difference nothing is kept and the backup is restored.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from core.errors import StoreError
    from store.db import redacted, resolve_url, upgrade

    url = resolve_url(db)
    shown = redacted(url)
    try:
        result = upgrade(url, i_have_a_backup=i_have_a_backup, backup_dir=backup_dir,
                         on_revision=lambda rev: console.print(f"  applied revision {rev}"))
    except SQLAlchemyError as exc:
        # The driver's message names host and port, never the password; the URL is redacted.
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StoreError(f"cannot upgrade the results database: {reason}", where=shown,
                         fix="check the URL, that the server is up, and the credentials") from None
    if result.before == result.after:
        console.print(f"{shown}: at revision {result.after} (already the latest schema)",
                      soft_wrap=True)
        return
    if result.before is None:
        console.print(f"{shown}: created at revision {result.after}", soft_wrap=True)
        return
    console.print(f"{shown}: upgraded from revision {result.before} to {result.after}",
                  soft_wrap=True)
    if result.backup is not None:
        console.print(f"backup: {result.backup} ({result.backup_note})", soft_wrap=True)
    else:
        console.print(f"backup: {result.backup_note}", soft_wrap=True)
    kept = ", ".join(f"{name} {count}" for name, count in result.counts.items())
    console.print(f"rows kept, checked table by table: {kept}", soft_wrap=True)
