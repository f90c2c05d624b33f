"""``compare --format markdown|csv``: the relative table (analysis/comparisons/relative.py) —
each row's throughput, response time, stability and bytes written against its baseline — as
Markdown for a blog post (before the write-path tables; with the cross-server table when the
experiment has several servers) or as CSV on standard output."""

from __future__ import annotations

import csv
import math
import sys
from typing import TYPE_CHECKING

from core.units import format_number
from flushbench.cli.console import printable

if TYPE_CHECKING:
    from store.db import ResultsDB


def relative_table(experiment: str, db: ResultsDB | str | None, *, force: bool):  # noqa: ANN201
    """The comparison, its efficiency figures and the relative table of one experiment (rows
    named as the experiment file names them; names are user text: masked, escaped)."""
    from analysis.comparisons import relative
    from analysis.comparisons.compare import compare
    from analysis.reading.metric import metric_view
    from analysis.reading.rows import row_labels
    from analysis.response import latency
    from analysis.tables import efficiency

    cmp = compare(db, experiment, force=force)
    m = metric_view(cmp.experiment)
    eff = efficiency.load(db, cmp.frames)
    lat = latency.load(db, cmp.frames)
    # A row's name, else only the knobs that differ from its baseline (a blog's table).
    names = {c: printable(n) for c, n in
             row_labels(cmp.experiment["stored"].spec, cmp.cells).items()}
    unit = "New-Order" if m.per_minute else "transaction"
    rel = relative.table(cmp.cells, lat.cells, eff.ledger_cells, names,
                         percentile=lat.view.name if lat.view.percentile else "p99",
                         unit=unit, throughput=m.name)
    return cmp, eff, rel, lat


def cross_server_markdown(cmp, rel, lat, eff) -> str:  # noqa: ANN001
    """Each server's baseline row against the first baseline as Markdown (empty for an
    experiment with fewer than two servers): the report's cross-server table
    (analysis/comparisons/cross_server.py)."""
    from analysis.comparisons.cross_server import cross_server, starts_range
    from analysis.writes.write_costs import markdown_table

    cross = cross_server(cmp, lat.cells, eff.ledger_cells)
    if cross is None:
        return ""
    name = dict(zip(rel.rows["cell_id"], rel.rows["row"], strict=True))
    ref = name[cross.reference_id]
    rows = []
    for _, r in cross.rows.iterrows():
        ci = f" ({r['ci_low']:.2f}–{r['ci_high']:.2f})" if math.isfinite(r["ci_low"]) else ""
        rows.append([str(r["server"]).replace("|", "\\|"),
                     name[int(r["cell_id"])].replace("|", "\\|"),
                     format_number(r["notpm"] * (1 if rel.throughput == "NOTPM" else 1 / 60),
                                   ",.0f"),
                     "reference" if r["verdict"] == "reference"
                     else f"{r['ratio']:.2f}×{ci} {r['verdict']}{starts_range(r)}",
                     format_number(r["stability"], ".0f"), format_number(r["latency_ms"], ",.0f"),
                     format_number(r["write_kib"], ",.1f")])
    head = ["server", "row", rel.throughput, f"÷ {ref}'s (95 % CI, verdict)",
            "stability score", f"{rel.percentile} ms", f"KiB written/{rel.unit}"]
    return (f"### Each server against {ref}\n\n" + markdown_table(head, rows)
            + f"\nEach server's baseline row against {ref} (the experiment's first baseline) by"
              " the verdict rule `flushbench compare` uses (docs/statistics.md); \"starts\""
              " is the ratio wherever the runs' windows could start.\n")


def markdown(rel) -> str:  # noqa: ANN001
    """The relative table as Markdown, with the sentence that reads it."""
    from analysis.comparisons import relative
    from analysis.writes.write_costs import markdown_table

    # The baseline column is a name too: its pipes escaped like the first column's.
    rows = [[r[0], r[1].replace("|", "\\|"), *r[2:]] for r in relative.formatted_rows(rel)]
    return (markdown_table(rel.headers(), rows)
            # A blank line: a line right after a table would be read as one more row.
            + f"\nEach × column is the row's figure over its baseline's (the baseline column;"
              f" every baseline row reads 1.00), except {rel.throughput} ×: the ratio"
              f" `flushbench compare` judges (over the runs, on the log scale), which can differ"
              f" a little from the ratio of the means. {rel.throughput}: mean of the row's runs;"
              f" {rel.percentile}: the window's response time (above 1: slower); stability"
              f" score: median of the runs (higher: steadier); KiB written: the device's bytes"
              f" per {rel.unit}.\n")


def print_csv(experiment: str, db: ResultsDB | str | None, *, force: bool) -> None:
    """``compare --format csv``: the relative table on standard output, every figure beside
    its ratio at full precision."""
    from analysis.comparisons import relative

    _cmp, _eff, rel, _lat = relative_table(experiment, db, force=force)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerows(relative.csv_rows(rel))
    sys.stdout.flush()
