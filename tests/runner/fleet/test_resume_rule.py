"""The resume rule of ``enqueue`` as a pure function: every latest status × --fresh ×
--retry-failed (the table the 35 lines of nested conditions used to hold)."""

from __future__ import annotations

import pytest

from store.ledger import Resume, resume_decision
from store.models import RunStatus

R = Resume
#: status → (plain rerun, --retry-failed, --fresh, --fresh --retry-failed)
TABLE = {
    RunStatus.QUEUED: (R.KEEP_QUEUED, R.KEEP_QUEUED, R.REQUEUE, R.REQUEUE),
    RunStatus.RUNNING: (R.LEAVE_RUNNING,) * 4,
    RunStatus.DONE: (R.KEEP_DONE, R.KEEP_DONE, R.REQUEUE, R.REQUEUE),
    RunStatus.FAILED: (R.KEEP_FAILED, R.REQUEUE, R.REQUEUE, R.REQUEUE),
    RunStatus.INTERRUPTED: (R.REQUEUE,) * 4,
    RunStatus.CANCELLED: (R.REQUEUE,) * 4,
}
FLAGS = [(False, False), (False, True), (True, False), (True, True)]


def test_every_status_is_in_the_table() -> None:
    assert set(TABLE) == set(RunStatus)


@pytest.mark.parametrize("status", list(RunStatus), ids=[s.value for s in RunStatus])
@pytest.mark.parametrize(("fresh", "retry_failed"), FLAGS,
                         ids=["rerun", "retry-failed", "fresh", "fresh-retry-failed"])
def test_resume_rule(status: RunStatus, fresh: bool, retry_failed: bool) -> None:
    expected = TABLE[status][FLAGS.index((fresh, retry_failed))]
    # The store hands back plain text: the rule must read it as well as the enum.
    assert resume_decision(status.value, fresh=fresh, retry_failed=retry_failed) is expected
    assert resume_decision(status, fresh=fresh, retry_failed=retry_failed) is expected
