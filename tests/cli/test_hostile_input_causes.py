"""Hostile input by cause: credentials, FIFOs, control characters, hangs (issue 19).

Table-driven like :mod:`tests.cli.test_hostile_inputs` (the real entry point in this process,
a fresh folder per case): each case must end in one ``error: …`` (or a usage error) with the
expected fragments, exit 2, no traceback, no "internal error", no ``— None``, no password and
no control character on the terminal, and nothing written. Then, outside the table: every
credential form is absent from stdout, stderr, the crash log, the run log and the results
database; a FIFO named as any path the tool opens is refused, never opened; and the README's own
example. What must run in a child process (the FIFO cases, one credential form, doctor's
checks) runs in ONE child through the real entry point, each invocation in its own folder, a
watchdog giving each a deadline, so a hang fails its own case instead of hanging the suite.

``{tmp}`` in arguments, file contents, fragments and environment values is the case's folder.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.conftest import CliRun
from tests.cli.test_hostile_inputs import BASE, OK, _fill, _snapshot, exp
from tests.cli.test_hostile_inputs import _write as _write_round1
from tests.support import system_tools
from tests.support.cli_child import Invocation, Outcome, run_in_one_child
from tests.support.cli_runner import run_cli
from tests.support.patching import DELETE, merge

pytestmark = pytest.mark.mysql  # validate runs preflight: the binary's own --help parse

#: The password every credential case uses; it must never appear anywhere.
SECRET = "s3cretPW"
FB = str(Path(sys.executable).with_name("flushbench"))
TPCC_DATASET = {"workload": "tpcc", "warehouses": 1, "tables": DELETE, "table_size": DELETE}
TPCC_WORKLOAD = {"driver": "tpcc", "test": DELETE}


class Case:
    """One hostile input: arguments, files, environment, and what must (not) be said."""

    def __init__(self, case_id: str, args: list[str], expect: list[str], *,
                 files: dict[str, str | bytes] | None = None, env: dict[str, str] | None = None,
                 code: int = 2, needs_db: bool = False, usage: bool = False,
                 absent: list[str] | None = None, max_len: int = 4000) -> None:
        self.id = case_id
        self.args = args
        self.expect = expect
        self.files = files or {}
        self.env = env or {}
        self.code = code
        self.needs_db = needs_db
        self.usage = usage
        self.absent = absent or []
        self.max_len = max_len


def v(case_id: str, text: str | bytes, expect: list[str], **kw: Any) -> Case:
    """``validate {tmp}/x.yaml`` on an experiment file."""
    files = {"x.yaml": text, **kw.pop("files", {})}
    return Case(case_id, ["validate", "{tmp}/x.yaml"], ["{tmp}/x.yaml", *expect], files=files,
                **kw)


def storage(case_id: str, value: Any, expect: list[str], **kw: Any) -> Case:
    """``fixed.storage: VALUE``; the message names the key once and ends in a real fix."""
    return v(case_id, exp({"fixed": {"storage": value}}), ["fixed.storage", *expect],
             absent=["storage: storage", "— None", *kw.pop("absent", [])], **kw)


def db_case(case_id: str, verb: list[str], expect: list[str], **kw: Any) -> Case:
    """A verb on the case's real (empty, current) results database."""
    return Case(case_id, [*verb, "--db", "{tmp}/r.sqlite"], expect, needs_db=True, **kw)


PG = "postgresql+psycopg"
BIG = "x" * 200_000
ALIASED = ("version: 1\nname: big\ndescription: &b \"" + BIG + "\"\n"
           "dataset: {workload: sysbench, tables: 1, table_size: 1000}\n"
           "workload: {driver: sysbench, test: oltp_read_only}\n"
           "matrix:\n  io_capacity: [" + ", ".join(["*b"] * 5000) + "]\n")
RAW_NULL_AXIS = OK.replace("matrix:\n  doublewrite:", "matrix:\n  max_dirty_pages_pct:\n"
                           "  doublewrite:")
README_EXAMPLE = exp({"allow_variables": ["innodb_buffer_pool_filename"],
                      "fixed": {"variables": {"innodb_buffer_pool_filename": "ib_pool_dump"}}})

