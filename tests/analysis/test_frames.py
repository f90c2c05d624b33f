"""Frames: window rules, NOTPM, derived sampler values, attempts, bulk loading."""

from __future__ import annotations

import datetime as dt
import json
import math
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.tables import frames as F
from core.experiment.spec import ExperimentSpec
from store.db import ResultsDB
from store.models import Cell, Experiment, Interval, Run, RunMetadata, RunVariable, Sample
from tests.support.synthetic_store import SynthCell, build_store, experiment_spec

T0 = dt.datetime(2024, 6, 1, 12, 0, 0, tzinfo=dt.UTC)


def _status(**counters: float) -> bytes:
    return zlib.compress(json.dumps(counters).encode())


def _hand_store(path: Path, *, variables: dict[str, str], samples: list[dict]) -> int:
    """One experiment, one cell, one done run with the given samples (warmup 20 s)."""
    spec = experiment_spec("hand", [SynthCell(knobs={"doublewrite": True})], warmup=20,
                           duration=100, interval_s=10, sample_interval_s=10, repetitions=1)
    rdb = ResultsDB(path)
    with rdb.session() as s:
        model = ExperimentSpec.model_validate(spec)
        exp = Experiment(name="hand", measurement_hash="h", spec=spec, created_at=T0,
                         window=model.resolved_window(), metric=model.metric())
        s.add(exp)
        s.flush()
        cell = Cell(experiment_id=exp.id, cell_key="k", position=0, label="doublewrite=on",
                    is_baseline=True, knobs={"doublewrite": True}, variables={})
        s.add(cell)
        s.flush()
        # SQLite hands back naive datetimes: store one naive to check it is read as UTC.
        run = Run(cell_id=cell.id, repetition=1, attempt=1, order_index=0, status="done",
                  started_at=T0.replace(tzinfo=None),
                  measure_started_at=T0 + dt.timedelta(seconds=20))
        s.add(run)
        s.flush()
        s.add(RunMetadata(run_id=run.id, hostname="h", kernel="k", cpu_model="c", cpu_count=2,
                          mem_total_bytes=1, datadir_device="d", datadir_fstype="ext4",
                          server_flavor="mariadb", server_version="10.11", dataset_key="w1",
                          experiment_hash="h", driver="tpcc", extra={}))
        for name, value in variables.items():
            s.add(RunVariable(run_id=run.id, name=name, value=value))
        for i in range(12):
            elapsed = 10.0 * (i + 1)
            s.add(Interval(run_id=run.id, seq=i + 1, ts=T0 + dt.timedelta(seconds=elapsed),
                           elapsed_s=elapsed, interval_s=10.0,
                           phase="warmup" if elapsed <= 20 else "measure",
                           primary_count=100.0 + i, errors=0, retries=0,
                           detail={"payment": {"count": 90 + i, "p95_ms": 5.0}}))
        for i, smp in enumerate(samples):
            s.add(Sample(run_id=run.id, seq=i + 1, **smp))
        s.commit()
        return run.id


def _sample(at: float, *, missed: bool = False, **values: object) -> dict:
    sched = T0 + dt.timedelta(seconds=at)
    if missed:
        return dict(scheduled_ts=sched, ts=None, missed=True)
    return dict(scheduled_ts=sched, ts=sched + dt.timedelta(seconds=0.5), missed=False, **values)


def test_intervals_notpm_time_and_window(tmp_path: Path) -> None:
    _hand_store(tmp_path / "r.sqlite", variables={}, samples=[])
    df = F.intervals(tmp_path / "r.sqlite", "hand")
    assert list(df["seq"]) == list(range(1, 13))
    assert df["notpm"].tolist() == [(100 + i) * 6.0 for i in range(12)]
    assert df["t"].tolist() == [10.0 * (i + 1) - 20 for i in range(12)]
    # Window default: second half of the 100 s duration → intervals ending at t = 60..100.
    assert df.loc[df["in_window"], "t"].tolist() == [60.0, 70.0, 80.0, 90.0, 100.0]
    assert not df.loc[df["phase"] == "warmup", "in_window"].any()
    assert df["payment_count"].tolist() == [90.0 + i for i in range(12)]
    assert str(df["ts"].dt.tz) == "UTC"
    rs = F.run_summary(tmp_path / "r.sqlite", "hand")
    window_counts = [100.0 + i for i in range(12) if 60 <= 10 * (i + 1) - 20 <= 100]
    assert rs.loc[0, "notpm"] == pytest.approx(sum(window_counts) * 60 / 50)
    assert str(rs.loc[0, "started_at"].tz) == "UTC"
    assert rs.loc[0, "started_at"] == pd.Timestamp(T0)


