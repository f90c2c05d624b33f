"""Redo files on servers that cannot resize them (MySQL/Percona 5.5, MariaDB 5.5).

InnoDB 5.5 refuses to start when ``ib_logfile*`` on disk differ from the configured
``innodb_log_file_size`` × ``innodb_log_files_in_group`` ("log file ./ib_logfile0 is of
different size ... than specified in the .cnf file"). The documented way to change them is a
clean shutdown, then removing the old files: InnoDB creates new ones of the configured size
at the next start. flushbench's datadirs always come from a clean shutdown (the install
script's bootstrap, a dataset snapshot taken after a slow shutdown), so the sandbox removes
mismatched files right before it starts such a server. Files of the configured shape are
never touched: after a kill drill they hold the redo that crash recovery needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from core.flavors import resizes_redo
from core.units import parse_size
from runner.server.optionfiles import SERVER_SECTIONS
from runner.server.profiles import ResolvedServer

_LOGFILE_RE = re.compile(r"^ib_logfile\d+$")


def effective_options(cnf: Path) -> dict[str, str]:
    """The server options an option file gives mysqld (underscored names, last one wins)."""
    out: dict[str, str] = {}
    section = None
    for raw in cnf.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            continue
        if section not in SERVER_SECTIONS:
            continue
        name, _, value = line.partition("=")
        out[name.strip().replace("-", "_").lower()] = value.strip().strip("'\"")
    return out


def _size(text: str | None, default: int) -> int:
    if text is None or not text.strip():
        return default
    try:
        return parse_size(text)
    except ValueError:
        return int(float(text))


def stale_redo_files(
    server: ResolvedServer,
    datadir: Path,
    options: Mapping[str, str],
    defaults: Mapping[str, str],
) -> list[Path]:
    """The ``ib_logfile*`` a 5.5 server would refuse to start with (empty when none).

    Parameters
    ----------
    server:
        The resolved server; servers that resize their redo themselves always get ``[]``.
    datadir:
        The datadir (the log files' home unless ``innodb_log_group_home_dir`` says otherwise).
    options:
        The option file's server options (:func:`effective_options`).
    defaults:
        The binary's defaults (:func:`runner.server.options.option_list`), for what the
        option file leaves unset.
    """
    if resizes_redo(server.flavor, server.version):
        return []
    home = Path(options.get("innodb_log_group_home_dir") or datadir)
    if not home.is_absolute():
        home = datadir / home
    files = sorted(p for p in home.glob("ib_logfile*") if _LOGFILE_RE.match(p.name))
    if not files:
        return []
    size = _size(options.get("innodb_log_file_size"),
                 _size(defaults.get("innodb_log_file_size"), 5 * 1024**2))
    count = _size(options.get("innodb_log_files_in_group"),
                  _size(defaults.get("innodb_log_files_in_group"), 2))
    if len(files) == count and all(p.stat().st_size == size for p in files):
        return []
    return files
