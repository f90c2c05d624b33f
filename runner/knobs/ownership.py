"""Which server variables a sandbox owns or guards: a pure rule, shared by knob translation,
preflight and the option-file writer (``runner/server/optionfiles.py``).

A sandbox sets its own paths, sockets, ports and identity; an experiment may set a variable
that opens the server or names a path only when it lists it in ``allow_variables``, and then
only as a relative path that resolves inside the run's datadir.
"""

from __future__ import annotations

from pathlib import Path

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
