"""One self-contained HTML report per experiment, plus a PNG of every figure.

The page answers the researcher's questions in order: which configuration gives the most NOTPM
(ranked table, bars with CIs), which gives a flat line (stability scores), is the difference
real (ratios, CIs, Mann-Whitney verdicts), and why (checkpoint age vs dirty pages per cell).
plotly.js is inlined once in ``<head>``; figures reference it, so the file opens offline.

This module is the entry point (:func:`write_report`) of the report wing
(:mod:`analysis.report`); the report is made in two steps by modules with one job each:

- :mod:`analysis.report.build` — :func:`~analysis.report.build.build_report_model` reads the
  store once and decides what the report says: a
  :class:`~analysis.report.model.ReportModel` whose sections are typed blocks
  (:mod:`analysis.report.model`), from :mod:`analysis.report.sentences` (the words),
  :mod:`analysis.report.figures` (the figures, numbered in page order) and
  :mod:`analysis.report.sections` (each part of the page);
- :mod:`analysis.report.render` — :func:`~analysis.report.render.render` draws a model as the
  page (the only HTML of the wing) and the PNGs.

:func:`write_report` does both steps and starts the PNG renderers on each figure as soon as
the model has built it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.figures.png_export import PngExporter
from analysis.report.build import build_report_model
from analysis.report.folder import ReportFolder
from analysis.report.render import render, submit_png
from analysis.tables.frames import DB, ExperimentRef

if TYPE_CHECKING:
    from core.experiment.spec import ExperimentSpec


def write_report(
    db: DB,
    experiment: ExperimentRef,
    out_dir: str | os.PathLike[str],
    *,
    png: bool = True,
    force: bool = False,
    reference: ExperimentSpec | None = None,
    overwrite: bool = False,
    problems: list[str] | None = None,
    server_reference: str | None = None,
) -> Path:
    """Write ``report.html`` (self-contained) and ``figures/*.png`` for one experiment.

    :func:`build_report_model` then :func:`render`; the PNGs are drawn in background renderers
    from the moment each figure is built.

    Parameters
    ----------
    db:
        Results database (ResultsDB, Session, path or URL).
    experiment:
        Name, id, or None for the latest experiment.
    out_dir:
        Folder to write into (created). Only the report's own files there are replaced or
        removed (:mod:`analysis.report.folder`); a name of the report held by anything else
        is refused before the report is built.
    png:
        Also export every figure as PNG through kaleido; a failure is reported in the page
        instead of failing the report.
    force:
        Compare runs whose checked metadata differ (the page says so).
    reference:
        An experiment file's spec whose reference results the scorecard uses instead of the
        stored experiment's (:mod:`analysis.comparisons.scorecard`).
    overwrite:
        Replace a file at one of the report's names that the report did not write (renamed
        over, never written through; nothing else is deleted).
    problems:
        When given, a PNG export failure is appended to it as one sentence (the CLI's
        warning), besides the note in the page.
    server_reference:
        With several servers, the row each server is held against (its name, ``C3`` or its
        label; default: the first baseline; :mod:`analysis.report.servers`).

    Returns
    -------
    Path
        The HTML file.
    """
    with ReportFolder(out_dir, png=png, overwrite=overwrite) as folder:
        exporter = PngExporter() if png else None
        try:
            model = build_report_model(
                db, experiment, force=force, reference=reference,
                server_reference=server_reference,
                on_figure=(lambda item: submit_png(exporter, folder, item))
                if exporter else None)
        except BaseException:
            if exporter is not None:
                exporter.cancel()
            raise
        return render(model, folder, png=png, exporter=exporter, problems=problems)
