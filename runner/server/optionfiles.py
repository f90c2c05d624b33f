"""Option files: the base my.cnf templates a researcher names, and the sandbox's own my.cnf.

The sandbox owns its server: the variables in :data:`SANDBOX_OWNED` (paths, sockets, ports,
identity) are set by flushbench alone, and every name and value written into an option file is
checked here first, so nothing a user types can add a line, a comment or a quote to it.
Base templates are looked up like server profiles: a bare name (``configs/mycnf/NAME.cnf``)
or a path.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from core import paths
from core.errors import ConfigError
from core.units import parse_size
from core.validation import did_you_mean
from core.yamlio import read_text_file

# Which variables the sandbox owns or guards is a pure rule that knob translation applies too:
# it lives in runner/knobs/ownership.py (knobs never import the server package).
from runner.knobs.ownership import (  # noqa: F401 - re-exported for the server package
    OPENS_THE_SERVER,
    PATH_NAMES,
    PATH_SUFFIXES,
    SANDBOX_OWNED,
    is_path_variable,
    sandbox_problem,
)
from runner.proc import is_root

if TYPE_CHECKING:
    from runner.server.layout import SandboxLayout

#: Option-file sections a sandboxed mysqld reads (others, like [client], are ignored here).
SERVER_SECTIONS = ("mysqld", "server", "mariadb", "mariadbd")

_NAME_RE = re.compile(r"^[a-z0-9_-]+$")
# Values end up in a config file: no line breaks (new option), quotes or backslashes (the
# option-file parser unquotes and unescapes), and no '#'/';' (comment starts).
_BAD_VALUE_RE = re.compile(r"[\r\n\x00-\x1f\x7f\"'\\#;]")


def _norm_name(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def check_option(name: str, value: str, where: str = "my.cnf") -> None:
    """Raise :class:`ConfigError` unless ``name = value`` is safe to write into an option file."""
    if not _NAME_RE.match(name):
        raise ConfigError(
            f"option name {name!r} may only contain a-z, 0-9, '_' and '-'",
            where,
            "use the server variable's lowercase name",
        )
    if not isinstance(value, str):
        raise ConfigError(f"option {name}: value {value!r} is not a string", where)
    if _BAD_VALUE_RE.search(value) or value != value.strip():
        raise ConfigError(
            f"option {name}: value {value!r} contains a newline, quote, backslash, '#', ';' "
            "or surrounding spaces",
            where,
            "pass a plain value such as 128M, ON or O_DIRECT",
        )


#: The redo size variables MySQL 9 dropped: 8.0.30 replaced them by innodb_redo_log_capacity
#: and derives the capacity from them when only they are set (their product, 2 files default).
OLD_REDO_NAMES = ("innodb_log_file_size", "innodb_log_files_in_group")


def carried_redo_names(option_names: Collection[str]) -> frozenset[str]:
    """The base-config names :func:`base_for_server` rewrites for a server with these options:
    the old redo size variables, on a server that has only ``innodb_redo_log_capacity``."""
    if "innodb_redo_log_capacity" in option_names and "innodb_log_file_size" not in option_names:
        return frozenset(OLD_REDO_NAMES)
    return frozenset()


def base_for_server(text: str, option_names: Collection[str]) -> str:
    """A base config's text as a server with ``option_names`` reads it.

    One rewrite: on a server without ``innodb_log_file_size`` (MySQL 9.x), the base config's
    ``innodb_log_file_size`` × ``innodb_log_files_in_group`` (2 when unset, MySQL's default)
    becomes ``innodb_redo_log_capacity`` — the capacity MySQL 8.0.30–8.4 derive from the same
    two lines themselves — so one base config serves every server. Other lines stay as written.
    """
    carried = carried_redo_names(option_names)
    if not carried:
        return text
    sizes: dict[str, str] = {}
    kept: list[str] = []
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        norm = _norm_name(name)
        if sep and norm in carried:
            sizes[norm] = value.split("#", 1)[0].strip().strip("'\"")
            kept.append(f"# {line.strip()}  (innodb_redo_log_capacity below, for this server)")
            continue
        kept.append(line)
    if "innodb_log_file_size" in sizes:
        files = int(sizes.get("innodb_log_files_in_group") or 2)
        capacity = parse_size(sizes["innodb_log_file_size"]) * files
        # After the last line: still inside the [mysqld] section the old lines were in.
        kept.append(f"innodb_redo_log_capacity = {capacity}")
    return "\n".join(kept) + "\n"


def write_mycnf(
    path: Path,
    base_cnf_text: str,
    server_options: Mapping[str, str],
    layout: SandboxLayout,
    port: int | None = None,
    option_names: Collection[str] | None = None,
) -> Path:
    """Write the sandbox's option file: the base template, then a ``[mysqld]`` section.

    The generated section comes last, so its values win over the template's. It holds the
    sandbox paths, ``port``/``bind-address`` (or ``skip-networking`` when ``port`` is None),
    ``user=root`` when running as root, and the translated ``server_options`` (an empty value
    writes a bare flag such as ``skip-name-resolve``). With the server's ``option_names`` the
    base text is first read as that server reads it (:func:`base_for_server`).

    Raises
    ------
    ConfigError
        If an option name or value is unsafe for an option file, or an option tries to set
        a path the sandbox owns (datadir, socket...).
    """
    where = str(path)
    seen: set[str] = set()
    for name, value in server_options.items():
        check_option(name, value, where)
        norm = _norm_name(name)
        if norm in SANDBOX_OWNED:
            raise ConfigError(
                f"option {name} is set by the sandbox itself",
                where,
                "remove it from the knobs/variables",
            )
        if norm in seen:
            raise ConfigError(f"option {name} is given twice (as '-' and '_' spellings)", where)
        seen.add(norm)
    own: dict[str, str] = {
        "datadir": str(layout.datadir),
        "socket": str(layout.socket),
        "pid-file": str(layout.pid_file),
        "log-error": str(layout.error_log),
        "tmpdir": str(layout.tmpdir),
    }
    if port is None:
        own["skip-networking"] = ""
    else:
        if not 0 < int(port) < 65536:
            raise ConfigError(f"port {port} is out of range", where)
        own["port"] = str(int(port))
        own["bind-address"] = "127.0.0.1"
    if is_root():
        own["user"] = "root"
    for name, value in own.items():
        # Paths come from the run directory: a '#' or newline there would corrupt the file.
        check_option(name, value, where)

    if option_names is not None:
        base_cnf_text = base_for_server(base_cnf_text, option_names)
    lines = [base_cnf_text.rstrip("\n"), "", "# --- generated by flushbench ---", "[mysqld]"]
    for name, value in [*own.items(), *server_options.items()]:
        lines.append(f"{name}={value}" if value != "" else name)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines).lstrip("\n") + "\n")
    tmp.replace(path)
    return path


# --- base my.cnf templates ------------------------------------------------------------------


def available_base_configs() -> list[str]:
    """Names of the base my.cnf templates in ``configs/mycnf``."""
    return paths.names_in(paths.MYCNF_DIR, ".cnf")


def base_config_path(name_or_path: str, relative_to: Path | None = None) -> Path:
    """``configs/mycnf/NAME.cnf`` for a bare name, else the path (raises if missing)."""
    path = paths.named_file(name_or_path, paths.MYCNF_DIR, (".cnf",), relative_to)
    if path.is_file():
        return path
    if path.parent == paths.MYCNF_DIR and "/" not in name_or_path:
        raise ConfigError(
            f"unknown base config '{name_or_path}'",
            where="base_config",
            fix=did_you_mean(name_or_path, available_base_configs()),
        )
    if path.exists():  # a directory, FIFO or device: say which (core.filecheck)
        from core.filecheck import check_input_file

        try:
            check_input_file(path, f"base config file {path}")
        except ConfigError as exc:
            raise ConfigError(exc.what, where="base_config", fix=exc.fix) from None
    raise ConfigError(f"base config file {path} not found", where="base_config",
                      fix="check the path")


def read_mycnf(path: Path) -> dict[str, str]:
    """The server options of a base config file (:func:`parse_mycnf` of its text)."""
    return parse_mycnf(read_text_file(path, "base config"), str(path))


def parse_mycnf(text: str, source: str) -> dict[str, str]:
    """The server options of a base config's text, names underscored — checked line by line.

    ``source`` names the text in messages (``file:line``): its path, or the base config as
    an experiment was queued with it.

    The file is written into the sandbox's my.cnf as it is, so everything in it must be safe
    there: only the sections a sandboxed server reads for itself (:data:`SERVER_SECTIONS`),
    no ``!include``, no option outside a section, names of letters, digits, ``-`` and ``_``,
    values without quotes (a value may be quoted as a whole), backslashes or control
    characters, each variable once. Flags
    without a value (``skip-name-resolve``) map to ``""``.

    Raises
    ------
    ConfigError
        Every problem, one line each with ``file:line``.
    """
    out: dict[str, str] = {}
    seen_at: dict[str, int] = {}
    problems: list[str] = []

    def problem(lineno: int, what: str, fix: str) -> None:
        problems.append(ConfigError(what, where=f"{source}:{lineno}", fix=fix).render())

    section: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("!"):
            problem(lineno, f"{line.split()[0]} is not allowed in a base config",
                    "inline the options: a sandbox reads only this file")
            continue
        if line.startswith("["):
            name = line[1:-1].strip().lower() if line.endswith("]") else ""
            if name not in SERVER_SECTIONS:
                problem(lineno, f"section {line} is not allowed in a base config",
                        "use [mysqld] (also accepted: " + ", ".join(
                            f"[{s}]" for s in SERVER_SECTIONS[1:]) + ")")
                section = ""  # refused: its lines are not read (the header was reported)
                continue
            section = name
            continue
        if section == "":
            continue
        if section is None:
            problem(lineno, f"option {line!r} is outside a section", "put it under [mysqld]")
            continue
        name, sep, value = line.partition("=")
        value = value.split("#", 1)[0].strip() if sep else ""
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]  # mysqld unquotes a quoted value; what is inside is checked
        norm = name.strip().lower().replace("-", "_")
        if not _NAME_RE.match(name.strip().lower()):
            problem(lineno, f"{name.strip()!r} is not a variable name",
                    "use letters, digits, '-' and '_' only")
            continue
        if _BAD_VALUE_RE.search(value):
            problem(lineno, f"{norm}: value {value!r} has a quote, backslash, ';' or control"
                    " character", "write a plain value such as 128M, ON or O_DIRECT")
            continue
        if norm in seen_at:
            problem(lineno, f"{norm} is set twice (also line {seen_at[norm]})",
                    "keep one line per variable")
            continue
        seen_at[norm] = lineno
        out[norm] = value
    if problems:
        raise ConfigError.from_problems("invalid base config:", problems)
    return out
