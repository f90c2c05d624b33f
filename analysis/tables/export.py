"""Export an experiment's tables (intervals, samples, run summaries) to CSV or Parquet."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import AnalysisError, quote
from core.filecheck import input_written_over
from store.models import RunStatus

if TYPE_CHECKING:
    import pandas as pd

    from core.experiment.spec import ExperimentSpec


#: The names a file of each format may have (pandas compresses a CSV by these suffixes).
SUFFIXES = {"csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst"),
            "parquet": (".parquet", ".pq")}


def _inputs(db: Any, url: str) -> list[Path]:
    """The files the export reads: the database or bundle ``--db`` names (or
    ``$FLUSHBENCH_DB``, or the default), and the SQLite file it resolved to (a bundle's copy)."""
    from store.db import DEFAULT_DB_PATH

    found = []
    if isinstance(db, (str, Path)) or db is None:
        value = str(db) if db is not None else os.environ.get("FLUSHBENCH_DB",
                                                              str(DEFAULT_DB_PATH))
        if "://" not in value:
            found.append(Path(value).expanduser())
    if url.startswith("sqlite:///"):
        found.append(Path(url.removeprefix("sqlite:///")))
    return found


def check_target(path: Path, fmt: str, inputs: list[Path]) -> None:
    """Refuse an export target that is one of the files read (``--force`` or not), and a name
    whose suffix is not the format's (Parquet under ``.csv`` is a file no tool reads right).

    Raises
    ------
    AnalysisError
        Naming the target, the file it would write over or the suffix, with the fix.
    """
    source = input_written_over(path, inputs)
    if source is not None:
        what = ("the results database itself" if source in inputs
                else f"the results database's {source.name}")
        raise AnalysisError(f"that is {what}: the export would write over what it reads",
                            where=str(path), fix="write the export to another file")
    name = path.name
    if not name.lower().endswith(SUFFIXES[fmt]):
        other = "parquet" if fmt == "csv" else "csv"
        says = next((s for s in SUFFIXES[other] if name.lower().endswith(s)), None)
        base = name[:-len(says)] if says else (path.stem or "export")
        raise AnalysisError(
            f"the export is {fmt}, and {quote(name)} does not end in"
            f" {' or '.join(SUFFIXES[fmt][:2] if fmt == 'parquet' else SUFFIXES[fmt][:1])}",
            where=str(path),
            fix=(f"pass --format {other} for a {says} file, or " if says else "")
            + f"name it {base}{SUFFIXES[fmt][0]}")


def export(db: Any, experiment: str | int | None, out: Path | str, *, fmt: str = "csv",
           what: str = "intervals", force: bool = False) -> Path:
    """Library form of ``flushbench export`` (returns the written path).

    Raises
    ------
    AnalysisError
        An unknown format or table; ``out`` is a file the export reads — the database, its
        ``-wal``/``-shm``/``-journal``, the bundle ``--db`` names, by path, link or hard link —
        (never written, not even with ``force``); ``out``'s suffix is not the format's;
        ``out`` exists and ``force`` is false; ``out`` is a directory; the experiment has no
        row of that table (nothing finished yet): an empty file would look like a lost export.
    """
    from store.db import resolve_url

    if fmt not in ("csv", "parquet"):
        raise AnalysisError(f"unknown format {fmt!r}", where="--format", fix="use csv or parquet")
    if what not in ("intervals", "samples", "runs"):
        raise AnalysisError(f"unknown table {what!r}", where="--what",
                            fix="use intervals, samples or runs")
    path = Path(out)
    check_target(path, fmt, _inputs(db, ""))  # before a bundle is unpacked to be read
    url = resolve_url(db if isinstance(db, (str, Path)) or db is None else None, write=False)
    check_target(path, fmt, _inputs(db, url))
    if path.is_dir():
        raise AnalysisError("the export target is a directory", where=str(path),
                            fix="name a file, e.g. -o results.csv")
    if path.exists() and not force:
        raise AnalysisError("the export file exists already", where=str(path),
                            fix="choose another name, or pass --force to overwrite it")
    from analysis.reading.one_reading import one_reading
    from analysis.reading.query import open_for_reading

    # One handle and one reading for every table below (each given a path opens its own).
    with open_for_reading(db) as handle, one_reading():
        df = _table(handle, experiment, what)
    # Dict columns (knobs, extra, driver_summary) become JSON text in both formats.
    import json

    for col in df.columns:
        if any(isinstance(v, (dict, list)) for v in df[col]):
            df[col] = df[col].map(lambda v: json.dumps(v, sort_keys=True, default=str))
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


def _table(db: Any, experiment: str | int | None, what: str) -> pd.DataFrame:
    """The experiment's ``what`` table as the export writes it (its metric's column, each
    run's row name); refused when it has no row."""
    from analysis.reading.memory import MB, MEMORY_COLUMNS
    from analysis.reading.metric import metric_view
    from analysis.tables import frames

    info = frames.experiment_info(db, experiment)
    m = metric_view(info)
    metric_col = m.name.lower()
    if what == "intervals":  # `what` was checked above
        df = frames.intervals(db, experiment)
        df[metric_col] = df[m.column]  # the per-interval rate in the experiment's metric
    elif what == "samples":
        df = frames.samples(db, experiment)
        for raw, name in MEMORY_COLUMNS.items():
            if raw in df and name not in df:
                df[name] = df[raw] / MB
    else:
        df = frames.run_summary(db, experiment)
        df[metric_col] = df["notpm"] * m.scale  # the window average in the metric's unit
        df = _with_efficiency(db, df, info["stored"].spec)
    if metric_col != "notpm":
        df = _in_metric(df, metric_col, m.scale)
    if df.empty:
        # An empty file would look like an export that lost its rows: say why there are none.
        rdf = frames.runs(db, info["id"])
        finished = bool((rdf["status"] == RunStatus.DONE).any())
        raise AnalysisError(
            f"experiment {info['name']!r} has no {what} to export"
            + (": its done runs recorded none" if finished else " yet")
            + f" ({frames.runs_in_words(rdf)})",
            where=f"--what {what}",
            fix="`flushbench show RUN` tells what a done run recorded" if finished else
            "export again once a run is done (`flushbench status` shows the queue)",
        )
    return _with_row_names(df, frames.runs(db, info["id"], all_attempts=True),
                           info["stored"].spec)


def _with_row_names(df: pd.DataFrame, runs: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """``df`` with a ``row`` column after ``run_id``: the name each run's row has in the
    experiment file (``dw-on-50``), else only the knobs that differ from its baseline
    (:func:`analysis.reading.rows.row_labels`) — what the report and the figures call it,
    so a CSV joins to them."""
    from analysis.reading.rows import row_labels

    by_cell = row_labels(spec, runs.drop_duplicates("cell_id"))
    run_row = {int(r.run_id): by_cell[int(r.cell_id)] for r in runs.itertuples()}
    out = df.drop(columns="row", errors="ignore")
    out.insert(int(list(out.columns).index("run_id")) + 1 if "run_id" in out else 0, "row",
               out["run_id"].map(lambda r: run_row.get(int(r))))
    return out


def _with_efficiency(db: Any, run_summary: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """The run summaries with each done run's cost per transaction of the metric
    (``mysqld_cpu_us_per_tx`` … ``row_lock_waits_per_tx``: :func:`analysis.writes.cost.with_cost`),
    its write-path ledger (``ledger_*``: :func:`analysis.writes.ledger.with_ledger`) and what bound
    it (``bound``, ``bound_also``, ``bound_text``: :mod:`analysis.writes.bound`)."""
    from analysis.tables import frames
    from analysis.writes import bound, cost, ledger
    from analysis.writes.run_digest import run_digests

    done = [int(r) for r in run_summary.loc[run_summary["status"] == RunStatus.DONE, "run_id"]]
    digests = run_digests(db, done)
    intervals = frames.intervals(db, run_ids=done, detail=False)
    out = cost.with_cost(run_summary, cost.for_runs(digests, intervals, run_summary))
    # The write-path ledger's columns (ledger_*: analysis/writes/ledger.py, docs/statistics.md).
    out = ledger.with_ledger(out, ledger.for_runs(db, digests, intervals, run_summary))
    what = bound.per_run(db, run_summary, digests, spec).reindex(out["run_id"].astype(int))
    for column in ("bound", "bound_also", "bound_text"):
        out[column] = what[column].to_numpy()
    return out


def _in_metric(df: pd.DataFrame, metric_col: str, scale: float) -> pd.DataFrame:
    """The summaries' per-minute ``notpm*`` columns under the experiment's metric name.

    ``notpm_mean`` becomes ``tps_mean`` (scaled to the metric's unit), ``rank_notpm`` becomes
    ``rank_tps`` (a rank is not scaled); the ``notpm`` names themselves are dropped, so a
    sysbench export never names a TPC-C figure.
    """
    out = df.copy()
    for col in [c for c in df.columns if "notpm" in c]:
        new = col.replace("notpm", metric_col)
        if new not in out:
            out[new] = df[col] if col.startswith("rank") else df[col] * scale
        out = out.drop(columns=col)
    return out
