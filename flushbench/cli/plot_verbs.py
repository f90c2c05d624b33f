"""``flushbench plot``: single figures outside the report (``plot compare``: rows of an
experiment on one time axis, for a blog post)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.errors import AnalysisError
from core.filecheck import check_output_file
from flushbench.cli import app
from flushbench.cli.console import make_console, say
from flushbench.cli.options import DbOption

plot_app = typer.Typer(help="Single figures (SVG, PNG or HTML) outside the report.",
                       no_args_is_help=True)
app.add_typer(plot_app, name="plot")

#: The metrics of ``plot compare`` (kept here so ``--help`` needs no analysis import).
METRIC_NAMES = ("throughput", "p99", "p95", "checkpoint-age", "dirty", "pages-flushed",
                "redo", "disk-write-iops", "rss")


@plot_app.command("compare")
def compare_cmd(
    experiment: Annotated[str, typer.Argument(help="Experiment name (or id).")],
    rows: Annotated[list[str], typer.Argument(
        help="Two rows or more, drawn in this order: a row's name in the experiment file"
        " (dw-off-50), C1… as `flushbench compare` lists them, its label, or knob=value words"
        " only it has.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The figure to write: .svg, .png"
                                      " (at twice its size) or .html.")],
    metric: Annotated[str, typer.Option("--metric", help="One of: " + ", ".join(METRIC_NAMES)
                                        + ".")] = "throughput",
    db: DbOption = None,
) -> None:
    """Rows on one time axis: every repetition thin, the median run bold, the window shaded;
    the rows' names in the title and the legend."""
    from analysis.comparisons.row_compare import METRICS, SUFFIXES, compare_cells, save

    if out.suffix.lower() not in SUFFIXES:
        raise AnalysisError("the figure file must end in .svg, .png or .html", where=str(out),
                            fix="name a .svg, .png or .html file")
    if metric not in METRICS:
        raise AnalysisError(f"unknown metric {metric!r}", where="--metric",
                            fix="use one of " + ", ".join(METRICS))
    check_output_file(out, "the figure file (-o)", error=AnalysisError)
    fig = compare_cells(db, experiment, *rows, metric=metric)
    say(make_console(), f"wrote {save(fig, out)}")
