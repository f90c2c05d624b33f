"""Steadiness: what each run did over its window, judged run by run.

- :mod:`.disturbed` — which runs the rest of the machine disturbed, and whether they count;
- :mod:`.transients` — whether checkpoint age or dirty share still trends across the window;
- :mod:`.stability` — how flat a throughput line is (score = 100 × p5 / median, CV, holes,
  period, trend), kept once per series by :mod:`.stability_cache`;
- :mod:`.stability_verdicts` — is one row steadier than another: the one verdict rule on a
  per-run stability figure;
- :mod:`.claims` — sentences about runs computed from the data, with the exceptions named;
- :mod:`.cycle_history` — flush cycles earlier runs showed (what ``plan`` warns about).

Imports :mod:`analysis.reading` and :mod:`analysis.statistics` only.
"""