CASES: list[Case] = [
    # --- item 6: an axis or a value written with nothing after it -------------------------
    v("r2-axis-null-raw", RAW_NULL_AXIS, ["matrix.max_dirty_pages_pct", "has no levels"]),
    v("r2-axis-null", exp({"matrix": {"io_capacity": None}}),
      ["matrix.io_capacity", "has no levels"]),
    v("r2-axis-empty-list-pct", exp({"matrix": {"max_dirty_pages_pct": []}}),
      ["matrix.max_dirty_pages_pct", "empty list"]),
    v("r2-axis-null-variable", exp({"matrix": {"variables": {"innodb_purge_threads": None}}}),
      ["matrix.variables.innodb_purge_threads", "has no levels"]),
    v("r2-axis-null-with-baseline", exp({"matrix": {"max_dirty_pages_pct": None},
                                         "baseline": {"doublewrite": True}}),
      ["matrix.max_dirty_pages_pct", "has no levels"]),
    v("r2-axis-null-only-axis", exp({"matrix": {"doublewrite": None}}),
      ["matrix.doublewrite", "has no levels"]),
    v("r2-fixed-null-knob", exp({"fixed": {"io_capacity": None}}),
      ["fixed.io_capacity", "has no value"]),
    v("r2-fixed-null-variable", exp({"fixed": {"variables": {"sql_mode": None}}}),
      ["fixed.variables.sql_mode", "has no value"]),
    v("r2-include-null", exp({"include": [{"doublewrite": None}]}),
      ["include[0].doublewrite", "has no value"]),
    v("r2-exclude-null", exp({"exclude": [{"doublewrite": None}]}),
      ["exclude[0].doublewrite", "has no value"]),
    v("r2-baseline-null", exp({"baseline": {"doublewrite": None}}),
      ["baseline.doublewrite", "has no value"]),
    # --- storage limits: sense, not only form ----------------------------------------------
    storage("r2-storage-null", None, ["has no value"]),
    storage("r2-storage-empty-mapping", {}, ["empty storage mapping", "storage: unlimited"]),
    storage("r2-storage-key-null", {"write_iops": None}, ["write_iops: no value"]),
    storage("r2-storage-iops-1e21", {"write_iops": 10**21},
            ["write_iops", "above the sane range 100–10,000,000"]),
    storage("r2-storage-iops-one", {"write_iops": 1}, ["write_iops", "below the sane range",
                                                       "7,200 rpm"]),
    storage("r2-storage-iops-99", {"read_iops": 99}, ["read_iops", "below the sane range"]),
    storage("r2-storage-iops-11m", {"write_iops": "11000k"}, ["above the sane range"]),
    storage("r2-storage-iops-zero", {"read_iops": 0}, ["read_iops", "below the sane range"]),
    storage("r2-storage-iops-fraction", {"write_iops": 1000.5}, ["whole number"]),
    storage("r2-storage-iops-word", {"write_iops": "fast"}, ["expected IOPS like 3000"]),
    storage("r2-storage-iops-bool", {"write_iops": True}, ["expected a number, got True"]),
    storage("r2-storage-iops-negative", {"write_iops": -100}, ["whole number"]),
    storage("r2-storage-bw-5k", {"write_bandwidth": "5K"}, ["write_bandwidth", "below the sane"
                                                             " range 1M/s–100G/s"]),
    storage("r2-storage-bw-5k-per-s", {"read_bandwidth": "5K/s"}, ["below the sane range"]),
    storage("r2-storage-bw-1t", {"write_bandwidth": "1T"}, ["above the sane range"]),
    storage("r2-storage-bw-mb", {"write_bandwidth": "80MB"}, ["ambiguous", "80M or 80MiB"]),
    storage("r2-storage-bw-word", {"write_bandwidth": "fast"}, ["expected a size"]),
    storage("r2-storage-preset-unknown", "gp3", ["unknown storage preset 'gp3'", "cloud-gp3"]),
    storage("r2-storage-preset-bad-override", {"preset": "cloud-gp3", "write_iops": 5},
            ["write_iops", "below the sane range"]),
    storage("r2-storage-unknown-key", {"write_iop": 1000}, ["write_iop",
                                                           "did you mean 'write_iops'?"]),
    storage("r2-storage-number", 42, ["preset name or a mapping"]),
    v("r2-storage-matrix-level", exp({"matrix": {"storage": ["cloud-gp3", {"write_iops": 1}]}}),
      ["matrix.storage", "below the sane range"], absent=["— None"]),
    # --- one number parser: units -------------------------------------------------------------
    v("r2-size-mb", exp({"fixed": {"buffer_pool_size": "80MB"}}),
      ["fixed.buffer_pool_size", "ambiguous", "80M or 80MiB"]),
    v("r2-size-gb", exp({"fixed": {"log_file_size": "1GB"}}), ["fixed.log_file_size",
                                                               "ambiguous"]),
    v("r2-size-kb-lower", exp({"fixed": {"log_file_size": "512kb"}}), ["ambiguous"]),
    v("r2-size-huge-digits", exp({"fixed": {"buffer_pool_size": "9" * 100}}),
      ["fixed.buffer_pool_size", "expected a size"]),
    v("r2-duration-1m1m1m", exp({"workload": {"duration": "1m1m1m"}}),
      ["workload.duration", "repeats a unit or has them out of order"]),
    v("r2-duration-out-of-order", exp({"workload": {"duration": "30s1m"}}),
      ["workload.duration", "largest first"]),
    v("r2-duration-ms-before-s", exp({"workload": {"warmup": "1ms1s"}}),
      ["workload.warmup", "repeats a unit"]),
    v("r2-duration-s-twice", exp({"workload": {"warmup": "5s5s"}}), ["workload.warmup"]),
    v("r2-duration-huge-digits", exp({"workload": {"duration": "9" * 200}}),
      ["workload.duration", "expected a duration"]),
    v("r2-window-repeated-unit", exp({"window": {"start": "10s10s"}}),
      ["window.start", "repeats a unit"]),
    v("r2-version-true", exp({"version": True}), ["version", "unsupported version True"]),
    v("r2-version-float", exp({"version": 1.0}), ["version", "unsupported version 1.0"]),
    v("r2-version-false", exp({"version": False}), ["unsupported version False"]),
    v("r2-version-null", exp({"version": None}), ["unsupported version None"]),
    v("r2-bool-repetitions", exp({"repetitions": True}), ["repetitions",
                                                          "expected a number, got True"]),
    v("r2-bool-baseline-repetitions", exp({"baseline_repetitions": True}),
      ["baseline_repetitions", "expected a number"]),
    v("r2-bool-connections", exp({"workload": {"connections": True}}),
      ["workload.connections", "expected a number"]),
    v("r2-bool-duration", exp({"workload": {"duration": False}}), ["workload.duration"]),
    v("r2-bool-max-cells", exp({"max_cells": True}), ["max_cells", "expected a number"]),
    v("r2-axis-null-level", exp({"matrix": {"doublewrite": [True, None]}}),
      ["matrix.doublewrite[1]", "this level is empty"]),
    v("r2-axis-null-storage-level", exp({"matrix": {"storage": [None]}}),
      ["matrix.storage[0]", "this level is empty"]),
    v("r2-yaml-list-key", "version: 1\n? [a, b]\n: 1\n", ["a key must be a plain name"]),
    # --- the TPC-C driver binary must be the driver -------------------------------------------
    v("r2-tpcc-binary-sh", exp({"dataset": TPCC_DATASET, "workload": {
        **TPCC_WORKLOAD, "binaries": {"tpcc": "/bin/sh"}}}),
      ["/bin/sh is not the built-in TPC-C driver", "usage: tpcc <command>"]),
    v("r2-tpcc-binary-true", exp({"dataset": TPCC_DATASET, "workload": {
        **TPCC_WORKLOAD, "binaries": {"tpcc": "/bin/true"}}}),
      ["/bin/true is not the built-in TPC-C driver"]),
    v("r2-tpcc-binary-missing", exp({"dataset": TPCC_DATASET, "workload": {
        **TPCC_WORKLOAD, "binaries": {"tpcc": "{tmp}/no-tpcc"}}}),
      ["{tmp}/no-tpcc is not built"]),
    v("r2-tpcc-binary-not-executable", exp({"dataset": TPCC_DATASET, "workload": {
        **TPCC_WORKLOAD, "binaries": {"tpcc": "{tmp}/tpcc"}}}),
      ["{tmp}/tpcc is not built"], files={"tpcc": "#!/bin/sh\necho usage: tpcc <command>\n"}),
    v("r2-sysbench-binary-sh", exp({"workload": {"binaries": {"sysbench": "/bin/sh"}}}),
      ["/bin/sh is not sysbench", "--version"]),
    v("r2-sysbench-binary-true", exp({"workload": {"binaries": {"sysbench": "/bin/true"}}}),
      ["/bin/true is not sysbench"]),
    v("r2-binary-unknown-name", exp({"workload": {"binaries": {"sysbnch": "/usr/bin/sysbench"}}}),
      ["workload.binaries.sysbnch", "unknown driver binary name"]),
    v("r2-readme-log-bin", exp({"allow_variables": ["log_bin"],
                                "fixed": {"variables": {"log_bin": "binlog"}}}),
      ["fixed.variables.log_bin", "managed by the sandbox"]),
    # --- CPU lists: capped before expanding ----------------------------------------------------
    v("r2-cpus-huge-range", exp({"cpus": {"mysqld": "0-99999999999"}}),
      ["cpus.mysqld", "does not exist", "8,192"]),
    v("r2-cpus-huge-single", exp({"cpus": {"driver": "99999"}}), ["cpus.driver",
                                                                   "does not exist"]),
    v("r2-cpus-offline", exp({"cpus": {"mysqld": "4000"}}), ["cpus.mysqld",
                                                             "not online or not allowed"]),
    v("r2-cpus-long-list", exp({"cpus": {"mysqld": ",".join(["0"] * 30000)}}),
      ["cpus.mysqld", "is no CPU list"]),
    v("r2-cpus-reversed", exp({"cpus": {"mysqld": "3-1"}}), ["cpus.mysqld", "reversed"]),
    v("r2-cpus-word", exp({"cpus": {"mysqld": "all"}}), ["cpus.mysqld", "expected a CPU list"]),
    v("r2-cpus-driver-2-32", exp({"cpus": {"driver": "0-4294967296"}}), ["does not exist"]),
    v("r2-cpus-bool", exp({"cpus": {"mysqld": True}}), ["cpus.mysqld", "expected a CPU list"]),
    # --- bounded quotes: a huge value is never quoted whole -------------------------------------
    v("r2-alias-huge-value", ALIASED, ["matrix.io_capacity[0]", "200,000 characters",
                                       "only the first 20 are listed"], max_len=12_000),
    v("r2-huge-unknown-key", exp({"k" * 100_000: 1}), ["unknown key", "100,000 characters"],
      max_len=3000),
    v("r2-huge-size-value", exp({"fixed": {"buffer_pool_size": "x" * 500_000}}),
      ["fixed.buffer_pool_size", "500,000 characters"], max_len=2000),
    v("r2-huge-name", exp({"name": "n" * 500_000}), ["name", "500,000 characters"],
      max_len=2000),
    v("r2-huge-duration", exp({"workload": {"duration": "1" * 300_000 + "s"}}),
      ["workload.duration", "expected a duration"], max_len=2000),
    v("r2-huge-cpu-value", exp({"cpus": {"mysqld": "z" * 300_000}}),
      ["cpus.mysqld", "300,000 characters"], max_len=2000),
    # --- user text printed literally ---------------------------------------------------------
    Case("r2-rich-close-tag-path", ["validate", "{tmp}/a[/b]/x.yaml"],
         ["{tmp}/a[/b]/x.yaml", "not found"]),
    Case("r2-rich-dim-path", ["validate", "{tmp}/[dim]x.yaml"], ["{tmp}/[dim]x.yaml",
                                                                 "not found"]),
    Case("r2-rich-bold-dir", ["validate", "{tmp}/[bold]"], ["{tmp}/[bold]", "is a directory"],
         files={"[bold]/keep": "x"}),
    v("r2-rich-emoji-key", exp({":x:": 1}), [":x:: unknown key ':x:'"], absent=["❌"]),
    v("r2-rich-escape-key", exp({"\x1b[31mred": 1}), ["\\x1b[31mred", "unknown key"]),
    v("r2-rich-bell-key", exp({"\x07bell": 1}), ["\\x07bell"]),
    v("r2-rich-markup-name", exp({"name": "[bold]x"}), ["name", "[bold]x"]),
    v("r2-rich-markup-knob", exp({"fixed": {"[red]": 1}}), ["fixed.[red]", "unknown key"]),
    v("r2-rich-emoji-variable", exp({"fixed": {"variables": {":fire:": 1}}}),
      ["fixed.variables.:fire:", "not a server variable name"], absent=["🔥"]),
    v("r2-rich-escape-value", exp({"workload": {"duration": "\x1b]0;title\x07"}}),
      ["workload.duration", "\\x1b]0;title\\x07"]),
    db_case("r2-rich-export-dir", ["export", "x", "-o", "{tmp}/a[/b]"],
            ["{tmp}/a[/b]", "is a directory"], files={"a[/b]/keep": "x"}),
    db_case("r2-rich-log-file-dir", ["worker", "--log-file", "{tmp}/[dim]"],
            ["{tmp}/[dim]", "the log file (--log-file) is a directory"], files={"[dim]/k": "x"}),
    db_case("r2-rich-compare-name", ["compare", "[/b]"], ["no experiment '[/b]'"]),
    db_case("r2-rich-cancel-emoji", ["queue", "cancel", ":x:"], ["no experiment ':x:'"],
            absent=["❌"]),
    db_case("r2-rich-show-markup", ["show", "[/b]"], ["Invalid value for 'run_id'"],
            usage=True),
    # --- a non-ASCII value echoed back by mysqld: shown as it is, never a crash ---------------
    v("r2-nonascii-echo-enum", exp({"fixed": {"variables": {"innodb_flush_method": "fäst"}}}),
      ["fixed.variables.innodb_flush_method", "mariadb-10.11 says", "'fäst'"]),
    v("r2-nonascii-echo-sql-mode", exp({"fixed": {"variables": {"sql_mode": "TRADITIONAL,é"}}}),
      ["fixed.variables.sql_mode", "'TRADITIONAL,é'"]),
    v("r2-nonascii-echo-long", exp({"fixed": {"variables": {"sql_mode": "é" * 300}}}),
      ["fixed.variables.sql_mode", "mariadb-10.11 says"]),
    v("r2-nonascii-echo-charset", exp({"fixed": {"variables": {"character_set_server": "ütf8"}}}),
      ["mariadb-10.11 says", "ütf8"]),
    v("r2-nonascii-base-config", exp({"base_config": "{tmp}/b.cnf"}),
      ["{tmp}/b.cnf", "innodb_flush_method", "'fäst'"],
      files={"b.cnf": "[mysqld]\ninnodb_flush_method=fäst\n"}),
    # --- ids no database can hold -------------------------------------------------------------
    db_case("r2-show-id-2-63", ["show", str(2**63)], ["no run", "run ids are between 1 and"]),
    db_case("r2-show-id-huge", ["show", "99999999999999999999"], ["run ids are between"]),
    db_case("r2-show-id-zero", ["show", "0"], ["no run 0"]),
    db_case("r2-show-id-max", ["show", str(2**63 - 1)], ["no run 9223372036854775807"]),
    db_case("r2-compare-id-huge", ["compare", "99999999999999999999"], ["ids are between"]),
    db_case("r2-export-id-huge", ["export", "99999999999999999999", "-o", "{tmp}/e.csv"],
            ["ids are between"]),
    db_case("r2-report-id-huge", ["report", "99999999999999999999", "-o", "{tmp}/out"],
            ["ids are between"]),
    db_case("r2-cancel-id-huge", ["queue", "cancel", "99999999999999999999"], ["no experiment"]),
    db_case("r2-unpin-id-huge", ["queue", "unpin", "99999999999999999999"], ["no experiment"]),
    # --- database URLs: credentials and ports --------------------------------------------------
    Case("r2-db-port-word", ["status", "--db", f"{PG}://u:{SECRET}@127.0.0.1:abc/x"],
         ["port is not a number", "u:***@127.0.0.1:abc"]),
    Case("r2-db-port-big", ["status", "--db", f"{PG}://u:{SECRET}@127.0.0.1:99999/x"],
         ["port 99999 is not between 1 and 65535"]),
    Case("r2-db-port-zero", ["show", "1", "--db", f"{PG}://u:{SECRET}@127.0.0.1:0/x"],
         ["port 0 is not between"]),
    Case("r2-db-at-in-password", ["status", "--db", f"{PG}://u:p@{SECRET}@127.0.0.1:1/x"],
         ["unencoded '@'", "%40", "u:***@127.0.0.1:1/x"], absent=[f"{SECRET}@127"]),
    Case("r2-db-query-password", ["status", "--db", f"{PG}://u@127.0.0.1:1/x?password={SECRET}"],
         ["cannot use the results database", "?password=***"]),
    Case("r2-db-percent-password", ["status", "--db", f"{PG}://u:p%40{SECRET}@127.0.0.1:1/x"],
         ["cannot use the results database", "u:***@127.0.0.1"], absent=["p%40", "p@"]),
    Case("r2-db-env-query-password", ["status"], ["sslmode=disable&password=***"],
         env={"FLUSHBENCH_DB": f"{PG}://u@127.0.0.1:1/x?sslmode=disable&password={SECRET}"}),
    Case("r2-db-env-userinfo", ["queue", "list"], ["u:***@127.0.0.1:1"],
         env={"FLUSHBENCH_DB": f"{PG}://u:{SECRET}@127.0.0.1:1/x"}),
    Case("r2-db-libpq-keywords", ["status", "--db", f"host=127.0.0.1 password={SECRET}"],
         ["no results database here", "password=***"]),
    Case("r2-db-upgrade-query-password",
         ["db", "upgrade", "--db", f"{PG}://u@127.0.0.1:1/x?password={SECRET}"],
         ["password=***"]),
    Case("r2-db-worker-password", ["worker", "--db", f"{PG}://u:{SECRET}@127.0.0.1:1/x"],
         ["u:***@127.0.0.1"]),
    Case("r2-db-unparseable-url", ["status", "--db", f"mysql://u:{SECRET}@[bad"],
         ["u:***@"]),
    Case("r2-db-host-too-long", ["status", "--db", f"{PG}://u:{SECRET}@{'h' * 300}/x"],
         ["host name is too long", "u:***@"], max_len=600),
    Case("r2-db-bad-sslmode", ["status", "--db", f"{PG}://u:{SECRET}@127.0.0.1:1/x?sslmode=no"],
         ["sslmode", "u:***@127.0.0.1:1"]),
    Case("r2-usage-extra-url", ["status", "extra", f"{PG}://u:{SECRET}@h/x"],
         ["unexpected extra argument"], usage=True),
    Case("r2-usage-password-option", ["status", f"--password={SECRET}"], ["No such option"],
         usage=True),
    Case("r2-validate-url-as-file", ["validate", f"{PG}://u:{SECRET}@h/x.yaml"],
         ["not found", "u:***@h/x.yaml"]),
    # --- one path check for every file the tool opens -----------------------------------------
    Case("r2-db-dev-null", ["status", "--db", "/dev/null"], ["/dev/null", "is a device"]),
    Case("r2-db-dev-zero-show", ["show", "1", "--db", "/dev/zero"], ["/dev/zero", "a device"]),
    Case("r2-db-dir-queue-add", ["queue", "add", "{tmp}/x.yaml", "--db", "{tmp}/d"],
         ["is a directory"], files={"x.yaml": OK, "d/keep": "x"}),
    db_case("r2-log-file-dir", ["worker", "--log-file", "{tmp}"], ["is a directory"]),
    db_case("r2-log-file-is-db", ["worker", "--log-file", "{tmp}/r.sqlite"],
            ["the log file is the results database"]),
    db_case("r2-log-file-is-db-run", ["run", "{tmp}/x.yaml", "--log-file", "{tmp}/r.sqlite"],
            ["the log file is the results database"], files={"x.yaml": OK}),
    db_case("r2-log-file-dev", ["worker", "--log-file", "/dev/null"], ["is a device"]),
    db_case("r2-log-file-under-file", ["worker", "--log-file", "{tmp}/keep.txt/w.log"],
            ["keep.txt is a file, not a folder"], files={"keep.txt": "x"}),
    db_case("r2-export-o-directory", ["export", "x", "-o", "{tmp}"], ["is a directory"]),
    db_case("r2-export-o-under-file", ["export", "x", "-o", "{tmp}/keep.txt/e.csv"],
            ["is a file, not a folder"], files={"keep.txt": "x"}),
    db_case("r2-export-o-dev", ["export", "x", "-o", "/dev/null", "--force"], ["is a device"]),
    db_case("r2-report-o-dev", ["report", "x", "-o", "/dev/null"], ["is a device, not a folder"]),
    db_case("r2-report-o-under-file", ["report", "x", "-o", "{tmp}/keep.txt/out"],
            ["is a file, not a folder"], files={"keep.txt": "x"}),
    db_case("r2-worker-idle-nan", ["worker", "--idle-timeout", "nan"],
            ["--idle-timeout nan is not a finite number"]),
    db_case("r2-worker-idle-inf", ["worker", "--idle-timeout", "inf"],
            ["--idle-timeout inf is not a finite number", "negative number to wait forever"]),
    db_case("r2-worker-idle-minus-inf", ["worker", "--idle-timeout", "-inf"],
            ["not a finite number"]),
    db_case("r2-worker-idle-huge", ["worker", "--idle-timeout", "1e12"],
            ["more than 604800 seconds"]),
    db_case("r2-worker-lease-inf", ["worker", "--lease-seconds", "inf"],
            ["--lease-seconds inf is not a finite number", "between 1 and 86400"]),
    db_case("r2-worker-lease-nan", ["worker", "--lease-seconds", "nan"],
            ["Invalid value for '--lease-seconds'"], usage=True),
    db_case("r2-worker-lease-huge", ["worker", "--lease-seconds", "1e9"],
            ["more than 86400 seconds"]),
    Case("r2-validate-dev-null", ["validate", "/dev/null"], ["/dev/null", "is a device"]),
    v("r2-base-config-dir", exp({"base_config": "{tmp}/d.cnf"}),
      ["base_config", "is a directory"], files={"d.cnf/keep": "x"}),
    v("r2-base-config-dev", exp({"base_config": "/dev/null"}), ["base_config", "is a device"]),
    v("r2-profile-dev", exp({"server": "/dev/zero"}), ["/dev/zero", "is a device"]),
    Case("r2-work-is-file", ["run", "{tmp}/x.yaml", "--work", "{tmp}/keep.txt", "--db",
                             "{tmp}/new.sqlite"], ["the work folder", "is a file, not a folder"],
         files={"x.yaml": OK, "keep.txt": "x"}),
    Case("r2-work-env-dev", ["queue", "add", "{tmp}/x.yaml", "--db", "{tmp}/new.sqlite"],
         ["/dev/null: the work folder", "is a device"], files={"x.yaml": OK},
         env={"FLUSHBENCH_WORK": "/dev/null"}),
    db_case("r2-work-worker-file", ["worker", "--work", "{tmp}/keep.txt"],
            ["the work folder", "is a file"], files={"keep.txt": "x"}),
    Case("r2-db-symlink-loop", ["status", "--db", "{tmp}/loop1"],
         ["{tmp}/loop1: too many levels of symbolic links"], files={"loop1": "SYMLINK_LOOP"}),
    Case("r2-export-db-symlink-loop", ["export", "x", "-o", "{tmp}/e.csv", "--db",
                                       "{tmp}/loop1"], ["too many levels of symbolic links"],
         files={"loop1": "SYMLINK_LOOP"}),
    Case("r2-validate-symlink-loop", ["validate", "{tmp}/loop1"],
         ["{tmp}/loop1", "Too many levels of symbolic links"], files={"loop1": "SYMLINK_LOOP"}),
    # --- verbs on an experiment that is only queued: a sentence, not a crash -------------------
    Case("r2-export-queued-only", ["export", "hostile", "-o", "{tmp}/e.csv", "--db",
                                   "{tmp}/q.sqlite"], ["hostile"], files={"q.sqlite": "QUEUED"}),
    Case("r2-export-samples-queued-only", ["export", "hostile", "-o", "{tmp}/e.csv", "--what",
                                           "samples", "--db", "{tmp}/q.sqlite"], ["hostile"],
         files={"q.sqlite": "QUEUED"}),
    Case("r2-compare-queued-only", ["compare", "hostile", "--db", "{tmp}/q.sqlite"],
         ["hostile"], files={"q.sqlite": "QUEUED"}),
    Case("r2-report-queued-only", ["report", "hostile", "-o", "{tmp}/out", "--db",
                                   "{tmp}/q.sqlite"], ["hostile"], files={"q.sqlite": "QUEUED"}),
]


