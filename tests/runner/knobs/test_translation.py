"""Knob translation tables, flavor by flavor and version by version (docs/domain.md §2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.flavors import server_label
from core.flavors import values_equal as values_match
from runner.knobs import family, translate, translate_for_option_list, translate_partial
from runner.knobs import rules as knobs_rules

M = 1024**2
G = 1024**3

MARIADB_1011 = ("mariadb", (10, 11, 19))
MARIADB_104 = ("mariadb", (10, 4, 30))
MYSQL_558 = ("mysql", (5, 5, 8))
PERCONA_558 = ("percona", (5, 5, 8))
PERCONA_5530 = ("percona", (5, 5, 30))
MYSQL_56 = ("mysql", (5, 6, 51))
MYSQL_57 = ("mysql", (5, 7, 44))
MYSQL_8029 = ("mysql", (8, 0, 29))
MYSQL_8030 = ("mysql", (8, 0, 30))
PERCONA_8036 = ("percona", (8, 0, 36))

STABILITY_ROW = {
    "doublewrite": False,
    "max_dirty_pages_pct": 60,
    "io_capacity": 20000,
    "log_file_size": 4000 * M,
    "adaptive_flushing": True,
}


def _tr(server: tuple[str, tuple[int, int, int]], knobs: dict, **kw):
    return translate(knobs, server[0], server[1], **kw)


def _problems(server, knobs: dict, **kw) -> str:
    with pytest.raises(ConfigError) as info:
        _tr(server, knobs, **kw)
    return info.value.render()


@pytest.mark.parametrize(
    ("server", "fam", "label"),
    [
        (MARIADB_1011, "mariadb", "mariadb-10.11"),
        (MARIADB_104, "mariadb-old", "mariadb-10.4"),
        (MYSQL_558, "5.5", "mysql-5.5"),
        (PERCONA_5530, "5.5", "percona-5.5"),
        (MYSQL_56, "5.6", "mysql-5.6"),
        (MYSQL_8029, "5.6", "mysql-8.0.29"),
        (MYSQL_8030, "8.0.30", "mysql-8.0.30"),
    ],
)
def test_family_and_label(server, fam: str, label: str) -> None:
    assert family(*server) == fam
    assert server_label(*server) == label


def test_too_old_server_is_refused() -> None:
    with pytest.raises(ConfigError, match="older than the knob table"):
        family("mysql", (5, 1, 73))


def test_mariadb_1011_full_row() -> None:
    tr = _tr(MARIADB_1011, {**STABILITY_ROW, "flush_neighbor_pages": "area",
                            "max_dirty_pages_pct_lwm": 10, "io_capacity_max": 40000,
                            "buffer_pool_size": 512 * M, "flush_log_at_trx_commit": 2,
                            "flush_method": "O_DIRECT", "large_pages": False})
    assert tr.server_options == {
        "innodb_doublewrite": "OFF",
        "innodb_max_dirty_pages_pct": "60",
        "innodb_max_dirty_pages_pct_lwm": "10",
        "innodb_io_capacity": "20000",
        "innodb_io_capacity_max": "40000",
        "innodb_log_file_size": str(4000 * M),  # one redo file holds the whole size
        "innodb_flush_neighbors": "2",
        "innodb_adaptive_flushing": "ON",
        "innodb_buffer_pool_size": str(512 * M),
        "innodb_flush_log_at_trx_commit": "2",
        "innodb_flush_method": "O_DIRECT",
        "large_pages": "OFF",
    }
    # SHOW GLOBAL VARIABLES spells doubles with six decimals on MariaDB.
    assert tr.expected["innodb_max_dirty_pages_pct"] == "60.000000"
    assert tr.expected["innodb_max_dirty_pages_pct_lwm"] == "10.000000"
    assert tr.origin["innodb_log_file_size"] == "log_file_size"
    assert tr.large_pages is False


@pytest.mark.parametrize(("level", "value"), [("none", "0"), ("cont", "1"), ("area", "2")])
@pytest.mark.parametrize("server", [MARIADB_1011, MYSQL_56, MYSQL_8030, PERCONA_8036])
def test_flush_neighbors_numbers(server, level: str, value: str) -> None:
    tr = _tr(server, {"flush_neighbor_pages": level})
    assert tr.server_options == {"innodb_flush_neighbors": value}


@pytest.mark.parametrize("level", ["none", "cont", "area"])
def test_percona_55_flush_neighbor_pages_by_name(level: str) -> None:
    tr = _tr(PERCONA_558, {"flush_neighbor_pages": level})
    assert tr.server_options == {"innodb_flush_neighbor_pages": level}


def test_mysql_55_flush_neighbors_is_built_in() -> None:
    tr = _tr(MYSQL_558, {"flush_neighbor_pages": "area"})
    assert tr.server_options == {}
    assert "built-in" in tr.notes[0]
    message = _problems(MYSQL_558, {"flush_neighbor_pages": "none"})
    assert "flush_neighbor_pages=none is absent on mysql-5.5" in message


@pytest.mark.parametrize(
    ("server", "options"),
    [
        (MARIADB_104, {"innodb_log_file_size": str(2000 * M), "innodb_log_files_in_group": "2"}),
        (MYSQL_558, {"innodb_log_file_size": str(2000 * M), "innodb_log_files_in_group": "2"}),
        (MYSQL_56, {"innodb_log_file_size": str(2000 * M), "innodb_log_files_in_group": "2"}),
        (MYSQL_8029, {"innodb_log_file_size": str(2000 * M), "innodb_log_files_in_group": "2"}),
        (MYSQL_8030, {"innodb_redo_log_capacity": str(4000 * M)}),
        (MARIADB_1011, {"innodb_log_file_size": str(4000 * M)}),
    ],
)
def test_redo_total_per_family(server, options: dict[str, str]) -> None:
    assert _tr(server, {"log_file_size": 4000 * M}).server_options == options


@pytest.mark.parametrize(
    ("server", "total", "fragment"),
    [
        (MYSQL_558, 4096 * M, "must stay below 4G"),
        (MYSQL_558, 8000 * M, "use at most 4094M"),
        (MYSQL_56, 600 * G, "must stay at most 512G"),
        (MYSQL_8030, 200 * G, "innodb_redo_log_capacity <= 128G"),
        (MYSQL_8030, 4 * M, "must be >= 8M"),
        (MYSQL_56, 3 * M, "does not split into 2 whole-MiB files"),
    ],
)
def test_redo_limits(server, total: int, fragment: str) -> None:
    message = _problems(server, {"log_file_size": total},
                        where=lambda k: f"x.yaml: fixed.{k}")
    assert message.startswith("x.yaml: fixed.log_file_size: ")
    assert fragment in message


def test_percona_55_allows_giant_logs() -> None:
    # The 2011 post ran Percona 5.5.8 with 2 × 8000M, beyond MySQL 5.5's 4G.
    tr = _tr(PERCONA_558, {"log_file_size": 16000 * M})
    assert tr.server_options["innodb_log_file_size"] == str(8000 * M)


def test_mariadb_redo_has_no_table_limit() -> None:
    # mariadbd --help accepts innodb_log_file_size=600T: disk space is the only limit.
    assert _tr(MARIADB_1011, {"log_file_size": 600 * 1024 * G}).server_options


@pytest.mark.parametrize(
    ("server", "value", "expected"),
    [
        (MYSQL_558, 60, "60"),
        (MYSQL_56, 60, "60"),
        (MYSQL_57, 60, "60.000000"),
        (MYSQL_8030, 62.5, "62.500000"),
        (MARIADB_1011, 75, "75.000000"),
    ],
)
def test_max_dirty_pages_pct_representation(server, value: float, expected: str) -> None:
    assert _tr(server, {"max_dirty_pages_pct": value}).expected == {
        "innodb_max_dirty_pages_pct": expected
    }


def test_fractional_percent_on_integer_servers() -> None:
    assert "takes whole percents" in _problems(MYSQL_56, {"max_dirty_pages_pct": 62.5})


def test_mysql_55_lacks_io_capacity_max_and_lwm() -> None:
    message = _problems(MYSQL_558, {"io_capacity_max": 4000, "max_dirty_pages_pct_lwm": 10})
    assert "io_capacity_max=4000 is absent on mysql-5.5; related: innodb_io_capacity" in message
    assert "max_dirty_pages_pct_lwm=10 is absent on mysql-5.5" in message


@pytest.mark.parametrize("server", [MARIADB_1011, MYSQL_8030])
def test_adaptive_checkpoint_absent(server) -> None:
    message = _problems(server, {"adaptive_checkpoint": "keep_average"},
                        where=lambda k: f"e.yaml: matrix.{k}[0]")
    label = server_label(*server)
    assert message.startswith(
        "e.yaml: matrix.adaptive_checkpoint[0]: adaptive_checkpoint=keep_average is absent"
        f" on {label}; related: innodb_adaptive_flushing"
    ), message


def test_adaptive_checkpoint_related_filtered_by_option_list() -> None:
    options = {"innodb_adaptive_flushing": "TRUE", "innodb_max_dirty_pages_pct_lwm": "0"}
    message = _problems(MARIADB_1011, {"adaptive_checkpoint": "estimate"}, option_names=options)
    assert "related: innodb_adaptive_flushing, innodb_max_dirty_pages_pct_lwm —" in message


def test_percona_558_adaptive_checkpoint() -> None:
    tr = _tr(PERCONA_558, {"adaptive_checkpoint": "keep_average", "adaptive_flushing": False})
    # 5.5 takes booleans as 0/1 (MySQL 5.5.62 ignores "OFF"); the server then shows OFF.
    assert tr.server_options == {
        "innodb_adaptive_flushing": "0",
        "innodb_adaptive_checkpoint": "keep_average",
    }
    assert tr.expected["innodb_adaptive_flushing"] == "OFF"


def test_percona_55_later_renamed_to_adaptive_flushing_method() -> None:
    assert _tr(PERCONA_5530, {"adaptive_checkpoint": "none"}).server_options == {
        "innodb_adaptive_flushing_method": "native"
    }
    assert "is not a value on percona-5.5" in _problems(PERCONA_5530,
                                                        {"adaptive_checkpoint": "reflex"})
    # The binary's option list wins over the version guess.
    tr = _tr(PERCONA_5530, {"adaptive_checkpoint": "reflex"},
             option_names={"innodb_adaptive_checkpoint"})
    assert tr.server_options == {"innodb_adaptive_checkpoint": "reflex"}


@pytest.mark.parametrize("server", [PERCONA_5530, ("mariadb", (5, 5, 44))])
def test_a_flushing_method_that_cannot_act_is_named(server) -> None:
    """XtraDB 5.5's master thread runs estimate/keep_average only while adaptive flushing is
    ON: the 2011 post's "optimized mode" (adaptive flushing off, keep_average) is said to
    leave only max_dirty and the redo's flush points on these servers."""
    options = XTRADB_IN_MARIADB_55 if server[0] == "mariadb" else None
    off = _tr(server, {"adaptive_flushing": False, "adaptive_checkpoint": "keep_average"},
              option_names=options)
    assert [n for n in off.notes if "acts only while innodb_adaptive_flushing is ON" in n]
    assert "adaptive_checkpoint=keep_average" in off.notes[0]
    for fine in ({"adaptive_flushing": True, "adaptive_checkpoint": "keep_average"},
                 {"adaptive_checkpoint": "estimate"},
                 {"adaptive_flushing": False, "adaptive_checkpoint": "none"},
                 {"adaptive_flushing": False}):
        assert not _tr(server, fine, option_names=options).notes, fine
    # A raw variable turning it off counts too.
    raw = _tr(server, {"adaptive_checkpoint": "estimate",
                       "var.innodb_adaptive_flushing": "OFF"}, option_names=options)
    assert raw.notes and "adaptive_checkpoint=estimate" in raw.notes[0]


