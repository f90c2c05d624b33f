"""A password the server shows in ``SHOW GLOBAL VARIABLES`` never reaches the results database.

The recorder stores every row of the snapshot taken after start; mysqld shows
``report_password`` (a replica's registration password) there in clear. Against a real MariaDB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.redaction import MASK, redact_server_variables
from runner.server import MysqldSandbox, write_mycnf
from store.db import ResultsDB
from store.ledger.recorder import RunRecorder
from store.models import RunVariable
from tests.support.queueing import one_running_run

SECRET = "hunter2-replica-secret"


def test_masking_keeps_empty_values_and_everything_else() -> None:
    shown = redact_server_variables({"report_password": "", "wsrep_sst_auth": "root:pw",
                                     "init_connect": "SET @u='mysql://u:pw@h/db'",
                                     "innodb_io_capacity": "200"})
    assert shown["report_password"] == ""  # "no password set" stays a fact
    assert shown["wsrep_sst_auth"] == MASK
    assert "pw" not in shown["init_connect"] and "mysql://u:" in shown["init_connect"]
    assert shown["innodb_io_capacity"] == "200"


@pytest.mark.mysql
def test_report_password_is_masked_before_it_is_stored(
        mariadb_server, sandbox_layout, base_cnf_text, tmp_path: Path) -> None:
    options = {"report_password": SECRET}
    write_mycnf(sandbox_layout.cnf, base_cnf_text, options, sandbox_layout)
    with MysqldSandbox(mariadb_server, sandbox_layout) as sandbox:
        sandbox.start(timeout=60)
        variables = sandbox.global_variables()
        sandbox.stop(timeout=60)
    # The server's own behaviour, the reason for the masking: the password in clear.
    assert variables["report_password"] == SECRET

    db = ResultsDB(tmp_path / "r.sqlite")
    run_id = one_running_run(db, "secrets")
    recorder = RunRecorder(db, run_id)
    recorder.variables(variables)
    assert recorder.flush()
    with db.session() as s:
        stored = {v.name: v.value for v in s.query(RunVariable).filter_by(run_id=run_id)}
    db.dispose()
    assert stored["report_password"] == MASK
    assert stored["innodb_io_capacity"] == variables["innodb_io_capacity"]
    assert len(stored) == len(variables)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("r.sqlite*"))
    assert SECRET.encode() not in raw
