"""Reading the results store into pandas: experiments, runs, variables, status counters.

Every function takes ``db`` — a :class:`store.db.ResultsDB`, an open SQLAlchemy ``Session``, a
path or a URL — and an experiment (name, id, or None for the latest). Queries are bulk (one per
table, never one per run, IN lists chunked); timestamps come back as UTC; ``status_z`` is
decompressed only when status counters are asked for, and only the asked counters are
extracted. Derived series live in :mod:`analysis.reading.series`, summaries in
:mod:`analysis.tables.summaries`.

This is the analysis package's one query module: every statement on the results database the
other analysis modules run is a named function here (taking an open ``Session``; the caller
keeps its :func:`session_scope`), so a reader finds the package's SQL in one place.
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
from sqlalchemy import Integer, String, case, cast, func, select, tuple_, type_coerce
from sqlalchemy.orm import Session

from analysis.reading.one_reading import read_once
from core.errors import AnalysisError
from core.experiment.stored import StoredExperiment
from store.db import ResultsDB
from store.models import (
    DISTURBANCE_KINDS,
    Cell,
    Experiment,
    Interval,
    Run,
    RunEvent,
    RunMetadata,
    RunStatus,
    RunVariable,
    Sample,
)

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
    "Uptime",
)
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
    "innodb_thread_concurrency",
    "large_pages",
)
#: Metadata that must agree between runs before they are compared (pyperf-style).
CHECKED_METADATA: tuple[str, ...] = ("hostname", "server_flavor", "server_version", "dataset_key")
METADATA_COLUMNS: tuple[str, ...] = (
    "hostname", "kernel", "cpu_model", "cpu_count", "mem_total_bytes", "datadir_device",
    "datadir_fstype", "server_flavor", "server_version", "dataset_key", "experiment_hash",
    "driver",
)
#: Sampler columns stored per tick (besides time stamps and ``status_z``).
SAMPLE_COLUMNS = (
    "lsn", "checkpoint_lsn", "pages_dirty", "pages_data", "pages_free", "mysqld_rss_bytes",
    "mysqld_vsz_bytes", "mysqld_cpu_user_s", "mysqld_cpu_sys_s", "driver_cpu_user_s",
    "driver_cpu_sys_s", "mysqld_ctxsw_voluntary", "mysqld_ctxsw_involuntary",
    "driver_ctxsw_voluntary", "driver_ctxsw_involuntary", "disk_reads", "disk_writes",
    "disk_read_sectors", "disk_write_sectors",
    "collect_s", "mysqld_rss_anon_bytes", "mysqld_rss_file_bytes", "mysqld_rss_shmem_bytes",
    "mysqld_anon_hugepages_bytes", "mysqld_hugetlb_bytes",
    # The whole host's CPU and the storage throttle group's own counters (what bound a run:
    # analysis/writes/bound.py).
    "host_cpu_busy_s", "host_cpu_idle_s", "host_cpu_steal_s", "group_read_ios",
    "group_write_ios", "group_read_bytes", "group_write_bytes",
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
    with open_for_reading(db) as rdb, rdb.session() as s:  # reads: a study bundle is fine
        yield s


@contextlib.contextmanager
def open_for_reading(db: DB) -> Iterator[ResultsDB | Session]:
    """``db`` as one open handle for a whole command's readings: a handle or session as it is,
    a path or URL opened read-only once (each reader given a path would open its own engine
    and check the schema's revision again) and closed afterwards."""
    if isinstance(db, ResultsDB | Session):
        yield db
        return
    handle = ResultsDB(db, create=False, write=False)
    try:
        yield handle
    finally:
        handle.dispose()


def chunks(ids: Sequence[int]) -> Iterable[list[int]]:
    """``ids`` in lists short enough for an IN clause."""
    ids = list(ids)
    for i in range(0, len(ids), _CHUNK):
        yield ids[i : i + _CHUNK]


def frame(rows: Sequence[Any], names: Sequence[str]) -> pd.DataFrame:
    """Rows → DataFrame column by column (pandas' row-wise constructor is ~5× slower)."""
    if not rows:
        return pd.DataFrame({n: pd.Series(dtype=object) for n in names})
    columns = list(zip(*rows, strict=True))
    # Text columns as an object array: pandas infers the same str dtype ~5× faster than from a
    # tuple (timestamps are text on SQLite: 90k of them per 500-run experiment).
    return pd.DataFrame({n: pd.Series(c, dtype=object) if isinstance(c[0], (dict, list))
                         else np.array(c, dtype=object) if isinstance(c[0], str)
                         else c for n, c in zip(names, columns, strict=True)})


def fetch(session: Session, stmt: Any, column: Any, ids: Sequence[int]) -> list[Any]:
    """Execute ``stmt`` for ``column IN ids`` in chunks on the raw connection (no ORM layer)."""
    conn = session.connection()
    rows: list[Any] = []
    sqlite = conn.dialect.name == "sqlite"
    for chunk in chunks(ids):
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


def utc(values: Any) -> pd.Series:
    """Timestamps (strings from SQLite, datetimes elsewhere) as tz-aware UTC; naive = UTC."""
    if isinstance(values, pd.Series) and pd.api.types.is_string_dtype(values.dtype):
        # Parsed from an object array: converting pandas' str column element by element to
        # object first costs ten times the parse itself.
        values = pd.Series(values.to_numpy(dtype=object), index=values.index, dtype=object)
    return pd.to_datetime(pd.Series(values, dtype=object), utc=True, format="ISO8601")


@dataclass(frozen=True)
class Window:
    """Timing of an experiment's runs, in seconds (``start``/``end`` after warmup)."""

    warmup: float
    duration: float
    start: float
    end: float
    report_interval: float
    #: ``whole`` (periodic runs' windows cut to whole cycles) or ``as-set``; experiments queued
    #: before the key existed are ``as-set``: their stored windows stand until re-judged.
    cycles: str = "as-set"

    @property
    def length(self) -> float:
        """Window length in seconds."""
        return self.end - self.start


def window_of(stored: dict[str, Any]) -> Window:
    """The measurement window the queue stored with an experiment (``experiments.window``).

    The rule that resolves it (default: the second half of the run) lives in one place,
    ``core.experiment.sections.WindowSpec.resolve``; the analysis only reads its result.
    """
    return Window(**{k: float(stored[k]) for k in
                     ("warmup", "duration", "start", "end", "report_interval")},
                  cycles=str(stored.get("cycles") or "as-set"))


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
    df["created_at"] = utc(df["created_at"]) if len(df) else df["created_at"]
    cdf = pd.DataFrame(cells, columns=["experiment_id", "cell_id"])
    rdf = pd.DataFrame(runs, columns=["experiment_id", "status"])
    df["n_cells"] = df["id"].map(cdf.groupby("experiment_id").size()).fillna(0).astype(int)
    df["n_runs"] = df["id"].map(rdf.groupby("experiment_id").size()).fillna(0).astype(int)
    for status in (RunStatus.DONE, RunStatus.FAILED):
        counts = rdf[rdf["status"] == status].groupby("experiment_id").size()
        df[status] = df["id"].map(counts).fillna(0).astype(int)
    df["other"] = df["n_runs"] - df["done"] - df["failed"]
    return df


@read_once
def experiment_info(db: DB, experiment: ExperimentRef = None) -> dict[str, Any]:
    """The experiment's id, name, description, stored spec (``stored``: a
    :class:`~core.experiment.stored.StoredExperiment`, read typed) and resolved
    :class:`Window`."""
    with session_scope(db) as s:
        exp = resolve_experiment(s, experiment)
        return {
            "id": exp.id,
            "name": exp.name,
            "description": exp.description,
            "stored": StoredExperiment.from_row(exp),
            "measurement_hash": exp.measurement_hash,
            "created_at": exp.created_at,
            "window": window_of(exp.window),
            "metric": dict(exp.metric),
        }


#: The columns of :func:`runs` read from the store, in the order :func:`_run_rows` selects them.
_RUN_FIELDS: tuple[str, ...] = (
    "run_id", "experiment_id", "cell_id", "cell_key", "position", "cell_label",
    "is_baseline", "knobs", "repetition", "attempt", "order_index", "status",
    "started_at", "measure_started_at", "finished_at", "error", "driver_summary",
    "window_start_s", *METADATA_COLUMNS, "extra",
)


#: The JSON columns of :data:`_RUN_FIELDS`: dicts in :func:`runs`'s frame on every backend.
_JSON_FIELDS = ("knobs", "driver_summary", "extra")


def _json_value(value: Any) -> Any:
    """A JSON column's value as a dict (or list); stored JSON text is parsed; SQL NULL (None,
    or the NaN pandas made of it) is None."""
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return None if isinstance(value, float) and math.isnan(value) else value


@read_once
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
        status, started_at, measure_started_at, finished_at, error, tpmc_driver``,
        ``window_start_s`` (a steady window's start, chosen per run), ``event_warnings`` (the
        runner's warnings, ``; ``-joined), ``disturbances`` (their disturbance kinds, ``, ``-
        joined), ``disturbed_action`` (the experiment's policy) and the metadata columns
        (``hostname, server_version, dataset_key…``, ``extra``).
    """
    with session_scope(db) as s:
        rows = _run_rows(s, experiment, run_ids)
        # Warnings the runner recorded while running (a host pause, a THP mode put back…):
        # they qualify the run's figures, so they travel with the run.
        specs = experiment_specs(s, sorted({int(r[1]) for r in rows}))
        warned = warning_events(s, [int(r[0]) for r in rows])
    df = pd.DataFrame.from_records([tuple(r) for r in rows], columns=list(_RUN_FIELDS))
    for c in ("started_at", "measure_started_at", "finished_at"):
        df[c] = utc(df[c])
    # Runs read by id from SQLite come through fetch()'s raw path: JSON columns as text.
    for c in _JSON_FIELDS:
        df[c] = [_json_value(v) for v in df[c]]
    df["is_baseline"] = df["is_baseline"].astype(bool)
    _add_warnings(df, warned)
    # The experiment's `disturbed:` policy (keep when not set: older experiments, the default).
    df["disturbed_action"] = [
        str(((specs.get(int(e)) or {}).get("disturbed") or {}).get("action", "keep"))
        for e in df["experiment_id"]]
    df["tpmc_driver"] = [
        float(d["tpmc"]) if isinstance(d, dict) and d.get("tpmc") is not None else math.nan
        for d in df["driver_summary"]
    ]
    df["superseded"] = _superseded(df)
    if not all_attempts:
        df = df[~df["superseded"]]
    names = knob_names(df["knobs"])
    for k in names:
        df[k] = [kn.get(k) if isinstance(kn, dict) else None for kn in df["knobs"]]
    df = df.sort_values(["position", "repetition", "attempt"]).reset_index(drop=True)
    df.attrs["knobs"] = names
    return df


def _run_rows(s: Session, experiment: ExperimentRef,
              run_ids: Sequence[int] | None) -> list[Any]:
    """The runs' rows in :data:`_RUN_FIELDS` order (timestamps as text): ``run_ids`` in
    chunks, else every run of the experiment in one query."""
    cols = [
        Run.id, Cell.experiment_id, Run.cell_id, Cell.cell_key, Cell.position, Cell.label,
        Cell.is_baseline, Cell.knobs, Run.repetition, Run.attempt, Run.order_index,
        Run.status, type_coerce(Run.started_at, String),
        type_coerce(Run.measure_started_at, String), type_coerce(Run.finished_at, String),
        Run.error, Run.driver_summary, Run.window_start_s,
        *[getattr(RunMetadata, c) for c in METADATA_COLUMNS], RunMetadata.extra,
    ]
    q = (
        select(*cols)
        .join(Cell, Run.cell_id == Cell.id)
        .outerjoin(RunMetadata, RunMetadata.run_id == Run.id)
    )
    if run_ids is not None:
        return fetch(s, q, Run.id, [int(r) for r in run_ids])
    exp = resolve_experiment(s, experiment)
    return s.connection().execute(q.where(Cell.experiment_id == exp.id)).all()


def done_runs_by_knobs(db: DB, experiment: str | None = None
                       ) -> list[tuple[str, dict[str, Any], int]]:
    """``(experiment name, cell knobs, run id)`` of every done run (of ``experiment`` only,
    when named): what ``plan`` looks up earlier periods of a configuration in."""
    q = (select(Experiment.name, Cell.knobs, Run.id)
         .join(Cell, Cell.experiment_id == Experiment.id)
         .join(Run, Run.cell_id == Cell.id)
         .where(Run.status == RunStatus.DONE))
    if experiment is not None:
        q = q.where(Experiment.name == experiment)
    with session_scope(db) as s:
        rows = s.execute(q.order_by(Run.id)).all()
    return [(str(n), _json_value(k) or {}, int(r)) for n, k, r in rows]


def experiment_specs(s: Session, experiment_ids: Sequence[int]) -> dict[int, Any]:
    """Experiment id → its stored spec (a dict), for these experiments (none: ``{}``)."""
    if not experiment_ids:
        return {}
    return dict(s.execute(select(Experiment.id, Experiment.spec)
                          .where(Experiment.id.in_(list(experiment_ids)))).all())


def warning_events(s: Session, run_ids: Sequence[int]) -> list[Any]:
    """The warnings the runner recorded for these runs: ``(run_id, message, kind)`` tuples in
    event order (per chunk of runs)."""
    return fetch(s, select(RunEvent.run_id, RunEvent.message, RunEvent.kind)
                 .where(RunEvent.level == "warning").order_by(RunEvent.id),
                 RunEvent.run_id, list(run_ids))


def _add_warnings(df: pd.DataFrame, warned: Sequence[Any]) -> None:
    """``event_warnings`` (every warning's message, ``; ``-joined) and ``disturbances`` (the
    kinds of disturbance the runner found, :data:`store.models.DISTURBANCE_KINDS`, ``, ``-
    joined) per run of ``df``."""
    event_warnings: dict[int, list[str]] = {}
    disturbed: dict[int, list[str]] = {}
    for run_id, message, kind in warned:
        event_warnings.setdefault(int(run_id), []).append(str(message))
        if kind in DISTURBANCE_KINDS and kind not in disturbed.get(int(run_id), []):
            disturbed.setdefault(int(run_id), []).append(str(kind))
    df["event_warnings"] = ["; ".join(event_warnings.get(int(r), [])) for r in df["run_id"]]
    df["disturbances"] = [", ".join(disturbed.get(int(r), [])) for r in df["run_id"]]


def _superseded(df: pd.DataFrame) -> pd.Series:
    """Per run: whether another attempt of its cell and repetition stands for it.

    One attempt stands for each cell and repetition: the newest, unless it was cancelled — a
    replacement called off (a queued rerun cancelled) leaves the run it was to replace
    standing. Only when every attempt was cancelled does the newest cancelled one stand.
    """
    key = [df["cell_id"], df["repetition"]]
    not_cancelled = df["attempt"].where(df["status"] != RunStatus.CANCELLED)
    standing = not_cancelled.groupby(key).transform("max").fillna(
        df["attempt"].groupby(key).transform("max"))
    return df["attempt"] != standing


def runs_in_words(rdf: pd.DataFrame) -> str:
    """What an experiment's runs are, for a "nothing to show yet" sentence.

    ``"4 runs: 2 failed, 2 queued"``; ``"no run"`` when the experiment has none (no cell, or
    nothing queued).
    """
    if rdf.empty:
        return "no run"
    counts = rdf["status"].value_counts().sort_index()
    return (f"{len(rdf)} run{'s' if len(rdf) > 1 else ''}: "
            + ", ".join(f"{n} {status}" for status, n in counts.items()))


def knob_names(knobs: Iterable[Any]) -> list[str]:
    """Knob names in first-seen order over a column of knob dicts."""
    seen: dict[str, None] = {}
    for kn in knobs:
        if isinstance(kn, dict):
            for k in kn:
                seen.setdefault(k, None)
    return list(seen)


def varying_knobs(df: pd.DataFrame) -> list[str]:
    """Knobs (from the ``knobs`` dict column) that take more than one value in ``df``."""
    names = knob_names(df["knobs"])
    out = []
    for k in names:
        values = {json.dumps(kn.get(k), sort_keys=True) for kn in df["knobs"]}
        if len(values) > 1:
            out.append(k)
    return out


@read_once
def run_context(db: DB, experiment: ExperimentRef, run_ids: Sequence[int] | None,
                 only_done: bool) -> tuple[pd.DataFrame, dict[int, Window]]:
    """The runs to read (``run_ids``, else the experiment's) and each experiment's window."""
    rdf = runs(db, experiment if run_ids is None else None, run_ids=run_ids)
    if only_done:
        rdf = rdf[rdf["status"] == RunStatus.DONE]
    with session_scope(db) as s:
        stored = s.execute(
            select(Experiment.id, Experiment.window).where(
                Experiment.id.in_([int(x) for x in rdf["experiment_id"].unique()])
            )
        ).all()
    return rdf, {int(i): window_of(window) for i, window in stored}


def _offset(extra: Any) -> float:
    """A run's recorded start offset in seconds (0 for runs without one)."""
    if isinstance(extra, dict):
        try:
            return float(extra.get("start_offset_s") or 0.0)
        except (TypeError, ValueError):
            return 0.0
    return 0.0


def window_columns(rdf: pd.DataFrame, windows: dict[int, Window]) -> pd.DataFrame:
    """Per run: start times, warmup and the window's start/end (indexed by run id)."""
    ctx = rdf[["run_id", "experiment_id", "started_at", "measure_started_at"]].copy()
    # dtype=float: with no run at all, an empty column would take the frame's datetime dtype.
    for col, attr in (("warmup", "warmup"), ("w_start", "start"), ("w_end", "end")):
        ctx[col] = pd.Series([getattr(windows[int(e)], attr) for e in ctx["experiment_id"]],
                             index=ctx.index, dtype=float)
    if "extra" in rdf:
        # pre_run.start_jitter: the run warmed up longer by its recorded start offset.
        ctx["warmup"] = ctx["warmup"] + pd.Series(
            [_offset(e) for e in rdf["extra"]], index=ctx.index, dtype=float)
    if "window_start_s" in rdf:
        # `window: {start: steady}`: each run's own start, as the runner chose and stored it.
        own = pd.to_numeric(rdf["window_start_s"], errors="coerce").astype(float)
        ctx["w_start"] = own.where(own.notna(), ctx["w_start"])
    return ctx.set_index("run_id")


# ---------------------------------------------------------------------------- status and variables


def counter_regex(names: Sequence[str]) -> re.Pattern[bytes]:
    """A regex that finds the named counters in a ``status_z`` JSON text."""
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
    return {m.group(1).decode(): float(m.group(2)) for m in counter_regex(names).finditer(text)}


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
        rows = fetch(s, q, RunVariable.run_id, [int(r) for r in run_ids])
    long = pd.DataFrame(rows, columns=["run_id", "name", "value"])
    wide = long.pivot(index="run_id", columns="name", values="value")
    wide.columns.name = None
    return wide.reindex([int(r) for r in run_ids])


# ---------------------------------------------------------------------------- intervals and samples

#: What :func:`interval_rows` returns per interval, in order (``detail`` last, when asked).
INTERVAL_FIELDS: tuple[str, ...] = (
    "run_id", "seq", "ts", "elapsed_s", "interval_s", "phase", "primary_count", "p95_ms",
    "p99_ms", "max_ms", "errors", "retries", "latency_bytes",
)
#: What :func:`sample_rows` returns per sample, in order (``status_z`` last, when asked).
SAMPLE_FIELDS: tuple[str, ...] = ("run_id", "seq", "scheduled_ts", "ts", "missed",
                                  *SAMPLE_COLUMNS)
#: (run, seq) keys per query of :func:`status_blobs` (two bound parameters each).
_KEY_CHUNK = 400


def interval_rows(s: Session, run_ids: Sequence[int], *, detail: bool) -> list[Any]:
    """Every stored interval of these runs as plain tuples, in :data:`INTERVAL_FIELDS` order
    (then the ``detail`` JSON as text when ``detail``); in no particular order.

    ``ts`` is text (parsed by :func:`utc`); ``latency_bytes`` is the size of the interval's
    latency histogram blob (0: none), the blob itself is not read.
    """
    cols = [
        Interval.run_id, Interval.seq, type_coerce(Interval.ts, String), Interval.elapsed_s,
        Interval.interval_s, Interval.phase, Interval.primary_count, Interval.p95_ms,
        Interval.p99_ms, Interval.max_ms, Interval.errors, Interval.retries,
        func.coalesce(func.length(Interval.latency_z), 0),
    ]
    if detail:
        cols.append(type_coerce(Interval.detail, String))
    return fetch(s, select(*cols), Interval.run_id, run_ids)


def sample_rows(s: Session, run_ids: Sequence[int], *, status: bool) -> list[Any]:
    """Every stored sample of these runs as plain tuples, in :data:`SAMPLE_FIELDS` order (then
    the compressed ``status_z`` when ``status``); in no particular order, time stamps as
    text."""
    cols = [Sample.run_id, Sample.seq, type_coerce(Sample.scheduled_ts, String),
            type_coerce(Sample.ts, String), Sample.missed,
            *[getattr(Sample, c) for c in SAMPLE_COLUMNS]]
    if status:
        cols.append(Sample.status_z)
    return fetch(s, select(*cols), Sample.run_id, run_ids)


def status_blobs(s: Session, keys: Sequence[tuple[int, int]]) -> Iterator[Any]:
    """``(run_id, seq, status_z)`` of the samples at these ``(run_id, seq)`` keys, yielded as
    each query of :data:`_KEY_CHUNK` keys returns them (absent samples are skipped)."""
    for start in range(0, len(keys), _KEY_CHUNK):
        chunk = keys[start:start + _KEY_CHUNK]
        yield from s.execute(select(Sample.run_id, Sample.seq, Sample.status_z).where(
            tuple_(Sample.run_id, Sample.seq).in_(chunk)))


def sample_levels(s: Session, run_id: int) -> list[Any]:
    """One run's samples in ``seq`` order as rows with attributes ``seq, ts`` (a datetime),
    ``missed, lsn, checkpoint_lsn, pages_dirty, pages_data, pages_free, status_z``."""
    return s.execute(select(Sample.seq, Sample.ts, Sample.missed, Sample.lsn,
                            Sample.checkpoint_lsn, Sample.pages_dirty, Sample.pages_data,
                            Sample.pages_free, Sample.status_z)
                     .where(Sample.run_id == run_id).order_by(Sample.seq)).all()


def run_samples(s: Session, run_id: int) -> list[Sample]:
    """One run's samples as :class:`store.models.Sample` objects, in ``seq`` order."""
    return list(s.scalars(select(Sample).where(Sample.run_id == run_id).order_by(Sample.seq)))


def sample_aggregates(s: Session, run_ids: Sequence[int], summed: Sequence[str]) -> list[Any]:
    """One tuple per run that has samples: ``(run_id, samples, max seq, missed ticks, first
    ts, last ts, first scheduled_ts, *sums of the ``summed`` columns, total status_z size)``,
    time stamps as text (what a run's samples are, in a few figures)."""
    cols = [Sample.run_id, func.count(), func.max(Sample.seq),
            func.sum(cast(Sample.missed, Integer)),
            func.min(type_coerce(Sample.ts, String)), func.max(type_coerce(Sample.ts, String)),
            func.min(type_coerce(Sample.scheduled_ts, String)),
            *[func.sum(getattr(Sample, c)) for c in summed],
            func.sum(func.length(Sample.status_z))]
    return fetch(s, select(*cols).group_by(Sample.run_id), Sample.run_id, run_ids)


# ---------------------------------------------------------------------------- latency histograms


def latency_blob_sizes(s: Session, run_ids: Sequence[int]) -> list[Any]:
    """``(run_id, intervals with a histogram blob, their total size in bytes)`` per run that
    has intervals."""
    return fetch(s, select(Interval.run_id, func.count(Interval.latency_z),
                           func.coalesce(func.sum(func.length(Interval.latency_z)), 0))
                 .group_by(Interval.run_id), Interval.run_id, run_ids)


def measured_latency_blobs(s: Session, run_ids: Sequence[int], max_bytes: int) -> list[Any]:
    """``(run_id, seq, latency_z, its length)`` of these runs' measure-phase intervals that
    hold a latency histogram blob; in no particular order. A value longer than ``max_bytes``
    is not read (None in its place: a hostile database's gigabyte blob stays on disk)."""
    size = func.length(Interval.latency_z)
    return fetch(s, select(Interval.run_id, Interval.seq,
                           case((size <= max_bytes, Interval.latency_z), else_=None), size)
                 .where(Interval.latency_z.is_not(None), Interval.phase == "measure"),
                 Interval.run_id, run_ids)


# ---------------------------------------------------------------------------- run events


def disturbance_events(s: Session, run_ids: Sequence[int]) -> list[Any]:
    """``(run_id, kind, message, evidence)`` of these runs' disturbance warnings (kinds of
    :data:`store.models.DISTURBANCE_KINDS`), in event order per chunk of runs; ``evidence``
    is the stored JSON text or None."""
    return fetch(s, select(RunEvent.run_id, RunEvent.kind, RunEvent.message, RunEvent.evidence)
                 .where(RunEvent.level == "warning", RunEvent.kind.in_(DISTURBANCE_KINDS))
                 .order_by(RunEvent.id), RunEvent.run_id, run_ids)


def storage_evidence(s: Session, run_ids: Sequence[int]) -> list[Any]:
    """``(run_id, evidence)`` of these runs' ``storage`` events (the storage proof, JSON text
    or None); in no particular order."""
    return fetch(s, select(RunEvent.run_id, RunEvent.evidence)
                 .where(RunEvent.kind == "storage"), RunEvent.run_id, run_ids)


# ---------------------------------------------------------------------------- hosts


def host_rows(s: Session, experiment_id: int, columns: Sequence[str]) -> list[Any]:
    """The named :class:`store.models.RunMetadata` columns of every run of an experiment that
    has metadata, one row (a tuple of those values, in that order) per run."""
    return s.execute(select(*(getattr(RunMetadata, c) for c in columns))
                     .join(Run, Run.id == RunMetadata.run_id)
                     .where(Run.cell.has(experiment_id=experiment_id))).all()


def step_rates(db: DB, experiment_id: int) -> dict[int, float]:
    """Run id → the rate the run held as a rate search's step, for the experiment's runs that
    were steps (``runs.step_rate``; docs/tpcc.md, "The highest rate under a target")."""
    q = (select(Run.id, Run.step_rate).join(Cell, Run.cell_id == Cell.id)
         .where(Cell.experiment_id == experiment_id, Run.step_rate.is_not(None)))
    with session_scope(db) as s:
        return {int(r): float(v) for r, v in s.execute(q)}
