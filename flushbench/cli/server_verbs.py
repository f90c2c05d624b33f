"""``flushbench server``: binary distributions as profiles (``add``), servers from a Debian
suite (``fetch``), knobs against a server (``check``)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from flushbench.cli import app
from flushbench.cli.console import make_console, say

server_app = typer.Typer(help="Server profiles: add a binary distribution, fetch a server from"
                         " a Debian suite, check the knobs against a server.",
                         no_args_is_help=True)
app.add_typer(server_app, name="server")


@server_app.command("add")
def add_cmd(
    name: Annotated[str, typer.Argument(help="The profile's name (experiments say"
                                        " `server: NAME`).")],
    path: Annotated[Path, typer.Argument(help="A binary distribution: its unpacked folder, a"
                                         " tarball (.tar.gz/.tar.xz/.tar.bz2) or a zip/jar"
                                         " holding one server tree.")],
    profile: Annotated[Path | None, typer.Option(
        "--profile", help="Write the profile here instead of configs/servers/NAME.yaml.")] = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Overwrite an existing profile of that name.")] = False,
) -> None:
    """Find mysqld/mariadbd, its install script, share/ and libraries in PATH, check that they
    work here (architecture, --version, --help, a datadir with system tables created in a
    temporary folder, the server started on it answering a query), and write the server
    profile. Archives are checked from their listing, then unpacked into flushbench's cache."""
    from runner.server.distributions import add_distribution

    with _sigterm_as_interrupt():
        added = add_distribution(name, path, profile_file=profile, replace=replace)
    server = added.server
    console = make_console()
    version = server.version_string.split("Ver", 1)[-1].split()[0]
    say(console, f"{name}: {server.label} ({version}), {server.init_kind.replace('_', '-')}"
                 " created a datadir, and the server started on it and answered")
    say(console, f"  basedir   {server.basedir}"
                 + ("  (unpacked into the cache)" if added.unpacked else ""))
    say(console, f"  mysqld    {server.mysqld}")
    if server.install_db is not None:
        say(console, f"  install   {server.install_db}")
    say(console, "  lib_dirs  " + (", ".join(map(str, server.lib_dirs)) or "none needed"))
    say(console, f"wrote {added.profile_path} — its knobs: flushbench server check"
                 f" {added.profile_path if profile else name}")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``timeout``, a service manager) as Ctrl-C while ``server add`` works: its
    unpack folder and its probes' processes are cleaned up on the way out, as on Ctrl-C."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding program): leave its handler
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


_STYLE = {"applied": "green", "built-in": "green", "refused": "yellow", "absent": "dim"}


@server_app.command("check")
def check_cmd(
    profile: Annotated[str, typer.Argument(help="A profile name (configs/servers/NAME.yaml)"
                                           " or a profile file.")],
) -> None:
    """Translate every knob at its sample levels for this server and let the binary's own
    option parser judge each (no server is started): applied, refused with the server's
    reason, or absent."""
    from runner.server.knob_check import check_profile, level_text, short_reason

    server, verdicts = check_profile(profile)
    console = make_console()
    version = server.version_string.split("Ver", 1)[-1].split()[0]
    say(console, f"{profile}: {server.label} ({version}) — {server.mysqld}")
    rows = [("knob", "level", "verdict", "my.cnf as the binary parsed it / reason")]
    for verdict in verdicts:
        detail = (", ".join(f"{k}={v}" for k, v in verdict.parsed.items())
                  if verdict.status == "applied" else short_reason(verdict.reason))
        if verdict.server_says:
            detail += f"; the binary: {verdict.server_says}"
        rows.append((verdict.knob, level_text(verdict.level), verdict.status, detail))
    # Plain aligned lines, never wrapped: a reason names several variables, and the table is
    # as readable in a pipe or a file as on a terminal.
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        say(console, f"{line}  {row[3]}", _STYLE.get(row[2], "bold"))
    counts = {s: sum(v.status == s for v in verdicts) for s in _STYLE}
    say(console, f"{len(verdicts)} knob levels: " + ", ".join(
        f"{n} {s}" for s, n in counts.items() if n) + " (the binary's option parser; no"
        " server started)")


@server_app.command("fetch")
def fetch_cmd(
    name: Annotated[str, typer.Argument(help="The profile's name (experiments say"
                                        " `server: NAME`).")],
    package: Annotated[str, typer.Argument(help="The server's Debian package, e.g."
                                           " mysql-server-core or mariadb-server-core.")],
    suite: Annotated[str, typer.Option("--suite", help="The Debian suite: unstable (sid),"
                                       " trixie, ...")],
    arch: Annotated[str | None, typer.Option(
        "--arch", help="The architecture (only this machine's can run).")] = None,
    profile: Annotated[Path | None, typer.Option(
        "--profile", help="Write the profile here instead of configs/servers/NAME.yaml.")] = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Overwrite an existing profile of that name.")] = False,
) -> None:
    """Download a server package and its shared libraries from a Debian suite (apt under a
    private configuration: the system's apt set-up is untouched), extract them into
    flushbench's cache, make the binaries use the tree's own loader, check the server as
    `server add` does, and write the profile (suite, packages, versions, sha256)."""
    from runner.server.debian_fetch import fetch_server

    console = make_console()
    fetched = fetch_server(name, package, suite, arch=arch, profile_file=profile,
                           replace=replace, say=lambda line: say(console, line))
    server = fetched.server
    version = server.version_string.split("Ver", 1)[-1].split()[0]
    say(console, f"{name}: {server.label} ({version}) from Debian {suite},"
                 f" {len(fetched.fetched.packages)} packages")
    say(console, f"  basedir   {server.basedir}")
    say(console, f"  mysqld    {server.mysqld}")
    say(console, f"wrote {fetched.profile_path} — its knobs: flushbench server check"
                 f" {fetched.profile_path if profile else name}")
