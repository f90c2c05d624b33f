"""A real Go-driver run on a MariaDB sandbox: every interval's histograms are stored, and merged
over a window that is the whole measurement phase they give the p99 (p95, max, each type's) the
driver itself computed over that phase, within the histogram's stated precision (1/128); a
driver that prints format 1 without its histograms fails the run, naming the missing field;
and a server blocked for 20 s in the middle of a run (``FLUSH TABLES WITH READ LOCK`` from a
second connection) is a wait of at least 20 s in the window's merged tail."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from sqlalchemy import select

from analysis.response import latency
from analysis.response.latency_histograms import percentiles, window_histograms
from analysis.tables.frames import load
from core.paths import tpcc_binary
from runner.fleet.worker import run_experiment
from store.db import ResultsDB
from store.latency_codec import TXN_TYPES, decode
from store.models import Interval, Run, RunEvent
from tests.support.blocked_server import server_blocked
from tests.support.tiny_experiment import tiny_tpcc_experiment

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

#: The measurement phase as the window: its p99 is the driver's summary `latency`.
WHOLE_PHASE = "window: {start: 0s, end: 6s}\n"
#: The layout's precision: a percentile within relative_width / 2 of the recorded value.
PRECISION = 1 / 128


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUSHBENCH_CACHE_DIR", str(tmp_path / "cache"))


def _close(merged: float | None, driver: float) -> bool:
    # The driver prints 3 decimals: its figure is the recorded one ± 0.0005 ms.
    return merged is not None and abs(merged - driver) <= PRECISION * driver + 0.0005


def test_the_stored_histograms_merge_to_the_drivers_window_p99(tmp_path: Path,
                                                               work: Path) -> None:
    path = tiny_tpcc_experiment(tmp_path, "latency-real", WHOLE_PHASE)
    db = ResultsDB(tmp_path / "r.sqlite")
    assert run_experiment(path, db, work=work).done == 1
    with db.session() as s:
        run = s.scalars(select(Run)).one()
        rows = s.execute(select(Interval.phase, Interval.latency_z)
                         .where(Interval.run_id == run.id)).all()
        warned = s.scalars(select(RunEvent.message).where(
            RunEvent.run_id == run.id, RunEvent.kind == "driver-output")).all()
        summary = run.driver_summary["latency"]
    assert rows and all(blob for _, blob in rows) and not warned
    fr = load(db)
    lat = latency.load(db, fr)
    assert lat.view.exact and not lat.missing
    window = fr.intervals[fr.intervals["in_window"]]
    assert set(window["phase"]) == {"measure"}
    assert len(window) == sum(1 for phase, _ in rows if phase == "measure")
    mine = lat.runs.loc[run.id]
    # The driver's summary is the completed transactions' histograms merged: so is the stored
    # intervals' merge without the transactions in flight, for every type.
    stored = window_histograms(db, fr.intervals, [run.id])[run.id]
    for name in TXN_TYPES:
        if not summary[name]["p99_ms"]:
            continue
        completed = percentiles([stored], name, with_open=False)
        driver = summary[name]
        assert _close(completed["p99_ms"], driver["p99_ms"]), (name, completed, driver)
        assert _close(completed["p95_ms"], driver["p95_ms"]), (name, completed, driver)
        assert completed["max_ms"] == driver["max_ms"], name  # the maximum is exact
    # The window's figures add the transactions in flight at each interval's end, at their
    # age then. That never lowers the maximum; a percentile it may lower (young ones raise the
    # count below it), so only the maximum is held against the driver's.
    types = lat.types.set_index("type")
    assert mine["window_max_ms"] >= summary["new_order"]["max_ms"]
    for name in TXN_TYPES:
        if summary[name]["p99_ms"]:
            assert types.loc[name, "max_ms"] >= summary[name]["max_ms"], name


def test_a_driver_without_histograms_fails_the_run(
        tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real binary with its histogram output cut away: format 1 has them, so the run
    fails on the first interval, saying which field is missing (never a run without them)."""
    cut = tmp_path / "tpcc-cut"
    cut.write_text(
        "#!/bin/bash\nset -o pipefail\n"
        f'"{tpcc_binary()}" "$@"' + r""" | sed -u 's/,"hist":{[^}]*}//'""" + "\n")
    cut.chmod(cut.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FLUSHBENCH_TPCC_BIN", str(cut))
    path = tiny_tpcc_experiment(tmp_path, "latency-cut", WHOLE_PHASE)
    db = ResultsDB(tmp_path / "r.sqlite")
    assert run_experiment(path, db, work=work).failed == 1
    with db.session() as s:
        run = s.scalars(select(Run)).one()
    assert run.status == "failed"
    assert run.error is not None and "output line 2 breaks its JSON format (hist: Field" \
        " required" in run.error


def test_a_server_blocked_for_20_s_is_a_wait_of_20_s_in_the_windows_tail(
        tmp_path: Path, work: Path) -> None:
    # The closed loop's view of the stall. The lock falls about 4 s into the measurement and
    # holds 20 s; the 6 s after it are the transactions it held completing (a closed loop runs
    # flat out: each second more is a core's second taken from the tests beside it).
    path = tiny_tpcc_experiment(tmp_path, "latency-blocked", "window: {start: 0s, end: 30s}\n",
                                duration="30s", report_interval="5s", sampling="5s",
                                rate=None)
    db = ResultsDB(tmp_path / "r.sqlite")
    with server_blocked(20.0):
        assert run_experiment(path, db, work=work).done == 1
    with db.session() as s:
        run = s.scalars(select(Run)).one()
        blobs = s.scalars(select(Interval.latency_z).where(Interval.run_id == run.id)
                          .order_by(Interval.seq)).all()
    # The driver said which transaction was still waiting at an interval's end, and how long.
    ages = [types[f"open_{name}"][1] for blob in blobs if blob
            for types in [decode(blob)[1]] for name in TXN_TYPES if f"open_{name}" in types]
    assert max(ages) >= 5_000
    fr = load(db)
    lat = latency.load(db, fr)
    assert lat.view.exact and not lat.missing
    mine = lat.runs.loc[run.id]
    # The transaction the lock caught (of whatever type) completed after it with its whole
    # wait: its type's window maximum holds the 20 s — less the moment between the lock and
    # that transaction's start when the lock fell between two of the connection's
    # transactions (19,993 ms was seen), never a second.
    assert lat.types["max_ms"].max() >= 19_000, lat.types.to_dict("records")
    # New-Order's intervals without one (a stall of whole intervals: 15–20 s of the 20) are
    # waits in its window tail: its p99 and maximum hold the stall.
    assert mine["stall_s"] >= 15, mine.to_dict()
    assert mine["window_max_ms"] >= 1000 * mine["stall_s"]
    assert mine["window_ms"] >= 10_000 and mine["window_p999_ms"] >= mine["window_ms"]
