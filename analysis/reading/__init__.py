"""Reading the store: the lowest wing of the analysis, under every other.

The results database as pandas tables, and what only the samples and intervals say of a run:

- :mod:`.query` — every read of the store (experiments, runs, variables, counters, events);
- :mod:`.series` — per-interval and per-sample series with the values derived from the raw
  records (NOTPM, rates, dirty %, checkpoint age, window flags);
- :mod:`.window_cycles` — each run's flush cycle against its window: the whole-cycle window
  :mod:`.series` cuts at read time, and the verdicts over window starts;
- :mod:`.memory` — mysqld's memory over a run (RSS and its split);
- :mod:`.metric` — the experiment's primary metric as tables and figures name it;
- :mod:`.baselines` — which baseline each cell is compared with;
- :mod:`.rows` — the include rows matched to their cells, and what every table calls a row;
- :mod:`.mext` — the samples in ``pt-mext``'s layout (``flushbench mext``);
- :mod:`.figure_cache` — the analysis cache: key → JSON in one SQLite file;
- :mod:`.blas` — one BLAS thread for the analysis.

Imports only :mod:`analysis.statistics` (and ``core``, ``store``): no figure, no verdict on a
run, no comparison (``tests/test_layers.py``).
"""
