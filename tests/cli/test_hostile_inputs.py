"""Hostile input against every verb: one clear message, an exit code, and nothing written.

Each case runs the real ``flushbench`` entry point (its one error boundary, in this process)
in a fresh folder, with files the case writes first. It asserts the exit code, that stderr is a
single ``error: …`` message holding the expected fragments (file, key path, fix) with no
traceback, and that nothing else appeared in the folder: no results database, no work
directory, no report.

``{tmp}`` in arguments, file contents and fragments stands for the case's folder.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.conftest import CliRun
from tests.support.patching import DELETE, merge

pytestmark = pytest.mark.mysql  # validate runs preflight: the binary's own --help parse

#: A valid experiment: sysbench on Debian's MariaDB (nothing to build).
BASE: dict[str, Any] = {
    "version": 1,
    "name": "hostile",
    "server": "mariadb-debian",
    "base_config": "small",
    "dataset": {"workload": "sysbench", "tables": 1, "table_size": 1000},
    "workload": {"driver": "sysbench", "test": "oltp_read_only", "connections": 4,
                 "warmup": "5s", "duration": "60s", "report_interval": "10s"},
    "matrix": {"doublewrite": [True, False]},
}


def exp(patch: dict[str, Any]) -> str:
    """The base experiment with ``patch`` applied, as YAML."""
    return yaml.safe_dump(merge(BASE, patch), sort_keys=False)


OK = exp({})
LAUGHS = "a: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcde", "bcdef", strict=True)
)


def cnf(body: str) -> str:
    return body


class Case:
    """One hostile input: the verb's arguments, the files it needs, what must be said."""

    def __init__(self, case_id: str, args: list[str], expect: list[str], *,
                 files: dict[str, str | bytes] | None = None, code: int = 2,
                 needs_db: bool = False) -> None:
        self.id = case_id
        self.args = args
        self.expect = expect
        self.files = files or {}
        self.code = code
        self.needs_db = needs_db


def v(case_id: str, text: str | bytes, expect: list[str], **kw: Any) -> Case:
    """``validate {tmp}/x.yaml`` on an experiment file."""
    files = {"x.yaml": text, **kw.pop("files", {})}
    return Case(case_id, ["validate", "{tmp}/x.yaml"], ["{tmp}/x.yaml", *expect], files=files,
                **kw)


F = "{tmp}/x.yaml"

