"""The words of an experiment's report: every sentence it computes from the runs.

The summary at the top, the claims ("N of M runs reached …", exceptions named), the A/A
noise floor and the by-host lines beside the ranking, the methodology paragraph with what it
says of the verdict rule, the design and the driver, and the phrases the tables quote
(repetitions, a variable that varies, the dataset). Nothing here is written by hand about a
particular study: a sentence holds for the runs it is computed from, or names the runs it
does not hold for. :func:`claims` and the phrases return plain text; the rest return the
typed blocks and rich text of :mod:`analysis.report.model` (no HTML) that
:mod:`analysis.report.sections` places on the page.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.comparisons.compare import (
    AA_MIN_REPETITIONS,
    BASELINE,
    NOT_ENOUGH,
    Comparison,
    aa_floor_text,
)
from analysis.comparisons.hosts import host_effect
from analysis.reading.metric import metric_view
from analysis.reading.window_cycles import WINDOW_DEPENDENT
from analysis.report.model import (
    Bullets,
    Note,
    Paragraph,
    Rich,
    Value,
    bold,
    bold_named,
    code,
    italic,
    rich,
    row_name,
    warn,
)
from analysis.response import latency
from analysis.response.fixed_rate import HELD_SHARE, NOT_COMPARED
from analysis.steadiness import claims as run_claims
from analysis.steadiness.disturbed import counted
from analysis.steadiness.stability_verdicts import STEADIER, steadiness
from core.experiment.sections import DatasetSpec, WorkloadSpec
from core.experiment.spec import ExperimentSpec
from core.units import format_number as number
from store.models import RunStatus

#: TpmC of the built-in Go driver ÷ tpcc_start's on the same statements and data, median of
#: 3 alternating pairs per point on a quiet 2-vCPU VM, 2026-11-26 at 7841a9d (docs/tpcc.md and
#: docs/benchmarks.md, "Contention grid"); builds before 0f70ccc had the wider gap (issue 40).
GO_DRIVER_RESIDUAL = ("1.03–1.12× at every point of 1–10 warehouses × 4–64 connections (it spends"
                      " less CPU per transaction than tpcc_start, which on 2 vCPUs goes to the"
                      " server) — 0.74–0.99× with flushbench builds before 0f70ccc, 2026-11-26 —")


def _steadiest(ranked: pd.DataFrame, rs: pd.DataFrame, names: dict[int, str]) -> Rich:
    """The summary's line on stability: "Steadiest line" only when the verdict rule on the
    runs' CV separates the top row from every other (analysis/steadiness/stability_verdicts.py);
    else the highest median score, said to be no ranking."""
    flat = ranked.sort_values("rank_stability").iloc[0]
    who = bold_named(flat["cell_label"], names.get(int(flat["cell_id"])))
    score = f"stability score {number(flat['score_median'], '.0f')} (100 = flat)"
    done = rs[counted(rs)]
    cvs = {int(c): g["cv_pct"].to_numpy(dtype=float) for c, g in done.groupby("cell_id")}
    top = cvs.get(int(flat["cell_id"]), [])
    others = [c for c in cvs if c != int(flat["cell_id"])]
    if others and all(steadiness(cvs[c], top).word == STEADIER for c in others):
        return rich("Steadiest line: ", who, f", {score}; steadier than every other row by the"
                    " verdict rule on the runs' CV")
    return rich("Highest median stability score: ", who, f", {score} — not a ranking: the"
                " verdict rule on the runs' CV does not separate it from every other row")


def summary(cmp: Comparison, names: dict[int, str]) -> Bullets:
    """The page's first list: most throughput, the steadiest line (by a test), verdicts, runs,
    warnings."""
    cells = cmp.cells
    rs = cmp.frames.run_summary
    ranked = cmp.ranking
    items: list[Rich] = []
    best = ranked.iloc[0]
    m = metric_view(cmp.experiment)
    # An experiment with one baseline per server compares each cell with its own; the
    # summary names which one instead of "the baseline".
    n_baselines = int(cells["verdict"].eq(BASELINE).sum())
    several = n_baselines > 1
    own: Rich = ("the baseline",)
    if several and "baseline_id" in cells:
        base = cells.set_index("cell_id").loc[best["cell_id"]]
        # The baseline's row name when the experiment names its rows, else its label.
        own = ("its baseline ",
               Value(names.get(int(base['baseline_id'])) or base['baseline_label']))
    items.append(rich(
        "Most throughput: ", bold_named(best['cell_label'], names.get(int(best['cell_id']))),
        f" with {number(m.of(best['notpm_mean']))} {m.name}",
        rich(f" ({number(best['ratio'], '.2f')}× ", own, ", ", Value(best['verdict']), ")")
        if not best["is_baseline"] else (" (a baseline)" if several else " (the baseline)"),
    ))
    items.append(_steadiest(ranked, rs, names))
    faster = cells[cells["verdict"] == "faster"]
    slower = cells[cells["verdict"] == "slower"]
    unsure = cells[cells["verdict"] == "not enough repetitions"]
    moving = cells[cells["verdict"] == WINDOW_DEPENDENT]
    compared = len(cells) - n_baselines
    items.append((
        (f"Against their own baselines ({n_baselines}): " if several else "Against the baseline: ")
        + f"{len(faster)} faster, {len(slower)} slower, "
        + (f"{len(moving)} window-dependent (the verdict changes with where the window starts),"
           " " if len(moving) else "")
        + f"{compared - len(faster) - len(slower) - len(unsure) - len(moving)} no clear"
        " difference"
        + (f", {len(unsure)} with too few repetitions for a verdict" if len(unsure) else ""),
    ))
    items += _run_counts(rs)
    return Bullets(tuple(items), "summary")


def fixed_rate_summary(cmp: Comparison, lat: latency.Latency, rates: pd.DataFrame,
                       names: dict[int, str]) -> Bullets:
    """The first list of a fixed-rate experiment's report: the rate every row was offered,
    whether each held it, then the answer at equal work — response time (the window
    percentile with stalls counted, by the verdict rule) and stalls — never the throughput,
    which is the rate when it held. A row that missed its rate in any run is named and left
    out of the response-time verdicts: it did less work than the rows it would be compared
    with."""
    cells, rs = cmp.cells, cmp.frames.run_summary
    labels = {int(c): str(lbl) for c, lbl in zip(cells["cell_id"], cells["cell_label"],
                                                  strict=True)}
    cell_of = dict(zip(rs["run_id"].astype(int), rs["cell_id"].astype(int), strict=True))
    targets = sorted({float(t) for t in rates["target_notpm"]})
    arrivals = cmp.experiment["stored"].spec.workload.arrivals or "uniform"
    items: list[Rich] = [(
        f"At a fixed rate of {_rate(targets[0])} NOTPM for every row ({arrivals} arrivals,"
        " each transaction timed from its scheduled start)" if len(targets) == 1 else
        f"At fixed rates of {_rate(targets[0])}–{_rate(targets[-1])} NOTPM ({len(targets)}"
        f" rates; {arrivals} arrivals, each transaction timed from its scheduled start)",)]
    missed_by_cell: dict[int, list[int]] = {}
    runs_by_cell: dict[int, int] = {}
    for run_id, row in rates.iterrows():
        cell = cell_of.get(int(run_id))
        if cell is None:
            continue
        runs_by_cell[cell] = runs_by_cell.get(cell, 0) + 1
        if bool(row["missed"]):
            missed_by_cell.setdefault(cell, []).append(int(run_id))
    if not missed_by_cell:
        items.append((f"Every run held its rate: at least {HELD_SHARE:.0%} of it achieved over"
                      " its window",))
    for cell, missed in missed_by_cell.items():
        items.append(rich(warn(row_name(labels[cell], names.get(cell)),
                               f" missed its rate in {len(missed)} of {runs_by_cell[cell]} runs"),
                          ": it did less work than the others, so its response times are not"
                          " compared"))
    held = lat.cells[~lat.cells.index.isin(list(missed_by_cell))] if not lat.cells.empty \
        else lat.cells
    view = lat.view.name if lat.view.percentile else "p99"
    if not held.empty and held["value_ms"].notna().any():
        best_id = int(held["value_ms"].idxmin())
        best = held.loc[best_id]
        versus: Rich = () if best["verdict"] == BASELINE else (
            f" ({number(best['ratio'], '.2f')}× its baseline's, ", Value(best["verdict"]), ")")
        items.append(rich("Fastest responses: ", bold_named(labels[best_id], names.get(best_id)),
                          f", New-Order {view} {number(best['value_ms'], ',.0f')} ms", versus))
        judged = held[held["verdict"] != BASELINE]
        counts = judged["verdict"].value_counts()
        lower, higher = int(counts.get(latency.LOWER, 0)), int(counts.get(latency.HIGHER, 0))
        unsure = int(counts.get(NOT_ENOUGH, 0))
        orphaned = int(counts.get(NOT_COMPARED, 0))
        items.append((f"Against the baseline, New-Order {view} (lower is better): {lower} lower,"
                      f" {higher} higher,"
                      f" {len(judged) - lower - higher - unsure - orphaned} no clear difference"
                      + (f", {unsure} with too few repetitions for a verdict" if unsure else "")
                      + (f", {orphaned} not compared (their baseline missed its rate)"
                         if orphaned else ""),))
        stalled = held[held["stall_s_median"].fillna(0) > 0]
        items.append(("No row stalled: every row's median window has no stall",) if stalled.empty
                     else rich(f"{len(stalled)} of {len(held)} rows stalled (median window): ",
                                Value(", ".join(
                                    f"{names.get(int(c)) or labels[int(c)]}"
                                    f" {number(r['stall_s_median'])} s"
                                    for c, r in stalled.iterrows()))))
    items += _run_counts(rs)
    return Bullets(tuple(items), "summary")


def _rate(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _run_counts(rs: pd.DataFrame) -> list[Rich]:
    """The summary's lines on the runs: done, failed, not finished, without data."""
    n_done = int((rs["status"] == RunStatus.DONE).sum())
    n_failed = int((rs["status"] == RunStatus.FAILED).sum())
    n_other = len(rs) - n_done - n_failed
    items: list[Rich] = [(f"Runs: {n_done} done, {n_failed} failed"
                          + (f", {n_other} not finished" if n_other else ""),)]
    no_data = rs["warnings"].str.startswith("done, no data in window")
    if no_data.any():
        items.append((warn(f"{int(no_data.sum())} run(s) done, no data in window: run ",
                           Value(", ".join(str(int(r)) for r in rs.loc[no_data, "run_id"]))),))
    # Noisy, oscillating and not-steady runs are the caveats' (analysis/report/first_screen.py).
    return items


