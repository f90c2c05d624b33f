"""The tables of the write-path factorial's write-up (docs/study-write-path/README.md), from its
database.

    .venv/bin/python -m analysis.studies.write_path_tables DB [EXPERIMENT]

(the study's database: ``docs/study-write-path/write-path-factorial.sqlite``; EXPERIMENT
defaults to ``write-path-factorial``, ``experiments/write-path-factorial.yaml``: change
buffering × ``max_dirty_pages_pct`` × redo size on MariaDB 10.11, and MariaDB 10.2 at 10.11's
defaults of the three).

Every figure the write-up states about the runs is printed here, as markdown:

1. **rows** — per row: its server and its three settings, counted runs, NOTPM (mean, 95 %
   interval) and the row against the baseline (10.11 at its own defaults of the three) by the
   one verdict rule with its range over window starts (`analysis.comparisons.compare`), data
   pages written and KiB the device received per New-Order (medians of the runs: the
   write-path ledger, `analysis.writes.ledger`), the buffer pool's dirty share and checkpoint
   age over the window, and what bound the runs (`analysis.writes.bound`);
2. **ledger** — per row, the KiB per New-Order of each part of the write path: redo,
   doublewrite, data pages by the flush that wrote them (flush list — adaptive, background,
   checkpoint-forced where ``INNODB_METRICS`` counted them — and LRU), the residual, the
   device's total, the floor and the amplification above it;
3. **effects** — on MariaDB 10.11's eight rows, each setting's main effect (the ratio of its
   second level to its first, 95 % interval, p) on data pages per New-Order, on the device's
   KiB per New-Order and on NOTPM (`analysis.statistics.design.main_effects`: a log-scale
   main-effects model over the runs);
4. **interactions** — each two-way interaction's F test on data pages per New-Order;
5. **engine** — MariaDB 10.2 against 10.11 at the same three settings: the ratio of each
   figure with its Welch interval on logs (`analysis.statistics.intervals.ratio_ci`);
6. **hosts** — which session measured which runs, and when.

Read-only: it opens a private copy (a worker may be writing the study's database).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.comparisons import compare as comparison
from analysis.comparisons import cross_server, scorecard
from analysis.reading.query import session_scope
from analysis.statistics.design import interactions, main_effects
from analysis.statistics.intervals import ratio_ci, welch_log_p
from analysis.steadiness.disturbed import counted
from analysis.studies.shared import (
    counted_window_samples,
    flushing_by_run,
    host_table,
    markdown_table,
    num,
    script_main,
)
from analysis.tables import efficiency
from analysis.writes import ledger
from analysis.writes.run_digest import run_digests
from core.experiment.spec import ExperimentSpec

EXPERIMENT = "write-path-factorial"
#: The three settings the factorial crosses, in the experiment file's order.
FACTORS = ("change_buffering", "max_dirty_pages_pct", "log_file_size")
#: The server the factorial crosses them on (Debian's MariaDB 10.11).
FACTORIAL_SERVER = "mariadb-debian"
#: Per-run figures the effects and the engine comparison are computed on: column → name.
#: A size setting in bytes is written in MiB (``80M``), as the experiment file writes it.
MIB = 1 << 20
RESPONSES = {"pages_written": "data pages per New-Order", "device_kib": "KiB per New-Order",
             "notpm": "NOTPM"}


def _level(value: Any) -> str:
    """A setting's level as the experiment file writes it (``none``, ``90``, ``80M``: a size
    is stored in bytes)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= MIB \
            and value % MIB == 0:
        return f"{value // MIB}M"
    return str(value)


def row_names(spec: ExperimentSpec, cells: pd.DataFrame) -> dict[int, str]:
    """Cell id → the row's name: the experiment file's own (``mariadb-10.2-at-10.11-defaults``),
    else its three settings (``none · 90 · 80M``)."""
    named = scorecard.row_names(spec, cells)
    return {int(c.cell_id): named.get(int(c.cell_id))
            or " · ".join(_level((c.knobs or {}).get(k, "?")) for k in FACTORS)
            for c in cells.itertuples()}


def per_run(cmp: comparison.Comparison, eff: efficiency.Efficiency) -> pd.DataFrame:
    """One row per counted run: its cell, server, the three settings, NOTPM and the ledger's
    data pages written and device KiB per New-Order."""
    rs = cmp.frames.run_summary
    rs = rs[counted(rs)]
    cells = cmp.cells.set_index("cell_id")
    out = pd.DataFrame({
        "run_id": rs["run_id"].astype(int).to_numpy(),
        "cell_id": rs["cell_id"].astype(int).to_numpy(),
        "notpm": rs["notpm"].astype(float).to_numpy(),
    })
    knobs = [cells.loc[c, "knobs"] or {} for c in out["cell_id"]]
    out["server"] = [k.get("server", "?") for k in knobs]
    for factor in FACTORS:
        out[factor] = [_level(k.get(factor, "?")) for k in knobs]
    written = eff.ledger_runs.reindex(out["run_id"])
    for column in ("pages_written", "device_kib"):
        out[column] = written[column].astype(float).to_numpy() if column in written else np.nan
    return out