_QUEUED_DB: dict[str, bytes] = {}
_EMPTY_DB: dict[str, bytes] = {}


def _empty_db(tmp: Path) -> bytes:
    """A current, empty results database, as migrated by :class:`store.db.ResultsDB` (the
    migration `flushbench db upgrade` runs), built once per process (beside ``tmp``, in the
    first caller's folder): each case gets a copy of its bytes instead of migrating a database
    of its own (~0.2 CPU-s a case)."""
    if "db" not in _EMPTY_DB:
        from store.db import ResultsDB

        folder = tmp.parent / "empty-db"
        folder.mkdir()
        ResultsDB(folder / "r.sqlite").dispose()
        conn = sqlite3.connect(folder / "r.sqlite")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
        conn.close()
        _EMPTY_DB["db"] = (folder / "r.sqlite").read_bytes()
    return _EMPTY_DB["db"]


def _queued_db(tmp: Path, cli: CliRun) -> bytes:
    """A results database holding one experiment whose runs are only queued (built once per
    process, by `flushbench queue add` through the entry point in this process: a subprocess
    cost an interpreter start on top of the preflight)."""
    if "db" not in _QUEUED_DB:
        folder = tmp.parent / "queued-db"
        folder.mkdir()
        (folder / "x.yaml").write_text(OK)
        with pytest.MonkeyPatch.context() as env:  # its own folder, not the case's
            env.chdir(folder)
            env.setenv("FLUSHBENCH_WORK", str(folder / "work"))
            env.delenv("FLUSHBENCH_DB", raising=False)
            code, _, err = cli(["queue", "add", str(folder / "x.yaml"), "--db",
                                str(folder / "q.sqlite")])
        assert code == 0, err
        conn = sqlite3.connect(folder / "q.sqlite")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        _QUEUED_DB["db"] = (folder / "q.sqlite").read_bytes()
    return _QUEUED_DB["db"]


