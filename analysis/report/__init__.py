"""The experiment report, as its own wing: data → sections (a typed model) → HTML.

The modules go one way, each importing only those listed before it:

- :mod:`analysis.report.folder` — what a report may write or remove in the folder it is given;
- :mod:`analysis.report.model` — the page's typed parts (headings, paragraphs, tables,
  figures, rich text) and :class:`~analysis.report.model.ReportModel`; no HTML;
- :mod:`analysis.report.figures` — the figures, numbered in page order;
- :mod:`analysis.report.sentences` — the words, computed from the runs;
- :mod:`analysis.report.sections` and :mod:`analysis.report.write_path` — each part of the
  page as typed blocks;
- :mod:`analysis.report.searches` — a rate search's answers and steps (its report has no
  part that pools a row's runs);
- :mod:`analysis.report.first_screen` — the first screen (verdict, caveats with their counts,
  next commands) and the contents list;
- :mod:`analysis.report.build` — reads the store once and builds the model;
- :mod:`analysis.report.render` — the only module that writes HTML: a model as the page,
  and the PNGs;
- :mod:`analysis.report.writer` — :func:`~analysis.report.writer.write_report`, the entry;
- :mod:`analysis.report.cross` — the comparison across databases, drawn by the same renderer.

Nothing is imported here, so importing one module of the wing loads only what it needs.
"""
