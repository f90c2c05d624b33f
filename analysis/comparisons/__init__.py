"""Comparisons: is a difference between cells real, and what a reference said of them.

- :mod:`.compare` — cells against their baseline (which one:
  :mod:`analysis.reading.baselines`), knob effects, rankings, verdicts;
- :mod:`.hosts` — the host as a block when runs were spread over hosts;
- :mod:`.row_compare` — rows on one time axis (``flushbench plot compare``);
- :mod:`.relative` — each row's figures over its baseline's (``compare --format csv|markdown``);
- :mod:`.cross_server` — each server's baseline row against one reference row;
- :mod:`.aa_variants` — how noisy one configuration is under each way of measuring it;
- :mod:`.scorecard` — each comparison a reference makes, against what was measured;
- :mod:`.stability_claims` — the reference's stability claims, scored;
- :mod:`.power_plan` — how many repetitions a difference needs (``plan --detect``);
- :mod:`.crossdb` — experiments from several databases, compared like with like.

Imports every wing below (tables, writes, steadiness, figures, reading, statistics); never
:mod:`analysis.response`, :mod:`analysis.studies` or the report.
"""
