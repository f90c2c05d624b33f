"""Servers fetched from Debian's newer suites for tests: MySQL 9.x (sid), MariaDB 11.8 (trixie).

``bash scripts/setup.sh --test-servers`` (which ``make test`` runs) fetches them with
``flushbench server fetch`` into the user's flushbench cache and writes their profiles to
``<cache>/debian/test-servers/NAME.yaml``. Without a profile a test skips naming that command —
and fails under ``make test`` (FLUSHBENCH_REQUIRE_MYSQL=1), like every ``mysql`` test whose
server is missing. The suite's own version is whatever the suite had the day setup ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.server.profiles import ResolvedServer, load_profile, resolve_server

#: The user's flushbench cache as setup saw it (the tests' session gets a private one).
USER_CACHE = Path(os.environ.get("FLUSHBENCH_CACHE_DIR")
                  or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                  / "flushbench")
#: Where setup keeps the private apt state and the downloaded packages (shared with tests,
#: so nothing is downloaded twice).
DOWNLOADS = USER_CACHE / "debian"
PROFILES = DOWNLOADS / "test-servers"
#: name → (package, suite), as scripts/setup.sh's TEST_SERVER_FETCHES.
FETCHES = {"mysql-9.7": ("mysql-server-core", "sid"),
           "mariadb-11.8": ("mariadb-server-core", "trixie")}
FETCH_HINT = "bash scripts/setup.sh --test-servers (make test runs it)"


def fetched_profile(name: str) -> Path:
    """The profile setup wrote for ``name``, or a skip naming the fetch."""
    path = PROFILES / f"{name}.yaml"
    if not path.is_file():
        pytest.skip(f"{path} is missing: fetch it with {FETCH_HINT}")
    basedir = load_profile(str(path)).basedir
    if basedir is None or not Path(basedir).is_dir():
        pytest.skip(f"{path} names {basedir}, which is gone (the cache was cleaned):"
                    f" fetch it again with {FETCH_HINT}")
    return path


def fetched_server(name: str) -> ResolvedServer:
    """The resolved server of setup's profile for ``name`` (a skip when absent)."""
    path = fetched_profile(name)
    return resolve_server(load_profile(str(path)), str(path))
