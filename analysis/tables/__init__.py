"""An experiment as tables: one row per run and per cell, built from the wings below.

- :mod:`.frames` — one import for notebooks and the report: runs, intervals, samples and
  summaries in a few bulk queries (``load``);
- :mod:`.summaries` — per run (window NOTPM, stability, transients, disturbed) and per cell;
- :mod:`.efficiency` — cost per transaction, the write-path ledger and what bound each run,
  per run and per cell, loaded together;
- :mod:`.io_breakdown` — write operations and bytes per transaction by data pages,
  doublewrite and redo (and its figure);
- :mod:`.export` — the tables to CSV or Parquet (``flushbench export``).

Imports :mod:`analysis.writes`, :mod:`analysis.steadiness`, :mod:`analysis.figures`,
:mod:`analysis.reading` and :mod:`analysis.statistics`; never a comparison.
"""
