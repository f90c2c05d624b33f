"""``flushbench disturbed EXPERIMENT``: the runs the rest of the machine disturbed, with figures."""

from __future__ import annotations

from typing import Annotated

import typer

from flushbench.cli import app, tables
from flushbench.cli.console import literal, make_console, para
from flushbench.cli.options import DbOption


@app.command("disturbed")
def disturbed_cmd(
    experiment: Annotated[str, typer.Argument(help="Experiment name (or id).")],
    db: DbOption = None,
) -> None:
    """List the experiment's disturbed runs (every attempt): what disturbed each, its figures,
    and whether the experiment's `disturbed:` policy keeps it in the verdicts."""
    from analysis.reading.query import experiment_info
    from analysis.reading.rows import row_labels
    from analysis.steadiness.disturbed import disturbed_runs
    from analysis.tables import frames

    table = disturbed_runs(db, experiment)
    console = make_console()
    if table.empty:
        console.print(literal(f"{experiment}: no disturbed run"))
        return
    # A row is called by its name in the experiment file, else by the knobs that differ
    # from its baseline, as the report and export call it.
    info = experiment_info(db, experiment)
    names = row_labels(info["stored"].spec,
                       frames.runs(db, info["id"], all_attempts=True).drop_duplicates("cell_id"))
    table["row"] = [names.get(int(c), label) for c, label in zip(table["cell_id"],
                                                                 table["cell_label"], strict=True)]
    console.print(tables.disturbed_table(experiment, table))
    for _, r in table.iterrows():
        para(console, literal(f"run {r['run_id']} {r['kind']}: {r['message']}"))