def test_percona_8_cleaner_lsn_age_factor() -> None:
    tr = _tr(PERCONA_8036, {"adaptive_checkpoint": "high_checkpoint"})
    assert tr.server_options == {"innodb_cleaner_lsn_age_factor": "high_checkpoint"}
    assert "use legacy or high_checkpoint" in _problems(PERCONA_8036,
                                                        {"adaptive_checkpoint": "keep_average"})


def test_buffer_pool_instances() -> None:
    assert _tr(MYSQL_57, {"buffer_pool_instances": 16}).server_options == {
        "innodb_buffer_pool_instances": "16"
    }
    assert _tr(MARIADB_104, {"buffer_pool_instances": 4}).server_options
    assert "absent on mariadb-10.11" in _problems(MARIADB_1011, {"buffer_pool_instances": 4})


def test_o_direct_no_fsync_needs_56() -> None:
    assert "added in 5.6.7" in _problems(MYSQL_558, {"flush_method": "O_DIRECT_NO_FSYNC"})
    assert _tr(MYSQL_56, {"flush_method": "O_DIRECT_NO_FSYNC"}).server_options


def test_allocator_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    (lib_dir / "libjemalloc.so.2").write_bytes(b"")
    monkeypatch.setattr(knobs_rules, "ALLOCATOR_LIB_DIRS", [tmp_path / "other", lib_dir])
    assert _tr(MARIADB_1011, {"allocator": "jemalloc"}).allocator == str(
        lib_dir / "libjemalloc.so.2")
    assert _tr(MARIADB_1011, {"allocator": "glibc"}).allocator is None
    # Missing: the path in the first directory, so preflight can say where it looked.
    assert _tr(MARIADB_1011, {"allocator": "tcmalloc"}).allocator == str(
        tmp_path / "other" / "libtcmalloc_minimal.so.4")


