"""The servers ``scripts/build-server.sh`` builds (MySQL 5.5, XtraDB 5.5), for tests.

Tests that need one are marked ``optional_tool``: no registry installs these servers, so when
the profile is absent the test skips, naming the command that builds it, even under
``make test`` (FLUSHBENCH_REQUIRE_MYSQL=1). Looking for a profile is a file check, so a
machine without built servers pays nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from core.errors import FlushbenchError
from runner.server.built import BUILD_HINT, is_built_profile
from runner.server.profiles import (  # noqa: F401 - SHIPPED_PROFILES: the tests' name for it
    SHIPPED_PROFILES,
    ResolvedServer,
    load_profile,
    profile_path,
    resolve_server,
)

#: The built servers, by profile name (= build-server.sh KIND).
BUILT_KINDS = ("mysql-5.5", "xtradb-5.5")
# SHIPPED_PROFILES: the server profiles committed in configs/servers/ (every other one is the
# machine's own), kept in runner.server.profiles, which never lets anything replace them.


def built_server(kind: str) -> ResolvedServer:
    """The server built as ``configs/servers/KIND.yaml``, or a skip naming the build command."""
    path = profile_path(kind)
    if not path.is_file() or not is_built_profile(path):
        pytest.skip(f"{kind} is not built here: {BUILD_HINT.format(kind=kind)}")
    try:
        return resolve_server(load_profile(kind), str(path))
    except FlushbenchError as exc:
        pytest.skip(f"{kind}'s profile does not resolve ({exc.what}): rebuild it with"
                    f" {BUILD_HINT.format(kind=kind)}")


def built_servers_named(experiment: Path) -> list[str]:
    """The servers an experiment file names (top level, ``fixed``, matrix, include) whose
    profiles this repository does not ship: built by ``scripts/build-server.sh`` or written by
    ``flushbench server add`` on the machine, so absent from a fresh clone.

    A shipped experiment that names one validates only where it exists: the test that
    validates every shipped file leaves it to the tests that build-check it
    (tests/core/experiment/test_shipped_2011_studies.py, tests/runner/test_server_axis.py)
    and to the design tests that need no server (test_shipped_generations.py).
    """
    data = yaml.safe_load(experiment.read_text()) or {}
    named = [data.get("server"), (data.get("fixed") or {}).get("server")]
    named += list((data.get("matrix") or {}).get("server") or [])
    named += [row.get("server") for row in data.get("include") or [] if isinstance(row, dict)]
    return sorted({str(n) for n in named if n is not None} - set(SHIPPED_PROFILES))
