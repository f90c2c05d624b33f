"""What a report page is made of, as data: the typed parts the renderer draws.

A report is a :class:`ReportModel`: the experiment, the figures in page order and the page's
sections, each a list of blocks — :class:`Heading`, :class:`Paragraph`, :class:`Note`,
:class:`Bullets`, :class:`Table`, :class:`Figure` — whose words are :data:`Rich` text: plain
strings the code wrote, :class:`Value` for anything read from the store or a spec (masked
and escaped when drawn), and :class:`Span`, :class:`Link` and :data:`BREAK` for emphasis.
Nothing here is HTML; :mod:`analysis.report.render` is the one module that writes it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
import plotly.graph_objects as go

from analysis.figures import plots

if TYPE_CHECKING:
    from analysis.comparisons.compare import Comparison
    from analysis.reading.metric import MetricView
    from analysis.response import latency
    from analysis.tables import efficiency


@dataclass(frozen=True)
class Value:
    """Text read from the store or a spec (a label, a warning, a path): drawn with any
    credentials masked and every markup character escaped."""

    value: Any


#: How a :class:`Span` sets its text apart: bold, italic, code, or a class of the page's
#: style (muted, warn; faster and slower for verdicts).
Style = Literal["bold", "italic", "code", "muted", "warn", "faster", "slower"]


@dataclass(frozen=True)
class Span:
    """A piece of text set apart (:data:`Style`)."""

    style: Style
    parts: Rich


@dataclass(frozen=True)
class Link:
    """A link (its address already masked of credentials)."""

    href: str
    parts: Rich


@dataclass(frozen=True)
class Break:
    """A line break inside a table cell or a paragraph."""


#: The one line break.
BREAK = Break()

#: A piece of text: a plain string is the code's own words (drawn as written, never markup).
Inline = str | Value | Span | Link | Break
#: Text with emphasis: its pieces in order.
Rich = tuple[Inline, ...]


def rich(*parts: Inline | Rich | None) -> Rich:
    """Pieces and rich texts joined into one rich text (None and "" dropped)."""
    out: list[Inline] = []
    for part in parts:
        if isinstance(part, tuple):
            out += part
        elif part is not None and part != "":
            out.append(part)
    return tuple(out)


def bold(*parts: Inline | Rich) -> Span:
    """``parts`` in bold."""
    return Span("bold", rich(*parts))


def italic(*parts: Inline | Rich) -> Span:
    """``parts`` in italics."""
    return Span("italic", rich(*parts))


def code(*parts: Inline | Rich) -> Span:
    """``parts`` as code (a variable, a file, a command)."""
    return Span("code", rich(*parts))


def muted(*parts: Inline | Rich) -> Span:
    """``parts`` in grey (an aside)."""
    return Span("muted", rich(*parts))


def warn(*parts: Inline | Rich) -> Span:
    """``parts`` as a warning."""
    return Span("warn", rich(*parts))


def named(label: Any, name: str | None) -> Rich:
    """A cell's label, after the row's own short name in bold when it has one (a name that
    is the label itself is said once)."""
    if not name or str(name) == str(label):
        return (Value(label),)
    return (bold(Value(name)), " · ", Value(label))


def row_name(label: Any, name: str | None) -> Rich:
    """A row as tables and sentences name it: its own short name in bold when it has one,
    else its label (the full definition, name · knobs, is :func:`named`)."""
    return (bold(Value(name)),) if name else (Value(label),)


def bold_named(label: Any, name: str | None) -> Rich:
    """A row in bold: its own short name when it has one, else its label (the summary's
    emphasis)."""
    return (bold(Value(name)),) if name else (bold(Value(label)),)


@dataclass(frozen=True)
class Heading:
    """A heading of ``level`` 2 (a part of the page) or 3 (within one); ``anchor`` is what a
    link to it names (``cell-4``, ``methodology``)."""

    level: int
    text: Rich
    anchor: str | None = None


@dataclass(frozen=True)
class Paragraph:
    """A paragraph; ``kind`` sets it apart: ``sub`` (the line under a heading), ``muted``,
    ``warn`` or plain ("")."""

    text: Rich
    kind: Literal["", "sub", "muted", "warn"] = ""


@dataclass(frozen=True)
class Note:
    """A boxed note the reader should not miss (a forced comparison, the driver's gap)."""

    text: Rich


@dataclass(frozen=True)
class Bullets:
    """A list; ``kind`` sets it apart (``summary``, ``claims``) or is plain (None)."""

    items: tuple[Rich, ...]
    kind: str | None = None


@dataclass(frozen=True)
class Cell:
    """A table cell whose text is drawn in a grade's colour, in bold (the scorecard's)."""

    text: Rich
    colour: str


@dataclass(frozen=True)
class Table:
    """A table: ``headers`` and ``rows`` (each cell rich text or a :class:`Cell`), the first
    ``left`` columns left-aligned (words; figures align right) unless ``align_left`` says it
    per column (``header_left`` for the headers where it differs); ``row_classes`` one class
    per row (``base`` for a baseline row). ``compact``: right-aligned cells and rows carry no
    class at all (the scorecard's tables)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[Rich | Cell, ...], ...]
    left: int = 1
    align_left: tuple[bool, ...] | None = None
    header_left: tuple[bool, ...] | None = None
    row_classes: tuple[str, ...] | None = None
    compact: bool = False

    def is_left(self, column: int) -> bool:
        """Whether the column's cells are words (left-aligned)."""
        return self.align_left[column] if self.align_left is not None else column < self.left

    def is_left_header(self, column: int) -> bool:
        """Whether the column's header is left-aligned."""
        return (self.header_left[column] if self.header_left is not None
                else self.is_left(column))


@dataclass(frozen=True)
class Figure:
    """Where a figure of the report goes: its slug (:attr:`ReportFigure.slug`)."""

    slug: str


@dataclass(frozen=True)
class PngSummary:
    """Where the page says how the PNG export went (known only once every PNG was drawn)."""


@dataclass(frozen=True)
class Claims:
    """Where the sentences computed from the runs go (:attr:`ReportModel.claims`)."""


@dataclass(frozen=True)
class Contents:
    """The page's contents list: (anchor, words) of each part heading, in page order."""

    entries: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Fold:
    """Blocks folded away behind one line (``summary``) the reader opens: a row's own
    figures, under the grids that show every row at once."""

    summary: Rich
    blocks: tuple[Block, ...]


#: One part of a page.
Block = (Heading | Paragraph | Note | Bullets | Table | Figure | PngSummary | Claims | Contents
         | Fold)
#: A part of the page: its blocks in order.
Section = list[Block]


def every_block(blocks: list[Block] | tuple[Block, ...]) -> list[Block]:
    """The blocks in page order, those folded inside a :class:`Fold` too (after it)."""
    out: list[Block] = []
    for block in blocks:
        out.append(block)
        if isinstance(block, Fold):
            out += every_block(block.blocks)
    return out


@dataclass(frozen=True)
class ReportFigure:
    """One figure of the report: its name (``NN-kind``, the PNG file and the div id) and the
    figure as drawn for the PNG (fixed width and height): a plotly figure, or the plain-dict
    :data:`analysis.figures.plots.FigureSpec` of the figures drawn once per cell (not validated
    here: ``tests/analysis/test_report_model.py`` validates every figure of its reports)."""

    slug: str
    figure: go.Figure | plots.FigureSpec

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        """The figure as plotly.js reads it, made once for the PNG and the HTML (plotly's
        ``to_dict`` deep-copies each time). Read-only by convention: both readers only
        serialize it."""
        if isinstance(self.figure, dict):
            return plots.resolved(self.figure)
        return self.figure.to_dict()

    @property
    def height(self) -> int:
        """The figure's own height in pixels (the template's when it sets none)."""
        return int(self.spec.get("layout", {}).get("height") or plots.HEIGHT)


@dataclass
class ReportModel:
    """What a report says, before any of it is drawn: the data, the sentences, the figures
    and the page's sections as typed blocks.

    Built by :func:`analysis.report.build.build_report_model`, drawn by
    :func:`analysis.report.render.render`. A figure appears in the sections as a
    :class:`Figure` naming its slug and the claims as :class:`Claims`, so the same model
    renders with or without PNGs.
    """

    experiment: dict[str, Any]
    comparison: Comparison
    #: Sentences computed from the runs ("N of M runs noisy"…), exceptions named.
    claims: list[str]
    #: Figures in page order.
    figures: list[ReportFigure]
    sections: list[Section]
    #: Forced-comparison warnings shown at the top.
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        """The experiment's name, the page's heading."""
        return str(self.experiment["name"])


@dataclass
class ReportData:
    """Everything the report reads from the store, in one session."""

    cmp: Comparison
    reps: dict[int, int]
    smp: pd.DataFrame
    variables: pd.DataFrame
    metric: MetricView
    qps: dict[int, float]
    cell_mem: pd.DataFrame
    io_table: pd.DataFrame
    claims: list[str]
    #: Cost per transaction and what bound each run and row (analysis/tables/efficiency.py).
    efficiency: efficiency.Efficiency
    #: Response time per run, cell and type, and its verdicts (analysis/response/latency.py).
    latency: latency.Latency
    #: Each fixed-rate run's window against its target (analysis/response/fixed_rate.py's
    #: ``per_run``); empty for an experiment that runs flat out.
    rates: pd.DataFrame = field(default_factory=pd.DataFrame)
