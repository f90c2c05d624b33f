"""CLI verbs that run things: ``run``, ``queue add|list|cancel``, ``worker``, ``status``."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from flushbench.cli import app
from flushbench.cli.options import DbOption, WorkOption, stdout_console

console = stdout_console()
queue_app = typer.Typer(help="The run queue in the results database.", no_args_is_help=True)
app.add_typer(queue_app, name="queue")



def _sigterm_as_interrupt() -> None:
    # A service manager stops us with SIGTERM: treat it like Ctrl-C so the current run is
    # marked interrupted (and redone on resume) instead of being left "running".
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _run_seconds(exp) -> float:  # noqa: ANN001 - a runner.spec.Experiment
    # restore + start + stop overhead on top of warmup + duration (plan shows the detailed ETA)
    return exp.workload.warmup + exp.workload.duration + 30.0


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="Experiment file (YAML).")],
    db: DbOption = None,
    work: WorkOption = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Queue every run again, even finished ones.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Queue failed runs again.")
    ] = False,
) -> None:
    """Preflight, queue and run an experiment; rerunning resumes where it stopped."""
    from flushbench.cli.summary import print_cell_summary
    from runner.execute import prepare, run_experiment
    from store.db import ResultsDB

    _sigterm_as_interrupt()
    ctx = prepare(file, work)  # parsed and preflighted once, before anything is written
    results = ResultsDB(db)
    holder: dict = {}

    def on_prepared(ctx, enq) -> None:  # noqa: ANN001
        holder["ctx"] = ctx
        console.print(
            f"[bold]{ctx.exp.name}[/]: {len(ctx.cells)} cells × {ctx.exp.repetitions}"
            " repetitions — "
            f"{enq.queued + enq.requeued} to run, {enq.kept_done} done already"
            + (
                f", {enq.kept_failed} failed kept (--retry-failed to redo)"
                if enq.kept_failed
                else ""
            )
        )

    from flushbench.cli.progress import LiveReporter
    with LiveReporter(console, _run_seconds(ctx.exp)) as reporter:
        outcome = run_experiment(
            ctx,
            results,
            fresh=fresh,
            retry_failed=retry_failed,
            reporter=reporter,
            work=work,
            on_prepared=on_prepared,
        )
    print_cell_summary(console, results, outcome.experiment_id)
    if outcome.failed:
        console.print(
            f"[red]{outcome.failed} run(s) failed[/] — `flushbench show RUN` prints the evidence"
        )
        raise typer.Exit(1)


@queue_app.command("add")
def queue_add(
    file: Annotated[Path, typer.Argument(help="Experiment file (YAML).")],
    db: DbOption = None,
    work: WorkOption = None,
    fresh: Annotated[bool, typer.Option("--fresh")] = False,
) -> None:
    """Preflight an experiment and queue its runs for `flushbench worker` (nothing starts)."""
    from runner import queue
    from runner.execute import prepare, stored_cells
    from store.db import ResultsDB

    ctx = prepare(file, work)
    enq = queue.enqueue(
        ResultsDB(db), ctx.exp, ctx.cells, stored_cells(ctx), ctx.source, fresh=fresh
    )
    console.print(
        f"queued {enq.queued + enq.requeued} run(s) of {ctx.exp.name}"
        f" ({enq.kept_done} done already)"
    )


@queue_app.command("list")
def queue_list(db: DbOption = None) -> None:
    """Runs per experiment by status (latest attempt of each run)."""
    status(db)


@queue_app.command("cancel")
def queue_cancel(
    experiment: Annotated[str, typer.Argument(help="Experiment name.")], db: DbOption = None
) -> None:
    """Cancel the queued runs of an experiment (finished runs are kept)."""
    from runner import queue
    from store.db import ResultsDB

    n = queue.cancel(ResultsDB(db, create=False), experiment)
    console.print(f"cancelled {n} queued run(s) of {experiment}")


@app.command()
def status(db: DbOption = None) -> None:
    """What is queued, running, done and failed, per experiment."""
    from runner import queue
    from store.db import ResultsDB

    results = ResultsDB(db, create=False)  # a mistyped path must not create a database
    with results.session() as s, s.begin():
        queue.mark_abandoned(s)
    rows = queue.status_counts(results)
    table = Table(title="flushbench queue")
    cols = ("queued", "running", "done", "failed", "interrupted", "cancelled")
    table.add_column("id", justify="right")
    table.add_column("experiment")
    for col in cols:
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(str(row["experiment_id"]), row["name"], *(str(row.get(c, 0)) for c in cols))
    console.print(table)


@app.command()
def worker(
    db: DbOption = None,
    work: WorkOption = None,
) -> None:
    """Run queued runs of every experiment in the database until the queue is empty."""
    from sqlalchemy import select

    from flushbench.cli.progress import LiveReporter
    from runner.execute import prepare_stored, work_queue
    from store.db import ResultsDB
    from store.models import Cell, Experiment, Run

    _sigterm_as_interrupt()
    results = ResultsDB(db, create=False)  # nothing is queued in a database that does not exist
    while True:
        with results.session() as s:
            row = s.execute(
                select(Experiment.id)
                .join(Cell)
                .join(Run)
                .where(Run.status == "queued")
                .order_by(Experiment.id)
                .limit(1)
            ).first()
        if row is None:
            console.print("queue empty")
            return
        (exp_id,) = row
        ctx = prepare_stored(results, exp_id, work)  # runs what was queued, not today's files
        with LiveReporter(console, _run_seconds(ctx.exp)) as reporter:
            work_queue(results, ctx, exp_id, reporter)
