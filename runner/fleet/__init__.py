"""The queue and the fleet: runs queued in the results database, claimed under a lease by
workers on one or several hosts.

Owns: ``queue`` (enqueue, claim, renew, cancel, unpin, ETA — every queue statement together),
``lease`` (the heartbeat thread), ``hostlock`` (one measurement per host), ``identity`` (who a
worker is), ``workers`` (the workers sharing a database, as ``status`` shows them), ``worker``
(the loop: claim a run, hand it to :mod:`runner.run.execute`). The worker is the top of the
runner: it may import every wing; nothing in the runner imports it.
"""
