"""Response time per run and per cell, beside throughput.

- :mod:`.latency` — stalls, jitter, the window's p99 and their comparison with the baseline;
- :mod:`.latency_histograms` — each run's histograms merged over its window, cached per run;
- :mod:`.latency_tail` — the tail with the waits no completion measured;
- :mod:`.fixed_rate` — a fixed-rate run against its target.

Above :mod:`analysis.comparisons` (a cell's latency is compared by the same rule); below the
studies and the report.
"""