def _write(tmp: Path, files: dict[str, str | bytes], cli: CliRun) -> None:
    """The first hostile-input table's files, a symlink loop and a queued-only database."""
    plain = {}
    for name, content in files.items():
        path = tmp / name
        if content == "SYMLINK_LOOP":  # NAME -> NAME.other -> NAME
            os.symlink(f"{path}.other", path)
            os.symlink(path, f"{path}.other")
        elif content == "QUEUED":
            path.write_bytes(_queued_db(tmp, cli))
        else:
            plain[name] = content
    _write_round1(tmp, plain)


def test_enough_new_cases() -> None:
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_round2(case: Case, case_dir: Path, cli: CliRun,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    _write(case_dir, case.files, cli)
    if case.needs_db:
        (case_dir / "r.sqlite").write_bytes(_empty_db(case_dir))
    for key, value in case.env.items():
        monkeypatch.setenv(key, _fill(value, case_dir))
    before = _snapshot(case_dir)
    code, out, err = cli([_fill(a, case_dir) for a in case.args])
    assert code == case.code, f"exit {code}\nstdout:\n{out}\nstderr:\n{err[:3000]}"
    both = err + out
    assert "Traceback" not in both
    assert "internal error" not in both, err
    assert not (case_dir / "work" / "logs").exists()  # no crash log: no bug was hit
    if not case.usage:
        assert err.startswith("error: "), err[:3000]
        assert err.count("error: ") == 1, err[:3000]
    for fragment in case.expect:
        assert _fill(fragment, case_dir) in err, err[:3000]
    for fragment in ["— None", SECRET, "\x1b", "\x07", *case.absent]:
        assert fragment not in both, err[:3000]
    assert len(err) <= case.max_len, f"{len(err)} characters of message"
    after = _snapshot(case_dir)
    added = sorted(set(after) - set(before) - {"r.sqlite-wal", "r.sqlite-shm",
                                                "q.sqlite-wal", "q.sqlite-shm"})
    assert added == [], added
    changed = [k for k in before if k in after and before[k] != after[k]
               and not k.startswith(("r.sqlite", "q.sqlite"))]
    assert changed == [], changed
    assert not (case_dir / "results").exists()


# --- credentials: every form, every writer ---------------------------------------------------

#: (id, text holding SECRET, what must remain visible after redaction)
CREDENTIAL_FORMS = [
    ("url-userinfo", f"{PG}://bench:{SECRET}@db.example:5432/flushbench", "bench:***@db.example"),
    ("url-query", f"{PG}://bench@db.example/flushbench?password={SECRET}", "password=***"),
    ("url-query-second", f"{PG}://bench@db.example/f?sslmode=require&password={SECRET}",
     "sslmode=require&password=***"),
    ("url-unencoded-at", f"{PG}://bench:p@{SECRET}@db.example/f", "bench:***@db.example"),
    ("url-percent-encoded", f"{PG}://bench:p%40{SECRET}%2F@db.example/f",
     "bench:***@db.example"),
    ("libpq-keywords", f"host=db.example user=bench password={SECRET} dbname=f",
     "password=***"),
    ("mysql-long-option", f"mysql --user=root --password={SECRET} -h db", "--password=***"),
    ("sysbench-option", f"sysbench --mysql-password={SECRET} oltp_read_only run",
     "--mysql-password=***"),
    ("mysql-short-attached", f"mysql -uroot -p{SECRET} -h db", "-p***"),
    ("tpcc-start-spaced", f"tpcc_start -h db -d tpcc -u root -p {SECRET} -w 10", "-p ***"),
    ("mysql-pwd-env", f"MYSQL_PWD={SECRET} mysql -uroot", "MYSQL_PWD=***"),
    ("pgpassword-env", f"PGPASSWORD={SECRET} psql", "PGPASSWORD=***"),
]
FORM_IDS = [f[0] for f in CREDENTIAL_FORMS]


@pytest.mark.parametrize(("form", "text", "kept"), CREDENTIAL_FORMS, ids=FORM_IDS)
def test_redaction_of_each_form(form: str, text: str, kept: str) -> None:
    """The one redaction function: the secret goes, where-it-was stays readable."""
    from core.redaction import redact, redact_argv

    shown = redact(text)
    assert SECRET not in shown and kept in shown, shown
    assert SECRET not in " ".join(redact_argv(text.split()))


@pytest.mark.parametrize(("form", "text", "kept"), CREDENTIAL_FORMS, ids=FORM_IDS)
def test_no_credential_in_crash_log(form: str, text: str, kept: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash log keeps the command line and traceback, redacted, in a 0600 file."""
    from flushbench import cli

    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))
    monkeypatch.setattr(sys, "argv", ["flushbench", "status", "--db", *text.split()])
    try:
        raise RuntimeError(f"boom while using {text}")
    except RuntimeError as exc:
        where = cli._crash_log(exc)
    log = Path(where)
    body = log.read_text()
    assert SECRET not in body and "boom while using" in body and "status --db" in body
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


@pytest.mark.parametrize(("form", "text", "kept"), CREDENTIAL_FORMS, ids=FORM_IDS)
def test_no_credential_in_run_log_or_database(form: str, text: str, kept: str,
                                              tmp_path: Path) -> None:
    """Log lines (0600 file and stream), a run's stored error and its events: all redacted."""
    import io

    from flushbench.cli.logs import LogReporter
    from store import ledger
    from store.db import ResultsDB
    from store.ledger.recorder import RunRecorder
    from store.models import Run, RunEvent
    from tests.support.queueing import one_running_run

    (tmp_path / "r.sqlite").write_bytes(_empty_db(tmp_path / "r.sqlite"))  # migrated once
    db = ResultsDB(tmp_path / "r.sqlite")
    run_id = one_running_run(db, "creds")
    stream = io.StringIO()
    log_file = tmp_path / "logs" / "worker.log"
    with LogReporter(db, log_file, stream=stream) as reporter:
        reporter.note(f"worker on {text}")
    recorder = RunRecorder(db, run_id)
    recorder.event("error", "driver", f"driver failed: {text}", evidence=f"argv: {text}")
    assert recorder.flush()
    ledger.finish(db, run_id, "failed", f"cannot connect with {text}")
    assert SECRET not in stream.getvalue() and "worker on" in stream.getvalue()
    assert SECRET not in log_file.read_text()
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600
    with db.session() as s:
        run = s.get(Run, run_id)
        events = s.query(RunEvent).filter_by(run_id=run_id).all()
        stored = [run.error or "", *(ev.message for ev in events),
                  *(ev.evidence or "" for ev in events)]
    db.dispose()
    assert "cannot connect with" in stored[0] and len(stored) == 3
    for value in stored:
        assert SECRET not in value, value
    raw = (tmp_path / "r.sqlite").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("r.sqlite-*"))
    assert SECRET.encode() not in raw


#: URL forms of a credential; the first also runs in a real child process (interpreter start,
#: the entry point's error boundary, the terminal: the child of :func:`in_a_child`), the rest
#: in this process through the same ``main()`` (each child of its own cost ~2 s of CPU: 24 of
#: them were ~45 s of the suite).
URL_FORMS = ["userinfo", "query", "env-query", "unencoded-at", "percent", "bad-port"]
CREDENTIAL_URLS = {
    "userinfo": f"{PG}://u:{SECRET}@127.0.0.1:1/x",
    "query": f"{PG}://u@127.0.0.1:1/x?password={SECRET}",
    "env-query": f"{PG}://u@127.0.0.1:1/x?password={SECRET}",
    "unencoded-at": f"{PG}://u:pa@{SECRET}@127.0.0.1:1/x",
    "percent": f"{PG}://u:pa%40{SECRET}@127.0.0.1:1/x",
    "bad-port": f"{PG}://u:{SECRET}@127.0.0.1:70000/x",
}
CREDENTIAL_VERBS = (["status"], ["show", "1"], ["db", "upgrade"], ["doctor"])


def _credential_args(form: str, verb: list[str]) -> list[str]:
    """The verb's arguments: the URL by --db, except the env-query form's ($FLUSHBENCH_DB)."""
    return list(verb) if form == "env-query" else [*verb, "--db", CREDENTIAL_URLS[form]]


def _credential_jobs(folder: Path) -> list[Invocation]:
    """The child-process form's verbs, run in ``folder`` (its work folder inside)."""
    folder.mkdir()
    form = URL_FORMS[0]
    return [Invocation(f"credentials {' '.join(verb)}", _credential_args(form, verb),
                       env={"FLUSHBENCH_WORK": str(folder / "work"), "FLUSHBENCH_DB": None},
                       cwd=folder, deadline_s=120)
            for verb in CREDENTIAL_VERBS]


@pytest.mark.parametrize("form", URL_FORMS)
def test_no_credential_on_the_terminal_or_in_files(
        form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], in_a_child: tuple[Path, dict[str, Outcome]]) -> None:
    """The real command, each URL form (--db or $FLUSHBENCH_DB): no secret in any output."""
    if form == URL_FORMS[0]:
        root, said = in_a_child
        folder = root / "credentials"
        runs = [said[f"credentials {' '.join(verb)}"] for verb in CREDENTIAL_VERBS]
        for run in runs:
            assert run.finished, run.note
        results = [(run.code, run.out, run.err) for run in runs]
    else:
        folder = tmp_path
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))
        monkeypatch.delenv("FLUSHBENCH_DB", raising=False)
        if form == "env-query":
            monkeypatch.setenv("FLUSHBENCH_DB", CREDENTIAL_URLS[form])
        results = [run_cli(_credential_args(form, verb), capsys) for verb in CREDENTIAL_VERBS]
    for code, out, err in results:
        assert code in (1, 2), err
        assert SECRET not in out + err, out + err
        assert "internal error" not in err
    written = [p for p in folder.rglob("*") if p.is_file()]
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path


