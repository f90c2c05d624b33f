"""``flushbench mext RUN``: the stored ``mysqladmin ext`` samples in ``pt-mext``'s layout."""

from __future__ import annotations

from typing import Annotated

import typer

from flushbench.cli import app, tables
from flushbench.cli.console import literal, make_console
from flushbench.cli.options import DbOption, check_run_id


@app.command("mext")
def mext_cmd(
    run_id: Annotated[int, typer.Argument(help="Run id (see `flushbench status`).")],
    rate: Annotated[bool, typer.Option("--rate", help="Deltas per second.")] = False,
    grep: Annotated[str | None, typer.Option(
        help="Only counters matching this regular expression (case-insensitive; one that"
        " takes over 2 s, such as nested repeats, is refused).")] = None,
    counters: Annotated[str | None, typer.Option(
        help="Only these counters, comma-separated.")] = None,
    window: Annotated[bool, typer.Option(
        "--window", help="Only the samples inside the measurement window.")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="CSV on stdout (every column).")] = False,
    db: DbOption = None,
) -> None:
    """Counters as rows, sampler intervals as columns, deltas per interval (pt-mext -r).

    The first column is each counter's absolute value; the derived rows (dirty pages %,
    checkpoint age) are levels. On a terminal the columns are cut into blocks that fit its
    width; --csv prints them all.
    """
    from analysis.reading.mext import mext

    check_run_id(run_id)
    names = [c.strip() for c in counters.split(",") if c.strip()] if counters else None
    table = mext(db, run_id, counters=names, grep=grep, window_only=window, rate=rate)
    values = table.values
    if csv:
        typer.echo(values.to_csv(index_label="counter", float_format="%.6g"), nl=False)
        return
    console = make_console()
    per_block = max(1, (console.width - tables.MEXT_NAME_WIDTH - 2)
                    // (tables.MEXT_VALUE_WIDTH + 3))
    columns = list(values.columns)
    unit = "per second" if rate else "per interval"
    console.print(literal(f"run {run_id}: {len(values)} rows, {len(columns)} samples; first"
                          f" column absolute, then deltas {unit}"))
    for start in range(0, len(columns), per_block):
        block = columns[start:start + per_block]
        console.print(tables.mext_block_table(values, block, columns[0], table.restarts, rate))
    if table.restarts:
        console.print(literal("the server restarted inside " + ", ".join(table.restarts)
                              + ": counters reset, so those intervals have no delta"))
