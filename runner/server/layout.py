"""Where one sandbox keeps its files: the run directory, datadir, socket, logs and tmpdir.

Its own module because the option-file writer, the redo resizing and the sandbox itself all
need the layout, and none of them needs the others to know it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107

class SandboxLayout:
    """Where one sandbox keeps its files.

    Parameters
    ----------
    run_dir:
        Directory holding ``my.cnf``, ``mysqld.err``, ``mysqld.pid``, ``tmp/`` and, unless
        ``datadir`` is given, ``data/``.
    datadir:
        Datadir outside ``run_dir`` (e.g. a restored snapshot).

    Notes
    -----
    A unix socket path may hold at most 107 bytes. When ``run_dir/mysqld.sock`` is longer, the
    socket goes to a short private directory under ``/tmp``; :attr:`socket_is_temp` records it
    and :meth:`cleanup` removes it.
    """

    def __init__(self, run_dir: Path, datadir: Path | None = None) -> None:
        self.run_dir = Path(run_dir).absolute()
        self.datadir = Path(datadir).absolute() if datadir is not None else self.run_dir / "data"
        self.cnf = self.run_dir / "my.cnf"
        self.pid_file = self.run_dir / "mysqld.pid"
        self.error_log = self.run_dir / "mysqld.err"
        self.console_log = self.run_dir / "mysqld.console"
        self.tmpdir = self.run_dir / "tmp"
        socket = self.run_dir / "mysqld.sock"
        self.socket_is_temp = len(os.fsencode(socket)) > MAX_SOCKET_PATH
        if self.socket_is_temp:
            self.socket = Path(tempfile.mkdtemp(prefix="fb-", dir="/tmp")) / "mysqld.sock"
        else:
            self.socket = socket

    def create(self) -> SandboxLayout:
        """Create ``run_dir`` and ``tmpdir`` (the datadir is made by initialization/restore)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        return self

    def cleanup(self) -> None:
        """Remove the short socket directory, if one was made."""
        if self.socket_is_temp:
            shutil.rmtree(self.socket.parent, ignore_errors=True)

    def __repr__(self) -> str:
        return f"SandboxLayout(run_dir={str(self.run_dir)!r}, socket={str(self.socket)!r})"


def tail_lines(text: str, lines: int) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.splitlines()[-lines:])
