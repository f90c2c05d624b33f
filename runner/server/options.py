"""The server's own option list and its own opinion of values, without starting a server.

``mysqld --no-defaults --verbose --help`` prints every variable with its default and exits
(~0.1 s). With ``--name=value`` arguments it also parses those values exactly as a real start
would and complains on stderr::

    [Warning] option 'innodb-io-capacity': unsigned value 50 adjusted to 100
    [ERROR] mariadbd: unknown variable 'innodb-bogus=1'          (exit code 7)
    [ERROR] mariadbd: Error while setting value 'foo' to 'innodb-flush-method'

so preflight checks names and ranges against the real binary instead of a hand-kept table.
Checks that InnoDB does only at engine start-up (io_capacity above io_capacity_max) do not
show here; :mod:`runner.admission.preflight` covers those.

Even ``--help`` touches the datadir: MariaDB 10.11 creates and deletes a file there (its
lower_case_table_names probe), changes into it and opens its Aria control file and
``mysql.plugin`` read-write; MySQL 5.5 does the same probe and reads ``mysql.plugin``. Run
with the compiled-in datadir, ``validate`` would write into the system server's
``/var/lib/mysql``. So every parse gets a private, empty temporary folder as its datadir,
tmpdir, pid file, socket (and Aria log folder), passed after the options under test so they
win, and removed afterwards (seen with strace: nothing outside that folder is opened for
writing). The option list therefore shows those private paths as the defaults of
``datadir``, ``tmpdir``, ``pid_file`` and ``socket``: the sandbox sets all of them itself.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from core.errors import PreflightError
from runner.proc import is_root, run_checked
from runner.server.profiles import ResolvedServer

_HEADER = "Variables (--variable-name=value)"
#: ``2026-11-23 21:37:16 0 `` (MariaDB 10, MySQL 5.6+) or ``261123 21:37:16 `` (5.5).
_LOG_PREFIX_RE = re.compile(
    r"^(?:\d{4}-\d\d-\d\d\s+\d+:\d\d:\d\d\s+\d+\s+|\d{6}\s+\d+:\d\d:\d\d\s+)"
)
#: stderr lines about the host, not about the options we passed.
_NOISE = (
    "max_open_files",
    "Couldn't allocate",  # large-pages without huge pages: handled by preflight's own check
    "Parsing options for plugin",  # follows the specific "Error while setting value" line
    "Changed limits",
    "setrlimit",
    # 5.5 reads plugin names from the datadir's mysql.plugin even for --help; there is none.
    "Could not open mysql.plugin table",
    "Can't open the mysql.plugin table",
    # MySQL 5.5's lower_case_table_names probe of the datadir, should it fail: not our options.
    "Can't create test file",
    # A deprecation takes the value: MariaDB 11.8 warns for innodb_flush_method and
    # innodb_file_per_table (both still applied), which every base config sets.
    "is deprecated and will be removed",
)

_LIST_CACHE: dict[tuple[str, int, str], dict[str, str]] = {}
_DRY_CACHE: dict[tuple, DryRun] = {}


@dataclass(frozen=True)
class DryRun:
    """What mysqld said about a set of options: complaints, exit code, resulting values."""

    messages: list[str]
    returncode: int
    values: dict[str, str]


def _argv(server: ResolvedServer, extra: list[str], private: Path) -> list[str]:
    """``mysqld --no-defaults [--user] [--basedir] EXTRA <private paths> --verbose --help``.

    The private paths come after ``extra``: the last value of an option wins, so a datadir
    among the options under test cannot send the parse back to a real datadir.
    """
    argv = [str(server.mysqld), "--no-defaults"]
    # MySQL refuses to run as root without --user (even for --help on some versions).
    if is_root():
        argv.append("--user=root")
    if server.basedir is not None:
        argv.append(f"--basedir={server.basedir}")
    argv += extra
    argv += [f"--datadir={private}", f"--tmpdir={private}", f"--pid-file={private}/mysqld.pid",
             f"--socket={private}/mysqld.sock"]
    # Aria's log folder follows the datadir; naming it too costs nothing where it is known
    # (an option a binary does not know would fail the whole parse).
    if server.flavor == "mariadb" and server.version >= (10, 0, 0):
        argv.append(f"--aria-log-dir-path={private}")
    return argv + ["--verbose", "--help"]


def parse_help(text: str) -> dict[str, str]:
    """Variable name (underscored) → default text from ``--verbose --help`` output."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(_HEADER))
    except StopIteration:
        return {}
    out: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if line.startswith(("-----", "and boolean options")):
            continue
        name, _, value = line.strip().partition(" ")
        out[name.replace("-", "_")] = value.strip()
    return out


#: A --help parse takes ~0.1 s (a few on a loaded host); a binary still running after this is
#: not a server, and `validate` stays within half a minute against one that never ends.
HELP_TIMEOUT_S = 20


def _run(server: ResolvedServer, extra: list[str]) -> subprocess.CompletedProcess[str]:
    """``--verbose --help`` with ``extra`` in a private, empty folder removed afterwards."""
    try:
        with tempfile.TemporaryDirectory(prefix="flushbench-help-",
                                         ignore_cleanup_errors=True) as private:
            return run_checked(_argv(server, extra, Path(private)), timeout=HELP_TIMEOUT_S,
                               env=server.env(), cwd=private)
    except subprocess.TimeoutExpired:
        reason = f"it did not finish within {HELP_TIMEOUT_S} s (killed)"
    except OSError as exc:
        reason = exc.strerror or str(exc)
    raise PreflightError(
        f"cannot run `{server.mysqld} --verbose --help`: {reason}",
        where=str(server.mysqld),
        fix="check the binary and its shared libraries (lib_dirs in the profile)",
    )