def test_window_is_read_as_stored() -> None:
    stored = {"warmup": 60, "duration": 1800, "start": 300, "end": 1500, "report_interval": 10}
    w = F.window_of(stored)
    assert (w.start, w.end, w.warmup, w.length) == (300, 1500, 60, 1200)


def test_sample_derived_values(tmp_path: Path) -> None:
    mb = 1024 * 1024
    common = dict(pages_data=9000, pages_free=999, mysqld_rss_bytes=300 * mb,
                  mysqld_vsz_bytes=1500 * mb)
    samples = [
        _sample(30, lsn=500 * mb, checkpoint_lsn=440 * mb, pages_dirty=5000,
                mysqld_cpu_user_s=10.0, mysqld_cpu_sys_s=2.0, disk_writes=1000,
                disk_write_sectors=0, status_z=_status(Innodb_buffer_pool_pages_flushed=1000,
                                                       Innodb_os_log_written=0,
                                                       Innodb_dblwr_pages_written=10),
                **common),
        _sample(40, lsn=520 * mb, checkpoint_lsn=450 * mb, pages_dirty=6000,
                mysqld_cpu_user_s=24.0, mysqld_cpu_sys_s=3.0, disk_writes=3000,
                disk_write_sectors=20 * 2048, status_z=_status(
                    Innodb_buffer_pool_pages_flushed=3000, Innodb_os_log_written=20 * mb,
                    Innodb_dblwr_pages_written=10),
                **common),
        _sample(50, missed=True),
        _sample(60, lsn=560 * mb, checkpoint_lsn=460 * mb, pages_dirty=6000,
                mysqld_cpu_user_s=30.0, mysqld_cpu_sys_s=3.0, disk_writes=3000,
                disk_write_sectors=20 * 2048, status_z=_status(
                    Innodb_buffer_pool_pages_flushed=7000, Innodb_os_log_written=60 * mb),
                **common),
        # A restarted counter must not produce a negative rate.
        _sample(70, lsn=570 * mb, checkpoint_lsn=470 * mb, pages_dirty=6000,
                status_z=_status(Innodb_buffer_pool_pages_flushed=5), **common),
    ]
    _hand_store(tmp_path / "r.sqlite", samples=samples, variables={
        "innodb_log_file_size": str(100 * mb), "innodb_log_files_in_group": "2",
        "innodb_max_dirty_pages_pct": "60.000000"})
    df = F.samples(tmp_path / "r.sqlite", "hand").set_index("seq")
    # InnoDB's dirty % formula.
    assert df.loc[1, "dirty_pct"] == pytest.approx(100 * 5000 / (1 + 9000 + 999))
    assert df.loc[2, "dirty_pct"] == pytest.approx(60.0)
    # Checkpoint age, its max from the variables (2 × 100 MB: no status counter here).
    assert df.loc[1, "checkpoint_age_mb"] == pytest.approx(60.0)
    assert df.loc[1, "max_checkpoint_age_mb"] == pytest.approx(200.0)
    assert df.loc[1, "checkpoint_age_pct"] == pytest.approx(30.0)
    assert df.loc[1, "max_dirty_pages_pct"] == 60.0
    # t is seconds since measurement start (warmup 20 s) using the real sample time.
    assert df.loc[1, "t"] == pytest.approx(10.5)
    assert df.loc[3, "t"] == pytest.approx(30.0)  # missed: scheduled time
    # Rates per second between good samples, over real time.
    assert math.isnan(df.loc[1, "pages_flushed_per_s"])
    assert df.loc[2, "pages_flushed_per_s"] == pytest.approx(200.0)
    assert df.loc[2, "log_mb_per_s"] == pytest.approx(2.0)
    assert df.loc[2, "dblwr_pages_per_s"] == pytest.approx(0.0)
    assert df.loc[2, "disk_write_mb_per_s"] == pytest.approx(2.0)
    assert df.loc[2, "disk_write_iops"] == pytest.approx(200.0)
    assert df.loc[2, "mysqld_cpu_pct"] == pytest.approx(150.0)
    assert df.loc[2, "rss_mb"] == 300 and df.loc[2, "vsz_mb"] == 1500
    assert bool(df.loc[3, "missed"]) and math.isnan(df.loc[3, "pages_flushed_per_s"])
    assert df.loc[4, "dt_s"] == pytest.approx(20.0)  # across the missed tick
    assert df.loc[4, "pages_flushed_per_s"] == pytest.approx(200.0)
    assert df.loc[4, "log_mb_per_s"] == pytest.approx(2.0)
    assert math.isnan(df.loc[4, "dblwr_pages_per_s"])  # counter absent in that sample
    assert math.isnan(df.loc[5, "pages_flushed_per_s"])  # counter went down
    # Without counters nothing is decompressed and the rates are NaN.
    lean = F.samples(tmp_path / "r.sqlite", "hand", counters=None)
    assert "Innodb_buffer_pool_pages_flushed" not in lean.columns
    assert lean["pages_flushed_per_s"].isna().all()
    assert lean["checkpoint_age_mb"].notna().sum() == 4


