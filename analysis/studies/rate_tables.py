"""The tables of the fixed-rate study's write-up (docs/study-rate/README.md), from its databases.

    .venv/bin/python -m analysis.studies.rate_tables DB

DB is either study's database: ``docs/study-rate/rate-2011.sqlite`` (the 2011 post's rows at
one fixed rate, ``experiments/rate-2011.yaml``) or ``docs/study-rate/rate-2011-search.sqlite``
(the highest rate each row holds under a p99 target, ``experiments/rate-2011-search.yaml``);
the script prints the tables of whichever it holds, as markdown:

1. **rows** (fixed rate) — per row: its server and flushing settings, counted runs, the
   lowest window NOTPM of its runs against the target, the window intervals below 95 % of
   it and the largest backlog; response time timed from each transaction's scheduled start
   with stalls and in-flight waits counted (p99 of the row's runs merged, the runs' own p99
   range, p99.9 and the longest wait: :mod:`analysis.response.latency`); the p99 against the
   baseline by the one verdict rule (a row that missed its rate is never compared); stall
   seconds; the buffer pool's dirty share and checkpoint age over the window; data pages
   written per New-Order (the write-path ledger); and the p99 ratio's range and verdicts over
   the plausible window starts (:mod:`analysis.response.latency_windows`: the same length,
   never before a run's steady point) and with every run's window starting 30 s and 60 s
   later (:data:`LATER`: shorter, as the runs end with their windows);
2. **runs** (fixed rate) — the same figures per run, with its block and start;
3. **search** (rate search) — per row, the highest rate held under the target with the
   evidence of every step (:mod:`analysis.response.rate_search`);
4. **hosts** — which session measured which runs, and when.

Read-only: it opens a private copy (a worker may be writing the study's database).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.comparisons import compare as comparison
from analysis.comparisons import scorecard
from analysis.reading.query import session_scope
from analysis.response import fixed_rate, latency, latency_windows, rate_search
from analysis.steadiness.disturbed import counted
from analysis.studies.shared import (
    counted_window_samples,
    flushing_by_run,
    host_table,
    markdown_table,
    num,
    script_main,
)
from analysis.tables import efficiency, frames
from analysis.writes.run_digest import run_digests
from core.errors import FlushbenchError

#: The experiments a database of the study holds: the fixed rate, and the search.
FIXED = "rate-2011"
SEARCH = "rate-2011-search"
#: The committed study's database, named when the one given holds neither experiment.
STUDY_DB = "docs/study-rate/rate-2011.sqlite (its search: rate-2011-search.sqlite)"
MIB = 1 << 20
#: The later window starts the p99 verdicts are also judged at, in report intervals (10 s).
LATER = (3, 6)


def settings_text(knobs: dict[str, Any]) -> str:
    """A row's flushing settings as the experiment file writes them: ``dw on · dirty 75 ·
    io 200 · redo 80M`` and, where set, Percona's checkpoint method and neighbour flushing."""
    size = knobs.get("log_file_size")
    redo = f"{int(size) // MIB}M" if isinstance(size, int | float) and size >= MIB \
        else str(size)
    parts = [f"dw {_onoff(knobs.get('doublewrite'))}",
             f"dirty {num(knobs.get('max_dirty_pages_pct'), 'g', '?')}",
             f"io {num(knobs.get('io_capacity'), 'g', '?')}", f"redo {redo}"]
    if knobs.get("adaptive_checkpoint") not in (None, "none"):
        parts.append(f"checkpoint {knobs['adaptive_checkpoint']}")
    if knobs.get("flush_neighbor_pages") not in (None,):
        parts.append(f"neighbours {knobs['flush_neighbor_pages']}")
    return " · ".join(parts)


