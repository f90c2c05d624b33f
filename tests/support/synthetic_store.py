"""A synthetic results store: rows shaped exactly like the runner writes them.

Used by the analysis tests and by ``bench/analysis_bench.py``. Each cell is described by a
:class:`SynthCell` (mean NOTPM, noise, oscillation, holes, dirty-% and checkpoint behaviour);
:func:`build_store` writes an experiment, its cells, and for each repetition a ``done`` run with
run_metadata, run_variables, driver intervals (warmup flagged) and sampler rows whose
``status_z`` holds a full ``SHOW GLOBAL STATUS`` dict (~400 numeric counters, zlib JSON).

Nothing here is a model of InnoDB: the series only have the *shapes* the analysis must detect.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert

from core.experiment.spec import ExperimentSpec
from store.db import ResultsDB
from store.models import (
    Cell,
    Experiment,
    Interval,
    Run,
    RunMetadata,
    RunVariable,
    Sample,
)
from tests.support.synthetic_latency import interval_latency

MB = 1024 * 1024
#: 16 KiB pages: a 256 MB buffer pool has 16,384 of them.
PAGE = 16384
#: Real counter names (MariaDB 10.11 SHOW GLOBAL STATUS) that the fillers pad out to ~400.
_REAL_COUNTERS = (
    "Aborted_clients", "Aborted_connects", "Bytes_received", "Bytes_sent", "Com_begin",
    "Com_commit", "Com_delete", "Com_insert", "Com_rollback", "Com_select", "Com_update",
    "Connections", "Created_tmp_tables", "Handler_commit", "Handler_read_key",
    "Handler_read_next", "Handler_update", "Handler_write", "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_write_requests", "Innodb_data_read",
    "Innodb_data_reads", "Innodb_data_writes", "Innodb_log_write_requests", "Innodb_log_writes",
    "Innodb_os_log_fsyncs", "Innodb_pages_created", "Innodb_pages_read", "Innodb_row_lock_time",
    "Innodb_row_lock_waits", "Innodb_rows_deleted", "Innodb_rows_inserted", "Innodb_rows_read",
    "Innodb_rows_updated", "Open_files", "Open_tables", "Opened_tables", "Queries", "Questions",
    "Select_scan", "Table_locks_immediate", "Threads_connected", "Threads_running",
)


@dataclass
class SynthCell:
    """How one cell's runs behave.

    Parameters
    ----------
    knobs:
        Knob values as the runner stores them (``cells.knobs``).
    notpm:
        Mean NOTPM of the cell.
    noise_pct:
        Standard deviation of per-interval noise, % of the mean.
    run_to_run_pct:
        Standard deviation of each repetition's mean around ``notpm``, %.
    period_s, amplitude_pct:
        A sine oscillation (none when ``period_s`` is None).
    hole_every_s:
        Every this many seconds one interval drops to 20 % of the mean.
    dirty_pct:
        Where the dirty-pages % settles.
    checkpoint_fill:
        Peak checkpoint age as a fraction of the max checkpoint age (saw-tooth from 10 %).
    failed_repetitions:
        Repetitions whose run fails (status ``failed``, no intervals).
    retried_repetitions:
        Repetitions whose first attempt was ``interrupted`` and a second attempt is ``done``.
    latency_scale:
        How many times slower than the synthetic driver's usual response times its
        transactions are (its latency histograms, :mod:`tests.support.synthetic_latency`).
    """

    knobs: dict[str, Any]
    notpm: float = 30000.0
    noise_pct: float = 2.0
    run_to_run_pct: float = 1.0
    period_s: float | None = None
    amplitude_pct: float = 0.0
    hole_every_s: float | None = None
    dirty_pct: float = 60.0
    checkpoint_fill: float = 0.75
    failed_repetitions: tuple[int, ...] = ()
    retried_repetitions: tuple[int, ...] = ()
    label: str | None = None
    latency_scale: float = 1.0


@dataclass
class SynthMeta:
    """Run metadata written for every run (override per test to check the refusal)."""

    hostname: str = "bench-host"
    kernel: str = "6.1.0-18-amd64"
    cpu_model: str = "Synthetic CPU @ 2.4GHz"
    cpu_count: int = 2
    mem_total_bytes: int = 24 * 1024 * MB
    datadir_device: str = "vda"
    datadir_fstype: str = "ext4"
    server_flavor: str = "mariadb"
    server_version: str = "10.11.6-MariaDB-0+deb12u1"
    dataset_key: str = "tpcc-w10-mariadb-10.11"
    driver: str = "tpcc"
    extra: dict[str, Any] = field(default_factory=lambda: {"allocator": "glibc"})


def _label(knobs: dict[str, Any]) -> str:
    parts = []
    for k, v in knobs.items():
        if isinstance(v, bool):
            v = "on" if v else "off"
        elif k in ("log_file_size", "buffer_pool_size") and isinstance(v, int) and v % MB == 0:
            v = f"{v // MB}M"
        elif isinstance(v, float) and v.is_integer():
            v = int(v)
        parts.append(f"{k}={v}")
    return " ".join(parts) or "default"


def _variables(knobs: dict[str, Any], log_file_size: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "doublewrite" in knobs:
        out["innodb_doublewrite"] = "ON" if knobs["doublewrite"] else "OFF"
    if "max_dirty_pages_pct" in knobs:
        out["innodb_max_dirty_pages_pct"] = knobs["max_dirty_pages_pct"]
    if "io_capacity" in knobs:
        out["innodb_io_capacity"] = knobs["io_capacity"]
    out["innodb_log_file_size"] = knobs.get("log_file_size", log_file_size)
    for k, v in knobs.items():
        if k.startswith("var."):
            out[k[4:]] = v
    return out


def experiment_spec(
    name: str,
    cells: list[SynthCell],
    *,
    warmup: float,
    duration: float,
    interval_s: float,
    sample_interval_s: float,
    repetitions: int,
    window: tuple[float | None, float | None] = (None, None),
    driver: str = "tpcc",
) -> dict[str, Any]:
    """An experiment spec dict shaped like ``Experiment.model_dump(mode="json")``."""
    axes: dict[str, list[Any]] = {}
    for c in cells:
        for k, v in c.knobs.items():
            if k.startswith("var."):
                continue
            axes.setdefault(k, [])
            if v not in axes[k]:
                axes[k].append(v)
    sysbench = driver == "sysbench"
    return {
        "version": 1,
        "name": name,
        "description": "synthetic experiment for tests and benchmarks",
        "server": "mariadb-debian",
        "base_config": "small",
        "dataset": {
            "workload": "sysbench" if sysbench else "tpcc",
            "warehouses": None if sysbench else 10,
            "tables": 8 if sysbench else None,
            "table_size": 100000 if sysbench else None,
            "loader": None,
            "load_workers": None,
        },
        "workload": {
            "driver": driver,
            "test": "oltp_read_only" if sysbench else None,
            "connections": 16,
            "warmup": warmup,
            "duration": duration,
            "report_interval": interval_s,
            "binaries": {},
        },
        "sampling": {"enabled": True, "interval": sample_interval_s, "engine_status": True},
        # The declared window as set: the store's tests check window arithmetic on series that
        # oscillate on purpose (whole-cycle windows: tests/analysis/test_window_cycles.py).
        "window": {"start": window[0], "end": window[1], "cycles": "as-set"},
        "repetitions": repetitions,
        "order": {"mode": "as-written", "seed": 0},
        "pre_run": {
            "drop_caches": False,
            "drain_dirty_pages": True,
            "drain_dirty_pages_below": 100,
            "drain_timeout": 300.0,
        },
        "fixed": {"variables": {}},
        "matrix": {**axes, "variables": {}},
        "exclude": [],
        "include": [],
        "baseline": None,
    }


def _throughput(
    cell: SynthCell, rng: np.random.Generator, n: int, interval_s: float, warmup_n: int
) -> np.ndarray:
    level = cell.notpm * (1 + rng.normal(0, cell.run_to_run_pct / 100))
    t = np.arange(1, n + 1) * interval_s
    series = np.full(n, level)
    if cell.period_s:
        series = series * (1 + cell.amplitude_pct / 100 * np.sin(2 * np.pi * t / cell.period_s))
    series = series * (1 + rng.normal(0, cell.noise_pct / 100, n))
    if cell.hole_every_s:
        every = max(1, int(round(cell.hole_every_s / interval_s)))
        series[np.arange(n) % every == every - 1] = level * 0.2
    # Warmup ramps up from a cold buffer pool.
    ramp = np.minimum(1.0, (np.arange(1, n + 1)) / max(1, warmup_n))
    return np.maximum(series * (0.5 + 0.5 * ramp), 0.0)


def _status_names(n_counters: int) -> list[str]:
    fillers = max(0, n_counters - len(_REAL_COUNTERS) - 20)
    return list(_REAL_COUNTERS) + [f"Status_filler_{i:03d}" for i in range(fillers)]


def build_store(
    db: ResultsDB | str | os.PathLike[str],
    cells: list[SynthCell],
    *,
    name: str = "synthetic",
    repetitions: int = 3,
    warmup: float = 60.0,
    duration: float = 600.0,
    interval_s: float = 10.0,
    sample_interval_s: float = 10.0,
    window: tuple[float | None, float | None] = (None, None),
    n_counters: int = 400,
    log_file_size: int = 128 * MB,
    buffer_pool_pages: int = 16384,
    missed_sample_every: int | None = None,
    meta: SynthMeta | None = None,
    meta_by_cell: dict[int, SynthMeta] | None = None,
    driver: str = "tpcc",
    seed: int = 0,
    start: dt.datetime | None = None,
    latency_histograms: bool = True,
) -> int:
    """Write one synthetic experiment into a results database; return its experiment id.

    Parameters
    ----------
    db:
        A :class:`ResultsDB` or a path (created and migrated if new).
    cells:
        One :class:`SynthCell` per matrix cell; the first is the baseline.
    repetitions, warmup, duration, interval_s, sample_interval_s, window:
        As in an experiment file (seconds).
    n_counters:
        Numeric status counters per sample (MariaDB 10.11 has ~400).
    missed_sample_every:
        Every this many samples one is stored as missed (ts None, no values).
    meta, meta_by_cell:
        Run metadata for every run, or per cell index (to make comparisons refuse).
    latency_histograms:
        With the tpcc driver, store each interval's latency histograms and print its
        figures from them, as the Go driver does (:mod:`tests.support.synthetic_latency`);
        False: no histograms (a binary older than them), fixed figures.
    """
    rdb = db if isinstance(db, ResultsDB) else ResultsDB(db)
    rng = np.random.default_rng(seed)
    meta = meta or SynthMeta()
    start = start or dt.datetime(2024, 5, 1, 22, 0, tzinfo=dt.UTC)
    spec = experiment_spec(
        name, cells, warmup=warmup, duration=duration, interval_s=interval_s,
        sample_interval_s=sample_interval_s, repetitions=repetitions, window=window,
        driver=driver,
    )
    n_int = int(round((warmup + duration) / interval_s))
    warmup_n = int(round(warmup / interval_s))
    n_smp = int(round((warmup + duration) / sample_interval_s)) + 1
    names = _status_names(n_counters)
    max_age = int(log_file_size * 0.8)
    with rdb.session() as s:
        model = ExperimentSpec.model_validate(spec)  # the queue's own window and metric rule
        exp = Experiment(
            name=name, description=spec["description"], source_path=f"experiments/{name}.yaml",
            measurement_hash=f"{seed:064x}", spec=spec, created_at=start,
            window=model.resolved_window(), metric=model.metric(),
        )
        s.add(exp)
        s.flush()
        cell_rows = []
        for pos, c in enumerate(cells):
            row = Cell(
                experiment_id=exp.id, cell_key=f"{pos:012x}", position=pos,
                label=c.label or _label(c.knobs), is_baseline=pos == 0, knobs=dict(c.knobs),
                variables=_variables(c.knobs, log_file_size),
            )
            s.add(row)
            cell_rows.append(row)
        s.flush()

        clock = start
        order = 0
        plan: list[tuple[int, SynthCell, Run, SynthMeta]] = []
        for pos, (c, row) in enumerate(zip(cells, cell_rows, strict=True)):
            cmeta = (meta_by_cell or {}).get(pos, meta)
            for rep in range(1, repetitions + 1):
                attempts = [("interrupted", 1), ("done", 2)] if rep in c.retried_repetitions else [
                    ("failed" if rep in c.failed_repetitions else "done", 1)
                ]
                for status, attempt in attempts:
                    run = Run(
                        cell_id=row.id, repetition=rep, attempt=attempt, order_index=order,
                        status=status, queued_at=start, started_at=clock,
                        measure_started_at=clock + dt.timedelta(seconds=warmup),
                        finished_at=clock + dt.timedelta(seconds=warmup + duration + 5),
                        run_dir=f"results/runs/{order:04d}",
                        error="mysqld exited with status 1 (see evidence)"
                        if status == "failed" else None,
                    )
                    s.add(run)
                    plan.append((pos, c, run, cmeta))
                    order += 1
                    clock += dt.timedelta(seconds=warmup + duration + 60)
        s.flush()

        meta_rows, var_rows, int_rows, smp_rows = [], [], [], []
        for _pos, c, run, cmeta in plan:
            meta_rows.append(dict(
                run_id=run.id, hostname=cmeta.hostname, kernel=cmeta.kernel,
                cpu_model=cmeta.cpu_model, cpu_count=cmeta.cpu_count,
                mem_total_bytes=cmeta.mem_total_bytes, datadir_device=cmeta.datadir_device,
                datadir_fstype=cmeta.datadir_fstype, server_flavor=cmeta.server_flavor,
                server_version=cmeta.server_version, dataset_key=cmeta.dataset_key,
                experiment_hash=exp.measurement_hash, driver=cmeta.driver, extra=dict(cmeta.extra),
            ))
            log_size = int(c.knobs.get("log_file_size", log_file_size))
            variables = {
                "innodb_buffer_pool_size": str(buffer_pool_pages * PAGE),
                "innodb_log_file_size": str(log_size),
                "innodb_max_dirty_pages_pct":
                    f"{float(c.knobs.get('max_dirty_pages_pct', 90)):.6f}",
                "innodb_io_capacity": str(c.knobs.get("io_capacity", 200)),
                "innodb_io_capacity_max": "2000",
                "innodb_doublewrite": "OFF" if c.knobs.get("doublewrite") is False else "ON",
                "innodb_flush_log_at_trx_commit": "2",
                "innodb_flush_method": "O_DIRECT",
                "innodb_flush_neighbors": "1",
                "innodb_adaptive_flushing": "ON",
                "innodb_page_size": str(PAGE),
                "version": cmeta.server_version,
                **{f"filler_variable_{i:02d}": str(i) for i in range(40)},
            }
            var_rows += [dict(run_id=run.id, name=k, value=v) for k, v in variables.items()]
            if run.status != "done":
                continue
            per_s = _throughput(c, rng, n_int, interval_s, warmup_n)  # NOTPM per interval
            counts = np.round(per_s * interval_s / 60.0)
            measured = counts[warmup_n:]
            run.driver_summary = {
                "type": "summary", "measure_s": duration,
                "tpmc": round(float(measured.sum()) * 60.0 / duration, 2),
                "totals": {"new_order": {"sc": int(measured.sum()), "lt": 0, "rt": 0, "fl": 0}},
                "retries": 0, "errors": 0, "interrupted": False,
            }
            level = float(np.median(per_s[warmup_n:])) if n_int > warmup_n else 1.0
            # Histograms from their own generator: the throughput and sample series stay
            # what they were for every seed.
            lat_rng = np.random.default_rng([seed, int(run.id)])
            for i in range(n_int):
                elapsed = (i + 1) * interval_s
                k = float(counts[i])
                row = dict(
                    run_id=run.id, seq=i + 1,
                    ts=run.started_at + dt.timedelta(seconds=elapsed),
                    elapsed_s=elapsed, interval_s=interval_s,
                    phase="warmup" if elapsed <= warmup else "measure",
                    primary_count=k, p95_ms=12.0 + 0.01 * i, p99_ms=20.0, max_ms=80.0,
                    errors=0.0, retries=0.0,
                    detail={
                        "payment": {"count": k, "p95_ms": 8.0, "p99_ms": 12.0, "max_ms": 40.0},
                        "order_status": {"count": round(k / 10), "p95_ms": 3.0},
                        "delivery": {"count": round(k / 10), "p95_ms": 30.0},
                        "stock_level": {"count": round(k / 10), "p95_ms": 9.0},
                    },
                )
                if driver == "tpcc" and latency_histograms:
                    _with_histograms(row, lat_rng, c.latency_scale
                                     * max(1.0, level / max(float(per_s[i]), level / 20)))
                int_rows.append(row)
            smp_rows += _samples(
                run, c, rng, n_smp, sample_interval_s, per_s, names, max_age,
                buffer_pool_pages, missed_sample_every, warmup,
            )
        s.execute(insert(RunMetadata), meta_rows)
        s.execute(insert(RunVariable), var_rows)
        if int_rows:
            s.execute(insert(Interval), int_rows)
        if smp_rows:
            s.execute(insert(Sample), smp_rows)
        s.commit()
        return exp.id


def _with_histograms(row: dict[str, Any], rng: np.random.Generator, slowdown: float) -> None:
    """Give an interval row the latency histograms and figures the Go driver prints."""
    counts = {"new_order": int(row["primary_count"]),
              **{name: int(v["count"]) for name, v in row["detail"].items()}}
    blob, printed = interval_latency(rng, counts, slowdown)
    no = printed.pop("new_order")
    row.update(p95_ms=no["p95_ms"], p99_ms=no["p99_ms"], max_ms=no["max_ms"], latency_z=blob,
               detail=printed)


def _samples(
    run: Run,
    c: SynthCell,
    rng: np.random.Generator,
    n: int,
    step: float,
    notpm: np.ndarray,
    names: list[str],
    max_age: int,
    pool_pages: int,
    missed_every: int | None,
    warmup: float,
) -> list[dict[str, Any]]:
    t = np.arange(n) * step
    # Throughput at each sample time drives the write rates (interpolated from the intervals).
    thr = np.interp(t, np.arange(1, notpm.size + 1) * step, notpm) / 60.0  # New-Orders/s
    log_rate = thr * 6000.0  # bytes of redo per New-Order
    lsn = 12_000_000 + np.concatenate([[0.0], np.cumsum(log_rate[1:] * step)])
    # Checkpoint age: saw-tooth between 10 % and checkpoint_fill of max age.
    phase = (t / 120.0) % 1.0
    age = max_age * (0.1 + (c.checkpoint_fill - 0.1) * phase)
    age = np.minimum(age, lsn - 12_000_000 + 1)
    flushed_rate = thr * 1.5
    flushed = np.cumsum(flushed_rate * step)
    dblwr = flushed if c.knobs.get("doublewrite", True) is not False else np.zeros(n)
    dirty_pct = c.dirty_pct * np.minimum(1.0, t / max(warmup, 1.0)) + rng.normal(0, 0.5, n)
    data_pages = np.minimum(pool_pages - 200, 2000 + t * 50).astype(int)
    free_pages = pool_pages - data_pages
    dirty = np.clip(dirty_pct * (1 + pool_pages) / 100.0, 0, data_pages).astype(int)
    rss = (300 + 100 * (1 - np.exp(-t / 200.0))) * MB
    writes = np.cumsum(np.full(n, 400.0 * step)).astype(int)
    wsect = np.cumsum(flushed_rate * step * (2 if dblwr[-1] else 1) * PAGE / 512).astype(int)
    rng_fill = rng.integers(0, 1000, size=len(names))
    grow = rng.integers(0, 5, size=len(names))
    rows = []
    for i in range(n):
        sched = run.started_at + dt.timedelta(seconds=float(t[i]))
        if missed_every and i % missed_every == missed_every - 1:
            rows.append(dict(run_id=run.id, seq=i + 1, scheduled_ts=sched, ts=None, missed=True,
                             miss_reason="SHOW GLOBAL STATUS timed out after 5 s"))
            continue
        status = dict(zip(names, (rng_fill + grow * i).tolist(), strict=True))
        status.update({
            "Innodb_buffer_pool_pages_flushed": int(flushed[i]),
            "Innodb_pages_written": int(flushed[i]),
            "Innodb_dblwr_pages_written": int(dblwr[i]),
            "Innodb_dblwr_writes": int(dblwr[i] / 64),
            "Innodb_os_log_written": int(lsn[i] - 12_000_000),
            "Innodb_data_written": int(flushed[i] * PAGE + lsn[i] - 12_000_000),
            "Innodb_data_fsyncs": int(t[i] * 3),
            "Innodb_buffer_pool_wait_free": 0,
            "Innodb_log_waits": 0,
            "Innodb_checkpoint_age": int(age[i]),
            "Innodb_checkpoint_max_age": max_age,
            "Innodb_lsn_current": int(lsn[i]),
            "Innodb_lsn_last_checkpoint": int(lsn[i] - age[i]),
            "Innodb_buffer_pool_pages_dirty": int(dirty[i]),
            "Innodb_buffer_pool_pages_data": int(data_pages[i]),
            "Innodb_buffer_pool_pages_free": int(free_pages[i]),
            "Uptime": int(t[i]) + 5,
        })
        rows.append(dict(
            run_id=run.id, seq=i + 1, scheduled_ts=sched,
            ts=sched + dt.timedelta(seconds=0.004 + 0.002 * (i % 3)), missed=False,
            lsn=int(lsn[i]), checkpoint_lsn=int(lsn[i] - age[i]),
            pages_dirty=int(dirty[i]), pages_data=int(data_pages[i]),
            pages_free=int(free_pages[i]), mysqld_rss_bytes=int(rss[i]),
            mysqld_vsz_bytes=int(rss[i] + 1200 * MB),
            mysqld_cpu_user_s=1.2 * t[i], mysqld_cpu_sys_s=0.3 * t[i],
            driver_cpu_user_s=0.4 * t[i], driver_cpu_sys_s=0.1 * t[i],
            mysqld_ctxsw_voluntary=int(2400 * t[i]), mysqld_ctxsw_involuntary=int(90 * t[i]),
            driver_ctxsw_voluntary=int(1100 * t[i]), driver_ctxsw_involuntary=int(40 * t[i]),
            disk_reads=int(10 * t[i]), disk_writes=int(writes[i]),
            disk_read_sectors=int(80 * t[i]), disk_write_sectors=int(wsect[i]),
            # A quiet 4-CPU host: mysqld, the driver and flushbench are nearly all of its busy.
            host_cpu_busy_s=2.05 * t[i], host_cpu_idle_s=1.95 * t[i],
            host_cpu_steal_s=0.0, tool_cpu_s=0.02 * t[i],
            own_io_read_bytes=int(80 * 512 * t[i]), own_io_write_bytes=int(wsect[i]) * 512,
            group_read_ios=None, group_write_ios=None, group_read_bytes=None,
            group_write_bytes=None,
            collect_s=0.012,
            status_z=zlib.compress(json.dumps(status).encode(), 6),
            engine_log_z=zlib.compress(
                f"Log sequence number {int(lsn[i])}\nLast checkpoint at {int(lsn[i] - age[i])}\n"
                .encode()
            ),
        ))
    return rows


def study_cells(notpm_scale: float = 1.0) -> list[SynthCell]:
    """A small 2011-style matrix: doublewrite × max_dirty_pages_pct with known shapes."""
    out = []
    for dw in (True, False):
        for pct in (50.0, 60.0, 70.0):
            stable = (not dw) and pct == 60.0
            out.append(SynthCell(
                knobs={"doublewrite": dw, "max_dirty_pages_pct": pct},
                notpm=notpm_scale * (38000 if dw else 60000 + 4000 * (pct == 60.0)),
                noise_pct=2.0 if stable else 4.0,
                period_s=None if stable else 120.0,
                amplitude_pct=0.0 if stable else 20.0,
                dirty_pct=min(pct + (0 if stable else 10), 85.0),
                checkpoint_fill=0.6 if stable else 0.85,
            ))
    return out


def fixed_rate_store(path: Path) -> Path:
    """A synthetic experiment ``fixed`` at ``path``: two cells of four runs each, the second's
    transactions 1.6× slower, stored as runs at a fixed rate of 2,400 NOTPM (their driver
    summary names the rate, as the Go driver's does)."""
    return _at_fixed_rate(path, "fixed", repetitions=4, seed=7)


def rate_search_store(path: Path) -> Path:
    """A synthetic rate search ``search`` at ``path``: two cells, each one step at 2,400 NOTPM
    stored as the runner stores a step (``runs.step_rate``, the experiment's
    ``workload.rate: {max_under: …}``) — one run a cell, as a search's first round leaves it."""
    _at_fixed_rate(path, "search", repetitions=1, seed=11, step=True)
    with sqlite3.connect(path) as con:
        (spec_text,) = con.execute("SELECT spec FROM experiments").fetchone()
        spec = json.loads(spec_text)
        spec["workload"]["rate"] = {"max_under": {"p99": "1s", "start": 2400, "step": 400,
                                                  "max_steps": 3}}
        con.execute("UPDATE experiments SET spec = ?", (json.dumps(spec),))
    return path


def _at_fixed_rate(path: Path, name: str, *, repetitions: int, seed: int,
                   step: bool = False) -> Path:
    """Two cells (the second's transactions 1.6× slower) whose runs held 2,400 NOTPM, as the
    Go driver's summary says; ``step``: each run a rate search's step at that rate."""
    build_store(path, [SynthCell(knobs={"doublewrite": True}, notpm=2400),
                       SynthCell(knobs={"doublewrite": False}, notpm=2400, latency_scale=1.6)],
                name=name, repetitions=repetitions, warmup=30, duration=600, n_counters=40,
                seed=seed)
    with sqlite3.connect(path) as con:
        for run_id, summary in con.execute("SELECT id, driver_summary FROM runs").fetchall():
            data = json.loads(summary)
            data["rate"] = {"target_notpm": 2400, "arrivals": "uniform"}
            con.execute("UPDATE runs SET driver_summary = ?, step_rate = ? WHERE id = ?",
                        (json.dumps(data), 2400 if step else None, run_id))
    return path