# --- FIFOs: refused, never opened -------------------------------------------------------------

FIFO_CASES = [
    ("db-status", ["status", "--db", "{fifo}"]),
    ("db-show", ["show", "1", "--db", "{fifo}"]),
    ("db-queue-add", ["queue", "add", "{tmp}/x.yaml", "--db", "{fifo}"]),
    ("db-queue-list", ["queue", "list", "--db", "{fifo}"]),
    ("db-upgrade", ["db", "upgrade", "--db", "{fifo}"]),
    ("db-compare", ["compare", "x", "--db", "{fifo}"]),
    ("log-file-worker", ["worker", "--db", "{tmp}/r.sqlite", "--log-file", "{fifo}"]),
    ("log-file-run", ["run", "{tmp}/x.yaml", "--db", "{tmp}/r.sqlite", "--log-file", "{fifo}"]),
    ("experiment-file", ["validate", "{fifo}"]),
    ("experiment-file-plan", ["plan", "{fifo}"]),
    ("base-config", ["validate", "{tmp}/base.yaml"]),
    ("server-profile", ["validate", "{tmp}/profile.yaml"]),
    ("export-o", ["export", "x", "-o", "{fifo}", "--force", "--db", "{tmp}/r.sqlite"]),
    ("report-o", ["report", "x", "-o", "{fifo}", "--db", "{tmp}/r.sqlite"]),
]