def rows_table(cmp: comparison.Comparison, names: dict[int, str], eff: efficiency.Efficiency,
               runs: pd.DataFrame, flushing: pd.DataFrame) -> str:
    """Table 1: each row, its throughput against the baseline and what its New-Orders wrote."""
    by_cell = runs.groupby("cell_id")
    rows = []
    for c in cmp.cells.sort_values("position").itertuples():
        cid = int(c.cell_id)
        knobs = c.knobs or {}
        mine = runs[runs["cell_id"] == cid]
        if mine.empty:
            continue
        ci = (f" ({c.notpm_ci_low:,.0f}–{c.notpm_ci_high:,.0f})"
              if np.isfinite(c.notpm_ci_low) and np.isfinite(c.notpm_ci_high) else "")
        if c.verdict == comparison.BASELINE:
            against = "baseline"
        elif np.isfinite(c.ratio):
            interval = (f" ({c.ratio_ci_low:.2f}–{c.ratio_ci_high:.2f})"
                        if np.isfinite(c.ratio_ci_low) else "")
            starts = cross_server.starts_range(pd.Series({
                "window_ratio_low": c.window_ratio_low,
                "window_ratio_high": c.window_ratio_high}))
            against = f"{c.ratio:.2f}×{interval} {c.verdict}{starts}"
        else:
            against = str(c.verdict)
        state = flushing[flushing.index.isin(mine["run_id"])]
        bound = eff.bound_cells.loc[cid] if cid in eff.bound_cells.index else None
        medians = by_cell.get_group(cid)
        rows.append([
            f"`{names[cid]}`", str(knobs.get("server", "?")),
            *(_level(knobs.get(k, "?")) for k in FACTORS),
            str(len(mine)), f"{c.notpm_mean:,.0f}{ci}", against,
            num(medians["pages_written"].median(), ".2f"),
            num(medians["device_kib"].median(), ".0f"),
            num(state["dirty_pct"].median(), ".0f"),
            num(state["checkpoint_age_pct"].median(), ".0f"),
            "–" if bound is None else f"{bound.bound} ({bound.bound_runs})",
        ])
    return markdown_table(["row", "server", "change buffering", "max dirty %", "redo", "runs",
                           "NOTPM (95 % CI)", "÷ baseline (95 % CI, verdict)",
                           "data pages per New-Order", "KiB per New-Order",
                           "dirty % (median)", "checkpoint age % of max (median)",
                           "bound (runs)"], rows)


def ledger_table(eff: efficiency.Efficiency, names: dict[int, str]) -> str:
    """Table 2: KiB per New-Order by part of the write path, medians of each row's runs."""
    parts = ["redo_kib", "doublewrite_kib", "pages_flush_list_kib", *ledger.METRICS,
             "pages_lru_kib", "residual_kib"]
    table = eff.ledger_cells
    rows = []
    for cid, r in table.iterrows():
        rows.append([f"`{names[int(cid)]}`", *(num(r.get(p), ".1f") for p in parts),
                     num(r.get("device_kib"), ".0f"), num(r.get("floor_kib"), ".0f"),
                     num(r.get("amplification"), ".2f")])
    headers = ["row", *(ledger.NAMES.get(p, p.removesuffix("_kib").replace("_", " "))
                        for p in parts), "device", "floor", "amplification (device ÷ floor)"]
    return markdown_table(headers, rows)


def baseline_first(runs: pd.DataFrame, baseline: dict[str, str]) -> pd.DataFrame:
    """``runs`` reordered so that each setting's baseline level comes first: the design's
    effects take a knob's first level as its reference, so every effect reads as the other
    level against the baseline's (``all`` against ``none``, ``75`` against ``90``)."""
    keys = [runs[f] != baseline.get(f) for f in FACTORS]
    order = np.lexsort([k.to_numpy() for k in reversed(keys)])
    return runs.iloc[order]


