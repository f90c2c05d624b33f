"""Where flushbench finds its own files (configs, the Go driver) and puts its work."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

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


def cache_dir() -> Path:
    """flushbench's cache folder: ``$FLUSHBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/flushbench``,
    else ``~/.cache/flushbench`` (derived data only: deleting it loses nothing)."""
    own = os.environ.get("FLUSHBENCH_CACHE_DIR")
    if own:
        return Path(own).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "flushbench"


def names_in(folder: Path, suffix: str) -> list[str]:
    """The bare names (file stems) of the ``*suffix`` files in ``folder``, sorted."""
    return sorted(p.stem for p in folder.glob(f"*{suffix}")) if folder.is_dir() else []


def named_file(
    name_or_path: str, folder: Path, suffixes: tuple[str, ...], relative_to: Path | None = None
) -> Path:
    """Where a file named in an experiment lives: ``folder/NAME<suffix>`` for a bare name.

    A value with a ``/`` or one of ``suffixes`` is a path: tried as given (against the current
    directory), then against ``relative_to`` (the folder of the file that names it). The
    result may not exist; callers say what is missing.
    """
    if "/" in name_or_path or name_or_path.endswith(suffixes):
        path = Path(name_or_path).expanduser()
        if not path.is_absolute() and not path.exists() and relative_to is not None:
            alt = relative_to / path
            if alt.exists():
                return alt
        return path
    return folder / f"{name_or_path}{suffixes[0]}"


def open_private(path: Path, mode: str = "a") -> IO[Any]:
    """Open a log file for writing, created with mode 0600 (logs may name hosts and users).

    An existing file keeps its mode; ``mode`` is ``"a"`` or ``"w"`` (text, UTF-8, line
    buffered).
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    # O_NONBLOCK: a FIFO named by mistake must not block the open (it is refused before,
    # by core.filecheck; this is the belt to that check's braces).
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    os.set_blocking(fd, True)
    return os.fdopen(fd, mode, encoding="utf-8", buffering=1)
