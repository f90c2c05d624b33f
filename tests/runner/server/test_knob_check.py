"""``server check``'s verdicts against Debian's MariaDB 10.11: the binary's parse decides.

The six servers' verdicts, each applied one started and read back, are
tests/runner/server/test_knobs_per_server.py; here the cases a sample level does not reach on
this server: a value the binary adjusts, a rule stricter than the binary, and the server's
words without its path.
"""

from __future__ import annotations

import pytest

from runner.server import ResolvedServer
from runner.server.knob_check import _second_opinion, check_knobs, judge, server_words

pytestmark = pytest.mark.mysql


def test_every_sample_level_gets_a_verdict(mariadb_server: ResolvedServer) -> None:
    verdicts = check_knobs(mariadb_server)
    assert len(verdicts) == 21
    assert {v.status for v in verdicts} == {"applied", "absent"}
    lwm = next(v for v in verdicts if v.knob == "max_dirty_pages_pct_lwm")
    assert lwm.parsed == {"innodb_max_dirty_pages_pct_lwm": "10"}


def test_a_value_the_binary_adjusts_is_refused_with_its_words(
        mariadb_server: ResolvedServer) -> None:
    """1M of redo, below MariaDB 10.11's minimum: its parser raises it, and says so."""
    raw = judge(mariadb_server, "log_file_size", 1 << 20)
    assert raw.status == "refused"
    assert raw.reason.startswith("option 'innodb-log-file-size'"), raw.reason
    assert "adjusted to" in raw.reason and "[Warning]" not in raw.reason


def test_a_rule_stricter_than_the_binary_is_named(mariadb_server: ResolvedServer) -> None:
    problem = ("io_capacity: io_capacity=400 is not a value on mariadb-10.11"
               " (innodb_io_capacity) — use another")
    assert _second_opinion(mariadb_server, 400, problem) == (
        "takes innodb_io_capacity=400 (the rule is stricter than the binary)")
    refused = _second_opinion(mariadb_server, "bogus", problem.replace("400", "bogus"))
    assert "bogus" in refused and not refused.startswith("takes")
    assert _second_opinion(mariadb_server, 1, "x: x=1 is not a value on y (innodb_nope)") == ""


def test_server_words_drop_the_level_and_the_binary_path() -> None:
    assert server_words("[ERROR] /opt/x/bin/mysqld: Error while setting value 'r' to 'v'") == (
        "Error while setting value 'r' to 'v'")
    assert server_words("[ERROR] mariadbd: unknown variable 'innodb-bogus=1'") == (
        "unknown variable 'innodb-bogus=1'")
    warning = "option 'innodb-io-capacity': unsigned value 50 adjusted to 100"
    assert server_words(f"[Warning] {warning}") == warning
