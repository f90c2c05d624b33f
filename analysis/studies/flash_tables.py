"""The tables of the flash study's write-up (docs/study-2011/README.md), from its database.

    .venv/bin/python -m analysis.studies.flash_tables docs/study-2011/stability-2011-flash.sqlite

Every figure the README states about the runs is printed here, as markdown, so that each
sentence can be checked against the database (the previous write-up had five that were not):

1. **rows** — per row of the post (its reference name): server, counted runs, NOTPM (mean,
   its 95 % interval, as `flushbench compare`), the row against *its server's* baseline here
   and in the post, median stability score and interval CV, the runs that oscillate;
2. **scorecard** — every comparison the post makes: its ratio, ours with a 95 % interval,
   the verdict (`analysis.comparisons.scorecard`, docs/statistics.md);
3. **targets** — per row, how many runs had the throttle group at its write-bandwidth limit
   in >= 90 % of the window's sampler intervals, the median share, and the most CPU mysqld +
   the client used (`scripts/flash_calibration.py`, the calibration's criterion);
4. **I/O per New-Order** — write operations and KiB per New-Order split into data pages,
   doublewrite and redo (`analysis.tables.io_breakdown`), the medians of each row's runs, and the
   NOTPM the write limit allows at that many KiB per New-Order (limit ÷ KiB × 60) beside the
   share of it the row reached: at a byte limit, bytes per transaction set the throughput;
5. **flushing state** — each row's dirty pages and checkpoint age over the window (what the
   post's second graph shows);
6. **noise floor** — each server's baseline (its A/A runs): runs, throughput CV, stability
   scores, and the session effect (a one-way F test of log NOTPM by host);
7. **hosts** — which session measured which runs, and when.

Read-only: it opens a private copy (opening the committed file would switch it to WAL).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from analysis.comparisons import compare as comparison
from analysis.comparisons import hosts, scorecard, stability_claims
from analysis.reading import series
from analysis.steadiness.disturbed import counted
from analysis.studies.shared import (
    cells_with_runs,
    counted_window_samples,
    flushing_by_run,
    host_table,
    markdown_table,
    script_main,
)
from analysis.tables import frames, io_breakdown
from core.experiment.spec import ExperimentSpec

EXPERIMENT = "stability-2011-flash"
#: The baseline row of each server: the post's first run for MySQL, the MySQL-compatible
#: big-redo row at max_dirty 75 for XtraDB (the file's `repetitions: 6` row).
LRU_FLUSHED, FLUSHED = "Innodb_buffer_pool_pages_LRU_flushed", "Innodb_buffer_pool_pages_flushed"
SERVER_BASELINES = {"mysql-5.5": "base", "xtradb-5.5": "ps-bigredo-75"}


def _calibration() -> Any:
    """scripts/flash_calibration.py as a module (scripts/ is not a package)."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "flash_calibration.py"
    spec = importlib.util.spec_from_file_location("flash_calibration", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def row_table(fr: frames.Frames, names: dict[int, str], spec: ExperimentSpec) -> str:
    """Table 1: each row's NOTPM and its ratio to its own server's baseline, ours and the post's."""
    rs = fr.run_summary[counted(fr.run_summary)]
    cells = fr.cell_summary.sort_values("position")
    ref = {r.name: r.value for r in scorecard.match_rows(spec, fr.cell_summary)}
    by_name = {v: k for k, v in names.items()}
    rows = []
    for cell in cells.itertuples():
        name = names.get(int(cell.cell_id), str(cell.cell_id))
        server = (cell.knobs or {}).get("server", "")
        base_name = SERVER_BASELINES.get(server)
        values = rs.loc[rs["cell_id"] == cell.cell_id, "notpm"].to_numpy(float)
        base = rs.loc[rs["cell_id"] == by_name.get(base_name), "notpm"].to_numpy(float)
        mean, lo, hi = cell.notpm_mean, cell.notpm_ci_low, cell.notpm_ci_high
        ours = mean / base.mean() if base.size else math.nan
        post = (ref.get(name) or math.nan) / (ref.get(base_name) or math.nan)
        scores = rs.loc[rs["cell_id"] == cell.cell_id, "score"].to_numpy(float)
        cvs = rs.loc[rs["cell_id"] == cell.cell_id, "cv_pct"].to_numpy(float)
        mine = rs[rs["cell_id"] == cell.cell_id]
        periods = sorted(f"{p:.0f}" for p in mine.loc[mine["oscillates"].astype(bool),
                                                      "period_s"])
        oscillating = f"{len(periods)} of {len(mine)}" + (f" ({', '.join(periods)} s)"
                                                           if periods else "")
        rows.append([f"`{name}`", server, str(values.size),
                     f"{mean:,.0f} ({lo:,.0f}–{hi:,.0f})",
                     "–" if name == base_name else f"{ours:.2f}×",
                     "–" if name == base_name else f"{post:.2f}×",
                     f"{ref.get(name, math.nan):,.0f}",
                     f"{np.median(scores):.0f}", f"{np.median(cvs):.1f}", oscillating])
    return markdown_table(["row", "server", "runs", "NOTPM (95 % CI)", "÷ its server's baseline",
                "the post's ÷", "the post's NOTPM", "stability (median)",
                "interval CV % (median)", "runs that oscillate (period)"], rows)


def scorecard_table(db: Path, fr: frames.Frames, spec: ExperimentSpec) -> str:
    """Table 2: every comparison the post makes, its ratio against ours (at the stored window
    and over the window starts) with our verdict and the reproduction grade
    (`analysis.comparisons.scorecard`, the rule of docs/statistics.md), as `compare` has it."""
    table = scorecard.for_comparison(spec, comparison.compare(db, EXPERIMENT, frames=fr), db)
    rows = []
    for i, r in enumerate(table.itertuples(), start=1):
        post = f"{r.reference_ratio:.2f}×" + ("" if r.stated else " *")
        graded = r.verdict + (f" ({100 * r.share:.0f} % of its effect)"
                              if r.verdict.startswith("same direction") else "") + (
            f"; `{r.method_inert}` never ran its flushing method ‡" if r.method_inert
            else "") + (f"; `{r.not_steady}` not at steady state †" if r.not_steady else "")
        others = [g for g in r.window_grades.split("; ") if g and g != r.verdict]
        if others:  # a grade that other window starts change, within the same answer
            graded += f"; {', '.join(others)} at other window starts"
        starts = f"{r.window_low:.2f}–{r.window_high:.2f}" if math.isfinite(r.window_low) \
            else "–"
        rows.append([f"R{i}", r.comparison + (f" ({r.note})" if r.note else ""),
                     f"`{r.a}` ({r.n_a}) / `{r.b}` ({r.n_b})", post,
                     f"{r.ratio:.2f}× ({r.ci_low:.2f}–{r.ci_high:.2f})", starts, r.our_verdict,
                     graded, f"the post's ratio is {r.size}" if r.size != "–" else "–"])
    head = (f"{scorecard.headline(table)}.\n\n" if len(table) else "")
    return head + markdown_table(["", "comparison", "a / b (runs)", "the post", "ours (95 % CI)",
                                  "over window starts", "our verdict", "reproduction", "size"],
                                 rows)


def stability_table(fr: frames.Frames, spec: ExperimentSpec) -> str:
    """Table 2b: what the post says of each line, graded against each row's runs
    (`analysis.comparisons.stability_claims`, the rule of docs/statistics.md)."""
    claims = stability_claims.stability_scorecard(spec, fr.run_summary, fr.cell_summary)
    rows = [[f"S{i}", r.claim, r.stated, str(r.runs), r.measured, r.verdict, r.reason]
            for i, r in enumerate(claims.itertuples(), start=1)]
    head = f"{scorecard.headline(claims)}.\n\n" if len(claims) else ""
    return head + markdown_table(
        ["", "claim", "the post says", "runs", "ours", "reproduction", "why"], rows)


def target_table(db: Path, names: dict[int, str], fr: frames.Frames) -> tuple[str, str]:
    """Table 2 and the sentence of the targets: runs at the bandwidth limit, CPU."""
    judged = _calibration().judge_runs(str(db), EXPERIMENT)
    rs = fr.run_summary.set_index("run_id")
    counted_ids = set(fr.run_summary.loc[counted(fr.run_summary), "run_id"].astype(int))
    judged = [r for r in judged if r["run"] in counted_ids]
    cells = fr.cell_summary.sort_values("position")
    rows, met, total, cores = [], 0, 0, []
    for cell in cells.itertuples():
        mine = [r for r in judged if int(rs.loc[r["run"], "cell_id"]) == cell.cell_id]
        shares = [r["at_limit"] for r in mine if r["at_limit"] is not None]
        at = sum(1 for s in shares if s >= 0.9)
        busy = [(r["mysqld"] or 0) + (r["driver"] or 0) for r in mine]
        met, total, cores = met + at, total + len(mine), cores + busy
        low = [f"run {r['run']} ({r['at_limit']:.0%})" for r in mine
               if r["at_limit"] is not None and r["at_limit"] < 0.9]
        rows.append([f"`{names.get(int(cell.cell_id), cell.cell_id)}`",
                     f"{at} of {len(mine)}", f"{np.median(shares):.0%}" if shares else "–",
                     f"{max(busy):.2f}" if busy else "–", ", ".join(low) or "–"])
    # The other limits (operations, reads) must not be what binds: their highest mean share
    # and the most intervals any run spent at them.
    others: dict[str, tuple[float, float]] = {}
    for r in judged:
        for limit, f in r["figures"].items():
            if limit != "write_bandwidth":
                at_limit, mean = f["intervals_at_limit"] / f["intervals"], f["share"]
                held = others.get(limit, (0.0, 0.0))
                others[limit] = (max(held[0], at_limit), max(held[1], mean))
    other_text = "; ".join(
        f"{limit.replace('_', ' ').replace('iops', 'IOPS')} at most {mean:.0%} of its limit "
        f"on average, at it in at most {at:.0%} of a run's intervals"
        for limit, (at, mean) in sorted(others.items()))
    sentence = (f"{met} of {total} counted runs ({met / total:.0%}) had the group at its write-"
                f"bandwidth limit in ≥ 90 % of their window's intervals; mysqld + client used "
                f"at most {max(cores):.2f} cores (median {np.median(cores):.2f}). The other "
                f"limits, over every counted run: {other_text or 'none set'}.")
    return markdown_table(["row", "runs at the limit ≥ 90 % of the window",
                           "median share of intervals", "most cores (mysqld + client)",
                           "runs below"], rows), sentence


def io_table(db: Path, fr: frames.Frames, names: dict[int, str]) -> str:
    """Table 3: write operations and KiB per New-Order by part, medians of each row's runs."""
    runs = io_breakdown.per_run(db, fr)
    rs = fr.run_summary[counted(fr.run_summary)].set_index("run_id")
    runs = runs[runs.index.isin(rs.index)].copy()
    # What the byte budget allows: the write limit over the KiB each New-Order wrote. At a
    # byte limit, throughput should be this (less what else the group wrote: ibdata, logs).
    limit_kib = [float((rs.loc[r, "extra"] or {}).get("storage_write_bandwidth") or math.nan)
                 / 1024 for r in runs.index]
    kib = sum(runs[f"{p} KiB"] for p, *_ in io_breakdown.PARTS)
    runs["budget_notpm"] = np.asarray(limit_kib) / kib * 60
    runs["budget_use"] = rs.loc[runs.index, "notpm"] / runs["budget_notpm"]
    table = runs.groupby("cell_id").median(numeric_only=True)
    rows = []
    for cell in fr.cell_summary.sort_values("position").itertuples():
        if cell.cell_id not in table.index:
            continue
        t = table.loc[cell.cell_id]
        parts = [p for p, *_ in io_breakdown.PARTS]
        ops = sum(t[f"{p} ops"] for p in parts)
        kib = sum(t[f"{p} KiB"] for p in parts)
        rows.append([f"`{names.get(int(cell.cell_id), cell.cell_id)}`"]
                    + [f"{t[f'{p} ops']:.2f}" for p in parts] + [f"{ops:.2f}"]
                    + [f"{t[f'{p} KiB']:.0f}" for p in parts] + [f"{kib:.0f}"]
                    + [f"{t['budget_notpm']:,.0f}", f"{t['budget_use']:.0%}"])
    return markdown_table(["row", "page writes", "doublewrite writes", "redo writes", "ops total",
                "page KiB", "doublewrite KiB", "redo KiB", "KiB total",
                "NOTPM the byte limit allows", "NOTPM ÷ that"], rows)


def flushing_table(db: Path, fr: frames.Frames, names: dict[int, str]) -> str:
    """Table 3b: where each row's flushing stood in the window — checkpoint age as % of the
    server's maximum and dirty pages as % of the pool (medians of the runs' window means),
    and the highest checkpoint age any of its runs reached."""
    window = counted_window_samples(db, fr)
    means, peaks = flushing_by_run(window)
    # XtraDB counts the pages its LRU flush wrote (to free pages for reads), MySQL 5.5 does
    # not: the rest were flushed from the flush list (the checkpoint, max_dirty, io_capacity).
    grown = series.window_growth(db, window, [LRU_FLUSHED, FLUSHED])
    lru_share = (grown[LRU_FLUSHED] / grown[FLUSHED]).dropna()
    rows = []
    for cell, mine in cells_with_runs(fr, means.index):
        knobs = cell.knobs or {}
        rows.append([f"`{names.get(int(cell.cell_id), cell.cell_id)}`",
                     f"{float(knobs.get('max_dirty_pages_pct', math.nan)):g}",
                     f"{means.loc[mine, 'dirty_pct'].median():.0f}"
                     f" ({means.loc[mine, 'dirty_pct'].min():.0f}–"
                     f"{means.loc[mine, 'dirty_pct'].max():.0f})",
                     f"{means.loc[mine, 'checkpoint_age_pct'].median():.0f}",
                     f"{peaks.loc[mine].max():.0f}",
                     f"{lru_share.reindex(mine).median():.0%}"
                     if lru_share.reindex(mine).notna().any() else "not counted"])
    return markdown_table(["row", "max_dirty_pages_pct", "dirty % (median of run means; range)",
                "checkpoint age % of max (median of run means)",
                "highest checkpoint age % of max", "LRU flush's share of pages flushed"],
               rows)


def noise_table(fr: frames.Frames, names: dict[int, str]) -> str:
    """Table 4: each server's baseline as an A/A measurement, and its session effect."""
    by_name = {v: k for k, v in names.items()}
    rows = []
    for server, name in SERVER_BASELINES.items():
        cell_id = by_name.get(name)
        if cell_id is None:
            continue
        floor = comparison.aa_floor(fr.run_summary, cell_id)
        effect = hosts.host_effect(fr.run_summary, cell_id)
        # Sessions in the order they ran (a host id's first run), not by name.
        first_run = fr.run_summary.assign(host=hosts.host_of(fr.run_summary)) \
            .groupby("host")["run_id"].min()
        per_host = "; ".join(
            f"{h}: {n} run{'s' if n != 1 else ''}, {m:,.0f}"
            for h, (n, m) in sorted((effect or {}).get("per_host", {}).items(),
                                    key=lambda item: first_run.get(item[0], 0)))
        test = "–"
        if effect and math.isfinite(effect["p"]):
            p = f"p = {effect['p']:.2f}" if effect["p"] >= 0.01 else "p < 0.01"
            test = f"F({effect['df'][0]}, {effect['df'][1]}) = {effect['f']:.2f}, {p}"
        if not floor["n"]:  # fewer runs than an A/A floor counts from (a queue part-way)
            floor = {"n": "too few", "cv_pct": math.nan, "score_min": math.nan,
                     "score_max": math.nan}
        rows.append([f"`{name}` ({server})", str(floor["n"]),
                     "–" if math.isnan(floor["cv_pct"]) else f"{floor['cv_pct']:.1f}",
                     "–" if math.isnan(floor["score_min"])
                     else f"{floor['score_min']:.0f}–{floor['score_max']:.0f}", per_host or "–",
                     test])
    return markdown_table(["baseline", "runs", "throughput CV %", "stability scores",
                "mean NOTPM per session", "session effect"], rows)


def main(argv: list[str]) -> int:
    """Print every table; 2 on usage or an unreadable database."""
    return script_main(argv, __doc__.split("\n\n")[1], "flash_tables.py",
                       "docs/study-2011/stability-2011-flash.sqlite", print_tables)


def print_tables(db: Path) -> None:
    """Every table of the write-up, as markdown, from the database at ``db``."""
    fr = frames.load(db, EXPERIMENT)
    spec = fr.experiment["stored"].spec
    names = scorecard.row_names(spec, fr.cell_summary)
    print("## Rows\n\n" + row_table(fr, names, spec))
    print("\n## Scorecard\n\n" + scorecard_table(db, fr, spec)
          + "\n\n\\* the quotient of the two rows' NOTPM in the post (its text states no ratio)"
          "\n\n† every run of the row still trended across its window (checkpoint age or"
          " dirty pages: `not-steady`, docs/statistics.md): it measured a transient, so the"
          " comparison is not gradeable"
          "\n\n‡ every run of the row recorded `innodb_adaptive_flushing_method` set with"
          " `innodb_adaptive_flushing` OFF, where XtraDB 5.5 runs the method only while it is ON:"
          " the row never ran the flushing mode it stands for, so the comparison is not"
          " gradeable")
    print("\n## Stability claims\n\n" + stability_table(fr, spec))
    table, sentence = target_table(db, names, fr)
    print("\n## Targets\n\n" + table + "\n\n" + sentence)
    print("\n## I/O per New-Order\n\n" + io_table(db, fr, names))
    print("\n## Flushing state\n\n" + flushing_table(db, fr, names))
    print("\n## Noise floor\n\n" + noise_table(fr, names))
    print("\n## Hosts\n\n" + host_table(fr))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
