"""Store → pandas DataFrames: runs, driver intervals, sampler series, summaries.

Every function takes ``db`` — a :class:`store.db.ResultsDB`, an open SQLAlchemy ``Session``, a
path or a URL — and an experiment (name, id, or None for the latest). Queries are bulk (one per
table, never one per run); timestamps come back as UTC; ``status_z`` is decompressed only when
status counters are asked for, and only the asked counters are extracted.

Time axes: ``t`` is seconds since the measurement started (warmup excluded: warmup intervals
have ``t <= 0``); ``in_window`` marks the declared measurement window (default: second half).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import String, select, type_coerce
from sqlalchemy.orm import Session

from analysis.stability import stability
from analysis.stats import bootstrap_ci
from flushbench.errors import AnalysisError
from flushbench.flavors import redo_capacity
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

MB = 1024.0 * 1024.0
SECTOR = 512

#: Status counters the derived sampler series need (rates and checkpoint figures).
DEFAULT_COUNTERS: tuple[str, ...] = (
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_os_log_written",
    "Innodb_dblwr_pages_written",
    "Innodb_data_fsyncs",
    "Innodb_data_written",
    "Innodb_pages_written",
    "Innodb_buffer_pool_wait_free",
    "Innodb_log_waits",
    "Innodb_checkpoint_age",
    "Innodb_checkpoint_max_age",
)
#: Cumulative counters turned into per-second rates: counter → (column, divisor).
RATE_COUNTERS: dict[str, tuple[str, float]] = {
    "Innodb_buffer_pool_pages_flushed": ("pages_flushed_per_s", 1.0),
    "Innodb_os_log_written": ("log_mb_per_s", MB),
    "Innodb_dblwr_pages_written": ("dblwr_pages_per_s", 1.0),
    "Innodb_data_fsyncs": ("fsyncs_per_s", 1.0),
    "Innodb_data_written": ("data_written_mb_per_s", MB),
    "Innodb_pages_written": ("pages_written_per_s", 1.0),
    "Innodb_buffer_pool_wait_free": ("wait_free_per_s", 1.0),
    "Innodb_log_waits": ("log_waits_per_s", 1.0),
}
#: Server variables the analysis reads from each run's SHOW GLOBAL VARIABLES snapshot.
KEY_VARIABLES: tuple[str, ...] = (
    "version",
    "innodb_buffer_pool_size",
    "innodb_buffer_pool_instances",
    "innodb_log_file_size",
    "innodb_log_files_in_group",
    "innodb_redo_log_capacity",
    "innodb_max_dirty_pages_pct",
    "innodb_max_dirty_pages_pct_lwm",
    "innodb_io_capacity",
    "innodb_io_capacity_max",
    "innodb_doublewrite",
    "innodb_flush_log_at_trx_commit",
    "innodb_flush_method",
    "innodb_flush_neighbors",
    "innodb_flush_neighbor_pages",
    "innodb_adaptive_flushing",
    "innodb_adaptive_flushing_method",
    "innodb_page_size",
    "large_pages",
)
#: Metadata that must agree between runs before they are compared (pyperf-style).
CHECKED_METADATA: tuple[str, ...] = ("hostname", "server_flavor", "server_version", "dataset_key")
METADATA_COLUMNS: tuple[str, ...] = (
    "hostname", "kernel", "cpu_model", "cpu_count", "mem_total_bytes", "datadir_device",
    "datadir_fstype", "server_flavor", "server_version", "dataset_key", "experiment_hash",
    "driver",
)
#: SQLite caps bound parameters; chunk IN lists well below the limit.
_CHUNK = 900

DB = ResultsDB | Session | str | os.PathLike[str]
ExperimentRef = str | int | None


# ---------------------------------------------------------------------------- plumbing


@contextlib.contextmanager
def session_scope(db: DB) -> Iterator[Session]:
    """Yield a session on ``db``; close it afterwards unless the caller passed a Session."""
    if isinstance(db, Session):
        yield db
        return
    owned = None
    if isinstance(db, ResultsDB):
        rdb = db
    else:
        rdb = owned = ResultsDB(db, create=False)
    try:
        with rdb.session() as s:
            yield s
    finally:
        if owned is not None:
            owned.dispose()


def _chunks(ids: Sequence[int]) -> Iterable[list[int]]:
    ids = list(ids)
    for i in range(0, len(ids), _CHUNK):
        yield ids[i : i + _CHUNK]


def _frame(rows: Sequence[Any], names: Sequence[str]) -> pd.DataFrame:
    """Rows → DataFrame column by column (pandas' row-wise constructor is ~5× slower)."""
    if not rows:
        return pd.DataFrame({n: pd.Series(dtype=object) for n in names})
    columns = list(zip(*rows, strict=True))
    return pd.DataFrame({n: pd.Series(c, dtype=object) if isinstance(c[0], (dict, list))
                         else c for n, c in zip(names, columns, strict=True)})


def _fetch(session: Session, stmt: Any, column: Any, ids: Sequence[int]) -> list[Any]:
    """Execute ``stmt`` for ``column IN ids`` in chunks on the raw connection (no ORM layer)."""
    conn = session.connection()
    rows: list[Any] = []
    sqlite = conn.dialect.name == "sqlite"
    for chunk in _chunks(ids):
        q = stmt.where(column.in_(chunk))
        if sqlite:
            # Plain tuples straight from sqlite3: SQLAlchemy's Row objects cost as much as the
            # query itself on 100k rows. Every selected column needs no result processing
            # (timestamps and JSON are selected as text on purpose).
            compiled = q.compile(dialect=conn.dialect,
                                 compile_kwargs={"render_postcompile": True})
            params = [compiled.params[name] for name in compiled.positiontup or ()]
            raw = conn.connection.driver_connection
            rows += raw.execute(str(compiled), params).fetchall()
        else:
            rows += conn.execute(q).all()
    return rows


def _utc(values: Any) -> pd.Series:
    """Timestamps (strings from SQLite, datetimes elsewhere) as tz-aware UTC; naive = UTC."""
    return pd.to_datetime(pd.Series(values, dtype=object), utc=True, format="ISO8601")


@dataclass(frozen=True)
class Window:
    """Timing of an experiment's runs, in seconds (``start``/``end`` after warmup)."""

    warmup: float
    duration: float
    start: float
    end: float
    report_interval: float

    @property
    def length(self) -> float:
        """Window length in seconds."""
        return self.end - self.start


def window_of(spec: dict[str, Any]) -> Window:
    """The measurement window of an experiment spec (defaults: the second half of the run).

    Same rule as ``runner.spec.WindowSpec.resolve``: ``start = duration / 2`` and
    ``end = duration`` when not declared.
    """
    wl = spec.get("workload") or {}
    duration = float(wl.get("duration", 1800.0))
    win = spec.get("window") or {}
    start = win.get("start")
    end = win.get("end")
    return Window(
        warmup=float(wl.get("warmup", 10.0)),
        duration=duration,
        start=float(start) if start is not None else duration / 2,
        end=float(end) if end is not None else duration,
        report_interval=float(wl.get("report_interval", 10.0)),
    )


def resolve_experiment(session: Session, experiment: ExperimentRef = None) -> Experiment:
    """Find an experiment by name (the latest queued with that name), id, or the latest one.

    Raises
    ------
    AnalysisError
        When nothing matches (the message lists the known names).
    """
    row = None
    if experiment is None:
        row = session.scalars(
            select(Experiment).order_by(Experiment.created_at.desc(), Experiment.id.desc())
        ).first()
    else:
        if isinstance(experiment, str):
            row = session.scalars(
                select(Experiment)
                .where(Experiment.name == experiment)
                .order_by(Experiment.created_at.desc(), Experiment.id.desc())
            ).first()
        if row is None and (isinstance(experiment, int) or str(experiment).isdigit()):
            row = session.get(Experiment, int(experiment))
    if row is None:
        names = session.scalars(select(Experiment.name).distinct()).all()
        raise AnalysisError(
            f"no experiment {experiment!r} in the results database"
            if experiment is not None
            else "the results database holds no experiment",
            where="results database",
            fix=f"known experiments: {', '.join(sorted(names))}" if names else "run one first",
        )
    return row


# ---------------------------------------------------------------------------- experiments & runs


def experiments(db: DB) -> pd.DataFrame:
    """One row per stored experiment with its run counts by status.

    Returns
    -------
    DataFrame
        ``id, name, description, created_at, n_cells, n_runs, done, failed, other``.
    """
    with session_scope(db) as s:
        exps = s.execute(
            select(Experiment.id, Experiment.name, Experiment.description,
                   type_coerce(Experiment.created_at, String))
            .order_by(Experiment.id)
        ).all()
        cells = s.execute(select(Cell.experiment_id, Cell.id)).all()
        runs = s.execute(
            select(Cell.experiment_id, Run.status).join(Cell, Run.cell_id == Cell.id)
        ).all()
    df = pd.DataFrame(exps, columns=["id", "name", "description", "created_at"])
    df["created_at"] = _utc(df["created_at"]) if len(df) else df["created_at"]
    cdf = pd.DataFrame(cells, columns=["experiment_id", "cell_id"])
    rdf = pd.DataFrame(runs, columns=["experiment_id", "status"])
    df["n_cells"] = df["id"].map(cdf.groupby("experiment_id").size()).fillna(0).astype(int)
    df["n_runs"] = df["id"].map(rdf.groupby("experiment_id").size()).fillna(0).astype(int)
    for status in ("done", "failed"):
        counts = rdf[rdf["status"] == status].groupby("experiment_id").size()
        df[status] = df["id"].map(counts).fillna(0).astype(int)
    df["other"] = df["n_runs"] - df["done"] - df["failed"]
    return df


def experiment_info(db: DB, experiment: ExperimentRef = None) -> dict[str, Any]:
    """The experiment's id, name, description, spec and resolved :class:`Window`."""
    with session_scope(db) as s:
        exp = resolve_experiment(s, experiment)
        return {
            "id": exp.id,
            "name": exp.name,
            "description": exp.description,
            "spec": exp.spec,
            "spec_hash": exp.spec_hash,
            "created_at": exp.created_at,
            "window": window_of(exp.spec),
        }


def runs(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    all_attempts: bool = False,
    run_ids: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Runs of an experiment with their cell, knobs and metadata.

    Parameters
    ----------
    all_attempts:
        Keep attempts superseded by a newer attempt of the same cell and repetition.
    run_ids:
        Only these runs (then ``experiment`` may be None).

    Returns
    -------
    DataFrame
        One row per run: ``run_id, experiment_id, cell_id, cell_key, position, cell_label,
        is_baseline, knobs`` (dict), one column per knob, ``repetition, attempt, order_index,
        status, started_at, measure_started_at, finished_at, error, tpmc_driver`` and the
        metadata columns (``hostname, server_version, dataset_key…``, ``extra``).
    """
    with session_scope(db) as s:
        cols = [
            Run.id, Cell.experiment_id, Run.cell_id, Cell.cell_key, Cell.position, Cell.label,
            Cell.is_baseline, Cell.knobs, Run.repetition, Run.attempt, Run.order_index,
            Run.status, type_coerce(Run.started_at, String),
            type_coerce(Run.measure_started_at, String), type_coerce(Run.finished_at, String),
            Run.error, Run.driver_summary,
            *[getattr(RunMetadata, c) for c in METADATA_COLUMNS], RunMetadata.extra,
        ]
        q = (
            select(*cols)
            .join(Cell, Run.cell_id == Cell.id)
            .outerjoin(RunMetadata, RunMetadata.run_id == Run.id)
        )
        if run_ids is not None:
            rows = _fetch(s, q, Run.id, [int(r) for r in run_ids])
        else:
            exp = resolve_experiment(s, experiment)
            rows = s.connection().execute(q.where(Cell.experiment_id == exp.id)).all()
    names = [
        "run_id", "experiment_id", "cell_id", "cell_key", "position", "cell_label",
        "is_baseline", "knobs", "repetition", "attempt", "order_index", "status",
        "started_at", "measure_started_at", "finished_at", "error", "driver_summary",
        *METADATA_COLUMNS, "extra",
    ]
    df = pd.DataFrame.from_records([tuple(r) for r in rows], columns=names)
    for c in ("started_at", "measure_started_at", "finished_at"):
        df[c] = _utc(df[c])
    df["is_baseline"] = df["is_baseline"].astype(bool)
    df["tpmc_driver"] = [
        float(d["tpmc"]) if isinstance(d, dict) and d.get("tpmc") is not None else math.nan
        for d in df["driver_summary"]
    ]
    latest = df.groupby(["cell_id", "repetition"])["attempt"].transform("max")
    df["superseded"] = df["attempt"] < latest
    if not all_attempts:
        df = df[~df["superseded"]]
    knob_names = _knob_names(df["knobs"])
    for k in knob_names:
        df[k] = [kn.get(k) if isinstance(kn, dict) else None for kn in df["knobs"]]
    df = df.sort_values(["position", "repetition", "attempt"]).reset_index(drop=True)
    df.attrs["knobs"] = knob_names
    return df


def _knob_names(knobs: Iterable[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for kn in knobs:
        if isinstance(kn, dict):
            for k in kn:
                seen.setdefault(k, None)
    return list(seen)


def varying_knobs(df: pd.DataFrame) -> list[str]:
    """Knobs (from the ``knobs`` dict column) that take more than one value in ``df``."""
    names = _knob_names(df["knobs"])
    out = []
    for k in names:
        values = {json.dumps(kn.get(k), sort_keys=True) for kn in df["knobs"]}
        if len(values) > 1:
            out.append(k)
    return out


def _run_context(db: DB, experiment: ExperimentRef, run_ids: Sequence[int] | None,
                 only_done: bool) -> tuple[pd.DataFrame, dict[int, Window]]:
    """Runs to read and each experiment's window."""
    rdf = runs(db, experiment if run_ids is None else None, run_ids=run_ids)
    if only_done:
        rdf = rdf[rdf["status"] == "done"]
    with session_scope(db) as s:
        specs = s.execute(
            select(Experiment.id, Experiment.spec).where(
                Experiment.id.in_([int(x) for x in rdf["experiment_id"].unique()])
            )
        ).all()
    return rdf, {int(i): window_of(spec) for i, spec in specs}


def _window_columns(rdf: pd.DataFrame, windows: dict[int, Window]) -> pd.DataFrame:
    ctx = rdf[["run_id", "experiment_id", "started_at", "measure_started_at"]].copy()
    ctx["warmup"] = [windows[int(e)].warmup for e in ctx["experiment_id"]]
    ctx["w_start"] = [windows[int(e)].start for e in ctx["experiment_id"]]
    ctx["w_end"] = [windows[int(e)].end for e in ctx["experiment_id"]]
    return ctx.set_index("run_id")


# ---------------------------------------------------------------------------- intervals


def intervals(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    run_ids: Sequence[int] | None = None,
    only_done: bool = True,
    window_only: bool = False,
    detail: bool = True,
) -> pd.DataFrame:
    """Per-interval driver series with NOTPM, time since measurement start and window flag.

    Parameters
    ----------
    run_ids:
        Only these runs (default: every analyzable run of the experiment).
    only_done:
        Keep only runs whose status is ``done`` (the latest attempt of each repetition).
    window_only:
        Keep only intervals inside the measurement window.
    detail:
        Expand the ``detail`` JSON into ``<type>_count``, ``<type>_p95_ms``… and scalar columns
        (``qps`` for sysbench).

    Returns
    -------
    DataFrame
        ``run_id, seq, ts, elapsed_s, interval_s, phase, t, primary_count, notpm, per_s,
        p95_ms, p99_ms, max_ms, errors, retries, in_window`` (+ detail columns).
        ``notpm = primary_count × 60 / interval_s``; ``t = elapsed_s − warmup``; an interval is
        in the window when its midpoint lies in ``(start, end]``.
    """
    rdf, windows = _run_context(db, experiment, run_ids, only_done)
    cols = [
        Interval.run_id, Interval.seq, type_coerce(Interval.ts, String), Interval.elapsed_s,
        Interval.interval_s, Interval.phase, Interval.primary_count, Interval.p95_ms,
        Interval.p99_ms, Interval.max_ms, Interval.errors, Interval.retries,
    ]
    if detail:
        cols.append(type_coerce(Interval.detail, String))
    ids = [int(x) for x in rdf["run_id"]]
    with session_scope(db) as s:
        rows = _fetch(s, select(*cols), Interval.run_id, ids)
    names = ["run_id", "seq", "ts", "elapsed_s", "interval_s", "phase", "primary_count",
             "p95_ms", "p99_ms", "max_ms", "errors", "retries"] + (["detail"] if detail else [])
    df = _frame(rows, names)
    df = df.sort_values(["run_id", "seq"], kind="stable").reset_index(drop=True)
    df["ts"] = _utc(df["ts"])
    for c in ("elapsed_s", "interval_s", "primary_count", "p95_ms", "p99_ms", "max_ms",
              "errors", "retries"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    ctx = _window_columns(rdf, windows)
    warm = df["run_id"].map(ctx["warmup"]).to_numpy(dtype=float)
    w_start = df["run_id"].map(ctx["w_start"]).to_numpy(dtype=float)
    w_end = df["run_id"].map(ctx["w_end"]).to_numpy(dtype=float)
    df["t"] = df["elapsed_s"] - warm
    with np.errstate(divide="ignore", invalid="ignore"):
        df["notpm"] = df["primary_count"] * 60.0 / df["interval_s"]
        df["per_s"] = df["primary_count"] / df["interval_s"]
    mid = df["t"].to_numpy() - df["interval_s"].to_numpy() / 2
    df["in_window"] = (df["phase"].to_numpy() == "measure") & (mid > w_start) & (mid <= w_end)
    if detail:
        df = _expand_detail(df)
    if window_only:
        df = df[df["in_window"]].reset_index(drop=True)
    return df


def _expand_detail(df: pd.DataFrame) -> pd.DataFrame:
    parsed = [json.loads(d) if isinstance(d, str) else (d or {}) for d in df.pop("detail")]
    columns: dict[str, np.ndarray] = {}
    n = len(parsed)

    def put(name: str, i: int, v: Any) -> None:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            col = columns.get(name)
            if col is None:
                col = columns[name] = np.full(n, np.nan)
            col[i] = v

    for i, d in enumerate(parsed):
        if not isinstance(d, dict):
            continue
        for key, value in d.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    put(f"{key}_{sub}", i, v)
            else:
                put(key, i, value)
    extra = {k: v for k, v in columns.items() if k not in df.columns}
    if extra:
        df = pd.concat([df, pd.DataFrame(extra, index=df.index, dtype=float)], axis=1)
    return df


# ---------------------------------------------------------------------------- samples


def _counter_regex(names: Sequence[str]) -> re.Pattern[bytes]:
    alternatives = b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
    return re.compile(rb'"(' + alternatives + rb')"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')


def extract_counters(blob: bytes | None, names: Sequence[str]) -> dict[str, float]:
    """Decompress one ``status_z`` and return only the named counters (missing ones absent).

    A regex over the JSON text instead of ``json.loads`` of ~400 keys: four times faster, and
    the JSON is flat ``{"Name": number}`` by construction.
    """
    if not blob:
        return {}
    text = zlib.decompress(blob)
    return {m.group(1).decode(): float(m.group(2)) for m in _counter_regex(names).finditer(text)}


def status_counters(blob: bytes | None) -> dict[str, float]:
    """Every counter of one ``status_z`` blob (for exploration; slower than the regex path)."""
    if not blob:
        return {}
    return {k: float(v) for k, v in json.loads(zlib.decompress(blob)).items()}


def run_variables(
    db: DB, run_ids: Sequence[int], names: Sequence[str] | None = KEY_VARIABLES
) -> pd.DataFrame:
    """SHOW GLOBAL VARIABLES snapshots, wide: one row per run, one column per variable."""
    q = select(RunVariable.run_id, RunVariable.name, RunVariable.value)
    if names is not None:
        q = q.where(RunVariable.name.in_(list(names)))
    with session_scope(db) as s:
        rows = _fetch(s, q, RunVariable.run_id, [int(r) for r in run_ids])
    long = pd.DataFrame(rows, columns=["run_id", "name", "value"])
    wide = long.pivot(index="run_id", columns="name", values="value")
    wide.columns.name = None
    return wide.reindex([int(r) for r in run_ids])


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def limits_from_variables(variables: pd.DataFrame) -> pd.DataFrame:
    """Per-run limits from the variables: ``max_dirty_pages_pct`` and ``log_capacity_bytes``.

    Log capacity is :func:`flushbench.flavors.redo_capacity` of each run's variables (they are
    ``SHOW GLOBAL VARIABLES``, so ``innodb_log_files_in_group`` is there wherever it exists).
    """
    out = pd.DataFrame(index=variables.index)
    if "innodb_max_dirty_pages_pct" in variables.columns:
        out["max_dirty_pages_pct"] = variables["innodb_max_dirty_pages_pct"].map(_num)
    else:
        out["max_dirty_pages_pct"] = math.nan
    names = [c for c in ("innodb_redo_log_capacity", "innodb_log_file_size",
                         "innodb_log_files_in_group") if c in variables.columns]

    def capacity(row: pd.Series) -> float:
        known = {k: str(v) for k, v in row.items() if isinstance(v, str) or pd.notna(v)}
        value = redo_capacity(known)
        return math.nan if value is None else float(value)

    out["log_capacity_bytes"] = (
        variables[names].apply(capacity, axis=1) if names and len(variables) else math.nan
    )
    return out


_SAMPLE_COLUMNS = (
    "lsn", "checkpoint_lsn", "pages_dirty", "pages_data", "pages_free", "mysqld_rss_bytes",
    "mysqld_vsz_bytes", "mysqld_cpu_user_s", "mysqld_cpu_sys_s", "driver_cpu_user_s",
    "driver_cpu_sys_s", "disk_reads", "disk_writes", "disk_read_sectors", "disk_write_sectors",
    "collect_s",
)


def samples(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    run_ids: Sequence[int] | None = None,
    counters: Sequence[str] | None = DEFAULT_COUNTERS,
    only_done: bool = True,
) -> pd.DataFrame:
    """Sampler series with derived values, one row per tick (missed ticks kept, values NaN).

    Parameters
    ----------
    run_ids:
        Only these runs (default: every analyzable run of the experiment).
    counters:
        SHOW GLOBAL STATUS counters to extract from ``status_z`` (None or empty: skip the
        decompression entirely — the derived values that need counters are then NaN, except
        the checkpoint figures, which also come from the ``lsn`` columns and the variables).

    Returns
    -------
    DataFrame
        Raw columns plus ``t`` (s since measurement start), ``in_window``, ``dt_s`` (real
        seconds since the previous good sample), ``dirty_pct`` (InnoDB's formula
        ``100 × dirty / (1 + data + free)``), ``checkpoint_age_bytes``, ``checkpoint_age_mb``,
        ``max_checkpoint_age_bytes`` (status ``Innodb_checkpoint_max_age`` else log capacity),
        ``max_checkpoint_age_mb``, ``checkpoint_age_pct``, ``max_dirty_pages_pct``,
        ``rss_mb``, ``vsz_mb``, ``disk_write_mb_per_s``, ``disk_write_iops``,
        ``disk_read_mb_per_s``, ``disk_read_iops``, ``mysqld_cpu_pct``, ``driver_cpu_pct``
        (% of one core) and one ``*_per_s`` column per counter in :data:`RATE_COUNTERS`.
    """
    rdf, windows = _run_context(db, experiment, run_ids, only_done)
    names = list(counters or ())
    cols = [Sample.run_id, Sample.seq, type_coerce(Sample.scheduled_ts, String),
            type_coerce(Sample.ts, String), Sample.missed,
            *[getattr(Sample, c) for c in _SAMPLE_COLUMNS]]
    if names:
        cols.append(Sample.status_z)
    ids = [int(x) for x in rdf["run_id"]]
    with session_scope(db) as s:
        rows = _fetch(s, select(*cols), Sample.run_id, ids)
    col_names = ["run_id", "seq", "scheduled_ts", "ts", "missed", *_SAMPLE_COLUMNS]
    if names:
        col_names.append("status_z")
    df = _frame(rows, col_names)
    df = df.sort_values(["run_id", "seq"], kind="stable").reset_index(drop=True)
    df["missed"] = df["missed"].astype(bool) | df["ts"].isna()
    df["scheduled_ts"] = _utc(df["scheduled_ts"])
    df["ts"] = _utc(df["ts"])
    for c in _SAMPLE_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    if names:
        rx = _counter_regex(names)
        values = {n: np.full(len(df), np.nan) for n in names}
        for i, blob in enumerate(df.pop("status_z")):
            if blob:
                for m in rx.finditer(zlib.decompress(blob)):
                    values[m.group(1).decode()][i] = float(m.group(2))
        df = pd.concat([df, pd.DataFrame(values, index=df.index)], axis=1)

    ctx = _window_columns(rdf, windows)
    when = df["ts"].where(df["ts"].notna(), df["scheduled_ts"])
    measure_start = df["run_id"].map(ctx["measure_started_at"])
    fallback = df["run_id"].map(ctx["started_at"]) + pd.to_timedelta(
        df["run_id"].map(ctx["warmup"]), unit="s"
    )
    measure_start = measure_start.where(measure_start.notna(), fallback)
    df["t"] = (when - measure_start).dt.total_seconds()
    w_start = df["run_id"].map(ctx["w_start"])
    w_end = df["run_id"].map(ctx["w_end"])
    df["in_window"] = (~df["missed"]) & (df["t"] >= w_start) & (df["t"] <= w_end)

    # Levels.
    df["dirty_pct"] = 100.0 * df["pages_dirty"] / (1.0 + df["pages_data"] + df["pages_free"])
    age = df["lsn"] - df["checkpoint_lsn"]
    if "Innodb_checkpoint_age" in df.columns:
        age = age.where(age.notna(), df["Innodb_checkpoint_age"])
    df["checkpoint_age_bytes"] = age
    df["checkpoint_age_mb"] = age / MB
    limits = limits_from_variables(run_variables(db, ids)) if ids else pd.DataFrame(
        columns=["max_dirty_pages_pct", "log_capacity_bytes"]
    )
    max_age = df["run_id"].map(limits["log_capacity_bytes"]) if ids else pd.Series(
        dtype=float
    )
    if "Innodb_checkpoint_max_age" in df.columns:
        status_max = df.groupby("run_id")["Innodb_checkpoint_max_age"].transform("max")
        max_age = status_max.where(status_max.notna() & (status_max > 0), max_age)
    df["max_checkpoint_age_bytes"] = max_age.astype(float)
    df["max_checkpoint_age_mb"] = df["max_checkpoint_age_bytes"] / MB
    df["checkpoint_age_pct"] = 100.0 * age / df["max_checkpoint_age_bytes"]
    df["max_dirty_pages_pct"] = (
        df["run_id"].map(limits["max_dirty_pages_pct"]).astype(float) if ids else math.nan
    )
    df["rss_mb"] = df["mysqld_rss_bytes"] / MB
    df["vsz_mb"] = df["mysqld_vsz_bytes"] / MB

    # Rates between consecutive good samples of the same run (real time, not scheduled).
    df = _rates(df, names)
    return df


def _rates(df: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    good = df[~df["missed"]]
    run = good["run_id"].to_numpy()
    same = np.zeros(len(good), dtype=bool)
    same[1:] = run[1:] == run[:-1]
    secs = (good["ts"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy()
    dt_s = np.full(len(good), np.nan)
    dt_s[1:] = secs[1:] - secs[:-1]
    dt_s[~same] = np.nan
    dt_s[dt_s <= 0] = np.nan

    def rate(values: np.ndarray, divisor: float = 1.0) -> np.ndarray:
        d = np.full(len(values), np.nan)
        d[1:] = values[1:] - values[:-1]
        d[d < 0] = np.nan  # a counter that went down means a restart: no rate across it
        return d / divisor / dt_s

    derived: dict[str, np.ndarray] = {"dt_s": dt_s}
    arr = {c: good[c].to_numpy(dtype=float) for c in good.columns if c in (
        *_SAMPLE_COLUMNS, *names)}
    derived["disk_write_mb_per_s"] = rate(arr["disk_write_sectors"], MB / SECTOR)
    derived["disk_read_mb_per_s"] = rate(arr["disk_read_sectors"], MB / SECTOR)
    derived["disk_write_iops"] = rate(arr["disk_writes"])
    derived["disk_read_iops"] = rate(arr["disk_reads"])
    derived["mysqld_cpu_pct"] = 100.0 * rate(arr["mysqld_cpu_user_s"] + arr["mysqld_cpu_sys_s"])
    derived["driver_cpu_pct"] = 100.0 * rate(arr["driver_cpu_user_s"] + arr["driver_cpu_sys_s"])
    for counter, (column, divisor) in RATE_COUNTERS.items():
        if counter in arr:
            derived[column] = rate(arr[counter], divisor)
        else:
            derived[column] = np.full(len(good), np.nan)
    out = pd.DataFrame(derived, index=good.index).reindex(df.index)
    return pd.concat([df, out], axis=1)


# ---------------------------------------------------------------------------- summaries


def _nanmedian(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else math.nan


def run_summary(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    runs_df: pd.DataFrame | None = None,
    intervals_df: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per run (latest attempts, every status) with window NOTPM and stability.

    ``notpm`` is the window average (Σ New-Orders × 60 / Σ interval seconds — the "15-minute
    average" of the 2011 study); the stability columns come from
    :func:`analysis.stability.stability` on the window's per-interval NOTPM series.
    Pass ``runs_df``/``intervals_df`` to reuse frames already loaded.
    """
    rdf = runs_df if runs_df is not None else runs(db, experiment)
    idf = intervals_df if intervals_df is not None else intervals(
        db, run_ids=list(rdf["run_id"]), detail=False
    )
    win = idf[idf["in_window"]].sort_values(["run_id", "seq"], kind="stable")
    # Plain numpy slices per run: a pandas groupby with a dozen reductions per group costs
    # more than the stability figures themselves on a 500-run experiment.
    col = {c: win[c].to_numpy(dtype=float) for c in (
        "notpm", "t", "interval_s", "primary_count", "p95_ms", "p99_ms", "errors", "retries")}
    ids = win["run_id"].to_numpy()
    cuts = np.flatnonzero(np.diff(ids)) + 1
    per_run: dict[int, dict[str, Any]] = {}
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(ids)], strict=True):
        if hi <= lo:
            continue
        total_s = float(col["interval_s"][lo:hi].sum())
        st = stability(col["notpm"][lo:hi], interval_s=float(np.median(col["interval_s"][lo:hi])),
                       times_s=col["t"][lo:hi])
        row = st.as_dict()
        row.update(
            notpm=float(col["primary_count"][lo:hi].sum() * 60.0 / total_s)
            if total_s else math.nan,
            window_s=total_s,
            n_intervals=int(hi - lo),
            p95_ms_median=_nanmedian(col["p95_ms"][lo:hi]),
            p99_ms_median=_nanmedian(col["p99_ms"][lo:hi]),
            errors=float(np.nansum(col["errors"][lo:hi])),
            retries=float(np.nansum(col["retries"][lo:hi])),
        )
        per_run[int(ids[lo])] = row
    stats = pd.DataFrame.from_dict(per_run, orient="index")
    stats = stats.rename(columns={"median": "notpm_median", "mean": "notpm_interval_mean",
                                  "n": "n_window_intervals"})
    out = rdf.merge(stats, left_on="run_id", right_index=True, how="left")
    if "warnings" not in out.columns:
        out["warnings"] = ""
    out["warnings"] = out["warnings"].fillna("")
    done_no_data = (out["status"] == "done") & out["notpm"].isna() if "notpm" in out else None
    if done_no_data is not None and done_no_data.any():
        out.loc[done_no_data, "warnings"] = "no intervals in the measurement window"
    out.attrs["knobs"] = rdf.attrs.get("knobs", _knob_names(rdf["knobs"]))
    return out


def cell_summary(
    db: DB,
    experiment: ExperimentRef = None,
    *,
    run_summary_df: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per cell: repetitions, NOTPM mean/median with a bootstrap 95 % CI, stability.

    Returns
    -------
    DataFrame
        ``cell_id, position, cell_label, is_baseline, knobs`` + knob columns, ``n_done,
        n_failed, n_other, notpm_mean, notpm_median, notpm_ci_low, notpm_ci_high, notpm_min,
        notpm_max, notpm_cv_pct`` (between repetitions), ``score_median, score_min,
        cv_pct_median, holes_share_max, period_s_median, oscillating_runs, noisy_runs,
        warnings``.
    """
    rs = run_summary_df if run_summary_df is not None else run_summary(db, experiment)
    knob_names = rs.attrs.get("knobs") or _knob_names(rs["knobs"])
    rows = []
    for cell_id, g in rs.groupby("cell_id", sort=False):
        done = g[(g["status"] == "done") & g["notpm"].notna()]
        values = done["notpm"].to_numpy(dtype=float)
        lo, hi = bootstrap_ci(values)
        first = g.iloc[0]
        cv = (
            float(100 * values.std(ddof=1) / values.mean())
            if values.size > 1 and values.mean() > 0 else math.nan
        )
        warnings = sorted({w for ws in done["warnings"] for w in str(ws).split("; ") if w})
        rows.append({
            "cell_id": int(cell_id),
            "position": int(first["position"]),
            "cell_label": first["cell_label"],
            "is_baseline": bool(first["is_baseline"]),
            "knobs": first["knobs"],
            **{k: first[k] for k in knob_names},
            "n_done": int(values.size),
            "n_failed": int((g["status"] == "failed").sum()),
            "n_other": int((~g["status"].isin(["done", "failed"])).sum()),
            "notpm_mean": float(values.mean()) if values.size else math.nan,
            "notpm_median": float(np.median(values)) if values.size else math.nan,
            "notpm_ci_low": lo,
            "notpm_ci_high": hi,
            "notpm_min": float(values.min()) if values.size else math.nan,
            "notpm_max": float(values.max()) if values.size else math.nan,
            "notpm_cv_pct": cv,
            "score_median": float(done["score"].median()) if values.size else math.nan,
            "score_min": float(done["score"].min()) if values.size else math.nan,
            "cv_pct_median": float(done["cv_pct"].median()) if values.size else math.nan,
            "holes_share_max": float(done["holes_share"].max()) if values.size else math.nan,
            "period_s_median": float(done["period_s"].median()) if values.size else math.nan,
            "oscillating_runs": int(done["oscillates"].fillna(False).astype(bool).sum())
            if values.size else 0,
            "noisy_runs": int((done["cv_pct"] >= 10).sum()) if values.size else 0,
            "warnings": "; ".join(
                sorted({w.split(":")[0] for w in warnings})
            ),
        })
    out = pd.DataFrame(rows).sort_values("position").reset_index(drop=True)
    out.attrs["knobs"] = knob_names
    return out


def representative_runs(run_summary_df: pd.DataFrame) -> dict[int, int]:
    """For each cell, the done run whose NOTPM is closest to the cell's median (cell → run)."""
    out = {}
    done = run_summary_df[(run_summary_df["status"] == "done") & run_summary_df["notpm"].notna()]
    for cell_id, g in done.groupby("cell_id", sort=False):
        med = g["notpm"].median()
        out[int(cell_id)] = int(g.loc[(g["notpm"] - med).abs().idxmin(), "run_id"])
    return out


@dataclass
class Frames:
    """Everything the comparison and the report need, loaded once."""

    experiment: dict[str, Any]
    runs: pd.DataFrame
    intervals: pd.DataFrame
    run_summary: pd.DataFrame
    cell_summary: pd.DataFrame


def load(db: DB, experiment: ExperimentRef = None, *, detail: bool = False) -> Frames:
    """Load runs, intervals, run and cell summaries of one experiment with bulk queries.

    ``detail=True`` also expands the per-type interval detail (Payment counts, sysbench qps…),
    which costs more than everything else together on large experiments.
    """
    with session_scope(db) as s:
        info = experiment_info(s, experiment)
        rdf = runs(s, info["id"])
        idf = intervals(s, run_ids=list(rdf.loc[rdf["status"] == "done", "run_id"]),
                        detail=detail)
        rs = run_summary(s, runs_df=rdf, intervals_df=idf)
        cs = cell_summary(s, run_summary_df=rs)
    return Frames(experiment=info, runs=rdf, intervals=idf, run_summary=rs, cell_summary=cs)