def _fifo_argv(args: list[str], folder: Path) -> list[str]:
    """A FIFO case's arguments in its folder."""
    return [a.replace("{fifo}", str(folder / "pipe")).replace("{tmp}", str(folder))
            for a in args]


def _fifo_jobs(root: Path) -> list[Invocation]:
    """Each FIFO case in a folder of its own (``root/KIND``): the named pipe ``pipe``, the
    files that name it, and a current, empty results database where the case uses one."""
    jobs = []
    for kind, args in FIFO_CASES:
        folder = root / kind
        folder.mkdir(parents=True)
        fifo = folder / "pipe"
        os.mkfifo(fifo)
        (folder / "x.yaml").write_text(OK)
        (folder / "base.yaml").write_text(exp({"base_config": str(fifo)}))
        (folder / "profile.yaml").write_text(exp({"server": str(fifo)}))
        if "{tmp}/r.sqlite" in args:
            (folder / "r.sqlite").write_bytes(_empty_db(root))
        jobs.append(Invocation(f"fifo {kind}", _fifo_argv(args, folder),
                               env={"FLUSHBENCH_WORK": str(folder / "work"),
                                    "FLUSHBENCH_DB": None},
                               cwd=folder, deadline_s=60))
    return jobs


def _doctor_jobs(folder: Path) -> list[Invocation]:
    """`doctor` on a text file named as the database, then `db upgrade` of a new one and
    `doctor` on it (in that order: the child runs them in turn)."""
    folder.mkdir()
    (folder / "t.db").write_text("hello\n")
    # COLUMNS: the table's rows on one line each, so "not a SQLite database" is never cut by
    # a cell's wrapping (at 250 columns where it broke depended on the folder's path length).
    env: dict[str, str | None] = {"FLUSHBENCH_WORK": str(folder / "work"), "COLUMNS": "1000",
                                  "FLUSHBENCH_DB": None}
    steps = {"bad": ["doctor", "--db", str(folder / "t.db")],
             "upgrade": ["db", "upgrade", "--db", str(folder / "r.sqlite")],
             "good": ["doctor", "--db", str(folder / "r.sqlite")]}
    return [Invocation(f"doctor {step}", args, env=env, cwd=folder, deadline_s=120)
            for step, args in steps.items()]


