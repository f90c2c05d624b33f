"""Where flushbench finds its own files (configs, the Go driver) and puts its work."""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout flushbench runs from (configs/, experiments/, tpcc/ live here).
REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIGS_DIR = REPO_ROOT / "configs"
SERVER_PROFILES_DIR = CONFIGS_DIR / "servers"
MYCNF_DIR = CONFIGS_DIR / "mycnf"
EXPERIMENTS_DIR = REPO_ROOT / "experiments"


def tpcc_binary() -> Path:
    """The built-in Go TPC-C driver (``$FLUSHBENCH_TPCC_BIN`` overrides the build output)."""
    return Path(os.environ.get("FLUSHBENCH_TPCC_BIN", REPO_ROOT / "tpcc" / "bin" / "tpcc"))


def work_dir() -> Path:
    """Root for datasets snapshots and run directories (``$FLUSHBENCH_WORK`` or ./work)."""
    return Path(os.environ.get("FLUSHBENCH_WORK", "work")).resolve()
