"""Option files: the base my.cnf templates a researcher names, and the sandbox's own my.cnf.

The sandbox owns its server: the variables in :data:`SANDBOX_OWNED` (paths, sockets, ports,
identity) are set by flushbench alone, and every name and value written into an option file is
checked here first, so nothing a user types can add a line, a comment or a quote to it.
Base templates are looked up like server profiles: a bare name (``configs/mycnf/NAME.cnf``)
or a path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from flushbench import paths
from flushbench.errors import ConfigError
from flushbench.validation import did_you_mean
from flushbench.yamlio import read_text_file

if TYPE_CHECKING:
    from runner.server.sandbox import SandboxLayout

#: Option-file sections a sandboxed mysqld reads (others, like [client], are ignored here).
SERVER_SECTIONS = ("mysqld", "server", "mariadb", "mariadbd")

#: Variables the sandbox owns (paths, ports, identity): neither an experiment nor a base
#: config may set them; :func:`write_mycnf` writes the ones a server needs itself.
SANDBOX_OWNED = frozenset(
    {
        "datadir", "basedir", "socket", "port", "bind_address", "skip_networking", "user",
        "pid_file", "log_error", "tmpdir", "plugin_dir", "init_file", "secure_file_priv",
        "innodb_data_home_dir", "innodb_log_group_home_dir", "innodb_undo_directory",
        "general_log_file", "slow_query_log_file", "log_bin", "log_bin_index", "relay_log",
        "lc_messages_dir", "character_sets_dir", "defaults_file", "defaults_extra_file",
        "core_file", "init_connect",
    }
)

#: Variables that open the server to other users, or make it load code or run SQL from files:
#: refused unless the experiment lists them in ``allow_variables`` (wsrep_* too).
OPENS_THE_SERVER = frozenset(
    {
        "skip_grant_tables", "init_file", "init_connect", "init_slave", "init_rpl_role",
        "plugin_dir", "plugin_load", "plugin_load_add", "plugin_maturity", "local_infile",
        "secure_file_priv", "chroot", "extra_port", "named_pipe", "shared_memory",
        "des_key_file", "require_secure_transport", "ssl",
    }
)
#: Variables that name files or directories by their suffix (``*_file``, ``*_dir``...)...
PATH_SUFFIXES = ("_file", "_filename", "_dir", "_directory", "_path", "_basename", "_index",
                 "_capath", "_crlpath", "_tmpdir")
#: ...and those whose names do not say so.
PATH_NAMES = frozenset(
    {
        "log_bin", "log_error", "relay_log", "tmpdir", "datadir", "basedir", "socket",
        "ssl_ca", "ssl_cert", "ssl_key", "ssl_crl", "log_basename", "log_slow_query_file",
        "innodb_data_file_path", "innodb_temp_data_file_path", "core_file",
    }
)


def is_path_variable(name: str) -> bool:
    """Whether a (underscored) variable names a file or directory on the server host."""
    return name in PATH_NAMES or name.endswith(PATH_SUFFIXES)


def sandbox_problem(
    name: str, value: str, allowed: frozenset[str] | set[str]
) -> tuple[str, str] | None:
    """Why ``name = value`` may not reach a sandbox's my.cnf, as (what, fix); None when it may.

    The rule: variables the sandbox sets itself (:data:`SANDBOX_OWNED`) never; variables that
    open the server (:data:`OPENS_THE_SERVER`, ``wsrep_*``) or name a path only when listed in
    the experiment's ``allow_variables``; an allowed path must be relative without ``..``, so
    it resolves inside the run's datadir.
    """
    if name in SANDBOX_OWNED:
        return ("is managed by the sandbox",
                "remove it; flushbench sets paths, sockets and ports itself")
    path_like = is_path_variable(name)
    opens = name in OPENS_THE_SERVER or name.startswith("wsrep_")
    if not (path_like or opens):
        return None
    if name not in allowed:
        what = ("names a file or directory, which the sandbox does not allow by default"
                if path_like else "opens the server or loads code into it")
        return (what, f"remove it, or add {name} to the experiment's allow_variables if the"
                      " study needs it")
    if path_like and value and (value.startswith(("/", "~")) or ".." in Path(value).parts):
        return (f"{value} points outside the run directory",
                "use a relative path (it resolves inside the run's datadir)")
    return None


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


def write_mycnf(
    path: Path,
    base_cnf_text: str,
    server_options: Mapping[str, str],
    layout: SandboxLayout,
    port: int | None = None,
) -> Path:
    """Write the sandbox's option file: the base template, then a ``[mysqld]`` section.

    The generated section comes last, so its values win over the template's. It holds the
    sandbox paths, ``port``/``bind-address`` (or ``skip-networking`` when ``port`` is None),
    ``user=root`` when running as root, and the translated ``server_options`` (an empty value
    writes a bare flag such as ``skip-name-resolve``).

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
    if os.geteuid() == 0:
        own["user"] = "root"
    for name, value in own.items():
        # Paths come from the run directory: a '#' or newline there would corrupt the file.
        check_option(name, value, where)

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
    if path.exists():  # a directory, FIFO or device: say which (flushbench.filecheck)
        from flushbench.filecheck import check_input_file

        try:
            check_input_file(path, f"base config file {path}")
        except ConfigError as exc:
            raise ConfigError(exc.what, where="base_config", fix=exc.fix) from None
    raise ConfigError(f"base config file {path} not found", where="base_config",
                      fix="check the path")


def read_mycnf(path: Path) -> dict[str, str]:
    """The server options of a base config file, names underscored — checked line by line.

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
        problems.append(ConfigError(what, where=f"{path}:{lineno}", fix=fix).render())

    section: str | None = None
    for lineno, raw in enumerate(read_text_file(path, "base config").splitlines(), 1):
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
