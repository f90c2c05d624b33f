"""``flushbench mext``: pt-mext's table over stored samples, checked against hand-computed
deltas — including a missed tick and a server restart inside the run (``Uptime`` resets)."""

from __future__ import annotations

import datetime as dt
import json
import math
import zlib
from pathlib import Path

import pytest
from sqlalchemy import select, update

from analysis.reading.mext import AGE_ROW, DIRTY_ROW, mext
from core.errors import AnalysisError
from store.db import ResultsDB
from store.models import Run, Sample
from tests.support.cli_runner import CliRun
from tests.support.synthetic_store import SynthCell, build_store

MiB = 1024 * 1024
#: (t since measurement start, missed, status counters, lsn, checkpoint lsn, dirty/data/free).
TICKS = [
    (-10, False, {"Uptime": 100, "Com_commit": 1000, "Innodb_pages_written": 50},
     10 * MiB, 4 * MiB, (10, 989, 1)),
    (0, False, {"Uptime": 110, "Com_commit": 1600, "Innodb_pages_written": 250},
     30 * MiB, 10 * MiB, (300, 690, 10)),
    (10, True, {}, None, None, (None, None, None)),
    (20, False, {"Uptime": 130, "Com_commit": 2800, "Innodb_pages_written": 650},
     50 * MiB, 45 * MiB, (250, 740, 10)),
    (30, False, {"Uptime": 5, "Com_commit": 40, "Innodb_pages_written": 3},  # restarted
     52 * MiB, 52 * MiB, (0, 200, 800)),
    (40, False, {"Uptime": 15, "Com_commit": 640, "Innodb_pages_written": 103},
     60 * MiB, 55 * MiB, (100, 200, 700)),
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A results database whose first run's samples are :data:`TICKS` (measure start t=0)."""
    path = tmp_path_factory.mktemp("mext") / "r.sqlite"
    db = ResultsDB(path)
    build_store(db, [SynthCell(knobs={"doublewrite": True})], name="mext", repetitions=1,
                warmup=10, duration=40, n_counters=50)
    start = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    with db.session() as s, s.begin():
        run_id = s.scalars(select(Run.id)).one()
        s.execute(update(Run).where(Run.id == run_id).values(measure_started_at=start))
        s.query(Sample).filter(Sample.run_id == run_id).delete()
        for seq, (t, missed, status, lsn, ckpt, (dirty, data, free)) in enumerate(TICKS, 1):
            when = start + dt.timedelta(seconds=t)
            s.add(Sample(run_id=run_id, seq=seq, scheduled_ts=when,
                         ts=None if missed else when, missed=missed, lsn=lsn,
                         checkpoint_lsn=ckpt, pages_dirty=dirty, pages_data=data,
                         pages_free=free,
                         status_z=zlib.compress(json.dumps(status).encode()) if status
                         else None))
    db.dispose()
    return path, run_id


def test_deltas_per_interval_by_hand(recorded: tuple[Path, int]) -> None:
    path, run_id = recorded
    table = mext(path, run_id)
    v = table.values
    assert list(v.columns) == ["t=-10s", "t=+0s", "t=+20s", "t=+30s", "t=+40s"]  # missed gone
    assert list(v.index) == [DIRTY_ROW, AGE_ROW, "Com_commit", "Innodb_pages_written", "Uptime"]
    # First column absolute; then the change since the previous good sample.
    assert v.loc["Com_commit"].tolist()[:3] == [1000, 600, 1200]
    assert v.loc["Innodb_pages_written"].tolist()[:3] == [50, 200, 400]
    # t=+30s spans the restart (Uptime 130 → 5): no delta; after it, deltas resume.
    assert table.restarts == ["t=+30s"]
    assert math.isnan(v.loc["Com_commit", "t=+30s"])
    assert v.loc["Com_commit", "t=+40s"] == 600 and v.loc["Uptime", "t=+40s"] == 10
    # Derived rows are levels: InnoDB's dirty % formula and LSN - checkpoint in MiB.
    assert v.loc[DIRTY_ROW, "t=+0s"] == pytest.approx(100 * 300 / (1 + 690 + 10))
    assert v.loc[AGE_ROW].tolist() == [6.0, 20.0, 5.0, 0.0, 5.0]
    assert table.interval_s[1:] == [10.0, 20.0, 10.0, 10.0]


def test_rates_window_and_row_choice(recorded: tuple[Path, int]) -> None:
    path, run_id = recorded
    rates = mext(path, run_id, rate=True, counters=["com_commit"]).values
    assert list(rates.index) == ["Com_commit"]  # --counters: no derived rows
    assert rates.loc["Com_commit"].tolist()[:3] == [1000, 60.0, 60.0]  # 1200 over 20 s
    windowed = mext(path, run_id, window_only=True, grep="pages|dirty").values
    assert list(windowed.columns) == ["t=+20s", "t=+30s", "t=+40s"]  # window 20-40 s
    assert list(windowed.index) == [DIRTY_ROW, "Innodb_pages_written"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"counters": ["No_such_counter"]}, "no such counter"),
    ({"grep": "(unclosed"}, "not a regular expression"),
], ids=["unknown-counter", "bad-regex"])
def test_refusals(recorded: tuple[Path, int], kwargs: dict, message: str) -> None:
    path, run_id = recorded
    with pytest.raises(AnalysisError, match=message):
        mext(path, run_id, **kwargs)


def test_cli_terminal_and_csv(recorded: tuple[Path, int], cli: CliRun) -> None:
    path, run_id = recorded
    code, out, err = cli(["mext", str(run_id), "--db", str(path)])
    assert code == 0, err
    assert "t=+30s restart" in out and "the server restarted inside t=+30s" in out
    assert "Com_commit" in out and "1200" in out
    code, out, err = cli(["mext", str(run_id), "--db", str(path), "--csv", "--counters",
                          "Com_commit,Uptime"])
    assert code == 0, err
    assert out.splitlines() == ["counter,t=-10s,t=+0s,t=+20s,t=+30s,t=+40s",
                                "Com_commit,1000,600,1200,,600", "Uptime,100,10,20,,10"]
    code, _, err = cli(["mext", "999", "--db", str(path)])
    assert code == 2 and "no run 999" in err