def test_client_knobs_are_not_server_options() -> None:
    tr = _tr(MARIADB_1011, {"connections": 64, "allocator": "glibc", "large_pages": True})
    assert tr.connections == 64
    assert tr.large_pages is True
    assert tr.server_options == {"large_pages": "ON"}


def test_raw_variables_pass_through() -> None:
    tr = _tr(MARIADB_1011, {"var.innodb_lru_scan_depth": 256, "var.innodb_log_buffer_size": "16M",
                            "var.innodb_stats_persistent": False})
    assert tr.server_options == {
        "innodb_lru_scan_depth": "256",
        "innodb_log_buffer_size": "16M",
        "innodb_stats_persistent": "OFF",
    }
    assert tr.expected["innodb_log_buffer_size"] == str(16 * M)
    assert tr.origin["innodb_lru_scan_depth"] == "var.innodb_lru_scan_depth"


def test_raw_variable_conflicts_and_managed() -> None:
    message = _problems(MARIADB_1011, {"io_capacity": 400, "var.innodb_io_capacity": 300,
                                       "var.socket": "/tmp/x.sock"})
    assert "variables.innodb_io_capacity is also set by knob io_capacity" in message
    assert "variables.socket is managed by the sandbox" in message


def test_partial_translation_keeps_good_knobs() -> None:
    tr, problems = translate_partial({"adaptive_checkpoint": "estimate", "doublewrite": True},
                                     *MARIADB_1011)
    assert tr.server_options == {"innodb_doublewrite": "ON"}
    assert len(problems) == 1


