"""Reading results, in wings; never starts a process and never imports ``runner``.

Calls go one way (``tests/test_layers.py``; docs/architecture.md, "The data flow, in words"):

    statistics → reading → figures → steadiness → writes → tables → comparisons → response
    → studies → the report

- :mod:`analysis.statistics` — the methods, pure functions on arrays;
- :mod:`analysis.reading` — the store as tables (query, series, memory, metric, the cache);
- :mod:`analysis.figures` — drawing (plots, small multiples, PNG export);
- :mod:`analysis.steadiness` — each run judged over its window (stability, transients,
  disturbed runs, claims);
- :mod:`analysis.writes` — the write path and each run's costs (digest, cost, ledger, bound);
- :mod:`analysis.tables` — an experiment as tables (``frames.load``, summaries, export);
- :mod:`analysis.comparisons` — verdicts between cells, references, several databases;
- :mod:`analysis.response` — response time (latency, its histograms and tail, fixed rate);
- :mod:`analysis.studies` — the committed studies' tables scripts.

Above them all: the report wing (:mod:`analysis.report`: data → typed sections → HTML,
``analysis.report.writer.write_report``; the cross-database report in ``analysis.report.cross``)
and, at the root, the study bundle (``analysis.bundle``).
"""
