"""Admission: everything checked before a server starts, and what a run is admitted with.

Owns: ``preflight`` (every check at once: profiles, knobs, host, disk), ``checks`` (checks as
objects and the context they read) with ``checks_host`` (the host, shared with ``doctor``) and
``checks_server`` (each server's cells against its binary), ``planning`` (what an
experiment will do, in which order, for how long), ``disk`` (the disk a queue needs and the
datadirs it keeps), ``doctor`` (what is installed and missing), ``run_context`` (the prepared
context every run of an experiment shares), ``queue_record`` (an experiment as the run ledger
stores it, and read back). May import ``core``, the experiment model, the host checks, the
knobs, the server profiles, the workload adapters and the store's ledger; never the fleet or
one run's life (``runner.fleet``, ``runner.run``).
"""