def test_restart_breaks_rates_even_when_the_counter_ends_higher(tmp_path: Path) -> None:
    """Uptime going back marks a restart: no rate across it, although the counter grew."""
    def tick(at: int, flushed: int, uptime: int) -> dict:
        return _sample(at, lsn=500, checkpoint_lsn=400, pages_dirty=1, pages_data=1,
                       pages_free=1, disk_writes=at * 10,
                       status_z=_status(Innodb_buffer_pool_pages_flushed=flushed, Uptime=uptime))

    samples = [tick(30, 1000, 100), tick(40, 2000, 110), tick(50, 2500, 5), tick(60, 3500, 15)]
    _hand_store(tmp_path / "r.sqlite", samples=samples, variables={})
    df = F.samples(tmp_path / "r.sqlite", "hand").set_index("seq")
    assert df.loc[2, "pages_flushed_per_s"] == pytest.approx(100.0)
    assert math.isnan(df.loc[3, "pages_flushed_per_s"])  # 2000 → 2500 across a restart
    assert bool(df.loc[3, "server_restarted"])
    assert df.loc[3, "disk_write_iops"] == pytest.approx(10.0)  # the device did not restart
    assert df.loc[4, "pages_flushed_per_s"] == pytest.approx(100.0)


def test_max_checkpoint_age_follows_innodb_rule_without_the_status_counter(
    tmp_path: Path,
) -> None:
    mb = 1024 * 1024
    samples = [_sample(30, lsn=500 * mb, checkpoint_lsn=440 * mb, pages_dirty=1, pages_data=1,
                       pages_free=1, status_z=_status(Uptime=100))]
    _hand_store(tmp_path / "r.sqlite", samples=samples, variables={
        "version": "8.0.36", "innodb_log_file_size": str(100 * mb),
        "innodb_log_files_in_group": "2", "innodb_page_size": "16384"})
    df = F.samples(tmp_path / "r.sqlite", "hand")
    age = float(df["max_checkpoint_age_bytes"].iloc[0])
    # InnoDB keeps a safety margin below the 200 MB of log files: never the raw capacity.
    assert 0.8 * 200 * mb < age < 200 * mb


def test_max_checkpoint_age_prefers_the_status_counter(study_db: Path) -> None:
    df = F.samples(study_db, "study")
    good = df[~df["missed"]]
    assert (good["max_checkpoint_age_bytes"] == good["Innodb_checkpoint_max_age"]).all()
    assert good["checkpoint_age_pct"].between(0, 100).all()
    expected = 100 * good["pages_dirty"] / (1 + good["pages_data"] + good["pages_free"])
    assert np.allclose(good["dirty_pct"], expected)
    assert df["missed"].sum() > 0 and df.loc[df["missed"], "dirty_pct"].isna().all()


def test_attempts_and_statuses(study_db: Path) -> None:
    all_runs = F.runs(study_db, "study", all_attempts=True)
    latest = F.runs(study_db, "study")
    assert len(all_runs) == len(latest) + 1
    retried = all_runs[all_runs["superseded"]]
    assert retried["status"].tolist() == ["interrupted"]
    assert set(latest["status"]) == {"done", "failed"}
    assert "doublewrite" in latest.columns and "max_dirty_pages_pct" in latest.columns
    ivl = F.intervals(study_db, "study")
    done_ids = set(latest.loc[latest["status"] == "done", "run_id"])
    assert set(ivl["run_id"]) == done_ids
    cs = F.cell_summary(study_db, "study")
    assert cs["n_done"].tolist() == [4, 4, 4, 4, 4, 3]
    assert cs["n_failed"].tolist() == [0, 0, 0, 0, 0, 1]
    exps = F.experiments(study_db)
    assert exps.loc[0, "name"] == "study" and exps.loc[0, "failed"] == 1


