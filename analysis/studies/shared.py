"""What every study's tables script shares (``docs/*/…_tables.py``): markdown tables, a private
copy of the study's database, the sessions table, and the script's entry point.

A committed study's write-up quotes tables its script prints from the study's database, and a
test holds the two equal; the scripts differ in their tables, not in how they open the
database or print.
"""

from __future__ import annotations

import math
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.comparisons import hosts
from analysis.steadiness.disturbed import counted
from analysis.tables import frames
from analysis.tables.frames import Frames
from core.errors import FlushbenchError
from store.migrate import sqlite_copy


def num(value: Any, fmt: str, dash: str = "–") -> str:
    """A table cell's number in ``fmt``, or ``dash`` for a missing, non-numeric or non-finite
    one."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return dash
    return dash if not math.isfinite(v) else format(v, fmt)


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """A markdown table (every cell already text)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def private_copy(db: str, folder: Path) -> Path:
    """A consistent copy of ``db`` in ``folder`` (SQLite's backup API, read-only: a worker may
    be writing the study's database, and opening a committed one must not change it)."""
    target = folder / "study.sqlite"
    sqlite_copy(Path(db).resolve(), target)
    return target


def host_table(fr: Frames) -> str:
    """Each session (host id) with its counted runs and their times (UTC), in the order the
    sessions ran."""
    rs = fr.run_summary[counted(fr.run_summary)].copy()
    rs["host"] = hosts.host_of(rs)
    rows = []
    for host, g in sorted(rs.groupby("host"), key=lambda hg: hg[1]["run_id"].min()):
        ids = sorted(int(i) for i in g["run_id"])
        start = pd.to_datetime(g["started_at"]).min()
        end = pd.to_datetime(g["finished_at"]).max()
        rows.append([f"`{host}`", str(len(ids)), ", ".join(map(str, ids)),
                     f"{start:%Y-%m-%d %H:%M}–{end:%H:%M}"])
    return markdown_table(["host (session)", "counted runs", "run ids",
                           "first start – last end (UTC)"], rows)


def counted_window_samples(db: Path, fr: Frames) -> pd.DataFrame:
    """The samples inside the measurement window of the experiment's counted runs."""
    window = frames.samples(db, fr.experiment["id"])
    window = window[window["in_window"]]
    ids = fr.run_summary.loc[counted(fr.run_summary), "run_id"]
    return window[window["run_id"].isin(ids)]


def flushing_by_run(window: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """Per run, the window means of its checkpoint age (% of the maximum) and dirty pages (%
    of the pool), and its highest checkpoint age."""
    means = window.groupby("run_id")[["checkpoint_age_pct", "dirty_pct"]].mean()
    peaks = window.groupby("run_id")["checkpoint_age_pct"].max()
    return means, peaks


def cells_with_runs(fr: Frames, run_ids: Iterable[int]) -> list[tuple[Any, list[int]]]:
    """Each cell (a row of the cell summary), in the experiment's row order, with those of
    ``run_ids`` that are its runs; cells with none are left out."""
    cell_of = fr.run_summary.set_index("run_id")["cell_id"]
    ids = list(run_ids)
    out = []
    for cell in fr.cell_summary.sort_values("position").itertuples():
        mine = [r for r in ids if cell_of[r] == cell.cell_id]
        if mine:
            out.append((cell, mine))
    return out


def script_main(argv: list[str], usage: str, script: str, study_db: str,
                print_tables: Callable[[Path], None]) -> int:
    """A tables script's entry point: ``print_tables`` of a private copy of the database
    ``argv`` names; 2, with one line on stderr, on usage or an unreadable database."""
    if len(argv) != 1:
        print(usage, file=sys.stderr)
        return 2
    if not Path(argv[0]).is_file():
        print(f"{script}: {argv[0]}: no such results database (the study's is {study_db})",
              file=sys.stderr)
        return 2
    try:
        with tempfile.TemporaryDirectory(prefix=f"{Path(script).stem}-") as folder:
            print_tables(private_copy(argv[0], Path(folder)))
    except (sqlite3.DatabaseError, FlushbenchError) as exc:
        print(f"{script}: {argv[0]}: {exc}", file=sys.stderr)
        return 2
    return 0