@pytest.fixture(scope="module")
def in_a_child(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Outcome]]:
    """Every invocation of this module that runs in a child process — the FIFO cases, the
    credential form that is not run in this process, doctor's checks — in ONE child, through
    the real entry point ``flushbench.cli.main`` (:mod:`tests.support.cli_child`: an
    interpreter start and flushbench's imports once, not once per case, ~1.5 CPU-s each).
    Each invocation has its own folder (its cwd and $FLUSHBENCH_WORK), $FLUSHBENCH_DB unset,
    and its own deadline: one that blocks is killed with the child and reported by name, the
    rest run in a new child. Returns the folders' root and name → outcome."""
    root = tmp_path_factory.mktemp("in-a-child")
    jobs = [*_fifo_jobs(root / "fifo"), *_credential_jobs(root / "credentials"),
            *_doctor_jobs(root / "doctor")]
    return root, run_in_one_child(jobs)


@pytest.mark.parametrize(("kind", "args"), FIFO_CASES, ids=[c[0] for c in FIFO_CASES])
def test_fifo_is_refused_not_opened(kind: str, args: list[str],
                                    in_a_child: tuple[Path, dict[str, Outcome]]) -> None:
    """A named pipe for any path kind: a clear refusal within 60 s (a hang fails here)."""
    root, said = in_a_child
    folder = root / "fifo" / kind
    run = said[f"fifo {kind}"]
    if not run.finished:
        pytest.fail(f"flushbench {' '.join(_fifo_argv(args, folder))} blocked on the FIFO"
                    f" ({run.note})")
    assert run.code == 2, run.err
    assert "named pipe (FIFO)" in run.err, run.err
    assert "internal error" not in run.err
    assert stat.S_ISFIFO((folder / "pipe").stat().st_mode)  # left as it was