def claims(db: Any, rs: pd.DataFrame, cells: pd.DataFrame, peaks: pd.Series,
           names: dict[int, str] | None = None, cycles: dict[int, Any] | None = None
           ) -> list[str]:
    """What the runs did, as sentences computed from the data with their exceptions named.

    Nothing here is written by hand: a sentence such as "every run reached the limit" is
    made only when it holds for every run, otherwise the runs it is false for are listed
    (issue 22: the first study's README said five things its own data contradicted).
    ``names``: what each cell's row is called (:func:`analysis.reading.rows.row_labels`);
    ``cycles``: each run's flush cycle (``Comparison.cycles``).
    """
    items = [run_claims.noisy_runs(rs).sentence()]
    if "extra" in rs and any(isinstance(e, dict) and e.get("storage_write_iops")
                             for e in rs["extra"]):
        limit = run_claims.reached_write_limit(db, rs)
        if limit.total:
            items.append(limit.sentence())
    if peaks.notna().any():
        items += checkpoint_age_claims(rs, cells, peaks, names)
    # A level still trending (analysis/steadiness/transients.py).
    not_steady = run_claims.not_steady_runs(rs)
    if not_steady.total:
        items.append(not_steady.sentence())
    cycles = cycles or {}  # flush cycles against the window (compare)
    phase = run_claims.phase_sensitive_runs(cycles, [int(r) for r in rs.loc[
        rs["status"] == RunStatus.DONE, "run_id"]])
    if phase.total:
        items.append(phase.sentence())
    return items


