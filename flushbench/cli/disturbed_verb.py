"""``flushbench disturbed EXPERIMENT``: the runs the rest of the machine disturbed, with figures."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from flushbench.cli import app
from flushbench.cli.console import literal, make_console
from flushbench.cli.options import DbOption

#: Figures shown per kind: (evidence key, label, format).
_FIGURES = {
    "disturbed-cpu": (("others_share", "others' CPU", "{:.1%}"),
                      ("others_peak_share", "peak interval", "{:.1%}")),
    "disturbed-steal": (("steal_share", "steal", "{:.1%}"),),
    "disturbed-io": (("others_bps", "others' B/s", "{:,.0f}"),
                     ("others_share", "of the device's bytes", "{:.1%}")),
    "below-limit": (("share", "of the limit", "{:.1%}"),
                    ("intervals_at_limit", "intervals at it", "{:.0f}")),
}


def _figures(kind: str, figures: dict) -> str:
    parts = []
    for key, label, fmt in _FIGURES.get(kind, ()):
        value = figures.get(key)
        if isinstance(value, int | float):
            parts.append(f"{label} {fmt.format(value)}")
    return ", ".join(parts)


@app.command("disturbed")
def disturbed_cmd(
    experiment: Annotated[str, typer.Argument(help="Experiment name (or id).")],
    db: DbOption = None,
) -> None:
    """List the experiment's disturbed runs (every attempt): what disturbed each, its figures,
    and whether the experiment's `disturbed:` policy keeps it in the verdicts."""
    from analysis.disturbed import disturbed_runs

    table = disturbed_runs(db, experiment)
    console = make_console()
    if table.empty:
        console.print(literal(f"{experiment}: no disturbed run"))
        return
    t = Table(title=f"disturbed runs of {experiment}")
    for col in ("run", "cell #rep/attempt", "status", "warning", "figures", "counts?"):
        t.add_column(col)
    for _, r in table.iterrows():
        status = str(r["status"]) + (" (superseded)" if r["superseded"] else "")
        counts = f"no ({r['action']})" if r["excluded"] else f"yes ({r['action']})"
        t.add_row(str(r["run_id"]), literal(f"{r['cell_label']} #{r['repetition']}/"
                                            f"{r['attempt']}"),
                  literal(status), literal(r["kind"]),
                  literal(_figures(r["kind"], r["figures"])), literal(counts))
    console.print(t)
    for _, r in table.iterrows():
        console.print(literal(f"run {r['run_id']} {r['kind']}: {r['message']}"), soft_wrap=True)