def _onoff(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def counted_rates(db: Any, fr: frames.Frames) -> pd.DataFrame:
    """:func:`fixed_rate.per_run` of every counted run (index: run id)."""
    ids = [int(r) for r in fr.run_summary.loc[counted(fr.run_summary), "run_id"]]
    return fixed_rate.per_run(frames.intervals(db, run_ids=ids, detail=True))


def per_run(fr: frames.Frames, rates: pd.DataFrame, lat: latency.Latency,
            eff: efficiency.Efficiency, samples: pd.DataFrame) -> pd.DataFrame:
    """One row per counted run: its cell, block, start, the window's achieved rate against
    its target (``rates``: :func:`counted_rates`), response time (waits counted), stalls,
    flushing state and pages written."""
    rs = fr.run_summary[counted(fr.run_summary)]
    ids = [int(r) for r in rs["run_id"]]
    means, _peaks = flushing_by_run(samples)
    out = pd.DataFrame({"run_id": ids,
                        "cell_id": rs["cell_id"].astype(int).to_numpy(),
                        "repetition": rs["repetition"].astype(int).to_numpy(),
                        "started_at": pd.to_datetime(rs["started_at"]).to_numpy()})
    out = out.join(rates.reindex(ids).reset_index(drop=True))
    figures = lat.runs.reindex(ids).reset_index(drop=True)
    for column in ("window_p50_ms", "value_ms", "window_p999_ms", "window_max_ms", "stall_s"):
        out[column] = figures[column].to_numpy(dtype=float)
    state = means.reindex(ids).reset_index(drop=True)
    out["checkpoint_age_pct"] = state["checkpoint_age_pct"].to_numpy(dtype=float)
    out["dirty_pct"] = state["dirty_pct"].to_numpy(dtype=float)
    pages = eff.ledger_runs.reindex(ids)
    out["pages_written"] = pages["pages_written"].to_numpy(dtype=float) \
        if "pages_written" in pages else np.nan
    return out


def later_start(intervals_df: pd.DataFrame, k: int) -> pd.DataFrame:
    """``intervals_df`` with each run's window starting ``k`` report intervals later (its
    first ``k`` window intervals left out; the end kept)."""
    out = intervals_df.reset_index(drop=True)
    flags = out["in_window"].to_numpy(dtype=bool).copy()
    for _run_id, g in out.groupby("run_id", sort=False):
        rows = g.index.to_numpy()
        flags[rows[np.flatnonzero(flags[rows])[:k]]] = False
    out["in_window"] = flags
    return out


def later_ratios(db: Any, fr: frames.Frames) -> pd.DataFrame:
    """Per cell (index: cell id) and :data:`LATER` start (columns): the p99 ratio to the
    baseline with every counted run's window starting that much later."""
    ids = latency_windows.counted_runs(fr)
    intervals_df = fr.intervals[fr.intervals["run_id"].isin(ids)]
    return pd.DataFrame({k: latency_windows.verdicts_in(db, fr, later_start(intervals_df, k))
                         ["ratio"] for k in LATER})


def rows_table(cells: pd.DataFrame, lat: latency.Latency, runs: pd.DataFrame,
               names: dict[int, str], later: pd.DataFrame) -> str:
    """Table 1: each row at the fixed rate — the load it carried, its response time against
    the baseline's, its stalls and its flushing state."""
    rows = []
    for c in cells.sort_values("position").itertuples():
        cid = int(c.cell_id)
        mine = runs[runs["cell_id"] == cid]
        if mine.empty:
            continue
        cell = lat.cells.loc[cid]
        target = float(mine["target_notpm"].max())
        lowest = float(mine["notpm"].min())
        if cell["verdict"] == comparison.BASELINE:
            against = "baseline"
        elif np.isfinite(cell["ratio"]):
            interval = (f" ({cell['ratio_ci_low']:.2f}–{cell['ratio_ci_high']:.2f})"
                        if np.isfinite(cell["ratio_ci_low"]) else "")
            against = f"{cell['ratio']:.2f}×{interval} {cell['verdict']}"
        else:
            against = str(cell["verdict"])
        judged = cell["verdict"] not in (comparison.BASELINE, fixed_rate.MISSED,
                                         fixed_rate.NOT_COMPARED)
        over_starts = "–" if not judged else (
            f"{num(cell.get('window_ratio_low'), '.2f')}–"
            f"{num(cell.get('window_ratio_high'), '.2f')} ({cell.get('window_verdicts', '–')})")
        shorter = "–" if not judged else " / ".join(
            num(later.at[cid, k], ".2f") for k in LATER)
        rows.append([
            f"`{names[cid]}`", str((c.knobs or {}).get("server", "?")),
            settings_text(c.knobs or {}), str(len(mine)),
            f"{lowest:,.0f} ({lowest / target:.1%})" if target > 0 else "–",
            f"{int(mine['intervals_below'].sum())} of {int(mine['intervals'].sum())}",
            num(mine["backlog_max"].max(), ",.0f"),
            num(cell["p50_ms"], ",.0f"), num(cell["value_ms"], ",.0f"),
            f"{num(mine['value_ms'].min(), ',.0f')}–{num(mine['value_ms'].max(), ',.0f')}",
            f"{num(cell['p999_ms'], ',.0f')} / {num(cell['max_ms'], ',.0f')}",
            against, over_starts, shorter,
            f"{num(cell['stall_s_median'], 'g')} ({num(cell['stall_s_max'], 'g')})",
            num(mine["dirty_pct"].median(), ".0f"),
            num(mine["checkpoint_age_pct"].median(), ".0f"),
            num(mine["pages_written"].median(), ".2f"),
        ])
    return markdown_table([
        "row", "server", "settings", "runs", "lowest window NOTPM (of target)",
        "intervals below 95 %", "backlog max", "p50 ms (runs merged)",
        "p99 ms (runs merged)", "runs' p99 ms",
        "p99.9 / max ms", "p99 ÷ baseline (95 % CI, verdict)",
        "p99 ÷ baseline over window starts (verdicts)",
        "p99 ÷ baseline, window 30 s / 60 s later", "stall s (median, max)",
        "dirty % (median)", "checkpoint age % of max (median)", "data pages per New-Order",
    ], rows)


def runs_table(runs: pd.DataFrame, names: dict[int, str]) -> str:
    """Table 2: every counted run's figures, in the order the queue ran them."""
    rows = []
    for r in runs.sort_values("started_at").itertuples():
        rows.append([
            str(r.run_id), f"`{names[int(r.cell_id)]}`", str(r.repetition),
            f"{pd.Timestamp(r.started_at):%Y-%m-%d %H:%M}",
            num(r.notpm, ",.0f"), f"{int(r.intervals_below)} of {int(r.intervals)}",
            num(r.backlog_max, ",.0f"), num(r.window_p50_ms, ",.0f"), num(r.value_ms, ",.0f"),
            num(r.window_max_ms, ",.0f"),
            num(r.stall_s, "g"), num(r.dirty_pct, ".0f"), num(r.checkpoint_age_pct, ".0f"),
            num(r.pages_written, ".2f"),
        ])
    return markdown_table(["run", "row", "block", "started (UTC)", "window NOTPM",
                           "intervals below 95 %", "backlog max", "p50 ms", "p99 ms", "max ms",
                           "stall s", "dirty %", "checkpoint age %",
                           "data pages per New-Order"], rows)


def search_tables(db: Any, experiment_id: int, names: dict[int, str]) -> str:
    """Table 3: each row's highest rate under the target, then its steps as evidence."""
    out = []
    for cell in rate_search.searches(db, experiment_id):
        steps = rate_search.step_table(cell.found, cell.target)
        out.append(f"### `{names.get(cell.cell_id, cell.label)}`\n\n{cell.text}"
                   + ("\n\n" + markdown_table(["rate (NOTPM)", "run", "p99 ms",
                                                "achieved NOTPM", "stall s", "judged"],
                                               [list(s) for s in steps]) if steps else ""))
    return "\n\n".join(out)


def print_tables(db: Path) -> None:
    """Every table of the write-up that ``db`` holds, as markdown."""
    held = set(frames.experiments(db)["name"])
    if not held & {FIXED, SEARCH}:
        # script_main names the user's file (``db`` is its private copy) and exits 2.
        raise FlushbenchError(f"holds neither {FIXED} nor {SEARCH} (the study's database is "
                              f"{STUDY_DB})")
    if FIXED in held:
        with session_scope(str(db)) as s:
            cmp = comparison.compare(s, FIXED)
            fr = cmp.frames
            lat = latency_windows.with_starts(s, fr, latency.load(s, fr), cmp.cycles)
            rs = fr.run_summary
            digest = run_digests(s, [int(r) for r in rs.loc[rs["status"] == "done", "run_id"]])
            eff = efficiency.load(s, fr, digest)
            rates = counted_rates(s, fr)
            runs = per_run(fr, rates, lat, eff, counted_window_samples(db, fr))
            later = later_ratios(s, fr)
            fixed_rate.flag_missed(rates, fr.runs, cmp.cells, lat.cells)
        names = scorecard.row_names(fr.experiment["stored"].spec, cmp.cells)
        print("## Rows\n\n" + rows_table(cmp.cells, lat, runs, names, later))
        print("\n## Runs\n\n" + runs_table(runs, names))
        print("\n## Hosts\n\n" + host_table(fr))
    if SEARCH in held:
        fr = frames.load(db, SEARCH)
        names = scorecard.row_names(fr.experiment["stored"].spec, fr.cell_summary)
        with session_scope(str(db)) as s:
            text = search_tables(s, int(fr.experiment["id"]), names)
        print(("\n" if FIXED in held else "") + "## Search\n\n" + text)
        print("\n## Search hosts\n\n" + host_table(fr))


def main(argv: list[str]) -> int:
    """Print every table (``DB``); 2 on usage or an unreadable database."""
    return script_main(argv, __doc__.split("\n\n")[1], "rate_tables.py", STUDY_DB,
                       print_tables)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
