"""Statistics flushbench can trust: pure functions on numpy arrays, no database, no plotting.

One module per job (see ``docs/statistics.md`` for the methods, why they were chosen and their
simulated error rates):

- :mod:`.percentiles` — nearest-rank percentiles (tpcc-mysql's definition);
- :mod:`.intervals` — confidence intervals for a cell's mean and for the ratio of two cells;
- :mod:`.hypothesis_tests` — exact Mann-Whitney and a stratified (van Elteren) test;
- :mod:`.verdicts` — faster / slower / no clear difference, with the minimum detectable effect;
- :mod:`.oscillation` — periodogram peak with a false-alarm probability;
- :mod:`.cycles` — a run's flush cycle over its whole series, and whole-cycle windows;
- :mod:`.shape` — holes, low stretches, steps and trends;
- :mod:`.design` — which knob effects a set of cells can estimate;
- :mod:`.rates` — counter rates that break at a server restart;
- :mod:`.checkpoint` — InnoDB's maximum checkpoint age per flavor and version.
"""
