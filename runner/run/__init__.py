"""One run's life: restore → my.cnf → start → verify → drain → measure → stop → record.

Owns: ``execute`` (the life, top to bottom), ``measure`` (driver and sampler together),
``sampler`` (server counters and process/disk figures on absolute ticks), ``recorder`` (what
a run produces, written as it happens), ``run_checks`` / ``steady`` / ``disturbance`` (the run
judged after it measured), ``metadata`` (facts about the machine). Calls go one way:
``execute`` → ``measure`` → the rest; nothing here imports the queue's worker.
"""