def test_runs_read_by_id_are_the_runs_read_by_experiment(study_db: Path) -> None:
    """``show`` reads one run by id, through the store's raw SQLite path: its knobs, driver
    summary and metadata's ``extra`` are dicts there too (they were JSON text: ``show`` had no
    driver TpmC, no knob columns, and said no flushbench recorded the run)."""
    whole = F.runs(study_db, "study", all_attempts=True).set_index("run_id")
    by_id = F.runs(study_db, run_ids=list(whole.index), all_attempts=True).set_index("run_id")
    for column in ("knobs", "driver_summary", "extra", "doublewrite"):
        assert by_id[column].to_list() == whole.loc[by_id.index, column].to_list(), column
    pd.testing.assert_series_equal(by_id["tpmc_driver"], whole.loc[by_id.index, "tpmc_driver"])
    assert all(isinstance(k, dict) for k in by_id["knobs"])
    assert by_id["tpmc_driver"].notna().any()


def test_load_matches_the_piecewise_frames(study_db: Path) -> None:
    fr = F.load(study_db)  # latest experiment
    assert fr.experiment["name"] == "study"
    rs = F.run_summary(study_db, "study")
    pd.testing.assert_series_equal(
        fr.run_summary["notpm"].reset_index(drop=True), rs["notpm"].reset_index(drop=True)
    )
    reps = F.representative_runs(fr.run_summary)
    assert set(reps) == set(fr.cell_summary["cell_id"])


def test_extract_counters_reads_only_the_named_ones() -> None:
    blob = _status(Innodb_data_written=12, Innodb_data_written_extra=99, Uptime=5)
    assert F.extract_counters(blob, ["Innodb_data_written"]) == {"Innodb_data_written": 12.0}
    assert F.status_counters(blob)["Uptime"] == 5.0
    assert F.extract_counters(None, ["x"]) == {}


def test_export_writes_csv_and_parquet(study_db: Path, tmp_path: Path) -> None:
    from analysis.tables.export import export

    csv = export(study_db, "study", tmp_path / "i.csv", fmt="csv", what="intervals")
    assert pd.read_csv(csv)["notpm"].notna().all()
    pq = export(study_db, "study", tmp_path / "r.parquet", fmt="parquet", what="runs")
    back = pd.read_parquet(pq)
    assert json.loads(back.loc[0, "knobs"]) == {"doublewrite": True, "max_dirty_pages_pct": 50.0}


def test_synthetic_spec_is_a_valid_experiment() -> None:

    spec = experiment_spec("x", [SynthCell(knobs={"doublewrite": True, "log_file_size": 2**27})],
                           warmup=10, duration=60, interval_s=10, sample_interval_s=10,
                           repetitions=2)
    model = ExperimentSpec.model_validate(spec)
    assert model.resolved_window() == {"warmup": 10, "duration": 60, "start": 30, "end": 60,
                                       "report_interval": 10, "cycles": "as-set"}
    assert model.metric()["name"] == "NOTPM"


def test_build_store_into_an_open_db(db_path: Path) -> None:
    exp_id = build_store(ResultsDB(db_path), [SynthCell(knobs={})], repetitions=1,
                         duration=60, warmup=10, n_counters=30)
    assert F.experiment_info(db_path, exp_id)["id"] == exp_id


def test_runner_warnings_travel_with_the_run(tmp_path: Path) -> None:
    """A warning event (a host pause) is in runs() and first in the run summary's warnings."""
    from analysis.reading.query import runs
    from analysis.tables.summaries import run_summary
    from store.models import RunEvent

    db = tmp_path / "r.sqlite"
    run_id = _hand_store(db, variables={}, samples=[])
    with ResultsDB(db).session() as s:
        s.add(RunEvent(run_id=run_id, level="info", kind="cpu-placement", message="placed"))
        s.add(RunEvent(run_id=run_id, level="warning", kind="host-paused",
                       message="host paused: the wall clock moved 65 s more"))
        s.commit()
    assert list(runs(db, "hand")["event_warnings"]) == [
        "host paused: the wall clock moved 65 s more"]
    warnings = run_summary(db, "hand")["warnings"].iloc[0]
    assert warnings.startswith("host paused: the wall clock moved 65 s more")
    assert "placed" not in warnings
