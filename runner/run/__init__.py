"""One run's life: restore → my.cnf → start → verify → drain → measure → stop → record.

Owns: ``execute`` (the life, top to bottom), ``measure`` (driver and sampler together),
``sampler`` (server counters and process/disk figures on absolute ticks), ``run_checks`` /
``steady`` / ``disturbance`` (the run judged after it measured), ``metadata`` (facts about the
machine), ``run_lease`` (what a run needs of the lease its worker hands down). What a run
produces is written by the ledger's recorder (:mod:`store.ledger.recorder`), its status by the
ledger too. Calls go one way: ``execute`` → ``measure`` → the rest; nothing here imports the
fleet (``runner.fleet``).
"""
