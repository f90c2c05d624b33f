"""The write path and each run's costs, from every sample of a done run.

- :mod:`.run_digest` — the per-run figures only a run's whole sample series gives, computed
  once per run and cached (what they hold: :class:`.digests.RunDigests`);
- :mod:`.cost` — CPU, device I/O and row-lock waits per transaction;
- :mod:`.ledger` — the write-path ledger: where each byte the device wrote went, and why;
- :mod:`.bound` — what bound each run: the storage limit, CPU, redo, free-page or row-lock
  waits;
- :mod:`.write_costs` — the cost table against each row's baseline.

Imports :mod:`analysis.steadiness`, :mod:`analysis.reading` and :mod:`analysis.statistics`;
cost, ledger and bound take the digest's figures and never import the digest that calls them.
"""