# --- the rest of the round ---------------------------------------------------------------------

def test_readme_allow_variables_example_validates(case_dir: Path, cli: CliRun) -> None:
    """README's own `allow_variables` example passes validate against the real server."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "allow_variables: [innodb_buffer_pool_filename]" in readme
    assert "allow_variables: [log_bin]" not in readme
    (case_dir / "x.yaml").write_text(README_EXAMPLE)
    code, out, err = cli(["validate", str(case_dir / "x.yaml")])
    assert code == 0, err
    assert "ok: 2 cells" in out


def test_a_stored_experiment_validates_again(case_dir: Path) -> None:
    """The file-only rules (no key without a value) do not refuse a stored experiment, whose
    dump has None for every knob left unset: a worker re-validates it before running."""
    from core.experiment.loading import load_experiment
    from core.experiment.spec import ExperimentSpec

    (case_dir / "x.yaml").write_text(exp({"fixed": {"io_capacity": 400}}))
    loaded = load_experiment(case_dir / "x.yaml")
    again = ExperimentSpec.model_validate(loaded.model_dump(mode="json"))
    assert again == loaded


def test_plan_prints_markup_values_literally(case_dir: Path, cli: CliRun) -> None:
    """Values that look like rich markup or emoji codes are printed as written by `plan`."""
    (case_dir / "x.yaml").write_text(exp({
        "allow_variables": ["innodb_buffer_pool_filename"],
        "matrix": {"doublewrite": DELETE,
                   "variables": {"innodb_buffer_pool_filename": ["[/b]x", ":x:[dim]y"]}}}))
    code, out, err = cli(["plan", str(case_dir / "x.yaml")])
    assert code == 0, err
    assert "innodb_buffer_pool_filename=[/b]x" in out
    assert "innodb_buffer_pool_filename=:x:[dim]y" in out and "❌" not in out


def test_db_upgrade_of_a_path_with_markup(case_dir: Path, cli: CliRun) -> None:
    """`db upgrade` names the database as typed, brackets and all (it crashed rich)."""
    (case_dir / "a[").mkdir()
    code, out, err = cli(["db", "upgrade", "--db", str(case_dir / "a[/b]:x:.sqlite")])
    assert code == 0, err
    assert f"{case_dir}/a[/b]:x:.sqlite" in out


def test_non_ascii_echo_on_an_ascii_terminal(case_dir: Path) -> None:
    """mysqld's echo of a non-ASCII value on a terminal that cannot show it: still one error."""
    (case_dir / "x.yaml").write_text(exp({"fixed": {"variables": {"sql_mode": "TRADITIONAL,é"}}}))
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "FLUSHBENCH_WORK": str(case_dir / "w")}
    proc = subprocess.run([FB, "validate", str(case_dir / "x.yaml")], capture_output=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(b"error: ") and b"fixed.variables.sql_mode" in proc.stderr
    assert b"internal error" not in proc.stderr and b"Traceback" not in proc.stderr


def test_doctor_checks_the_database(in_a_child: tuple[Path, dict[str, Outcome]]) -> None:
    """`doctor --db` opens the database: a text file named as one is a failed check."""
    _, said = in_a_child
    bad, upgrade, ok = (said[f"doctor {step}"] for step in ("bad", "upgrade", "good"))
    assert bad.code == 1, bad.note or bad.out + bad.err
    assert "results database" in bad.err and "not a SQLite database" in bad.out
    assert upgrade.code == 0, upgrade.note or upgrade.out + upgrade.err
    assert ok.code == 0, ok.note or ok.out + ok.err
    assert "results database" in ok.out and "revision" in ok.out


@pytest.mark.skipif(system_tools.which("chattr") is None,
                    reason="chattr (e2fsprogs) is not installed")
def test_db_upgrade_on_an_immutable_database(case_dir: Path, cli: CliRun) -> None:
    """An immutable file (chattr +i; root cannot write it either): one clear error."""
    db = case_dir / "r.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
    conn.execute("INSERT INTO alembic_version VALUES ('0001')")
    conn.commit()
    conn.close()
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True, check=False).returncode:
        pytest.fail("chattr +i failed: the test needs root on a file system with attributes")
    try:
        code, out, err = cli(["db", "upgrade", "--db", str(db)])
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)
    assert code == 2, err
    assert err.startswith("error: ") and "internal error" not in err, err
    assert str(db) in err or "results database" in err, err


def test_crash_handler_survives_a_huge_message(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug whose message is huge: a bounded one-line message, the log still written."""
    from flushbench import cli

    monkeypatch.setenv("FLUSHBENCH_WORK", str(tmp_path / "work"))
    message = cli._internal_error(RuntimeError("y" * 5_000_000))
    assert len(message) < 1000 and "5,000,000 characters" in message
    logs = list((tmp_path / "work" / "logs").glob("flushbench-crash-*.log"))
    assert len(logs) == 1 and stat.S_IMODE(logs[0].stat().st_mode) == 0o600


def test_console_prints_user_text_literally() -> None:
    """The one console helper: markup, emoji codes and controls are shown, not interpreted."""
    import io

    from flushbench.cli.console import literal, make_console, say

    buffer = io.StringIO()
    console = make_console()
    console.file = buffer
    say(console, "a[/b] [dim]x[/dim] :x: \x1b[31mred\x07")
    console.print(literal("[bold]y"))
    text = buffer.getvalue()
    assert "a[/b] [dim]x[/dim] :x: \\x1b[31mred\\x07" in text
    assert "[bold]y" in text and "\x1b" not in text and "❌" not in text


def test_base_experiment_is_valid(case_dir: Path, cli: CliRun) -> None:
    """The control: the experiment cases fail because of their change."""
    (case_dir / "x.yaml").write_text(yaml.safe_dump(merge(BASE, {}), sort_keys=False))
    code, out, err = cli(["validate", str(case_dir / "x.yaml")])
    assert code == 0, err
