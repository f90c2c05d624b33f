"""The servers ``scripts/build-server.sh`` builds (MySQL 5.5, XtraDB 5.5), for tests.

Tests that need one are marked ``optional_tool``: no registry installs these servers, so when
the profile is absent the test skips, naming the command that builds it, even under
``make test`` (FLUSHBENCH_REQUIRE_MYSQL=1). Looking for a profile is a file check, so a
machine without built servers pays nothing.
"""

from __future__ import annotations

import pytest

from flushbench.errors import FlushbenchError
from runner.server.built import BUILD_HINT, is_built_profile
from runner.server.profiles import ResolvedServer, load_profile, profile_path, resolve_server

#: The built servers, by profile name (= build-server.sh KIND).
BUILT_KINDS = ("mysql-5.5", "xtradb-5.5")


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
