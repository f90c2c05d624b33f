"""A real Go-driver run on a MariaDB sandbox: every interval's histograms are stored, and merged
over a window that is the whole measurement phase they give the p99 (p95, max, each type's) the
driver itself computed over that phase, within the histogram's stated precision (1/128); a
driver that prints no histogram is recorded without them, never a failed run."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from sqlalchemy import select

from analysis import latency
from analysis.frames import load
from core.paths import tpcc_binary
from runner.fleet.worker import run_experiment
from store.db import ResultsDB
from store.latency_codec import TXN_TYPES
from store.models import Interval, Run, RunEvent
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
    no = summary["new_order"]
    assert _close(mine["window_ms"], no["p99_ms"]), (mine["window_ms"], no["p99_ms"])
    assert _close(mine["window_p95_ms"], no["p95_ms"])
    assert mine["window_max_ms"] == no["max_ms"]  # the maximum is exact
    types = lat.types.set_index("type")
    for name in TXN_TYPES:
        if summary[name]["p99_ms"]:
            assert _close(types.loc[name, "p99_ms"], summary[name]["p99_ms"]), name
            assert types.loc[name, "max_ms"] == summary[name]["max_ms"]


def test_a_driver_without_histograms_is_recorded_without_them(
        tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older binary, played by the real one with its histogram output cut away."""
    older = tmp_path / "tpcc-older"
    older.write_text(
        "#!/bin/bash\nset -o pipefail\n"
        f'"{tpcc_binary()}" "$@" | grep --line-buffered -v histogram_layout'
        " | sed -u 's/,\"hist\":{[^}]*}//'\n")
    older.chmod(older.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FLUSHBENCH_TPCC_BIN", str(older))
    path = tiny_tpcc_experiment(tmp_path, "latency-older", WHOLE_PHASE)
    db = ResultsDB(tmp_path / "r.sqlite")
    assert run_experiment(path, db, work=work).done == 1
    with db.session() as s:
        run = s.scalars(select(Run)).one()
        blobs = s.scalars(select(Interval.latency_z).where(Interval.run_id == run.id)).all()
        warned = s.scalars(select(RunEvent.message).where(
            RunEvent.run_id == run.id, RunEvent.kind == "driver-output")).all()
    assert blobs and not any(blobs)
    assert warned == ["latency histograms: the driver printed no latency histograms (a tpcc"
                      " binary older than them: rebuild tpcc/bin/tpcc)"]
    lat = latency.load(db, load(db))
    assert not lat.view.exact and "older than them" in lat.missing[run.id]
    assert lat.runs.loc[run.id, "value_ms"] > 0  # the driver's own per-interval p99
