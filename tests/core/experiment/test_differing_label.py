"""A row told from its baseline by what it changes (``compare``'s legend)."""

from __future__ import annotations

from core.experiment.cells import differing_label

BASE = {"server": "mysql-5.5", "doublewrite": True, "max_dirty_pages_pct": 75,
        "io_capacity": 200, "log_file_size": 80 * 2**20}


def test_only_the_changed_knobs_in_the_rows_order() -> None:
    row = {**BASE, "max_dirty_pages_pct": 50.0, "doublewrite": False}
    assert differing_label(row, BASE) == "doublewrite=off max_dirty_pages_pct=50"


def test_a_knob_the_row_adds_and_one_it_leaves_to_the_server() -> None:
    row = {k: v for k, v in BASE.items() if k != "io_capacity"} | {"log_file_size": 320 * 2**20,
                                                                  "flush_neighbor_pages": "none"}
    assert differing_label(row, BASE) == "log_file_size=320M flush_neighbor_pages=none" \
        " io_capacity unset"


def test_a_float_and_an_int_of_one_value_are_the_same_setting() -> None:
    assert differing_label({**BASE, "io_capacity": 200.0}, BASE) == "same as the baseline"
