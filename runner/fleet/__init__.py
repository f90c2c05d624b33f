"""The queue and the fleet: runs queued in the results database, claimed under a lease by
workers on one or several hosts.

Owns: ``queue`` (enqueue, claim, renew, cancel, unpin, ETA, the worker rows and lease renewal
the heartbeat writes — every queue statement together), ``lease`` (the heartbeat thread: its
timing and error handling, calling the queue's statements), ``hostlock`` (one measurement per
host), ``identity`` (who a worker is), ``workers`` (the workers sharing a database, as
``status`` shows them), ``worker`` (the loop: claim a run, hand it to
:mod:`runner.run.execute`). The worker is the top of the runner: it may import every wing;
nothing in the runner imports it. The runner's other statements on the results database live
in ``store.runs`` and ``store.workers`` (``tests/test_sql_home.py`` holds every module to it).
"""
