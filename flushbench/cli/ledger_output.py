"""What ``flushbench compare`` prints of the write path: the ledger (KiB per transaction by
part, the residual), the floor and the bytes above it by cause, and the cost table against
each row's baseline — as rich tables, or as Markdown with ``compare --format markdown``
(analysis/writes/ledger.py, analysis/writes/write_costs.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from core.units import format_number as number
from flushbench.cli import tables
from flushbench.cli.console import para, printable, shown

if TYPE_CHECKING:
    from store.db import ResultsDB


def _costs(eff: Any, cmp: Any) -> Any:
    """The cost table of analysis/writes/write_costs.py, each row against its own baseline."""
    from analysis.reading.baselines import baseline_of
    from analysis.writes import write_costs

    return write_costs.table(eff.cost_cells, eff.ledger_cells, baseline_of(cmp.cells))


def print_ledger_tables(con: Any, eff: Any, cmp: Any, ids: dict[Any, str], m: Any) -> None:
    """The ledger, the floor and the cost tables, with the sentences that read them."""
    from analysis.writes import ledger

    cells = eff.ledger_cells
    if cells.empty:
        return
    unit = "New-Order" if m.per_minute else "transaction"
    con.print(tables.ledger_table(cells, ids, unit))
    off = [ids.get(c, str(c)) for c, r in cells.iterrows() if not ledger.accounted(r)]
    para(con, "write path (rules: docs/statistics.md, \"The write-path ledger\"): device = the"
              " throttle group's written bytes (else /proc/diskstats); pages = every buffer-pool"
              " page write (tables, undo, system, temporary); LRU where the server counts it"
              " (– : not split); residual = device − the parts"
              + (f"; the parts miss the device's bytes by more than "
                 f"{100 * ledger.TOLERANCE:.0f} % in {shown(', '.join(off))}" if off else
                 f"; the parts add up to the device's bytes within "
                 f"{100 * ledger.TOLERANCE:.0f} % in every row"))
    con.print(tables.floor_table(cells, ids, unit))
    para(con, "floor = the redo generated (LSN growth) + the fewest page writes its mean dirty"
              " pages allow before the checkpoint age limit forces them (dirty pages × redo"
              f" per {unit} ÷ the limit); ×floor = device ÷ floor")
    con.print(tables.write_costs_table(_costs(eff, cmp), ids, unit))


def print_markdown(experiment: str, db: ResultsDB | str | None, *, force: bool) -> None:
    """``compare --format markdown``: the relative table (each row against its baseline),
    then the ledger and the cost table as Markdown tables, for a blog post (labels are the
    rows' names where the experiment gives them, else what differs from their baseline)."""
    from analysis.reading.metric import metric_view
    from analysis.reading.rows import row_labels
    from analysis.writes import ledger, write_costs
    from flushbench.cli import relative_output

    cmp, eff, rel, lat = relative_output.relative_table(experiment, db, force=force)
    m = metric_view(cmp.experiment)
    unit = "New-Order" if m.per_minute else "transaction"
    # A row's name, else the knobs that differ from its baseline; labels are user text:
    # credentials masked, control characters escaped.
    labels = {c: printable(n) for c, n in
              row_labels(cmp.experiment["stored"].spec, cmp.cells).items()}
    typer.echo(f"### Against each row's baseline: {printable(cmp.experiment['name'])}\n")
    typer.echo(relative_output.markdown(rel))
    servers = relative_output.cross_server_markdown(cmp, rel, lat, eff)
    if servers:
        typer.echo(servers)
    cells = eff.ledger_cells
    head = ["configuration", *[f"{h} KiB/{unit}" for h in
                               ("device", "redo", "doublewrite", "data pages", "of which LRU",
                                "binlog", "residual")], "floor KiB", "× floor", "largest"]
    rows = [[labels.get(int(c), str(c)),
             *[number(r[k], ",.1f") for k in ("device_kib", "redo_kib", "doublewrite_kib",
                                             "pages_kib", "pages_lru_kib", "binlog_kib",
                                             "residual_kib", "floor_kib")],
             number(r["amplification"], ".2f"), str(r["largest"] or "–")]
            for c, r in cells.iterrows()]
    out = typer.echo
    out(f"### Write path per {unit}: {printable(cmp.experiment['name'])}\n")
    out(write_costs.markdown_table(head, rows) if rows else "(no run with samples)\n")
    out(f"### Cost per {unit}\n")
    out(write_costs.markdown(_costs(eff, cmp), labels, unit))
    out(f"Median of each row's runs over the measurement window; rules: flushbench's"
          f" docs/statistics.md (\"The write-path ledger\"). Residual: the device's bytes"
          f" less the parts ({100 * ledger.TOLERANCE:.0f} % is the ledger's tolerance).")
