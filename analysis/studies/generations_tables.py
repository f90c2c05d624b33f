"""The tables of the generations study's write-up (docs/study-generations/README.md), from its
database.

    .venv/bin/python -m analysis.studies.generations_tables DB [EXPERIMENT]

(the study's database: ``docs/study-generations/generations.sqlite``; EXPERIMENT defaults
to ``generations``, the servers of 2011 to 11.4 — ``generations-today`` adds MySQL 9.7 and
MariaDB 11.8 under the whole-cycle window rules).

Every figure the write-up states about the runs is printed here, as markdown:

1. **rows** — per row (server × defaults / doublewrite off / fast-storage advice): the
   server's own version, counted runs, NOTPM (mean, 95 % interval), the row against *its
   server's* defaults with the verdict of the one rule (`analysis.comparisons.compare`) and
   its range over every plausible window start (``starts``; a verdict that changes there is
   ``window-dependent``), median stability score and interval CV, runs that oscillate,
   New-Order p99 over the window and its stall seconds (`analysis.response.latency`), and what
   bound the runs (`analysis.writes.bound`);
2. **generations** — each server's defaults against MySQL 5.5's, by the same rule (blocked by
   round) and over the same window starts (`analysis.comparisons.cross_server`): throughput,
   stability, p99 and the price — mysqld and client CPU, KiB the datadir's disk received and
   row-lock waits per New-Order (`analysis.writes.cost`), what those KiB come to per second at
   the row's throughput, peak resident memory (`analysis.reading.memory`);
3. **I/O per New-Order** — write operations and KiB per New-Order split into data pages,
   doublewrite and redo (`analysis.tables.io_breakdown`), medians of each row's runs;
4. **flushing state** — each row's dirty pages and checkpoint age over the window;
5. **hosts** — which session measured which runs, and when.

Read-only: it opens a private copy (a worker may be writing the study's database).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.comparisons import compare as comparison
from analysis.comparisons import cross_server, scorecard
from analysis.reading.memory import cell_memory
from analysis.reading.query import session_scope
from analysis.response import latency
from analysis.steadiness.disturbed import counted
from analysis.studies.shared import (
    cells_with_runs,
    counted_window_samples,
    flushing_by_run,
    host_table,
    markdown_table,
    num,
    script_main,
)
from analysis.tables import efficiency, frames, io_breakdown
from analysis.writes.run_digest import run_digests
from core.experiment.spec import ExperimentSpec

EXPERIMENT = "generations"
#: The generation every other is compared with: 2011's MySQL 5.5 at its defaults.
OLDEST = "mysql-5.5"


def kind(knobs: dict[str, Any]) -> str:
    """The row's question: ``defaults``, ``dw-off`` or ``fast`` (the experiment file's rows)."""
    if knobs.get("doublewrite") is False:
        return "dw-off"
    if float(knobs.get("io_capacity") or 200) > 200:
        return "fast"
    return "defaults"


def row_names(spec: ExperimentSpec, cells: pd.DataFrame) -> dict[int, str]:
    """Cell id → the row's name in the experiment file (``mariadb-10.2-dw-off``), else
    ``server · kind``."""
    named = scorecard.row_names(spec, cells)
    return {int(c.cell_id): named.get(int(c.cell_id))
            or f"{(c.knobs or {}).get('server', '?')} · {kind(c.knobs or {})}"
            for c in cells.itertuples()}


def _ratio(r: Any) -> str:
    """A ratio with its interval, or ``–``."""
    if not np.isfinite(r.ratio):
        return "–"
    ci = (f" ({r.ratio_ci_low:.2f}–{r.ratio_ci_high:.2f})"
          if np.isfinite(r.ratio_ci_low) else "")
    return f"{r.ratio:.2f}×{ci}"


def _starts(c: Any) -> str:
    """`` · starts 0.86–0.94``: a row's ratio to its own baseline over every plausible window
    start (``compare``'s window sensitivity), when it moves at two decimals."""
    return cross_server.starts_range(pd.Series({"window_ratio_low": c.window_ratio_low,
                                                "window_ratio_high": c.window_ratio_high}))


def row_table(cmp: comparison.Comparison, names: dict[int, str], lat: latency.Latency,
              eff: efficiency.Efficiency) -> str:
    """Table 1: each row against its own server's defaults, its stability, p99 and bound."""
    rs = cmp.frames.run_summary[counted(cmp.frames.run_summary)]
    versions = rs.groupby("cell_id")["server_version"].first()
    rows = []
    for c in cmp.cells.sort_values("position").itertuples():
        cid = int(c.cell_id)
        mine = rs[rs["cell_id"] == cid]
        periods = sorted(f"{p:.0f}" for p in mine.loc[mine["oscillates"].astype(bool),
                                                      "period_s"])
        osc = f"{len(periods)} of {len(mine)}" + (f" ({', '.join(periods)} s)"
                                                   if periods else "")
        own = "–" if c.verdict == comparison.BASELINE else \
            f"{_ratio(c)} {c.verdict}{_starts(c)}"
        p99 = lat.cells.loc[cid] if cid in lat.cells.index else None
        bound = eff.bound_cells.loc[cid] if cid in eff.bound_cells.index else None
        ci = (f" ({c.notpm_ci_low:,.0f}–{c.notpm_ci_high:,.0f})"
              if np.isfinite(c.notpm_ci_low) and np.isfinite(c.notpm_ci_high) else "")
        rows.append([
            f"`{names[cid]}`", str(versions.get(cid, "–")), str(len(mine)),
            f"{c.notpm_mean:,.0f}{ci}" if len(mine) else "–",
            own, num(c.score_median, ".0f"), num(c.cv_pct_median, ".1f"),
            osc if len(mine) else "–",
            "–" if p99 is None or not np.isfinite(p99.value_ms) else
            f"{p99.value_ms:,.0f} ms (stalls {num(p99.stall_s_median, '.0f')} s)",
            "–" if bound is None else f"{bound.bound} ({bound.bound_runs})",
        ])
    return markdown_table(["row", "version", "runs", "NOTPM (95 % CI)", "÷ its server's defaults",
                "stability (median)", "interval CV % (median)", "runs that oscillate",
                f"New-Order p{lat.view.percentile:g} (median of runs; stall s)",
                "bound (runs)"], rows)


def generations_table(cmp: comparison.Comparison, names: dict[int, str],
                      lat: latency.Latency, eff: efficiency.Efficiency,
                      mem: pd.DataFrame) -> str:
    """Table 2: each server's defaults against MySQL 5.5's — throughput by the one rule over
    every plausible window start (:func:`analysis.comparisons.cross_server.cross_server`, the
    report's cross-server part), stability, p99 and what each New-Order cost."""
    defaults = {(c.knobs or {}).get("server"): int(c.cell_id)
                for c in cmp.cells.sort_values("position").itertuples()
                if kind(c.knobs or {}) == "defaults"}
    oldest = defaults.get(OLDEST)
    cross = cross_server.cross_server(cmp, lat.cells, eff.ledger_cells, reference=oldest)
    held = ({int(r.cell_id): r for _, r in cross.rows.iterrows()}
            if cross is not None else {})
    cost = eff.cost_cells
    rows = []
    for cid in defaults.values():
        c = cmp.cells.set_index("cell_id").loc[cid]
        r = held.get(cid)
        if cid == oldest or r is None:
            throughput = "–"
        else:
            throughput = (f"{r['ratio']:.2f}× ({r['ci_low']:.2f}–{r['ci_high']:.2f})"
                          f" {r['verdict']}" if np.isfinite(r["ci_low"]) else
                          f"{num(r['ratio'], '.2f', '')}{'× ' if np.isfinite(r['ratio']) else ''}"
                          f"{r['verdict']}") + cross_server.starts_range(r)
        k = cost.loc[cid] if cid in cost.index else None
        p99 = lat.cells.loc[cid, "value_ms"] if cid in lat.cells.index else math.nan
        rss = mem.loc[cid, "rss_peak_mb"] if cid in mem.index else math.nan
        rows.append([
            f"`{names[cid]}`", num(c.notpm_mean, ",.0f"), throughput,
            num(c.score_median, ".0f"), "–" if not np.isfinite(p99) else f"{p99:,.0f} ms",
            "–" if k is None else f"{k.mysqld_cpu_us / 1000:.2f} + {k.client_cpu_us / 1000:.2f}",
            "–" if k is None else f"{k.write_kib:.0f}",
            # What those bytes per New-Order come to at the row's throughput: the card's limit
            # is 10 MiB/s, so a row that writes more per New-Order completes fewer.
            "–" if k is None else f"{c.notpm_mean * k.write_kib / 60 / 1024:.1f}",
            "–" if k is None else f"{k.row_lock_waits:.2f}",
            "–" if not np.isfinite(rss) else f"{rss:,.0f} MB",
        ])
    return markdown_table(["server at its defaults", "NOTPM",
                           "÷ MySQL 5.5's defaults (95 % CI, verdict)", "stability (median)",
                           f"New-Order p{lat.view.percentile:g}",
                           "CPU ms per New-Order (mysqld + client)", "KiB written per New-Order",
                           "MiB/s written (NOTPM × KiB ÷ 60)",
                           "row-lock waits per New-Order", "peak RSS"], rows)


def io_table(db: Path, fr: frames.Frames, names: dict[int, str]) -> str:
    """Table 3: write operations and KiB per New-Order by part, medians of each row's runs."""
    runs = io_breakdown.per_run(db, fr)
    ids = set(fr.run_summary.loc[counted(fr.run_summary), "run_id"])
    table = runs[runs.index.isin(ids)].groupby("cell_id").median(numeric_only=True)
    parts = [p for p, *_ in io_breakdown.PARTS]
    rows = []
    for cell in fr.cell_summary.sort_values("position").itertuples():
        if cell.cell_id not in table.index:
            continue
        t = table.loc[cell.cell_id]
        rows.append([f"`{names[int(cell.cell_id)]}`"]
                    + [f"{t[f'{p} ops']:.2f}" for p in parts]
                    + [f"{t[f'{p} KiB']:.0f}" for p in parts]
                    + [f"{sum(t[f'{p} KiB'] for p in parts):.0f}"])
    return markdown_table(["row", *(f"{p} writes" for p in parts), *(f"{p} KiB" for p in parts),
                "KiB total"], rows)


def flushing_table(db: Path, fr: frames.Frames, names: dict[int, str]) -> str:
    """Table 4: each row's dirty pages (% of the pool) and checkpoint age (% of its server's
    maximum) over the window: medians of the runs' window means, and the highest age."""
    window = counted_window_samples(db, fr)
    means, peaks = flushing_by_run(window)
    rows = []
    for cell, mine in cells_with_runs(fr, means.index):
        m = means.loc[mine]
        rows.append([f"`{names[int(cell.cell_id)]}`",
                     f"{m['dirty_pct'].median():.0f} ({m['dirty_pct'].min():.0f}–"
                     f"{m['dirty_pct'].max():.0f})",
                     num(m["checkpoint_age_pct"].median(), ".0f"),
                     num(peaks.loc[mine].max(), ".0f")])
    return markdown_table(["row", "dirty % (median of run means; range)",
                "checkpoint age % of max (median of run means)",
                "highest checkpoint age % of max"], rows)


def print_tables(db: Path, experiment: str = EXPERIMENT) -> None:
    """Every table of the write-up, as markdown, from the database at ``db`` (the study's
    experiment: ``generations``, or ``generations-today`` with today's servers)."""
    with session_scope(str(db)) as s:
        cmp = comparison.compare(s, experiment)
        fr = cmp.frames
        names = row_names(fr.experiment["stored"].spec, cmp.cells)
        rs = fr.run_summary
        digest = run_digests(s, [int(r) for r in rs.loc[rs["status"] == "done", "run_id"]])
        eff = efficiency.load(s, fr, digest)
        lat = latency.load(s, fr)
        mem = cell_memory(digest.memory, rs)
        mem = mem.set_index("cell_id") if "cell_id" in mem.columns else mem
        print("## Rows\n\n" + row_table(cmp, names, lat, eff))
        print("\n## Generations\n\n" + generations_table(cmp, names, lat, eff, mem))
    print("\n## I/O per New-Order\n\n" + io_table(db, fr, names))
    print("\n## Flushing state\n\n" + flushing_table(db, fr, names))
    print("\n## Hosts\n\n" + host_table(fr))


def main(argv: list[str]) -> int:
    """Print every table (``DB [EXPERIMENT]``); 2 on usage or an unreadable database."""
    experiment = argv[1] if len(argv) == 2 else EXPERIMENT
    return script_main(argv[:1] if len(argv) == 2 else argv, __doc__.split("\n\n")[1],
                       "generations_tables.py", "docs/study-generations/generations.sqlite",
                       lambda db: print_tables(db, experiment))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