CASES: list[Case] = [
    # --- the file itself -------------------------------------------------------------------
    v("empty-file", "", ["expected a mapping"]),
    v("top-level-list", "- 1\n- 2\n", ["expected a mapping", "version: 1"]),
    v("yaml-syntax", "version: 1\nname: [unclosed\n", ["invalid YAML", "fix the syntax"]),
    v("duplicate-key", OK + "name: again\n", ["duplicate key 'name'"]),
    v("tab-indent", "version: 1\n\tname: x\n", ["invalid YAML"]),
    v("binary", b"\x00\x01\x02version: 1", ["binary, not text"]),
    v("latin1", "version: 1\nname: caf\xe9\n".encode("latin-1"), ["not UTF-8 text"]),
    v("billion-laughs", LAUGHS, ["expands to more than", "anchors and aliases"]),
    v("deep-nesting", "x: " + "[" * 100 + "]" * 100 + "\n", ["nesting deeper than"]),
    v("huge-file", "# " + "x" * (2 * 1024 * 1024) + "\n", ["more than the", "right file"]),
    Case("directory", ["validate", "{tmp}"], ["{tmp}", "is a directory"]),
    Case("dev-zero", ["validate", "/dev/zero"], ["/dev/zero", "not a regular file"]),
    Case("missing-file", ["validate", "{tmp}/nope.yaml"], ["{tmp}/nope.yaml", "not found",
                                                         "check the path"]),
    v("no-version", exp({"version": DELETE}), ["version", "add `version: 1`"]),
    v("version-2", exp({"version": 2}), ["unsupported version 2"]),
    v("version-string", exp({"version": "1"}), ["unsupported version '1'"]),
    v("unknown-top-key", exp({"repetitons": 2}), ["repetitons", "did you mean 'repetitions'?"]),
    v("name-with-space", exp({"name": "my run"}), ["name", "pattern"]),
    v("name-empty", exp({"name": ""}), ["name"]),
    v("name-too-long", exp({"name": "x" * 200}), ["name", "at most 120"]),
    v("name-path", exp({"name": "../etc"}), ["name"]),
    # --- units ---------------------------------------------------------------------------
    v("duration-unit", exp({"workload": {"duration": "10x"}}),
      ["workload.duration", "expected a duration"]),
    v("duration-negative", exp({"workload": {"duration": -5}}),
      ["workload.duration", "must not be negative"]),
    v("duration-inf", exp({"workload": {"duration": float("inf")}}),
      ["workload.duration", "finite"]),
    v("duration-nan", exp({"workload": {"duration": float("nan")}}),
      ["workload.duration", "finite"]),
    v("duration-absurd", exp({"workload": {"duration": "3650d"}}),
      ["workload.duration", "less than or equal to 604800"]),
    v("warmup-words", exp({"workload": {"warmup": "soon"}}), ["workload.warmup"]),
    v("report-interval-zero", exp({"workload": {"report_interval": 0}}),
      ["workload.report_interval", "greater than or equal to 1"]),
    v("sampling-interval-tiny", exp({"sampling": {"interval": 0.1}}),
      ["sampling.interval", "greater than or equal to 0.5"]),
    v("size-unit", exp({"fixed": {"log_file_size": "2000Q"}}),
      ["fixed.log_file_size", "expected a size"]),
    v("size-fraction", exp({"fixed": {"log_file_size": "1.3K"}}),
      ["fixed.log_file_size", "whole number of bytes"]),
    v("size-negative", exp({"fixed": {"buffer_pool_size": -1}}),
      ["fixed.buffer_pool_size", "must not be negative"]),
    v("size-inf", exp({"fixed": {"buffer_pool_size": float("inf")}}),
      ["fixed.buffer_pool_size", "expected a size"]),
    v("repetitions-zero", exp({"repetitions": 0}), ["repetitions", "greater than or equal"]),
    v("repetitions-many", exp({"repetitions": 1001}), ["repetitions", "less than or equal"]),
    v("repetitions-word", exp({"repetitions": "three"}), ["repetitions", "valid integer"]),
    v("connections-zero", exp({"workload": {"connections": 0}}), ["workload.connections"]),
    # --- matrix and values ---------------------------------------------------------------
    v("empty-axis", exp({"matrix": {"doublewrite": []}}),
      ["matrix.doublewrite", "empty list", "at least one level"]),
    v("empty-variable-axis", exp({"matrix": {"variables": {"innodb_purge_threads": []}}}),
      ["matrix.variables.innodb_purge_threads", "empty list"]),
    v("unknown-knob", exp({"matrix": {"doublewrit": [True]}}),
      ["matrix.doublewrit", "did you mean 'doublewrite'?"]),
    v("pct-over-100", exp({"fixed": {"max_dirty_pages_pct": 150}}),
      ["fixed.max_dirty_pages_pct", "less than or equal to 99.999"]),
    v("pct-nan", exp({"fixed": {"max_dirty_pages_pct": float("nan")}}),
      ["fixed.max_dirty_pages_pct"]),
    v("io-capacity-low", exp({"fixed": {"io_capacity": 50}}),
      ["fixed.io_capacity", "greater than or equal to 100"]),
    v("io-over-max", exp({"fixed": {"io_capacity": 4000, "io_capacity_max": 2000}}),
      ["fixed.io_capacity", "exceeds io_capacity_max", "raise io_capacity_max"]),
    v("lwm-over-pct", exp({"fixed": {"max_dirty_pages_pct": 50, "max_dirty_pages_pct_lwm": 60}}),
      ["fixed.max_dirty_pages_pct_lwm", "lower the lwm"]),
    v("neighbors-bogus", exp({"fixed": {"flush_neighbor_pages": "some"}}),
      ["fixed.flush_neighbor_pages", "'none', 'cont' or 'area'"]),
    v("allocator-unknown", exp({"matrix": {"allocator": ["mimalloc"]}}),
      ["matrix.allocator[0]", "'glibc', 'jemalloc' or 'tcmalloc'"]),
    v("switch-maybe", exp({"fixed": {"large_pages": "maybe"}}), ["fixed.large_pages"]),
    v("fixed-and-matrix", exp({"fixed": {"doublewrite": True}}),
      ["matrix.doublewrite", "set in both `fixed` and `matrix`"]),
    v("exclude-nothing", exp({"exclude": [{"doublewrite": True, "io_capacity": 999}]}),
      ["exclude[0]", "matches no cell"]),
    v("exclude-everything", exp({"exclude": [{"doublewrite": True}, {"doublewrite": False}]}),
      ["exclude", "empty after `exclude`"]),
    v("duplicate-include", exp({"matrix": DELETE, "include": [{"doublewrite": True},
                                                              {"doublewrite": True}]}),
      ["include[1]", "duplicate cell"]),
    v("baseline-none", exp({"baseline": {"doublewrite": True, "io_capacity": 999}}),
      ["baseline", "matches 0 cells"]),
    v("baseline-two", exp({"matrix": {"doublewrite": [True, False], "io_capacity": [200, 400]},
                           "baseline": {"doublewrite": True}}),
      ["baseline", "matches 2 cells"]),
    v("too-many-cells", exp({"matrix": {"io_capacity": list(range(100, 10100, 10)),
                                        "max_dirty_pages_pct": list(range(1, 90))}}),
      ["matrix", "more than max_cells", "set max_cells"]),
    v("window-backwards", exp({"window": {"start": "50s", "end": "20s"}}),
      ["window", "does not fit"]),
    v("window-beyond", exp({"window": {"end": "2m"}}), ["window", "does not fit"]),
    v("interval-longer-than-window", exp({"window": {"start": "55s"}}),
      ["workload.report_interval", "longer than the measurement window"]),
    v("sampling-longer-than-window", exp({"window": {"start": "45s"},
                                          "sampling": {"interval": "20s"}}),
      ["sampling.interval", "no sample would fall inside"]),
    v("order-bogus", exp({"order": {"mode": "shuffle"}}), ["order.mode"]),
    v("driver-unknown", exp({"workload": {"driver": "sysbnch"}}),
      ["workload.driver", "did you mean 'sysbench'?"]),
    v("driver-dataset-mismatch", exp({"dataset": {"workload": "tpcc", "warehouses": 1,
                                                  "tables": DELETE, "table_size": DELETE}}),
      ["needs a sysbench dataset"]),
    v("sysbench-no-test", exp({"workload": {"test": DELETE}}),
      ["workload.test", "needs `test`"]),
    v("test-for-tpcc", exp({"dataset": {"workload": "tpcc", "warehouses": 1, "tables": DELETE,
                                        "table_size": DELETE},
                            "workload": {"driver": "tpcc"}}),
      ["workload.test", "only for the sysbench driver"]),
    v("mode-for-sysbench", exp({"workload": {"mode": "batched"}}),
      ["workload.mode", "only for the tpcc driver"]),
    v("client-for-sysbench", exp({"workload": {"client": "libmariadb"}}),
      ["workload.client", "only for the tpcc driver"]),
    v("client-unknown", exp({"dataset": {"workload": "tpcc", "warehouses": 1, "tables": DELETE,
                                         "table_size": DELETE},
                             "workload": {"driver": "tpcc", "test": DELETE, "client": "odbc"}}),
      ["workload.client", "'go' or 'libmariadb'"]),
    v("client-batched", exp({"dataset": {"workload": "tpcc", "warehouses": 1, "tables": DELETE,
                                         "table_size": DELETE},
                             "workload": {"driver": "tpcc", "test": DELETE, "mode": "batched",
                                          "client": "libmariadb"}}),
      ["workload.client", "tpcc-mysql mode only"]),
    v("warehouses-zero", exp({"dataset": {"workload": "tpcc", "warehouses": 0,
                                          "tables": DELETE, "table_size": DELETE},
                              "workload": {"driver": "tpcc", "test": DELETE}}),
      ["dataset.warehouses", "greater than or equal to 1"]),
    v("loader-wrong-kind", exp({"dataset": {"loader": "tpcc-mysql"}}),
      ["dataset.loader", "loads tpcc datasets, not sysbench"]),
    v("loader-unknown", exp({"dataset": {"loader": "hammerdb"}}),
      ["dataset.loader", "unknown workload driver 'hammerdb'"]),
    # --- raw variables and the sandbox ---------------------------------------------------
    v("variable-name-space", exp({"fixed": {"variables": {"innodb io": 1}}}),
      ["fixed.variables.innodb io", "not a server variable name"]),
    v("variable-quote", exp({"fixed": {"variables": {"sql_mode": "A'B"}}}),
      ["fixed.variables.sql_mode", "not allowed in a server variable"]),
    v("variable-newline", exp({"fixed": {"variables": {"sql_mode": "A\n[client]"}}}),
      ["fixed.variables.sql_mode", "control characters"]),
    v("variable-hash", exp({"fixed": {"variables": {"sql_mode": "A#B"}}}),
      ["fixed.variables.sql_mode", "not allowed"]),
    v("variable-semicolon", exp({"fixed": {"variables": {"sql_mode": "A; DROP"}}}),
      ["fixed.variables.sql_mode", "not allowed"]),
    v("variable-backslash", exp({"fixed": {"variables": {"sql_mode": "A\\B"}}}),
      ["fixed.variables.sql_mode", "not allowed"]),
    v("variable-spaces", exp({"fixed": {"variables": {"sql_mode": " TRADITIONAL"}}}),
      ["fixed.variables.sql_mode", "leading or trailing spaces"]),
    v("variable-inf", exp({"fixed": {"variables": {"long_query_time": float("inf")}}}),
      ["fixed.variables.long_query_time", "not a finite number"]),
    v("variable-two-spellings", exp({"fixed": {"variables": {
        "innodb_purge_threads": 2, "INNODB-PURGE-THREADS": 4}}}),
      ["fixed.variables.INNODB-PURGE-THREADS", "same server variable (innodb_purge_threads)"]),
    v("variable-datadir", exp({"fixed": {"variables": {"datadir": "/tmp/x"}}}),
      ["fixed.variables.datadir", "managed by the sandbox"]),
    v("variable-socket", exp({"fixed": {"variables": {"socket": "/tmp/s"}}}),
      ["fixed.variables.socket", "managed by the sandbox"]),
    v("variable-port", exp({"fixed": {"variables": {"port": 3306}}}),
      ["fixed.variables.port", "managed by the sandbox"]),
    v("variable-skip-grant", exp({"fixed": {"variables": {"skip_grant_tables": "ON"}}}),
      ["fixed.variables.skip_grant_tables", "opens the server", "allow_variables"]),
    v("variable-init-file", exp({"fixed": {"variables": {"init_file": "/tmp/evil.sql"}}}),
      ["fixed.variables.init_file", "managed by the sandbox"]),
    v("variable-plugin-maturity", exp({"fixed": {"variables": {"plugin_maturity": "alpha"}}}),
      ["fixed.variables.plugin_maturity", "opens the server"]),
    v("variable-wsrep", exp({"fixed": {"variables": {"wsrep_provider": "/lib/x.so"}}}),
      ["fixed.variables.wsrep_provider", "allow_variables"]),
    v("variable-general-log-file", exp({"fixed": {"variables": {
        "general_log_file": "/etc/passwd"}}}),
      ["fixed.variables.general_log_file", "managed by the sandbox"]),
    v("variable-path-suffix", exp({"fixed": {"variables": {
        "innodb_buffer_pool_filename": "/tmp/pool"}}}),
      ["fixed.variables.innodb_buffer_pool_filename", "names a file or directory"]),
    v("variable-secure-file-priv", exp({"fixed": {"variables": {"secure_file_priv": ""}}}),
      ["fixed.variables.secure_file_priv"]),
    v("allowed-path-absolute", exp({"allow_variables": ["innodb_buffer_pool_filename"],
                                    "fixed": {"variables": {
                                        "innodb_buffer_pool_filename": "/tmp/pool"}}}),
      ["points outside the run directory", "relative path"]),
    v("allowed-path-dotdot", exp({"allow_variables": ["innodb_buffer_pool_filename"],
                                  "fixed": {"variables": {
                                      "innodb_buffer_pool_filename": "../../pool"}}}),
      ["points outside the run directory"]),
    v("variable-unknown", exp({"fixed": {"variables": {"innodb_io_capasity": 400}}}),
      ["fixed.variables.innodb_io_capasity", "did you mean innodb_io_capacity"]),
    v("variable-abbreviation", exp({"fixed": {"variables": {"innodb_buffer_pool_fil": "x"}}}),
      ["fixed.variables.innodb_buffer_pool_fil", "is not a variable of"]),
    v("variable-out-of-range", exp({"fixed": {"variables": {"innodb_purge_threads": 9999}}}),
      ["fixed.variables.innodb_purge_threads", "mariadb-10.11 says"]),
    v("variable-bad-enum", exp({"fixed": {"variables": {"innodb_flush_method": "fast"}}}),
      ["mariadb-10.11 says"]),
    v("page-size-per-cell", exp({"fixed": {"variables": {"innodb_page_size": "8K"}}}),
      ["fixed.variables.innodb_page_size", "fixed when the dataset is created"]),
    v("pool-beyond-ram", exp({"fixed": {"buffer_pool_size": "1000T"}}),
      ["fixed.buffer_pool_size", "more than this machine's"]),
    v("knob-absent-on-flavor", exp({"fixed": {"adaptive_checkpoint": "keep_average"}}),
      ["fixed.adaptive_checkpoint", "absent on mariadb-10.11"]),
    # --- base configs --------------------------------------------------------------------
    v("base-missing", exp({"base_config": "{tmp}/missing.cnf"}),
      ["base_config", "not found"]),
    v("base-unknown-name", exp({"base_config": "smal"}),
      ["base_config", "unknown base config 'smal'", "did you mean 'small'?"]),
    v("base-client-section", exp({"base_config": "{tmp}/b.cnf"}),
      ["{tmp}/b.cnf:1", "section [client] is not allowed"],
      files={"b.cnf": "[client]\nuser=root\n"}),
    v("base-client-server-section", exp({"base_config": "{tmp}/b.cnf"}),
      ["section [client-server] is not allowed"],
      files={"b.cnf": "[mysqld]\ninnodb_io_capacity=400\n[client-server]\nport=1\n"}),
    v("base-include", exp({"base_config": "{tmp}/b.cnf"}),
      ["{tmp}/b.cnf:2", "!include is not allowed"],
      files={"b.cnf": "[mysqld]\n!include /etc/mysql/my.cnf\n"}),
    v("base-datadir", exp({"base_config": "{tmp}/b.cnf"}),
      ["{tmp}/b.cnf: datadir", "managed by the sandbox"],
      files={"b.cnf": "[mysqld]\ndatadir=/var/lib/mysql\n"}),
    v("base-skip-grant", exp({"base_config": "{tmp}/b.cnf"}),
      ["{tmp}/b.cnf: skip_grant_tables", "opens the server"],
      files={"b.cnf": "[mysqld]\nskip-grant-tables\n"}),
    v("base-binary", exp({"base_config": "{tmp}/b.cnf"}), ["binary, not text"],
      files={"b.cnf": b"[mysqld]\x00\n"}),
    v("base-unknown-variable", exp({"base_config": "{tmp}/b.cnf"}),
      ["{tmp}/b.cnf: innodb_io_capasity", "did you mean innodb_io_capacity"],
      files={"b.cnf": "[mysqld]\ninnodb_io_capasity=400\n"}),
    v("base-duplicate", exp({"base_config": "{tmp}/b.cnf"}), ["set twice"],
      files={"b.cnf": "[mysqld]\ninnodb_io_capacity=400\ninnodb-io-capacity=500\n"}),
    v("base-outside-section", exp({"base_config": "{tmp}/b.cnf"}), ["outside a section"],
      files={"b.cnf": "innodb_io_capacity=400\n"}),
    v("base-value-quote", exp({"base_config": "{tmp}/b.cnf"}), ["has a quote"],
      files={"b.cnf": "[mysqld]\nsql_mode=A'B\n"}),
    # --- server profiles -----------------------------------------------------------------
    v("profile-unknown", exp({"server": "mariadb-debain"}),
      ["server", "unknown server profile", "did you mean 'mariadb-debian'?"]),
    v("profile-invalid", exp({"server": "{tmp}/p.yaml"}),
      ["{tmp}/p.yaml", "exclude each other"],
      files={"p.yaml": "version: 1\nname: p\nflavor: mariadb\nmysqld: /usr/sbin/mariadbd\n"
                       "basedir: /opt\n"}),
    v("profile-missing-binary", exp({"server": "{tmp}/p.yaml"}),
      ["{tmp}/p.yaml: mysqld", "missing or not executable"],
      files={"p.yaml": "version: 1\nname: p\nflavor: mariadb\nmysqld: /nonexistent/mysqld\n"
                       "install_db: /usr/bin/mariadb-install-db\n"}),
    v("profile-flavor-lie", exp({"server": "{tmp}/p.yaml"}),
      ["{tmp}/p.yaml: flavor", "is MariaDB", "set `flavor: mariadb`"],
      files={"p.yaml": "version: 1\nname: p\nflavor: mysql\nmysqld: /usr/sbin/mariadbd\n"
                       "install_db: /usr/bin/mariadb-install-db\n"}),
    v("profile-binary-file", exp({"server": "{tmp}/p.yaml"}), ["binary, not text"],
      files={"p.yaml": b"\x7fELF\x00\x00"}),
    # --- other verbs on bad experiment files: nothing is queued, no database appears ------
    Case("plan-bad-file", ["plan", F], [F, "duplicate key"], files={"x.yaml": OK + "name: b\n"}),
    Case("run-bad-file", ["run", F], [F, "empty list"],
         files={"x.yaml": exp({"matrix": {"doublewrite": []}})}),
    Case("queue-add-bad-file", ["queue", "add", F], [F, "managed by the sandbox"],
         files={"x.yaml": exp({"fixed": {"variables": {"datadir": "/"}}})}),
    Case("run-missing-file", ["run", "{tmp}/none.yaml"], ["none.yaml", "not found"]),
    # --- results databases -----------------------------------------------------------------
    Case("status-missing-db", ["status", "--db", "{tmp}/typo.sqlite"],
         ["{tmp}/typo.sqlite", "no results database here"]),
    Case("status-db-directory", ["status", "--db", "{tmp}/d"], ["is a directory"],
         files={"d/keep": "x"}),
    Case("status-db-text", ["status", "--db", "{tmp}/t.db"], ["not a SQLite database"],
         files={"t.db": "hello\n"}),
    Case("status-db-foreign", ["status", "--db", "{tmp}/f.sqlite"],
         ["not a flushbench results database", "left untouched"], files={"f.sqlite": "FOREIGN"}),
    Case("queue-list-db-foreign", ["queue", "list", "--db", "{tmp}/f.sqlite"],
         ["not a flushbench results database"], files={"f.sqlite": "FOREIGN"}),
    Case("compare-db-foreign", ["compare", "x", "--db", "{tmp}/f.sqlite"],
         ["not a flushbench results database"], files={"f.sqlite": "FOREIGN"}),
    Case("report-db-text", ["report", "x", "-o", "{tmp}/out", "--db", "{tmp}/t.db"],
         ["not a SQLite database"], files={"t.db": "hello\n"}),
    Case("export-db-missing", ["export", "x", "-o", "{tmp}/e.csv", "--db", "{tmp}/no.sqlite"],
         ["no results database here"]),
    Case("db-upgrade-foreign", ["db", "upgrade", "--db", "{tmp}/f.sqlite"],
         ["not a flushbench results database"], files={"f.sqlite": "FOREIGN"}),
    Case("db-bad-url", ["status", "--db", "bogus::://x"], ["not a database URL"]),
    Case("db-unknown-driver", ["status", "--db", "nosuchdb+nodriver://h/x"],
         ["unknown database driver"]),
    Case("db-unreachable", ["status", "--db", "postgresql+psycopg://u:s3cret@127.0.0.1:1/x"],
         ["cannot use the results database", "127.0.0.1", "***"]),
    Case("worker-missing-db", ["worker", "--db", "{tmp}/none.sqlite"],
         ["no results database here"]),
    # --- CLI misuse on a real (empty) results database ------------------------------------
    Case("show-not-a-number", ["show", "abc", "--db", "{tmp}/r.sqlite"],
         ["Invalid value for 'run_id'"],
         needs_db=True),
    Case("show-unknown-run", ["show", "999", "--db", "{tmp}/r.sqlite"], ["no run 999"],
         needs_db=True),
    Case("compare-unknown", ["compare", "nope", "--db", "{tmp}/r.sqlite"],
         ["no experiment 'nope'"], needs_db=True),
    Case("export-bad-format", ["export", "x", "-o", "{tmp}/e.xlsx", "--format", "xlsx",
                               "--db", "{tmp}/r.sqlite"], ["--format", "csv or parquet"],
         needs_db=True),
    Case("export-bad-what", ["export", "x", "-o", "{tmp}/e.csv", "--what", "all",
                             "--db", "{tmp}/r.sqlite"], ["--what", "intervals, samples"],
         needs_db=True),
    Case("export-over-existing", ["export", "x", "-o", "{tmp}/keep.csv",
                                  "--db", "{tmp}/r.sqlite"], ["exists already", "--force"],
         files={"keep.csv": "mine\n"}, needs_db=True),
    Case("export-over-the-db", ["export", "x", "-o", "{tmp}/r.sqlite", "--force",
                                "--db", "{tmp}/r.sqlite"], ["the results database itself"],
         needs_db=True),
    Case("report-into-a-file", ["report", "x", "-o", "{tmp}/keep.csv",
                                "--db", "{tmp}/r.sqlite"], ["the report folder is a file"],
         files={"keep.csv": "mine\n"}, needs_db=True),
    Case("queue-cancel-unknown", ["queue", "cancel", "nope", "--db", "{tmp}/r.sqlite"],
         ["no experiment 'nope'"], needs_db=True),
    Case("queue-unpin-unknown", ["queue", "unpin", "nope", "--db", "{tmp}/r.sqlite"],
         ["no experiment 'nope'"], needs_db=True),
    Case("unknown-verb", ["frobnicate"], ["No such command"]),
    Case("validate-no-args", ["validate"], ["Missing argument"]),
    Case("plan-extra-arg", ["plan", F, "extra"], ["unexpected extra argument"],
         files={"x.yaml": OK}),
]


