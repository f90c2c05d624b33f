"""The fleet: workers on one or several hosts claiming the runs queued in the results database.

Owns only orchestration: ``worker`` (the loop: reap, take over, claim a run, hand it to
:mod:`runner.run.execute`), ``lease`` (the heartbeat thread: its timing and error handling),
``hostlock`` (one measurement per host), ``workers`` (the workers sharing a database, as
``status`` shows them, and ``queue stop``'s signals). Every statement they run is the run
ledger's (:mod:`store.ledger`: enqueue, claim, lease, takeover, finish, workers' rows), and who
a worker is, is a host fact (:mod:`runner.host.identity`). The worker is the top of the runner:
it may import every wing; nothing in the runner imports the fleet (``tests/test_layers.py``).
"""
