"""Everything flushbench knows and does about a MySQL-family server, one module per job.

- :mod:`~runner.server.profiles`: server profiles and the binary they resolve to (flavor and
  version as the binary reports them; the environment every invocation runs in).
- :mod:`~runner.server.options`: the binary's option list and its own parse of values
  (``--verbose --help``; no server started).
- :mod:`~runner.server.optionfiles`: base my.cnf templates, the sandbox's my.cnf, and the
  variables the sandbox owns.
- :mod:`~runner.server.datadir`: creating a datadir's system tables.
- :mod:`~runner.server.sandbox`: one mysqld's life: start, verify applied values, stop.

Pure flavor/version rules (labels, the applied-value rule, redo capacity) live in
:mod:`core.flavors`, because the analysis needs them too.
"""

from runner.server.datadir import initialize_datadir
from runner.server.optionfiles import SANDBOX_OWNED, read_mycnf, write_mycnf
from runner.server.profiles import ResolvedServer, load_profile, resolve_binary, resolve_server
from runner.server.sandbox import MysqldSandbox, SandboxLayout, StopResult, drain_dirty_pages

__all__ = [
    "SANDBOX_OWNED",
    "MysqldSandbox",
    "ResolvedServer",
    "SandboxLayout",
    "StopResult",
    "drain_dirty_pages",
    "initialize_datadir",
    "load_profile",
    "read_mycnf",
    "resolve_binary",
    "resolve_server",
    "write_mycnf",
]
