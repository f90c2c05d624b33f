"""The HTML of the reports — the one module of the wing that writes it.

:func:`render` draws a :class:`analysis.report.model.ReportModel` as ``report.html``:
each section's typed blocks as HTML (:func:`blocks_html`), any text from the store masked and
escaped (:func:`esc`), the figures as interactive divs (plotly.js inlined once in ``<head>``,
so the file opens offline) with a link under each to its PNG, drawn while the PNG renderers
finish. The comparison across databases (:mod:`analysis.report.cross`) is drawn by
:func:`write_cross_page` with the same pieces.
"""

from __future__ import annotations

import datetime as dt
import html
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.io as pio

from analysis.figures import plots
from analysis.figures.png_export import PngExporter
from analysis.report.first_screen import CLAIMS_PART
from analysis.report.folder import ReportFolder
from analysis.report.model import (
    Block,
    Break,
    Bullets,
    Cell,
    Claims,
    Contents,
    Figure,
    Fold,
    Heading,
    Link,
    Note,
    Paragraph,
    PngSummary,
    Rich,
    Span,
    Table,
    Value,
)
from core.redaction import redact

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from analysis.report.model import ReportFigure, ReportModel

CSS = """
body{font-family:Inter,'Helvetica Neue',Helvetica,Arial,sans-serif;color:#222;margin:0;
background:#fff;line-height:1.55}
main{max-width:1080px;margin:0 auto;padding:24px 32px 80px}
h1{font-size:30px;margin:8px 0 4px}h2{font-size:23px;margin:44px 0 10px;border-bottom:1px solid
#e5e5e5;padding-bottom:6px}h3{font-size:18px;margin:30px 0 6px}
.sub{color:#666;margin:0 0 18px}.summary li{margin:4px 0}
table{border-collapse:collapse;font-size:13.5px;margin:10px 0 18px;width:100%}
th,td{padding:5px 9px;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
th{background:#fafafa;font-weight:600}td.l,th.l{text-align:left}
tr.base td{background:#f6f6f6}.faster{color:#0a7b32;font-weight:600}
.slower{color:#b3261e;font-weight:600}.warn{color:#9a5b00}.muted{color:#777}
.figure{margin:14px 0 26px}.figure .png{font-size:12px;color:#888}
.note{background:#fff8e6;border-left:4px solid #e6a700;padding:8px 12px;margin:12px 0}
code{background:#f3f3f3;padding:1px 4px;border-radius:3px;font-size:90%}
nav.toc{font-size:14px;margin:18px 0 0;padding:8px 14px;background:#fafafa;
border:1px solid #eee}nav.toc ol{margin:4px 0 0;padding-left:30px;columns:2;column-gap:56px}
nav.toc li{margin:1px 0}details.fold{margin:8px 0 18px}details.fold>summary{cursor:pointer;
color:#555;font-size:14px}ul.footnotes{list-style:none;padding-left:0;font-size:13px;
color:#444}ul.footnotes li{margin:3px 0}td{white-space:nowrap}td.l{white-space:normal}
"""


#: Records script errors on <body data-js-errors> so a headless browser check can read them.
_ERROR_HOOK = (
    "window.__errors=[];window.addEventListener('error',function(e){window.__errors.push("
    "String(e.message));document.documentElement.setAttribute('data-js-errors',"
    "window.__errors.join(' | '));});"
)

#: Figures drawn inside a closed <details> (a :class:`Fold`) take the page's width when it
#: opens ('toggle' does not bubble: caught on its way down).
_FOLD_RESIZE = (
    "document.addEventListener('toggle',function(e){var d=e.target;if(d.open&&window.Plotly)"
    "{d.querySelectorAll('.js-plotly-plot').forEach(function(p){Plotly.Plots.resize(p);});}}"
    ",true);"
)

#: Where a figure goes in sections drawn without their figures (:func:`sections_html`).
FIGURE_MARKER = re.compile(r"<!--figure:([\w.-]+)-->")
#: Where the page says how the PNG export went (known only once every figure was drawn).
_PNG_SUMMARY = "<!--png-summary-->"
#: Where a figure's PNG link goes (known only once its PNG was written).
_PNG_LINK = re.compile(r"<!--png:([\w.-]+)-->")
#: How each :data:`analysis.report.model.Style` is drawn: a tag, or a class of :data:`CSS`.
_TAGS = {"bold": "b", "italic": "i", "code": "code"}


def esc(value: Any) -> str:
    """Any text for the page: credentials masked, HTML escaped."""
    # Masked too: a description or label written before URLs with credentials were refused.
    return html.escape(redact(str(value)))


def inline(text: Rich) -> str:
    """Rich text as HTML: the code's own words escaped as written (quotes kept), values
    masked and escaped, spans as their tags or classes."""
    out = []
    for part in text:
        if isinstance(part, str):
            out.append(html.escape(part, quote=False))
        elif isinstance(part, Value):
            out.append(esc(part.value))
        elif isinstance(part, Span):
            tag = _TAGS.get(part.style)
            out.append(f"<{tag}>{inline(part.parts)}</{tag}>" if tag else
                       f"<span class='{part.style}'>{inline(part.parts)}</span>")
        elif isinstance(part, Link):
            out.append(f"<a href='{html.escape(part.href)}'>{inline(part.parts)}</a>")
        elif isinstance(part, Break):
            out.append("<br>")
        else:
            raise TypeError(f"not a piece of rich text: {part!r}")
    return "".join(out)