def test_option_list_cross_check() -> None:
    tr = _tr(MARIADB_1011, {"doublewrite": True, "var.innodb_io_capacityy": 300})
    options = {"innodb_doublewrite": "TRUE", "innodb_io_capacity": "200",
               "innodb_io_capacity_max": "4294967295"}
    problems = translate_for_option_list(tr, options, label="mariadb-10.11",
                                         where=lambda k: f"e.yaml: fixed.{k}")
    assert problems == [
        "e.yaml: fixed.var.innodb_io_capacityy: innodb_io_capacityy is not a variable of"
        " mariadb-10.11 — did you mean innodb_io_capacity, innodb_io_capacity_max?"
    ]


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        ("ON", "on", True),
        ("ON", "1", True),
        ("OFF", "ON", False),
        ("60.000000", "60", True),
        ("60.000000", "60.5", False),
        ("O_DIRECT", "o_direct", True),
        ("134217728", None, False),
    ],
)
def test_values_match(expected: str, actual: str | None, same: bool) -> None:
    assert values_match(expected, actual) is same


# --- the binary's option list decides, not the flavor label (issue 20) -----------------------

XTRADB_IN_MARIADB_55 = {"innodb_flush_neighbor_pages": "area",
                        "innodb_adaptive_flushing_method": "estimate",
                        "innodb_adaptive_flushing": "TRUE", "innodb_io_capacity": "200"}