def effects_table(runs: pd.DataFrame, baseline: dict[str, str]) -> str:
    """Table 3: each setting's main effect on MariaDB 10.11's rows, per response: the other
    level against the baseline's."""
    mine = baseline_first(runs[runs["server"] == FACTORIAL_SERVER], baseline)
    fitted = {column: main_effects(mine, list(FACTORS), column) for column in RESPONSES}
    rows = []
    for factor in FACTORS:
        cells, levels = [], "–"
        for column in RESPONSES:
            hit = fitted[column][fitted[column]["knob"] == factor]
            if hit.empty:
                cells.append("–")
                continue
            e = hit.iloc[0]
            levels = f"{_level(e['reference'])} → {_level(e['level'])}"
            if not bool(e["estimable"]):
                cells.append("–")
                continue
            interval = (f" ({e['ci_low']:.2f}–{e['ci_high']:.2f}; p {e['p_value']:.2g})"
                        if np.isfinite(e["ci_low"]) else "")
            cells.append(f"{e['ratio']:.2f}×{interval}")
        rows.append([f"`{factor}`", levels, *cells])
    return markdown_table(["setting", "baseline → other level",
                           *(f"{name} (95 % CI; p)" for name in RESPONSES.values())], rows)


def interactions_table(runs: pd.DataFrame) -> str:
    """Table 4: each two-way interaction's F test on data pages per New-Order (10.11)."""
    mine = runs[runs["server"] == FACTORIAL_SERVER]
    table = interactions(mine, list(FACTORS), "pages_written")
    rows = [[f"`{r.knob_a}` × `{r.knob_b}`",
             num(r.f_stat, ".2f"), f"{r.df_num}, {r.df_den}" if r.estimable else "–",
             num(r.p_value, ".2g"), num(r.rms_pct, ".1f"),
             "" if r.estimable else str(r.reason)]
            for r in table.itertuples()]
    return markdown_table(["interaction", "F", "df", "p", "cells moved (RMS %)", "note"], rows)


def engine_table(runs: pd.DataFrame, names: dict[int, str]) -> str:
    """Table 5: each other server's row against 10.11's row of the same three settings."""
    rows = []
    for cid, other in runs[runs["server"] != FACTORIAL_SERVER].groupby("cell_id"):
        same = runs[(runs["server"] == FACTORIAL_SERVER)
                    & np.logical_and.reduce([runs[f] == other[f].iloc[0] for f in FACTORS])]
        if same.empty:
            continue
        cells = []
        for column in RESPONSES:
            r = ratio_ci(same[column].to_numpy(float), other[column].to_numpy(float))
            p = welch_log_p(same[column].to_numpy(float), other[column].to_numpy(float))
            cells.append("–" if not np.isfinite(r.estimate) else
                         f"{r.estimate:.2f}×" + (f" ({r.low:.2f}–{r.high:.2f}; p {p:.2g})"
                                                 if np.isfinite(r.low) else ""))
        rows.append([f"`{names[int(cid)]}`", str(other["server"].iloc[0]),
                     names[int(same["cell_id"].iloc[0])], f"{len(other)} vs {len(same)}",
                     *cells])
    return markdown_table(["row", "server", "against (10.11, same settings)", "runs",
                           *(f"{name} ratio (95 % CI; p)" for name in RESPONSES.values())], rows)


def print_tables(db: Path, experiment: str = EXPERIMENT) -> None:
    """Every table of the write-up, as markdown, from the database at ``db``."""
    with session_scope(str(db)) as s:
        cmp = comparison.compare(s, experiment)
        fr = cmp.frames
        names = row_names(fr.experiment["stored"].spec, cmp.cells)
        rs = fr.run_summary
        digest = run_digests(s, [int(r) for r in rs.loc[rs["status"] == "done", "run_id"]])
        eff = efficiency.load(s, fr, digest)
    runs = per_run(cmp, eff)
    flushing, _ = flushing_by_run(counted_window_samples(db, fr))
    base = cmp.cells[cmp.cells["verdict"] == comparison.BASELINE]
    baseline = ({f: _level((base.iloc[0]["knobs"] or {}).get(f)) for f in FACTORS}
                if len(base) else {})
    print("## Rows\n\n" + rows_table(cmp, names, eff, runs, flushing))
    print("\n## Ledger\n\n" + ledger_table(eff, names))
    print("\n## Effects\n\n" + effects_table(runs, baseline))
    print("\n## Interactions\n\n" + interactions_table(runs))
    print("\n## Engine\n\n" + engine_table(runs, names))
    print("\n## Hosts\n\n" + host_table(fr))


def main(argv: list[str]) -> int:
    """Print every table (``DB [EXPERIMENT]``); 2 on usage or an unreadable database."""
    experiment = argv[1] if len(argv) == 2 else EXPERIMENT
    return script_main(argv[:1] if len(argv) == 2 else argv, __doc__.split("\n\n")[1],
                       "write_path_tables.py",
                       "docs/study-write-path/write-path-factorial.sqlite",
                       lambda db: print_tables(db, experiment))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