def table_html(t: Table) -> str:
    """A table: headers escaped, words left-aligned and figures right-aligned by column."""
    head = "".join(f"<th class='{'l' if t.is_left_header(i) else ''}'>{esc(h)}</th>"
                   for i, h in enumerate(t.headers))
    body = []
    for r, row in enumerate(t.rows):
        cells = []
        for i, c in enumerate(row):
            left = t.is_left(i)
            if isinstance(c, Cell):
                cells.append(f"<td class='l' style='color:{c.colour};font-weight:600'>"
                             f"{inline(c.text)}</td>")
            elif t.compact:
                cells.append(f"<td class='l'>{inline(c)}</td>" if left else
                             f"<td>{inline(c)}</td>")
            else:
                cells.append(f"<td class='{'l' if left else ''}'>{inline(c)}</td>")
        if t.compact:
            body.append(f"<tr>{''.join(cells)}</tr>")
        else:
            cls = t.row_classes[r] if t.row_classes is not None else ""
            body.append(f"<tr class='{cls}'>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def claims_html(items: list[str]) -> str:
    """The section of sentences computed from the runs."""
    rows = "".join(f"<li>{esc(text)}</li>" for text in items)
    anchor, words = CLAIMS_PART
    return (f"<h2 id='{anchor}'>{words}</h2><p class='sub'>Computed from the recorded runs; a"
            " statement about every run is made only when no run contradicts it.</p>"
            f"<ul class='claims'>{rows}</ul>")


def block_html(block: Block, divs: Mapping[str, str] | None = None,
               claims: list[str] | None = None) -> str:
    """One block as HTML; a figure as its div from ``divs`` (slug → HTML), or as its marker
    when there are none; the claims from ``claims``."""
    if isinstance(block, Heading):
        anchor = f" id='{block.anchor}'" if block.anchor else ""
        return f"<h{block.level}{anchor}>{inline(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        kind = f" class='{block.kind}'" if block.kind else ""
        return f"<p{kind}>{inline(block.text)}</p>"
    if isinstance(block, Note):
        return f"<div class='note'>{inline(block.text)}</div>"
    if isinstance(block, Bullets):
        kind = f" class='{block.kind}'" if block.kind else ""
        return f"<ul{kind}>" + "".join(f"<li>{inline(i)}</li>" for i in block.items) + "</ul>"
    if isinstance(block, Table):
        return table_html(block)
    if isinstance(block, Figure):
        return divs[block.slug] if divs is not None else f"<!--figure:{block.slug}-->"
    if isinstance(block, PngSummary):
        return _PNG_SUMMARY
    if isinstance(block, Claims):
        return claims_html(claims or [])
    if isinstance(block, Contents):
        return ("<nav class='toc'><b>Contents</b><ol>"
                + "".join(f"<li><a href='#{html.escape(anchor)}'>{esc(words)}</a></li>"
                          for anchor, words in block.entries) + "</ol></nav>")
    if isinstance(block, Fold):
        return (f"<details class='fold'><summary>{inline(block.summary)}</summary>"
                + blocks_html(list(block.blocks), divs, claims) + "</details>")
    raise TypeError(f"not a block of the report: {block!r}")


def blocks_html(blocks: list[Block], divs: Mapping[str, str] | None = None,
                claims: list[str] | None = None) -> str:
    """Blocks as HTML, in order (:func:`block_html`)."""
    return "".join(block_html(b, divs, claims) for b in blocks)


def sections_html(model: ReportModel) -> str:
    """The model's sections as HTML, each figure as its marker ``<!--figure:SLUG-->`` (what
    the tests read of a model without drawing its figures)."""
    return "".join(blocks_html(section, None, model.claims) for section in model.sections)


def figure_div(item: ReportFigure) -> str:
    """The figure as an interactive div sized by the page (the PNG keeps its fixed size)."""
    layout = {k: v for k, v in item.spec.get("layout", {}).items() if k != "width"}
    spec = {**item.spec, "layout": {**layout, "autosize": True}}  # the shared dict untouched
    div = pio.to_html(
        spec, validate=False, full_html=False, include_plotlyjs=False,
        div_id=f"fig-{item.slug}",
        config={"displaylogo": False, "responsive": True, "displayModeBar": False},
    )
    return f"<div class='figure'>{div}<!--png:{item.slug}--></div>"


def _png_summary(model: ReportModel, png: bool, error: str | None) -> str:
    if not png:
        return ""
    if error:
        return (f"<div class='note'>PNG export failed, the interactive figures below are "
                f"complete: {esc(error)}</div>")
    return (f"<p class='muted'>{len(model.figures)} figures also saved as PNG in "
            "<code>figures/</code>.</p>")


def generated_at() -> str:
    """When the page was made, as its subtitle says it (to the minute, UTC)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def html_page(title: str, body: str, *, browser_hooks: bool = True) -> str:
    """A whole self-contained page: ``<head>`` with the style and plotly.js, then ``body``.

    ``browser_hooks``: the viewport tag and the script-error hook the browser test of the
    experiment report reads (the comparison across databases has neither).
    """
    from plotly.offline import get_plotlyjs

    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        + ("<meta name='viewport' content='width=device-width, initial-scale=1'>"
           if browser_hooks else "")
        + f"<title>{esc(title)} — flushbench report</title><style>{CSS}</style>"
        + (f"<script>{_ERROR_HOOK}</script>" if browser_hooks else "")
        + f"<script>{_FOLD_RESIZE}</script>"
        + f"<script type='text/javascript'>{get_plotlyjs()}</script></head>"
        f"<body><main>{body}</main></body></html>"
    )


def cross_page(title: str, subtitle: str, blocks: list[Block],
               figures: Mapping[str, go.Figure], png_note: Paragraph | None) -> str:
    """The page of the comparison across databases (:mod:`analysis.report.cross`): its
    heading, ``blocks``, each figure an interactive div with ``png_note`` under it (the PNG's
    link, or why there is none)."""
    divs = {}
    for slug, fig in figures.items():
        fig.update_layout(width=None, autosize=True)  # the page sizes it; the PNG is drawn
        div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{slug}",
                          config={"displaylogo": False, "responsive": True})
        divs[slug] = (f"<div class='figure'>{div}"
                      f"{block_html(png_note) if png_note is not None else ''}</div>")
    body = (f"<h1>{esc(title)}</h1><p class='sub'>{esc(subtitle)} · generated {generated_at()}"
            "</p>" + blocks_html(blocks, divs))
    return html_page(title, body, browser_hooks=False)


def _page(model: ReportModel, divs: dict[str, str]) -> str:
    """The HTML page of a model, figures as ``divs`` (slug → HTML), PNG links still markers."""
    exp = model.experiment
    body = (
        f"<h1>{esc(model.title)}</h1>"
        f"<p class='sub'>{esc(exp['description'] or '')} · experiment #{exp['id']} · "
        f"generated {generated_at()}</p>"
        + "".join(f"<div class='note'>{esc(w)}</div>" for w in model.notes)
        + "".join(blocks_html(section, divs, model.claims) for section in model.sections)
    )
    return html_page(model.title, body)


def submit_png(exporter: PngExporter, folder: ReportFolder, item: ReportFigure) -> None:
    """Hand one figure to the PNG renderers (drawn at the report's fixed width, into the
    report folder's staging folder until the report is complete)."""
    exporter.submit(item.spec, folder.staged_png(item.slug), width=plots.WIDTH,
                    height=item.height)


def render(
    model: ReportModel,
    out_dir: str | os.PathLike[str] | ReportFolder,
    *,
    png: bool = True,
    exporter: PngExporter | None = None,
    overwrite: bool = False,
    problems: list[str] | None = None,
) -> Path:
    """Write ``report.html`` (self-contained) and, with ``png``, ``figures/NN-kind.png``
    into the report folder, by the rules of :mod:`analysis.report.folder` (only the report's
    own files are replaced or removed; ``overwrite`` replaces a user's file at one of its
    names, never writing through a link).

    ``out_dir``: the folder, or the :class:`ReportFolder` the figures were already submitted
    to with ``exporter`` (by :func:`analysis.report.writer.write_report` while the model was
    built); without an exporter, every figure is submitted here. It is closed before
    returning. A PNG failure is said in the page and appended to ``problems`` (when given),
    not raised.
    """
    if isinstance(out_dir, ReportFolder):
        return _render(model, out_dir, png, exporter, problems)
    with ReportFolder(out_dir, png=png, overwrite=overwrite) as folder:
        return _render(model, folder, png, exporter, problems)


def _render(model: ReportModel, folder: ReportFolder, png: bool,
            exporter: PngExporter | None, problems: list[str] | None) -> Path:
    try:
        folder.check_figures(item.slug for item in model.figures)
    except BaseException:
        if exporter is not None:
            exporter.cancel()
        raise
    if png and exporter is None:
        exporter = PngExporter()
        for item in model.figures:
            submit_png(exporter, folder, item)
    try:
        # Drawn while the renderers work on the PNGs.
        page = _page(model, {item.slug: figure_div(item) for item in model.figures})
    finally:
        error = exporter.close() if exporter is not None else None
    written = {p.name for p in exporter.written} if exporter is not None else set()
    if error and problems is not None:
        problems.append(f"{error}; report.html is complete without the missing PNGs")

    def link(match: re.Match[str]) -> str:
        name = f"{match.group(1)}.png"
        return (f"<div class='png'>PNG: <a href='figures/{name}'>{name}</a></div>"
                if name in written else "")

    page = _PNG_LINK.sub(link, page).replace(_PNG_SUMMARY, _png_summary(model, png, error), 1)
    return folder.commit(page, exporter.written if exporter is not None else [],
                         complete=error is None)