STOCK_MYSQL_55 = {"innodb_adaptive_flushing": "TRUE", "innodb_io_capacity": "200"}


def test_xtradb_inside_mariadb_55_gets_perconas_knobs() -> None:
    tr = _tr(("mariadb", (5, 5, 44)), {"flush_neighbor_pages": "none",
                                       "adaptive_checkpoint": "keep_average",
                                       "max_dirty_pages_pct": 50},
             option_names=XTRADB_IN_MARIADB_55)
    assert tr.server_options == {"innodb_max_dirty_pages_pct": "50",
                                 "innodb_flush_neighbor_pages": "none",
                                 "innodb_adaptive_flushing_method": "keep_average"}


def test_percona_label_with_the_old_option_name_gets_it() -> None:
    tr = _tr(("percona", (5, 5, 30)), {"adaptive_checkpoint": "reflex"},
             option_names={"innodb_adaptive_checkpoint": "none"})
    assert tr.server_options == {"innodb_adaptive_checkpoint": "reflex"}


def test_stock_mysql_55_has_area_built_in_and_nothing_else() -> None:
    tr = _tr(("mysql", (5, 5, 62)), {"flush_neighbor_pages": "area"},
             option_names=STOCK_MYSQL_55)
    assert tr.server_options == {} and "built-in" in tr.notes[0]
    for knob, value in (("flush_neighbor_pages", "none"), ("adaptive_checkpoint", "estimate"),
                        ("io_capacity_max", 400), ("max_dirty_pages_pct_lwm", 10)):
        message = _problems(("mysql", (5, 5, 62)), {knob: value}, option_names=STOCK_MYSQL_55)
        assert f"{knob}=" in message and "absent on mysql-5.5" in message



def test_change_buffering_is_one_variable_where_the_engine_has_a_change_buffer() -> None:
    """innodb_change_buffering on MariaDB 10.x and MySQL 5.5; MariaDB 11.0 removed it."""
    assert _tr(MARIADB_1011, {"change_buffering": "all"}).server_options == {
        "innodb_change_buffering": "all"}
    assert _tr(MYSQL_558, {"change_buffering": "none"}).server_options == {
        "innodb_change_buffering": "none"}
    message = _problems(("mariadb", (11, 4, 5)), {"change_buffering": "none"})
    assert "change_buffering=none is absent on mariadb-11.4" in message


def test_every_knob_of_the_table_has_one_translation_rule() -> None:
    """The knob table (the model) and the rules (the translation) list the same knobs."""
    from core.experiment.knob_table import KNOB_NAMES
    from runner.knobs.rules import KNOB_RULES

    assert set(KNOB_RULES) == set(KNOB_NAMES)