def checkpoint_age_claims(rs: pd.DataFrame, cells: pd.DataFrame, peaks: pd.Series,
                          names: dict[int, str] | None = None) -> list[str]:
    """Which runs reached the maximum checkpoint age: one sentence when every run or none
    did; else a sentence per row where some run did, and one for the rows where none did."""
    done = rs[rs["status"] == RunStatus.DONE]
    overall = run_claims.reached_max_checkpoint_age(peaks, [int(r) for r in done["run_id"]])
    if overall.holds in (0, overall.total):
        return [overall.sentence()]
    out, quiet_rows, quiet_runs = [], 0, 0
    for _, cell in cells.iterrows():
        runs = [int(r) for r in done.loc[done["cell_id"] == cell["cell_id"], "run_id"]]
        age = run_claims.reached_max_checkpoint_age(peaks, runs)
        if age.holds:
            row = (names or {}).get(int(cell["cell_id"]), cell["cell_label"])
            out.append(f"{row}: {age.sentence()}")
        elif age.total:
            quiet_rows, quiet_runs = quiet_rows + 1, quiet_runs + age.total
    if quiet_rows:
        out.append(f"in the other {f'{quiet_rows} rows' if quiet_rows > 1 else 'row'}: "
                   f"no run {overall.statement} (0 of {quiet_runs})")
    return out