def option_list(server: ResolvedServer) -> dict[str, str]:
    """Every variable the binary knows → its default text (cached per binary and mtime).

    Raises
    ------
    PreflightError
        The binary cannot run or prints no variable list.
    """
    stat = server.mysqld.stat()
    key = (str(server.mysqld), stat.st_mtime_ns, str(server.basedir))
    if key not in _LIST_CACHE:
        proc = _run(server, [])
        options = parse_help(proc.stdout)
        if not options:
            raise PreflightError(
                f"`{server.mysqld} --no-defaults --verbose --help` printed no variable list"
                f" (exit {proc.returncode}): {proc.stderr.strip()[-300:]!r}",
                where=str(server.mysqld),
                fix="run the command by hand to see why",
            )
        _LIST_CACHE[key] = options
    return dict(_LIST_CACHE[key])


_DESCRIPTIONS_CACHE: dict[tuple[str, int, str], dict[str, str]] = {}
#: ``  --innodb-flush-neighbors[=#]  Set to 0 …`` or ``  -a, --ansi  Use ANSI …``.
_OPTION_LINE_RE = re.compile(r"^  (?:-\w, )?--([A-Za-z0-9_-]+)\S*\s*(.*)$")
#: How a binary's own help says a variable is kept only so old option files still start:
#: "Deprecated and ignored" (MariaDB 10.2's XtraDB leftovers), "Deprecated parameter with no
#: effect" (MariaDB 10.5+), "DEPRECATED. This setting has no effect", "does nothing".
_IGNORED_RE = re.compile(r"deprecated and ignored|with no effect|has no effect|does nothing",
                         re.IGNORECASE)


def parse_descriptions(text: str) -> dict[str, str]:
    """Option name (underscored) → its description, from ``--verbose --help`` output."""
    out: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        if line.startswith(_HEADER):
            break
        match = _OPTION_LINE_RE.match(line)
        if match:
            name = match.group(1).replace("-", "_")
            out[name] = match.group(2).strip()
        elif name is not None and line.startswith(" " * 10) and line.strip():
            out[name] = (out[name] + " " + line.strip()).strip()
        else:
            name = None
    return out


def option_descriptions(server: ResolvedServer) -> dict[str, str]:
    """Every option's description as the binary's ``--verbose --help`` prints it (cached)."""
    stat = server.mysqld.stat()
    key = (str(server.mysqld), stat.st_mtime_ns, str(server.basedir))
    if key not in _DESCRIPTIONS_CACHE:
        _DESCRIPTIONS_CACHE[key] = parse_descriptions(_run(server, []).stdout)
    return dict(_DESCRIPTIONS_CACHE[key])


def ignored_options(server: ResolvedServer) -> dict[str, str]:
    """The variables the binary accepts but, by its own help, ignores → that description.

    MariaDB 10.2 keeps XtraDB's ``innodb_cleaner_lsn_age_factor`` "Deprecated and ignored;
    only exists to allow easier upgrade": setting it parses, shows in ``SHOW GLOBAL
    VARIABLES`` and changes nothing.
    """
    return {name: text for name, text in option_descriptions(server).items()
            if _IGNORED_RE.search(text)}


def _clean(line: str) -> str:
    return _LOG_PREFIX_RE.sub("", line.strip())


def dry_run(server: ResolvedServer, variables: dict[str, str]) -> DryRun:
    """Let mysqld parse ``--name=value`` for each variable and report what it said.

    Returns the server's warnings/errors (host noise removed), its exit code (7 for an
    unknown variable) and the values it would run with. Cached per binary and option set.
    """
    stat = server.mysqld.stat()
    key = (str(server.mysqld), stat.st_mtime_ns, tuple(sorted(variables.items())))
    if key not in _DRY_CACHE:
        args = [f"--{name}={value}" if value != "" else f"--{name}"
                for name, value in variables.items()]
        proc = _run(server, args)
        messages = []
        for line in proc.stderr.splitlines():
            if ("[Warning]" in line or "[ERROR]" in line) and not any(n in line for n in _NOISE):
                messages.append(_clean(line))
        if proc.returncode != 0 and not messages:
            tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
            messages.append(f"mysqld --help exited {proc.returncode}: {_clean(tail[0])}")
        _DRY_CACHE[key] = DryRun(messages, proc.returncode, parse_help(proc.stdout))
    return _DRY_CACHE[key]


def dry_run_options(server: ResolvedServer, variables: dict[str, str]) -> list[str]:
    """The server's own complaints about ``variables`` (empty when all are accepted as given).

    Parameters
    ----------
    server:
        The resolved binary.
    variables:
        Underscored variable names → my.cnf value text.

    Examples of returned lines: ``[Warning] option 'innodb-io-capacity': unsigned value 50
    adjusted to 100``, ``[ERROR] mariadbd: unknown variable 'innodb-bogus=1'``.
    """
    return list(dry_run(server, variables).messages)


_NAME_IN_MESSAGE_RE = re.compile(r"'-{0,2}([A-Za-z0-9_-]+?)(?:=[^']*)?'")


def variables_in_message(message: str) -> list[str]:
    """Underscored variable names quoted in a server message (to map it back to a knob)."""
    return [m.group(1).replace("-", "_").lower() for m in _NAME_IN_MESSAGE_RE.finditer(message)]

