"""The `transparent_hugepages` knob around a real run: set before mysqld starts, in force
while it runs, recorded with the run, restored after — and refused at preflight where the host
cannot set it.

The run changes a host-wide switch for a few seconds; the test puts the original mode back
whatever happens. It is skipped (with the capability's reason) only where THP cannot be set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import runner.host.facts as facts_mod
from core.errors import PreflightError
from runner.admission.run_context import NullReporter, prepare
from runner.fleet.worker import run_experiment
from runner.host.capabilities import can_set_thp
from runner.host.thp import DEFAULT_STATE_FILE, THP_MODES, read_thp, thp_setting
from store.db import ResultsDB
from store.models import RunMetadata

RUN = """\
version: 1
name: thp-run
server: mariadb-debian
base_config: small
dataset: {{workload: sysbench, tables: 1, table_size: 1000}}
workload: {{driver: sysbench, test: oltp_point_select, connections: 2, warmup: 1s,
           duration: 4s, report_interval: 1s}}
sampling: {{interval: 1s}}
pre_run: {{drain_dirty_pages: false}}
fixed: {{transparent_hugepages: {mode}}}
"""


class _Watcher(NullReporter):
    """Reads the host's THP mode while the workload measures (what mysqld really ran under)."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def phase(self, text: str, *a: Any, **k: Any) -> None:
        if text == "measuring":
            self.seen.append(read_thp().enabled)


@pytest.mark.mysql
@pytest.mark.optional_tool
@pytest.mark.host_control("thp")
def test_thp_set_around_a_real_run_and_restored(tmp_path: Path) -> None:
    original = read_thp()
    wanted = next(m for m in THP_MODES if m != original.enabled)
    spec = tmp_path / "thp-run.yaml"
    spec.write_text(RUN.format(mode=wanted))
    db = ResultsDB(tmp_path / "r.sqlite")
    watcher = _Watcher()
    try:
        outcome = run_experiment(spec, db, reporter=watcher, work=tmp_path / "work")
        assert (outcome.done, outcome.failed) == (1, 0)
        assert watcher.seen == [wanted]  # in force while mysqld ran the workload
        with db.session() as s:
            extra = s.scalars(select(RunMetadata.extra)).one()
        assert extra["thp_enabled"] == wanted and extra["thp_defrag"] == original.defrag
        assert extra["large_pages"] == "OFF"
        assert read_thp() == original  # restored once mysqld stopped
        assert not DEFAULT_STATE_FILE.exists()
    finally:
        db.dispose()
        if read_thp() != original:  # never leave the shared host changed
            with thp_setting(original.enabled, original.defrag, state_file=tmp_path / "x"):
                pass


def test_preflight_refuses_thp_without_the_kernel_feature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host without THP (a sysfs dir without the files): refused before any server starts."""
    no_thp = tmp_path / "no-thp"
    no_thp.mkdir()
    monkeypatch.setattr(facts_mod, "can_set_thp", lambda: can_set_thp(no_thp))
    spec = tmp_path / "thp-run.yaml"
    spec.write_text(RUN.format(mode="never"))
    with pytest.raises(PreflightError) as err:
        prepare(spec, tmp_path / "work")
    text = err.value.render()
    assert "fixed.transparent_hugepages" in text
    assert "transparent_hugepages cannot be set here: this kernel has no THP" in text
    assert "drop transparent_hugepages from the experiment" in text


def test_preflight_refuses_thp_without_the_rights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """THP present but not writable by this user: the fix says root.

    Tests run as root, which the kernel lets write anything, and the interpreter lives where an
    unprivileged user cannot run it; so the kernel's "no" is stood in for by ``os.access``
    answering False for this one directory (everything else is checked for real).
    """
    ro = tmp_path / "thp-ro"
    ro.mkdir()
    (ro / "enabled").write_text("always [madvise] never\n")
    (ro / "defrag").write_text("always defer defer+madvise [madvise] never\n")
    monkeypatch.setattr(facts_mod, "can_set_thp", lambda: can_set_thp(ro))
    real_access = os.access

    def access(path: Any, mode: int, *a: Any, **k: Any) -> bool:
        return False if str(path).startswith(str(ro)) else real_access(path, mode, *a, **k)

    monkeypatch.setattr(os, "access", access)
    spec = tmp_path / "thp-run.yaml"
    spec.write_text(RUN.format(mode="never"))
    with pytest.raises(PreflightError) as err:
        prepare(spec, tmp_path / "work")
    text = err.value.render()
    assert "not writable by this user" in text
    assert f"run flushbench as root (it writes {ro}/enabled)" in text