def aa_line(cmp: Comparison) -> Paragraph:
    """The A/A noise floor beside the verdicts: what one configuration run again varies by."""
    floor = cmp.cells.attrs.get("noise_floor") or {}
    if not floor.get("n"):
        return Paragraph(("No A/A noise floor: run the baseline at least 5 times (",
                          code("baseline_repetitions: 5"), ") to measure how much one"
                          " configuration varies from run to run."), "sub")
    return Paragraph((bold("A/A noise floor"), " — ", Value(aa_floor_text(floor)),
                      ". A difference smaller than this is what the same configuration does"
                      " from run to run; every verdict's MDE is at least this CV."), "sub")


def host_lines(cmp: Comparison, names: dict[int, str]) -> list[Paragraph]:
    """Per A/A cell (5 or more counted runs) of a study spread over hosts (sessions): its runs
    by host and whether the hosts differ (:func:`analysis.comparisons.hosts.host_effect`)."""
    m = metric_view(cmp.experiment)
    rs = cmp.frames.run_summary
    done = rs[rs["status"] == RunStatus.DONE]
    counts = done.groupby("cell_id").size()
    out = []
    for _, cell in cmp.cells.sort_values("position").iterrows():
        cid = int(cell["cell_id"])
        if counts.get(cid, 0) < AA_MIN_REPETITIONS:
            continue
        effect = host_effect(rs, cid)
        if effect is None:
            continue
        per: list[Rich] = []
        for i, (h, (n, mean)) in enumerate(effect["per_host"].items()):
            per.append(rich("; " if i else "", Value(h), f": {number(m.of(mean))}"
                            + (f" ({n} runs)" if n > 1 else "")))
        if math.isfinite(effect["p"]):
            df1, df2 = effect["df"]
            test = rich("one-way F test on log ", Value(m.name), f": p = {effect['p']:.2g} "
                        f"({df1}, {df2} df)" + (" — the hosts differ" if effect["p"] < 0.05
                                                else ", no host effect shown"))
        else:
            test = ("no host ran it twice: no within-host spread to test a host effect against",)
        out.append(Paragraph(rich(bold("By host"), " — ",
                                  row_name(cell["cell_label"], names.get(cid)), ": ", *per,
                                  "; ", test, "."), "sub"))
    return out


def driver_fidelity_note(workload: WorkloadSpec) -> Note | None:
    """The Go driver's measured gap to tpcc_start, on every report made with it.

    Absolute NOTPM from the built-in driver is not the same as tpcc_start's on a CPU-saturated
    host: the two clients take different shares of the CPU the server needs.
    """
    if workload.driver != "tpcc" or workload.mode == "batched":
        return None
    return Note(("Measured with flushbench's built-in Go TPC-C driver (tpcc_start's statements)."
                 f" On a CPU-saturated 2-vCPU machine its TpmC was {GO_DRIVER_RESIDUAL} of"
                 " tpcc_start's on the same data (docs/tpcc.md): compare this report's NOTPM"
                 " with published tpcc-mysql figures only after measuring the gap on your host"
                 " (", code("bench/tpcc_vs_tpcc_mysql.py --grid"), "), or run the experiment"
                 " with ", code("driver: tpcc-mysql"), ". Cells measured with the same driver"
                 " are compared with each other as usual."))


def methods(cmp: Comparison) -> Paragraph:
    """The methodology's paragraph: the metric, the interval, the verdict rule (independent
    and blocked), the noise floor, the stability score and the sampled levels."""
    exp = cmp.experiment
    return Paragraph((
        "Throughput is the driver's primary count per report interval (New-Orders for TPC-C,"
        " transactions for sysbench); the ", Value(metric_view(exp).name), " of a run (",
        Value(metric_view(exp).unit), ") is the window average (Σ count / Σ seconds, × 60"
        " per minute). Each configuration's figure is the mean over its repetitions with a"
        " lognormal (Cox) 95% interval, which keeps its coverage at 3 repetitions. Every"
        " verdict in this report, its tables, figures and scorecard comes from one rule."
        " Independent runs: a configuration is ", italic("faster"), "/", italic("slower"),
        " than its baseline only when an exact two-sided Mann-Whitney test gives p < 0.05 ",
        bold("and"), " the Welch-on-log 95% interval of the ratio excludes 1 (when the group"
        " sizes cannot reach p < 0.05 — 3 vs 3 — the verdict is ",
        italic("not enough repetitions"), "). Runs in blocks (rounds or hosts): one model of"
        " log throughput with a configuration and a block effect, its noise pooled over every"
        " configuration, whose 95% interval must exclude 1 and hold with any one block left"
        " out (or pass van Elteren's stratified rank test where the blocks can reach p <"
        " 0.05). Beside each verdict: its reason and the minimum detectable effect (MDE, 80%"
        " power) at that design and that noise", Value(noise_floor_text(cmp)), ". The ",
        bold("stability score"), " is 100 × p5 / median (nearest-rank percentile) of a run's"
        " per-interval series over the window (100 = flat line); a run is flagged when its CV"
        " is ≥ 10%, when a periodogram peak stands out of its own red noise (false-alarm p ≤"
        " 1%, two cycles in the window), and for holes, steps and drifts. Methods and their"
        " simulated error rates: docs/statistics.md. Dirty pages % uses InnoDB's formula 100 ×"
        " dirty / (1 + data + free); checkpoint age is LSN − last checkpoint LSN.",
    ))


