"""The real mariadbd's option list and its own complaints (``--verbose --help``: no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.server.options import (
    _LIST_CACHE,
    dry_run,
    dry_run_options,
    option_list,
    parse_help,
    variables_in_message,
)
from runner.server.profiles import ResolvedServer, load_profile, resolve_server

# Shaped like real output: name padded to column 61, value; empty values keep the padding.
HELP_SAMPLE = "\n".join([
    "  --innodb-io-capacity=#  Number of IOPs the server can do.",
    "Variables (--variable-name=value)",
    "and boolean options {FALSE|TRUE}".ljust(61) + "Value (after reading options)",
    "-" * 60 + " " + "-" * 13,
    "innodb-doublewrite".ljust(61) + "TRUE",
    "innodb-io-capacity".ljust(61) + "200",
    "log-error".ljust(61),
    "sql-mode".ljust(61) + "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO",
    "",
    "To see what variables a running server is using, type",
])


def test_parse_help() -> None:
    assert parse_help(HELP_SAMPLE) == {
        "innodb_doublewrite": "TRUE",
        "innodb_io_capacity": "200",
        "log_error": "",
        "sql_mode": "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO",
    }
    assert parse_help("no variable list here") == {}


def test_variables_in_message() -> None:
    assert variables_in_message(
        "[ERROR] mariadbd: Error while setting value 'foo' to 'innodb-flush-method'"
    ) == ["foo", "innodb_flush_method"]
    assert variables_in_message("[ERROR] mariadbd: unknown variable 'innodb-bogus=1'") == [
        "innodb_bogus"]
    assert variables_in_message(
        "[Warning] mariadbd: ignoring option '--innodb-doublewrite' due to invalid value 'x'"
    )[0] == "innodb_doublewrite"


@pytest.fixture(scope="module")
def server() -> ResolvedServer:
    if not Path("/usr/sbin/mariadbd").is_file():
        pytest.skip("Debian MariaDB is not installed")
    return resolve_server(load_profile("mariadb-debian"))


@pytest.mark.mysql
def test_option_list_of_real_mariadbd(server: ResolvedServer) -> None:
    options = option_list(server)
    assert len(options) > 500
    assert options["innodb_io_capacity"] == "200"
    assert options["innodb_doublewrite"] in {"TRUE", "ON"}
    assert "innodb_flush_neighbors" in options
    assert "innodb_max_dirty_pages_pct_lwm" in options
    # Removed in MariaDB 10.6: the knob table and the option list agree.
    assert "innodb_buffer_pool_instances" not in options
    assert "innodb_log_files_in_group" not in options
    assert all("-" not in name for name in options)


@pytest.mark.mysql
def test_option_list_is_cached_per_binary(server: ResolvedServer) -> None:
    first = option_list(server)
    first["innodb_io_capacity"] = "mutated"  # callers get a copy
    assert option_list(server)["innodb_io_capacity"] == "200"
    assert any(key[0] == str(server.mysqld) for key in _LIST_CACHE)


@pytest.mark.mysql
def test_dry_run_accepts_valid_values(server: ResolvedServer) -> None:
    assert dry_run_options(server, {"innodb_io_capacity": "2000", "innodb_doublewrite": "OFF",
                                    "innodb_max_dirty_pages_pct": "60"}) == []


@pytest.mark.mysql
@pytest.mark.parametrize(
    ("variables", "fragment"),
    [
        ({"innodb_io_capacity": "50"},
         "[Warning] option 'innodb-io-capacity': unsigned value 50 adjusted to 100"),
        ({"innodb_max_dirty_pages_pct": "150"},
         "option 'innodb-max-dirty-pages-pct': value 150 adjusted to 99.999"),
        ({"innodb_flush_method": "foo"},
         "Error while setting value 'foo' to 'innodb-flush-method'"),
        ({"innodb_bogus": "1"}, "unknown variable 'innodb_bogus=1'"),
        ({"innodb_doublewrite": "fast"}, "ignoring option '--innodb-doublewrite' due to invalid"),
        ({"innodb_log_file_size": "100K"}, "unsigned value 102400 adjusted to 4194304"),
    ],
)
def test_dry_run_reports_the_servers_complaints(
    server: ResolvedServer, variables: dict[str, str], fragment: str
) -> None:
    messages = dry_run_options(server, variables)
    assert any(fragment in m for m in messages), messages
    assert not any(m[:4].isdigit() for m in messages)  # timestamps stripped


@pytest.mark.mysql
def test_dry_run_exit_code_and_values(server: ResolvedServer) -> None:
    assert dry_run(server, {"innodb_bogus": "1"}).returncode == 7
    result = dry_run(server, {"innodb_io_capacity": "50"})
    assert result.returncode == 0
    assert result.values["innodb_io_capacity"] == "100"  # what the server would really use


@pytest.mark.mysql
def test_large_pages_host_warning_is_not_an_option_problem(server: ResolvedServer) -> None:
    # Without huge pages mariadbd warns "Couldn't allocate ..." — preflight's own huge-page
    # check reports that with a fix, so the dry run leaves it out.
    assert dry_run_options(server, {"large_pages": "ON"}) == []


def test_a_base_configs_redo_pair_is_read_as_the_capacity_where_only_that_exists() -> None:
    """MySQL 9.x has innodb_redo_log_capacity and no innodb_log_file_size: the base config's
    pair becomes their product (2 files when unset), as 8.0.30-8.4 derive it themselves."""
    from runner.server.optionfiles import base_for_server, carried_redo_names, read_mycnf

    text = ("[mysqld]\ninnodb_buffer_pool_size = 128M\ninnodb_log_file_size = 48M\n"
            "skip-name-resolve\n")
    mysql9 = {"innodb_redo_log_capacity": "104857600", "innodb_buffer_pool_size": "0"}
    assert carried_redo_names(mysql9) == {"innodb_log_file_size", "innodb_log_files_in_group"}
    out = base_for_server(text, mysql9)
    assert "innodb_redo_log_capacity = 100663296" in out  # 2 × 48M
    assert "\ninnodb_log_file_size" not in out and "skip-name-resolve" in out
    three = base_for_server(text + "innodb_log_files_in_group = 3\n", mysql9)
    assert "innodb_redo_log_capacity = 150994944" in three
    # A server that has innodb_log_file_size (8.0.30-8.4 too) reads the file as written.
    both = {**mysql9, "innodb_log_file_size": "50331648"}
    assert carried_redo_names(both) == set() and base_for_server(text, both) == text
    assert not carried_redo_names({"innodb_log_file_size": "1"})
    # What the rewrite writes is a valid option file.
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b.cnf"
        path.write_text(out)
        assert read_mycnf(path)["innodb_redo_log_capacity"] == "100663296"