def _fill(value: str, tmp: Path) -> str:
    return value.replace("{tmp}", str(tmp))


def _write(tmp: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "FOREIGN":  # another application's SQLite database
            conn = sqlite3.connect(path)
            conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
            conn.commit()
            conn.close()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(_fill(content, tmp))


def _snapshot(tmp: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tmp)): p.read_bytes() for p in tmp.rglob("*") if p.is_file()}


def test_enough_cases() -> None:
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, case_dir: Path, cli: CliRun) -> None:
    _write(case_dir, case.files)
    if case.needs_db:
        code, _, err = cli(["db", "upgrade", "--db", str(case_dir / "r.sqlite")])
        assert code == 0, err
    before = _snapshot(case_dir)
    code, out, err = cli([_fill(a, case_dir) for a in case.args])
    assert code == case.code, f"exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    assert "Traceback" not in err + out
    usage = any(k in case.expect[-1] for k in ("No such command", "argument", "Invalid value"))
    if not usage:
        assert err.startswith("error: "), err
        assert err.count("error: ") == 1, err
    for fragment in case.expect:
        assert _fill(fragment, case_dir) in err, err
    assert "s3cret" not in err + out  # never a password
    after = _snapshot(case_dir)
    # Nothing written: no database, no work dir, no report, no changed file (SQLite may leave
    # its -wal/-shm beside a database flushbench itself created for the case).
    added = sorted(set(after) - set(before) - {"r.sqlite-wal", "r.sqlite-shm"})
    assert added == [], added
    changed = [k for k in before if k in after and before[k] != after[k]
               and not k.startswith("r.sqlite")]
    assert changed == [], changed
    assert not (case_dir / "work").exists()
    assert not (case_dir / "results").exists()


def test_base_experiment_is_valid(case_dir: Path, cli: CliRun) -> None:
    """The control: the cases fail because of their change, not because of the base file."""
    if not os.access("/usr/bin/sysbench", os.X_OK):
        pytest.fail("sysbench is not installed — run `make setup`")
    (case_dir / "x.yaml").write_text(OK)
    code, out, err = cli(["validate", str(case_dir / "x.yaml")])
    assert code == 0, err
    assert "ok: 2 cells" in out