def noise_floor_text(cmp: Comparison) -> str:
    """What the methodology says after the verdict rule (the caller ends the sentence), as
    plain text."""
    own = cmp.cells.attrs.get("baselines_note")
    hosts = cmp.cells.attrs.get("hosts_note")
    floor = cmp.cells.attrs.get("noise_floor") or {}
    if hosts:  # in blocks (rounds, hosts): say how the verdicts were made
        text = f". {hosts}"
    elif floor.get("n"):
        text = (f"; an A/A noise floor from {aa_floor_text(floor)}, which the MDE never "
                "goes below")
    else:
        text = "; no A/A noise floor was measured (repeat the baseline at least 5 times for one)"
    if own:
        text = text.rstrip(".") + ". " + own
    return text.rstrip(".")


def repetitions_text(spec: ExperimentSpec) -> str:
    """``4 declared per cell (baseline 6; 1 include row: 6)`` from the stored spec."""
    text = f"{spec.repetitions} declared per cell"
    extra = []
    if spec.baseline_repetitions:
        extra.append(f"baseline {spec.baseline_repetitions}")
    own = [str(inc.repetitions) for inc in spec.include if inc.repetitions]
    if own:
        extra.append(f"{len(own)} include row{'s' if len(own) > 1 else ''}: "
                     + ", ".join(own))
    return text + (f" ({'; '.join(extra)})" if extra else "")


def varies_text(values: pd.Series, labels: dict[int, str]) -> str:
    """A variable that differs between cells, as each value and how many cells ran with it
    (their labels when at most two: twelve long labels made one unreadable line)."""
    parts = []
    for value in sorted(set(values)):
        cells = [labels.get(int(c), str(c)) for c, v in values.items() if v == value]
        listed = f": {'; '.join(cells)}" if len(cells) <= 2 else ""
        parts.append(f"{value} ({len(cells)} cell{'s' if len(cells) > 1 else ''}{listed})")
    return "varies — " + "; ".join(parts)


def code_text(extra: Any) -> str:
    """The flushbench that recorded one run (``run_metadata.extra["flushbench"]``):
    ``flushbench 0.1.0 at e7c2de0``, ``… with local changes``, or ``not recorded``."""
    code = extra.get("flushbench") if isinstance(extra, dict) else None
    if not isinstance(code, dict):
        return "not recorded"
    text = f"flushbench {code.get('version', '?')}"
    if not code.get("commit"):
        return text + " (not run from a git checkout)"
    text += f" at {str(code['commit'])[:7]}"
    return text + (" with local changes to its code" if code.get("modified") else "")


def code_versions_text(extras: Any) -> str:
    """Which flushbench recorded the runs: one version for all, or each with its run count
    (a study's queue resumed across days may span commits; runs recorded before flushbench
    stored its commit say so). Runs with no metadata (queued, never started) are not
    counted: nothing recorded them yet."""
    counts: dict[str, int] = {}
    for extra in extras:
        if not isinstance(extra, dict):
            continue
        text = code_text(extra)
        counts[text] = counts.get(text, 0) + 1
    if not counts:
        return "–"
    if len(counts) == 1:
        text, n = next(iter(counts.items()))
        return f"{text} (all {n} run{'s' if n > 1 else ''})" if n > 1 else text
    return "; ".join(f"{text} ({n} run{'s' if n > 1 else ''})"
                     for text, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def dataset_text(ds: DatasetSpec) -> str:
    """The dataset as the methodology names it (``TPC-C 10 warehouses``)."""
    if ds.workload == "sysbench":
        return f"sysbench {ds.tables} tables × {ds.table_size} rows"
    return f"TPC-C {ds.warehouses} warehouses"
