"""The HTML of the reports: the page's style, escaping, tables, and the page around a model.

Every part of a report page is made of these: :func:`esc` for any text (masked, escaped),
:func:`core.units.format_number` for any figure, :func:`ci` for an interval, :func:`table` for
a table. :func:`render` turns a :class:`analysis.report_model.ReportModel` into
``report.html`` — figures as interactive divs (plotly.js inlined once in ``<head>``, so the
file opens offline), a link under each to its PNG — while the PNG renderers finish.
The comparison across databases (:mod:`analysis.cross_report`) uses the same pieces.
"""

from __future__ import annotations

import datetime as dt
import html
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.io as pio

from analysis.figures import plots
from analysis.figures.png_export import PngExporter
from analysis.report_folder import ReportFolder
from analysis.response import latency
from core.redaction import redact
from core.units import format_number as number

if TYPE_CHECKING:
    from analysis.report_figures import ReportFigure
    from analysis.report_model import ReportModel

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
"""


#: Records script errors on <body data-js-errors> so a headless browser check can read them.
_ERROR_HOOK = (
    "window.__errors=[];window.addEventListener('error',function(e){window.__errors.push("
    "String(e.message));document.documentElement.setAttribute('data-js-errors',"
    "window.__errors.join(' | '));});"
)

#: Where a figure goes in a section (``<!--figure:SLUG-->``, made by the figure list).
FIGURE_MARKER = re.compile(r"<!--figure:([\w.-]+)-->")
#: Where the page says how the PNG export went (known only once every figure was drawn).
PNG_SUMMARY = "<!--png-summary-->"
#: Where the generated claims go (rendered from the model's sentences).
CLAIMS = "<!--claims-->"
#: Where a figure's PNG link goes (known only once its PNG was written).
_PNG_LINK = re.compile(r"<!--png:([\w.-]+)-->")


def esc(value: Any) -> str:
    """Any text for the page: credentials masked, HTML escaped."""
    # Masked too: a description or label written before URLs with credentials were refused.
    return html.escape(redact(str(value)))


def ci(low: Any, high: Any, fmt: str = ",.0f") -> str:
    """An interval as ``3,100 – 3,400``, or "–" when either end is missing."""
    lo, hi = number(low, fmt, ""), number(high, fmt, "")
    return f"{lo} – {hi}" if lo and hi else "–"


def table(headers: list[str], rows: list[list[str]], left: int = 1,
          row_classes: list[str] | None = None) -> str:
    """An HTML table: ``headers`` escaped, ``rows`` already HTML, the first ``left`` columns
    left-aligned (figures align right), ``row_classes`` one class per row (``base``)."""
    head = "".join(
        f"<th class='{'l' if i < left else ''}'>{esc(h)}</th>" for i, h in enumerate(headers)
    )
    body = []
    for r, row in enumerate(rows):
        cls = (row_classes or [""] * len(rows))[r]
        cells = "".join(
            f"<td class='{'l' if i < left else ''}'>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr class='{cls}'>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def verdict_html(verdict: str) -> str:
    """A throughput verdict, green when faster, red when slower."""
    cls = {"faster": "faster", "slower": "slower"}.get(verdict, "muted")
    return f"<span class='{cls}'>{esc(verdict)}</span>"


def latency_verdict_html(verdict: str) -> str:
    """A response-time verdict, green when lower, red when higher."""
    cls = {latency.LOWER: "faster", latency.HIGHER: "slower"}.get(verdict, "muted")
    return f"<span class='{cls}'>{esc(verdict)}</span>"


def named(label: str, name: str | None) -> str:
    """A cell's label as HTML, after the row's own short name in bold when it has one."""
    return f"<b>{esc(name)}</b> · {esc(label)}" if name else esc(label)


def bold_named(label: str, name: str | None) -> str:
    """:func:`named`, the label in bold when there is no name (the summary's emphasis)."""
    return named(label, name) if name else f"<b>{esc(label)}</b>"


def text_of(value: Any) -> str:
    """A text cell's value, or "" where there is none (a queued run's warnings are NaN)."""
    return value if isinstance(value, str) else ""


def claims_html(items: list[str]) -> str:
    """The section of sentences computed from the runs."""
    rows = "".join(f"<li>{esc(text)}</li>" for text in items)
    return ("<h2>What the runs did</h2><p class='sub'>Computed from the recorded runs; a"
            " statement about every run is made only when no run contradicts it.</p>"
            f"<ul class='claims'>{rows}</ul>")


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
        + f"<script type='text/javascript'>{get_plotlyjs()}</script></head>"
        f"<body><main>{body}</main></body></html>"
    )


def _page(model: ReportModel, divs: dict[str, str]) -> str:
    """The HTML page of a model, figures as ``divs`` (slug → HTML), PNG links still markers."""
    exp = model.experiment
    body = (
        f"<h1>{esc(model.title)}</h1>"
        f"<p class='sub'>{esc(exp['description'] or '')} · experiment #{exp['id']} · "
        f"generated {generated_at()}</p>"
        + "".join(f"<div class='note'>{esc(w)}</div>" for w in model.notes)
        + "".join(model.sections).replace(CLAIMS, claims_html(model.claims), 1)
    )
    body = FIGURE_MARKER.sub(lambda m: divs[m.group(1)], body)
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
    into the report folder, by the rules of :mod:`analysis.report_folder` (only the report's
    own files are replaced or removed; ``overwrite`` replaces a user's file at one of its
    names, never writing through a link).

    ``out_dir``: the folder, or the :class:`ReportFolder` the figures were already submitted
    to with ``exporter`` (by :func:`analysis.report.write_report` while the model was built);
    without an exporter, every figure is submitted here. It is closed before returning. A PNG
    failure is said in the page and appended to ``problems`` (when given), not raised.
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

    page = _PNG_LINK.sub(link, page).replace(PNG_SUMMARY, _png_summary(model, png, error), 1)
    return folder.commit(page, exporter.written if exporter is not None else [],
                         complete=error is None)
