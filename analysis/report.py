"""One self-contained HTML report per experiment, plus a PNG of every figure.

The page answers the researcher's questions in order: which configuration gives the most NOTPM
(ranked table, bars with CIs), which gives a flat line (stability scores), is the difference
real (ratios, CIs, Mann-Whitney verdicts), and why (checkpoint age vs dirty pages per cell).
plotly.js is inlined once in ``<head>``; figures reference it, so the file opens offline.

Two steps: :func:`build_report_model` reads the store once and decides what the report says —
the comparison, the sentences computed from the runs, the figures in page order and the
sections with their tables — as a :class:`ReportModel`; :func:`render` draws a model as the
HTML page and the PNGs. :func:`write_report` does both and starts the PNG renderers on each
figure as soon as the model has built it.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from analysis import (
    bound,
    claims,
    cost,
    distributions,
    efficiency,
    io_breakdown,
    latency,
    plots,
    scorecard,
    small_multiples,
    stability_claims,
)
from analysis.blas import one_blas_thread
from analysis.compare import AA_MIN_REPETITIONS, Comparison, aa_floor_text, compare
from analysis.frames import (
    DB,
    KEY_VARIABLES,
    ExperimentRef,
    intervals,
    representative_runs,
    run_variables,
    samples,
    session_scope,
    varying_knobs,
)
from analysis.hosts import host_effect
from analysis.memory import cell_memory, memory_matters
from analysis.metric import MetricView, metric_view, window_detail_rate
from analysis.png_export import PngExporter
from analysis.run_digest import run_digests
from analysis.statistics.design import NO_MAIN_EFFECT
from core.errors import AnalysisError
from core.redaction import redact
from store.models import RunStatus

_CSS = """
body{font-family:Inter,'Helvetica Neue',Helvetica,Arial,sans-serif;color:#222;margin:0;
background:#fff;line-height:1.55}
main{max-width:1080px;margin:0 auto;padding:24px 32px 80px}
h1{font-size:30px;margin:8px 0 4px}h2{font-size:23px;margin:44px 0 10px;border-bottom:1px solid
#e5e5e5;padding-bottom:6px}h3{font-size:18px;margin:30px 0 6px}
.sub{color:#666;margin:0 0 18px}.summary li{margin:4px 0}
table{border-collapse:collapse;font-size:13.5px;margin:10px 0 18px;width:100%}
th,td{padding:5px 9px;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
th{background:#fafafa;font-weight:600}td.l,th.l{text-align:left}
tr.base td{background:#f6f6f6}.faster{color:#0a7b32;font-weight:600}
.slower{color:#b3261e;font-weight:600}.warn{color:#9a5b00}.muted{color:#777}
.figure{margin:14px 0 26px}.figure .png{font-size:12px;color:#888}
.note{background:#fff8e6;border-left:4px solid #e6a700;padding:8px 12px;margin:12px 0}
code{background:#f3f3f3;padding:1px 4px;border-radius:3px;font-size:90%}
"""


#: Records script errors on <body data-js-errors> so a headless browser check can read them.
_ERROR_HOOK = (
    "window.__errors=[];window.addEventListener('error',function(e){window.__errors.push("
    "String(e.message));document.documentElement.setAttribute('data-js-errors',"
    "window.__errors.join(' | '));});"
)


@dataclass(frozen=True)
class ReportFigure:
    """One figure of the report: its name (``NN-kind``, the PNG file and the div id) and the
    figure as drawn for the PNG (fixed width and height): a plotly figure, or the plain-dict
    :data:`analysis.plots.FigureSpec` of the figures drawn once per cell (not validated here:
    ``tests/analysis/test_report_model.py`` validates every figure of its reports)."""

    slug: str
    figure: go.Figure | plots.FigureSpec

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        """The figure as plotly.js reads it, made once for the PNG and the HTML (plotly's
        ``to_dict`` deep-copies each time). Read-only by convention: both readers only
        serialize it."""
        if isinstance(self.figure, dict):
            return plots.resolved(self.figure)
        return self.figure.to_dict()

    @property
    def height(self) -> int:
        """The figure's own height in pixels (the template's when it sets none)."""
        return int(self.spec.get("layout", {}).get("height") or plots.HEIGHT)


class _FigureList:
    """Collects the figures in page order while the model is built.

    ``add`` returns a marker that :func:`render` replaces with the figure's div; ``on_figure``
    (optional) hears of each figure as soon as it is final, so the PNG export can start
    drawing while the rest of the model is built.
    """

    def __init__(self, on_figure: Callable[[ReportFigure], None] | None = None) -> None:
        self.items: list[ReportFigure] = []
        self._on_figure = on_figure

    def add(self, name: str, fig: go.Figure | plots.FigureSpec) -> str:
        """Register a figure; return the marker that stands for it in the page."""
        item = ReportFigure(f"{len(self.items) + 1:02d}-{name}", fig)
        self.items.append(item)
        if self._on_figure is not None:
            self._on_figure(item)
        return f"<!--figure:{item.slug}-->"


_FIGURE_MARKER = re.compile(r"<!--figure:([\w.-]+)-->")
#: Where the page says how the PNG export went (known only once every figure was drawn).
_PNG_SUMMARY = "<!--png-summary-->"
#: Where the generated claims go (rendered from the model's sentences).
_CLAIMS = "<!--claims-->"


@dataclass
class ReportModel:
    """What a report says, before any of it is drawn: the data, the sentences, the figures.

    Built by :func:`build_report_model`, drawn by :func:`render`. ``sections`` are the page's
    parts in order (tables already as HTML); a figure appears in them as a marker naming its
    slug and the claims as :data:`_CLAIMS`, so the same model renders with or without PNGs.
    """

    experiment: dict[str, Any]
    comparison: Comparison
    #: Sentences computed from the runs ("N of M runs noisy"…), exceptions named.
    claims: list[str]
    #: Figures in page order.
    figures: list[ReportFigure]
    sections: list[str]
    #: Forced-comparison warnings shown at the top.
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        """The experiment's name, the page's heading."""
        return str(self.experiment["name"])


def _e(value: Any) -> str:
    # Masked too: a description or label written before URLs with credentials were refused.
    return html.escape(redact(str(value)))


def _num(value: Any, fmt: str = ",.0f", empty: str = "–") -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return empty
    return empty if not math.isfinite(v) else format(v, fmt)


def _ci(low: Any, high: Any, fmt: str = ",.0f") -> str:
    lo, hi = _num(low, fmt, ""), _num(high, fmt, "")
    return f"{lo} – {hi}" if lo and hi else "–"


def _table(headers: list[str], rows: list[list[str]], left: int = 1,
           row_classes: list[str] | None = None) -> str:
    head = "".join(
        f"<th class='{'l' if i < left else ''}'>{_e(h)}</th>" for i, h in enumerate(headers)
    )
    body = []
    for r, row in enumerate(rows):
        cls = (row_classes or [""] * len(rows))[r]
        cells = "".join(
            f"<td class='{'l' if i < left else ''}'>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr class='{cls}'>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _verdict_html(verdict: str) -> str:
    cls = {"faster": "faster", "slower": "slower"}.get(verdict, "muted")
    return f"<span class='{cls}'>{_e(verdict)}</span>"


def _summary(cmp: Comparison, names: dict[int, str]) -> str:
    cells = cmp.cells
    rs = cmp.frames.run_summary
    ranked = cmp.ranking
    items = []
    best = ranked.iloc[0]
    m = metric_view(cmp.experiment)
    items.append(
        f"Most throughput: {_bold_named(best['cell_label'], names.get(int(best['cell_id'])))} with "
        f"{_num(m.of(best['notpm_mean']))} {m.name}"
        + (f" ({_num(best['ratio'], '.2f')}× the baseline, {_e(best['verdict'])})"
           if not best["is_baseline"] else " (the baseline)")
    )
    flat = ranked.sort_values("rank_stability").iloc[0]
    items.append(
        f"Flattest line: {_bold_named(flat['cell_label'], names.get(int(flat['cell_id'])))}, "
        "stability score "
        f"{_num(flat['score_median'], '.0f')} (100 = flat)"
    )
    faster = cells[cells["verdict"] == "faster"]
    slower = cells[cells["verdict"] == "slower"]
    unsure = cells[cells["verdict"] == "not enough repetitions"]
    items.append(
        f"Against the baseline: {len(faster)} faster, {len(slower)} slower, "
        f"{len(cells) - 1 - len(faster) - len(slower) - len(unsure)} no clear difference"
        + (f", {len(unsure)} with too few repetitions for a verdict" if len(unsure) else "")
    )
    n_done = int((rs["status"] == RunStatus.DONE).sum())
    n_failed = int((rs["status"] == RunStatus.FAILED).sum())
    n_other = len(rs) - n_done - n_failed
    items.append(
        f"Runs: {n_done} done, {n_failed} failed" + (f", {n_other} not finished" if n_other else "")
    )
    no_data = rs["warnings"].str.startswith("done, no data in window")
    if no_data.any():
        items.append(f"<span class='warn'>{int(no_data.sum())} run(s) done, no data in window: "
                     f"run {_e(', '.join(str(int(r)) for r in rs.loc[no_data, 'run_id']))}"
                     "</span>")
    noisy = int((rs["warnings"].str.len().gt(0) & ~no_data).sum())
    if noisy:
        items.append(f"<span class='warn'>{noisy} run(s) noisy (CV ≥ 10 %) or oscillating — "
                     "see the warnings below</span>")
    return "<ul class='summary'>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def _own_baseline(cmp: Comparison, row: pd.Series) -> str:
    """`` vs base`` when the experiment has several baselines (each row has its own)."""
    if not cmp.cells.attrs.get("baselines_note"):
        return ""
    cells = cmp.cells.set_index("cell_id")
    label = cells.loc[int(row["cell_id"]), "baseline_label"]
    return f"<br><span class='muted'>vs {_e(label)}</span>"


def _ranked_table(cmp: Comparison, qps: dict[int, float] | None = None,
                  names: dict[int, str] | None = None) -> str:
    m = metric_view(cmp.experiment)
    rows, classes = [], []
    for _, r in cmp.ranking.iterrows():
        rows.append([
            _named(r["cell_label"], (names or {}).get(int(r["cell_id"])))
            + (" <span class='muted'>(baseline)</span>"
                                   if r["is_baseline"] else ""),
            str(int(r["rank_notpm"])), _num(m.of(r["notpm_mean"])),
            _ci(m.of(r["notpm_ci_low"]), m.of(r["notpm_ci_high"])),
            *([_num((qps or {}).get(int(r["cell_id"])))] if qps else []),
            "–" if r["is_baseline"] else f"{_num(r['ratio'], '.2f')}×" + _own_baseline(cmp, r),
            _verdict_html(r["verdict"]), str(int(r["rank_stability"])),
            _num(r["score_median"], ".0f"), _num(r["cv_pct_median"], ".1f"),
            str(int(r["n_done"])), f"<span class='warn'>{_e(r['warnings'])}</span>",
        ])
        classes.append("base" if r["is_baseline"] else "")
    cells = cmp.cells.set_index("cell_id")
    for i, (_, r) in enumerate(cmp.ranking.iterrows()):
        c = cells.loc[r["cell_id"]]
        if not r["is_baseline"] and math.isfinite(c["ratio_ci_low"]):
            col = 5 if qps else 4
            rows[i][col] += (f"<br><span class='muted'>{_num(c['ratio_ci_low'], '.2f')}–"
                           f"{_num(c['ratio_ci_high'], '.2f')}, "
                           f"p={_num(c['p_value'], '.3f')}</span>")
        if not r["is_baseline"]:
            # Every verdict says why, and how large a change could hide (minimum detectable).
            rows[i][5] += (f"<br><span class='muted'>{_e(c['verdict_reason'])}"
                           + (f" (MDE ±{_num(c['mde_pct'], '.1f')}%)"
                              if math.isfinite(c["mde_pct"]) else "") + "</span>")
    return _table(
        ["configuration", "rank", m.name, "95% CI", *(["QPS"] if qps else []), "vs baseline",
         "verdict", "stability rank", "score", "CV %", "runs", "warnings"],
        rows, row_classes=classes,
    )


def level_names(cells: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(knob, value as ``plots._fmt`` prints it) → the value as the cell labels print it.

    The store keeps sizes in bytes (``log_file_size`` 335544320); the labels, made by the
    runner at enqueue, say ``320M``. Tables that name knob levels use the labels' words.
    """
    out: dict[tuple[str, str], str] = {}
    for _, cell in cells.iterrows():
        knobs = cell["knobs"] if isinstance(cell.get("knobs"), dict) else {}
        for token in str(cell["cell_label"]).split(" "):
            name, eq, text = token.partition("=")
            if eq and name in knobs:
                out[(name, plots._fmt(knobs[name]))] = text
    return out


def _effects_tables(cmp: Comparison) -> str:
    out = []
    me = cmp.main_effects
    names = level_names(cmp.cells)

    def level(knob: str, value: Any) -> str:
        text = plots._fmt(value)
        return _e(names.get((knob, text), text))

    if len(me):
        rows = [[
            _e(r["knob"]), f"{level(r['knob'], r['level'])} vs {level(r['knob'], r['reference'])}",
            f"{_num(r['ratio'], '.3f')}×" if r["estimable"] else "–",
            _ci(r["ci_low"], r["ci_high"], ".3f"), _num(r["p_value"], ".4f"),
            _e(r["reason"]),
        ] for _, r in me.iterrows()]
        out.append("<h3>Main effect of each knob</h3><p class='sub'>Least squares on log "
                   "throughput over every run (all main effects together), as a ratio to the "
                   "knob's reference level, with a t interval and p-value — only where the "
                   "design identifies the effect; otherwise the table says what it is "
                   "confounded with.</p>")
        out.append(_table(["knob", "level vs reference", "ratio", "95% CI", "p", "estimable?"],
                          rows, left=2))
    it = cmp.interactions
    if len(it):
        # An interaction of a knob whose main effect is not estimable cannot be either; the
        # main-effects table says why, so such pairs are counted, not listed (the 2011 flash
        # study's twelve rows gave 36 of them).
        implied = it["reason"].astype(str).str.startswith(NO_MAIN_EFFECT)
        rows = [[
            _e(r["knob_a"]), _e(r["knob_b"]),
            _num(r["rms_pct"], ".2f") if r["estimable"] else "–",
            _num(r["p_value"], ".4f"), _e(r["reason"]),
        ] for _, r in it[~implied].iterrows()]
        out.append("<h3>Two-way interactions</h3><p class='sub'>How far the cells are from "
                   "\"effect of A times effect of B\" (RMS change of the fitted cells, %), with "
                   "an F test against the main-effects model — only where every combination of "
                   "the two knobs was run and is not aliased.</p>")
        if rows:
            out.append(_table(["knob A", "knob B", "interaction %", "p", "estimable?"], rows,
                              left=2))
        if implied.any():
            out.append(f"<p>{int(implied.sum())} {'more ' if rows else ''}pair(s) of knobs not "
                       "estimable: each involves a knob whose main effect is not estimable "
                       "(above).</p>")
    return "".join(out)


#: TpmC of the built-in Go driver ÷ tpcc_start's on the same statements and data, median of
#: 3 alternating pairs per point on a quiet 2-vCPU VM, 2026-11-24 (docs/tpcc.md and
#: docs/benchmarks.md, "Contention grid"): the residual issue 25 could not remove.
GO_DRIVER_RESIDUAL = "0.73–0.90× at 1–10 warehouses × 4–32 connections, 1.08× at 10 × 64"


def _driver_fidelity_note(workload: dict[str, Any]) -> str:
    """The Go driver's measured gap to tpcc_start, on every report made with it.

    Absolute NOTPM from the built-in driver is not comparable with published tpcc-mysql
    numbers on a CPU-saturated host (the client's turnaround holds row locks longer).
    """
    if workload.get("driver", "tpcc") != "tpcc" or workload.get("mode") == "batched":
        return ""
    return ("<div class='note'>Measured with flushbench's built-in Go TPC-C driver "
            "(tpcc_start's statements). On a CPU-saturated 2-vCPU machine its TpmC was "
            f"{GO_DRIVER_RESIDUAL} of tpcc_start's on the same data (docs/tpcc.md): compare "
            "this report's NOTPM with published tpcc-mysql figures only after measuring the "
            "gap on your host (<code>bench/tpcc_vs_tpcc_mysql.py --grid</code>), or run the "
            "experiment with <code>driver: tpcc-mysql</code>. Cells measured with the same "
            "driver are compared with each other as usual.</div>")


def _methodology(cmp: Comparison, variables: pd.DataFrame, labels: dict[int, str]) -> str:
    exp = cmp.experiment
    spec = exp["spec"]
    win = exp["window"]
    md = cmp.metadata
    wl = spec.get("workload", {})
    ds = spec.get("dataset", {})

    def one(key: str) -> str:
        return _e(", ".join(md.get(key, [])) or "–")

    mem = md.get("mem_total_bytes", [])
    mem_txt = ", ".join(f"{float(m) / 1024**3:.1f} GiB" for m in mem) if mem else "–"
    hw = _table(["", ""], [
        ["host", one("hostname")], ["kernel", one("kernel")], ["CPU", one("cpu_model")],
        ["CPU count", one("cpu_count")], ["memory", _e(mem_txt)],
        ["datadir device / fs", f"{one('datadir_device')} / {one('datadir_fstype')}"],
    ])
    srv = _table(["", ""], [
        ["server", f"{one('server_flavor')} {one('server_version')}"],
        ["dataset", f"{one('dataset_key')} ({_e(_dataset_text(ds))})"],
        ["driver", f"{one('driver')} — {wl.get('connections', '?')} connections"],
        ["warmup (excluded)", f"{win.warmup:g} s"],
        ["run length after warmup", f"{win.duration:g} s"],
        ["measurement window", f"{win.start:g} s – {win.end:g} s after warmup "
                               f"({win.length / 60:g} min)"],
        ["report interval", f"{win.report_interval:g} s"],
        ["repetitions", f"{_repetitions_text(spec)}; run order "
                        f"{_e((spec.get('order') or {}).get('mode', '?'))}"],
        ["sampling", f"every {(spec.get('sampling') or {}).get('interval', '?')} s"],
    ])
    var_rows = []
    for name in KEY_VARIABLES:
        if name not in variables.columns or variables[name].isna().all():
            continue
        values = variables[name].dropna()
        distinct = sorted(set(values))
        if len(distinct) == 1:
            var_rows.append([f"<code>{_e(name)}</code>", _e(distinct[0])])
        else:
            var_rows.append([f"<code>{_e(name)}</code>", _varies_text(values, labels)])
    variables_html = _table(["variable", "value (SHOW GLOBAL VARIABLES)"], var_rows)
    warnings = "".join(f"<li>{_e(w)}</li>" for w in cmp.warnings) or "<li>none</li>"
    return (
        "<h2 id='methodology'>Methodology</h2>"
        f"{_driver_fidelity_note(wl)}"
        f"<p>Throughput is the driver's primary count per report interval (New-Orders for "
        f"TPC-C, transactions for sysbench); the {_e(metric_view(exp).name)} of a run "
        f"({_e(metric_view(exp).unit)}) is the window average (Σ count / Σ seconds, × 60 "
        "per minute). Each configuration's figure is "
        "the mean over its repetitions with a lognormal (Cox) 95% interval, which keeps its "
        "coverage at 3 repetitions. Every verdict in this report, its tables, figures and "
        "scorecard comes from one rule. Independent runs: a configuration is <i>faster</i>/"
        "<i>slower</i> than its baseline only when an exact two-sided Mann-Whitney test gives "
        "p &lt; 0.05 <b>and</b> the Welch-on-log 95% interval of the ratio excludes 1 (when "
        "the group sizes cannot reach p &lt; 0.05 — 3 vs 3 — the verdict is <i>not enough "
        "repetitions</i>). Runs in blocks (rounds or hosts): one model of log throughput with "
        "a configuration and a block effect, its noise pooled over every configuration, whose "
        "95% interval must exclude 1 and hold with any one block left out (or pass van "
        "Elteren's stratified rank test where the blocks can reach p &lt; 0.05). Beside each "
        "verdict: its reason and the minimum detectable effect (MDE, 80% power) at that "
        "design and that noise"
        f"{_noise_floor_text(cmp)}. The <b>stability score</b> is 100 × p5 / median "
        "(nearest-rank percentile) of a run's per-interval series over the window (100 = flat "
        "line); a run is flagged when its CV is ≥ 10%, when a periodogram peak stands out of "
        "its own red noise (false-alarm p ≤ 1%, two cycles in the window), and for holes, "
        "steps and drifts. Methods and their simulated error rates: docs/statistics.md. "
        "Dirty pages % uses InnoDB's formula 100 × dirty / (1 + data + free); checkpoint age "
        "is LSN − last checkpoint LSN.</p>"
        f"<h3>Server and workload</h3>{srv}<h3>Hardware</h3>{hw}"
        f"<h3>Key server variables</h3>{variables_html}"
        f"<h3>Warnings</h3><ul>{warnings}</ul>"
    )


def _host_lines(cmp: Comparison, names: dict[int, str]) -> str:
    """Per A/A cell (5 or more counted runs) of a study spread over hosts (sessions): its runs
    by host and whether the hosts differ (:func:`analysis.hosts.host_effect`)."""
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
        per = "; ".join(f"{_e(h)}: {_num(m.of(mean))}" + (f" ({n} runs)" if n > 1 else "")
                        for h, (n, mean) in effect["per_host"].items())
        if math.isfinite(effect["p"]):
            df1, df2 = effect["df"]
            test = (f"one-way F test on log {_e(m.name)}: p = {effect['p']:.2g} "
                    f"({df1}, {df2} df)" + (" — the hosts differ" if effect["p"] < 0.05
                                            else ", no host effect shown"))
        else:
            test = "no host ran it twice: no within-host spread to test a host effect against"
        out.append(f"<p class='sub'><b>By host</b> — {_named(cell['cell_label'], names.get(cid))}"
                   f": {per}; {test}.</p>")
    return "".join(out)


def _aa_line(cmp: Comparison) -> str:
    """The A/A noise floor beside the verdicts: what one configuration run again varies by."""
    floor = cmp.cells.attrs.get("noise_floor") or {}
    if not floor.get("n"):
        return ("<p class='sub'>No A/A noise floor: run the baseline at least 5 times "
                "(<code>baseline_repetitions: 5</code>) to measure how much one configuration "
                "varies from run to run.</p>")
    return (f"<p class='sub'><b>A/A noise floor</b> — {_e(aa_floor_text(floor))}. A difference "
            "smaller than this is what the same configuration does from run to run; every "
            "verdict's MDE is at least this CV.</p>")


def _noise_floor_text(cmp: Comparison) -> str:
    """What the methodology says after the verdict rule (the caller ends the sentence)."""
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
    return _e(text.rstrip("."))


def _repetitions_text(spec: dict[str, Any]) -> str:
    """``4 declared per cell (baseline 6; 1 include row: 6)`` from the stored spec."""
    text = f"{spec.get('repetitions', '?')} declared per cell"
    extra = []
    if spec.get("baseline_repetitions"):
        extra.append(f"baseline {spec['baseline_repetitions']}")
    own = [str(inc["repetitions"]) for inc in spec.get("include") or []
           if isinstance(inc, dict) and inc.get("repetitions")]
    if own:
        extra.append(f"{len(own)} include row{'s' if len(own) > 1 else ''}: "
                     + ", ".join(own))
    return _e(text + (f" ({'; '.join(extra)})" if extra else ""))


def _varies_text(values: pd.Series, labels: dict[int, str]) -> str:
    """A variable that differs between cells, as each value and how many cells ran with it
    (their labels when at most two: twelve long labels made one unreadable line)."""
    parts = []
    for value in sorted(set(values)):
        cells = [labels.get(int(c), str(c)) for c, v in values.items() if v == value]
        named = f": {'; '.join(cells)}" if len(cells) <= 2 else ""
        parts.append(f"{value} ({len(cells)} cell{'s' if len(cells) > 1 else ''}{named})")
    return "varies — " + _e("; ".join(parts))


def _primary(cmp: Comparison) -> str:
    """What the driver's primary count is: New-Orders (TPC-C) or transactions (sysbench)."""
    counts = cmp.experiment["metric"]["counts"]  # stored at enqueue from the workload adapter
    return counts[:1].upper() + counts[1:]


def _dataset_text(ds: dict[str, Any]) -> str:
    if ds.get("workload") == "sysbench":
        return f"sysbench {ds.get('tables')} tables × {ds.get('table_size')} rows"
    return f"TPC-C {ds.get('warehouses')} warehouses"


def _display_cells(cells: pd.DataFrame, names: dict[int, str]) -> pd.DataFrame:
    """The cells with each row's own name as its label where it has one (``dw-on-50``), for
    the figures that put configurations on an axis; the tables keep the full label."""
    if not names:
        return cells
    return cells.assign(cell_label=[names.get(int(c), label) for c, label
                                    in zip(cells["cell_id"], cells["cell_label"], strict=True)])


def _plain_named(label: str, name: str | None) -> str:
    """A cell's label after the row's own short name, as plain text (figure subtitles)."""
    return f"{name} · {label}" if name else str(label)


def _named(label: str, name: str | None) -> str:
    """A cell's label as HTML, after the row's own short name in bold when it has one."""
    return f"<b>{_e(name)}</b> · {_e(label)}" if name else _e(label)


def _bold_named(label: str, name: str | None) -> str:
    """:func:`_named`, the label in bold when there is no name (the summary's emphasis)."""
    return _named(label, name) if name else f"<b>{_e(label)}</b>"


def _cell_section(
    cmp: Comparison, figs: _FigureList, cell: pd.Series, rep_run: int | None,
    smp: pd.DataFrame, ivl: pd.DataFrame, memory_figures: bool = True,
    name: str | None = None, lat: latency.Latency | None = None,
) -> str:
    win = cmp.experiment["window"]
    window = (win.start, win.end)
    m = metric_view(cmp.experiment)
    rs = cmp.frames.run_summary
    runs = rs[rs["cell_id"] == cell["cell_id"]]
    # `window: {start: steady}`: the band starts where the representative run's own window
    # started (each run's start is chosen at its end and stored; docs/statistics.md).
    own = runs.loc[runs["run_id"] == rep_run, "window_start_s"] if "window_start_s" in runs \
        else pd.Series(dtype=float)
    if len(own) and pd.notna(own.iloc[0]):
        window = (float(own.iloc[0]), win.end)
    out = [f"<h3 id='cell-{int(cell['cell_id'])}'>{_named(cell['cell_label'], name)}"
           + (" <span class='muted'>(baseline)</span>" if cell["is_baseline"] else "") + "</h3>"]
    verdict = "" if cell["is_baseline"] else (
        f" · {_num(cell['ratio'], '.2f')}× the baseline ({_verdict_html(cell['verdict'])})"
    )
    out.append(f"<p class='sub'>{_num(m.of(cell['notpm_mean']))} {m.name} (95% CI "
               f"{_ci(m.of(cell['notpm_ci_low']), m.of(cell['notpm_ci_high']))}){verdict} · "
               "stability "
               f"score {_num(cell['score_median'], '.0f')}</p>")
    rows = []
    # Each run's response time beside its stability score (analysis/latency.py).
    lat_rows = lat.by_run if lat is not None and lat.view.percentile else {}
    lat_name = lat.view.name if lat is not None and lat.view.percentile else "p99"
    for _, r in runs.iterrows():
        mine = lat_rows.get(int(r["run_id"]), {})
        rows.append([
            f"#{int(r['repetition'])}" + (f" (attempt {int(r['attempt'])})"
                                          if r["attempt"] > 1 else ""),
            str(int(r["run_id"])), _e(r["status"]), _num(m.of(r.get("notpm"))),
            _num(r.get("score"), ".0f"), _num(mine.get("value_ms"), ",.1f"),
            _num(mine.get("stall_s")), _num(r.get("cv_pct"), ".1f"),
            _num(r.get("holes_share", math.nan) * 100, ".0f"),
            _num(r.get("period_s"), ".0f"), _num(r.get("trend_pct_per_min"), "+.2f"),
            f"<span class='warn'>{_e(_text(r.get('warnings')) or _text(r.get('error')))}</span>",
        ])
    out.append(_table(["repetition", "run", "status", m.name, "score", f"{lat_name} ms",
                       "stall s", "CV %", "holes %", "period s", "trend %/min", "warnings"],
                      rows))
    cell_int = ivl[ivl["run_id"].isin(runs["run_id"])]
    if len(cell_int):
        labels = {int(r["run_id"]): f"#{int(r['repetition'])}"
                  for _, r in runs.sort_values("repetition").iterrows()}
        out.append(figs.add(f"throughput-cell{int(cell['cell_id'])}", plots.throughput_spec(
            cell_int, labels=labels, window=window, **_throughput_kwargs(cmp, m),
            subtitle=f"{_plain_named(cell['cell_label'], name)} · every repetition",
        )))
    run_smp = smp[smp["run_id"] == rep_run] if rep_run is not None else smp.iloc[0:0]
    if len(run_smp) and run_smp["checkpoint_age_mb"].notna().any():
        sub = f"{_plain_named(cell['cell_label'], name)} · run {rep_run} (median repetition)"
        out.append(figs.add(f"checkpoint-dirty-cell{int(cell['cell_id'])}",
                            plots.checkpoint_dirty_spec(run_smp, subtitle=sub, window=window)))
        if "pages_flushed_per_s" in run_smp and run_smp["pages_flushed_per_s"].notna().any():
            out.append(figs.add(f"flushing-cell{int(cell['cell_id'])}",
                                plots.flushing_spec(run_smp, subtitle=sub,
                                                    window=window)))
        if memory_figures and run_smp["rss_mb"].notna().any():
            out.append(figs.add(f"memory-cell{int(cell['cell_id'])}", plots.memory(
                run_smp, subtitle=sub, window=window)))
    elif rep_run is not None:
        out.append("<p class='muted'>No sampler data for this run.</p>")
    return "".join(out)


def _throughput_kwargs(cmp: Comparison, m: MetricView) -> dict[str, Any]:
    """Per-interval throughput figure arguments in the experiment's metric."""
    interval = cmp.experiment["window"].report_interval
    if m.per_minute:  # counts per interval, as the 2011 graphs showed New-Orders per 10 s
        return {"title": f"{_primary(cmp)} per {interval:g} s",
                "unit": _primary(cmp).split(" ")[0]}
    return {"title": f"{m.name} per {interval:g} s interval", "column": m.column,
            "y_title": f"{m.name} ({m.unit})"}


def _cell_qps(db: Any, rs: pd.DataFrame) -> dict[int, float]:
    """Per cell, the mean over done runs of the window QPS (sysbench's interval ``qps``)."""
    done = rs[rs["status"] == RunStatus.DONE]
    if done.empty:
        return {}
    ivl = intervals(db, run_ids=[int(r) for r in done["run_id"]], detail=True)
    per_run = window_detail_rate(ivl, "qps")
    if per_run.empty:
        return {}
    by_cell = done.assign(qps=done["run_id"].map(per_run)).groupby("cell_id")["qps"].mean()
    return {int(c): float(v) for c, v in by_cell.items() if pd.notna(v)}


_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


#: Most panels a small-multiples figure draws (cells in the experiment's row order).
MAX_PANELS = 16


def _small_multiples(cmp: Comparison, figs: _FigureList, reps: dict[int, int],
                     smp: pd.DataFrame, metric: MetricView, names: dict[int, str]
                     ) -> list[str]:
    """One panel per cell, in row order: throughput of every run, and the representative
    run's checkpoint age and dirty pages (when the server reported them)."""
    rs = cmp.frames.run_summary
    cells = cmp.cells.sort_values("position").head(MAX_PANELS)
    cells = cells.assign(row_name=cells["cell_id"].astype(int).map(names))
    win = cmp.experiment["window"]
    ivl = cmp.frames.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")
    ivl = ivl[ivl["cell_id"].isin(cells["cell_id"])]
    if ivl.empty:
        return []
    more = f" (the first {MAX_PANELS} of {len(cmp.cells)} cells)" if len(cmp.cells) > \
        MAX_PANELS else ""
    unit = _throughput_kwargs(cmp, metric).get("unit", "transactions")
    out = [figs.add("throughput-per-cell", small_multiples.throughput_grid_spec(
        ivl, cells, window=(win.start, win.end), unit=unit, bold_runs=reps,
        subtitle="every repetition thin, the representative run bold, the measurement window"
                 f" shaded{more}"))]
    if not smp.empty and smp["checkpoint_age_pct"].notna().any():
        out.append(figs.add("checkpoint-per-cell", small_multiples.checkpoint_grid_spec(
            smp, cells, reps, window=(win.start, win.end),
            title="Checkpoint age and dirty pages per cell (representative run)")))
    return out


def _io_section(figs: _FigureList, table: pd.DataFrame, metric: MetricView,
                shown: dict[str, str]) -> str:
    """What each transaction wrote, by data pages, doublewrite and redo (when counted);
    ``shown`` renames a configuration label on the axis (the row's own name)."""
    if table.empty or not table.filter(like=" KiB").notna().any().any():
        return ""
    unit = "New-Order" if metric.per_minute else "transaction"
    fig = figs.add("io-per-transaction", io_breakdown.figure(
        table.rename(index=lambda label: shown.get(label, label)), unit=unit))
    return ("<h2>What each transaction wrote</h2><p class='sub'>Write operations and KiB per "
            f"{unit} over the measurement window, split into data pages "
            "(<code>Innodb_pages_written</code>), the doublewrite copy "
            "(<code>Innodb_dblwr_writes</code>, <code>Innodb_dblwr_pages_written</code>) and redo "
            "(<code>Innodb_log_writes</code>, <code>Innodb_os_log_written</code>); the median of "
            "each cell's runs.</p>" + fig)


#: The transaction types as the per-type latency table heads them.
_TYPE_NAMES = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status",
               "delivery": "Delivery", "stock_level": "Stock-Level"}


def _latency_section(d: _ReportData, figs: _FigureList, names: dict[int, str]) -> str:
    """Response time beside throughput stability: per row the window percentile, its verdict
    against the baseline (lower is better), stall seconds and jitter; the percentile over time
    per cell and its spread; each transaction type's figures (analysis/latency.py)."""
    lat, cmp, metric = d.latency, d.cmp, d.metric
    v = lat.view
    if v.percentile is None or lat.cells.empty:
        return ("<h2>Response time</h2><p class='muted'>The driver printed no latency figure."
                "</p>")
    who = "New-Order " if metric.per_minute else ""
    unit = "New-Order" if metric.per_minute else "transaction"
    labels = cmp.cells.set_index("cell_id")["cell_label"]
    rows = []
    for cell_id, c in lat.cells.iterrows():
        rows.append([_named(labels[cell_id], names.get(int(cell_id))),
                     _num(c["value_ms"], ",.1f"),
                     "–" if c["verdict"] == "baseline" else
                     f"{_num(c['ratio'], '.2f')}× "
                     f"({_ci(c['ratio_ci_low'], c['ratio_ci_high'], '.2f')})",
                     _latency_verdict_html(str(c["verdict"])), _num(c["stall_s_median"]),
                     _num(c["stall_s_max"]), _num(c["jitter_pct_median"])])
    missing = (f"<p class='warn'>No latency histograms (their {v.name} is the driver's"
               f" per-interval figure): {_e(latency.missing_text(lat.missing))}.</p>"
               if lat.missing else "")
    out = [f"<h2>Response time</h2><p class='sub'>{who}{v.name} in ms, lower is better. A"
           f" run's: the {_e(v.how)}; a row's: the {_e(v.cell_how)}. <i>stall s</i>: seconds"
           f" of the window's intervals with no {unit} or a {v.name} above"
           f" {latency.STALL_MULTIPLE:g} × the run's median (median and largest of the row's"
           f" runs); <i>jitter</i>: CV of the per-interval {v.name} (median of the runs). The"
           f" verdict is the throughput verdicts' rule on the runs' window {v.name}: a ratio"
           " above 1 is slower responses than the baseline's.</p>" + missing,
           _table(["configuration", f"{v.name} ms", "ratio (95% CI)", "verdict",
                   "stall s", "stall s max", "jitter %"], rows)]
    out += _latency_figures(d, figs, names)
    out.append(_latency_types(lat, labels, names, v))
    return "".join(out)


def _latency_verdict_html(verdict: str) -> str:
    cls = {latency.LOWER: "faster", latency.HIGHER: "slower"}.get(verdict, "muted")
    return f"<span class='{cls}'>{_e(verdict)}</span>"


def _latency_figures(d: _ReportData, figs: _FigureList, names: dict[int, str]) -> list[str]:
    """The percentile over time per cell (small multiples) and its spread per cell."""
    lat, cmp = d.latency, d.cmp
    v = lat.view
    rs = cmp.frames.run_summary
    cells = cmp.cells.sort_values("position").head(MAX_PANELS)
    cells = cells.assign(row_name=cells["cell_id"].astype(int).map(names))
    ivl = cmp.frames.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")
    if ivl.empty:
        return []
    who = "New-Order " if d.metric.per_minute else ""
    win = cmp.experiment["window"]
    dashed = "p95_ms" if v.percentile == 99 and ivl["p95_ms"].notna().any() else None
    more = f" (the first {MAX_PANELS} of {len(cmp.cells)} cells)" if len(cmp.cells) > \
        MAX_PANELS else ""
    grid = small_multiples.latency_grid_spec(
        ivl[ivl["cell_id"].isin(cells["cell_id"])], cells, window=(win.start, win.end),
        column=v.column, dashed=dashed, name=f"{who}{v.name}", bold_runs=d.reps,
        stalls=latency.stall_spans(ivl, v.column, list(d.reps.values())),
        subtitle=f"the driver's {v.name} per interval, log axis · every repetition thin, the"
                 " representative run bold" + (" (its p95 dashed)" if dashed else "")
                 + " · shaded: the window; red: its stall intervals" + more)
    boxes = distributions.latency_boxes_spec(
        ivl, _display_cells(cmp.cells, names), lat.runs["value_ms"], column=v.column,
        name=f"{who}{v.name}", run_value_text=f"each run's window {v.name}"
        + (" (merged)" if v.exact else " (median of its intervals)"))
    return [figs.add("latency-per-cell", grid), figs.add("latency-distribution", boxes)]


def _latency_types(lat: latency.Latency, labels: pd.Series, names: dict[int, str],
                   v: latency.LatencyView) -> str:
    """Each type's p99 and maximum per row (where the driver gives them per type)."""
    if lat.types.empty:
        return ""
    types = [t for t in _TYPE_NAMES if t in set(lat.types["type"])]
    figures: dict[int, dict[str, str]] = {}
    for r in lat.types.itertuples(index=False):
        figures.setdefault(int(r.cell_id), {})[r.type] = (
            f"{_num(r.p99_ms, ',.1f')} / {_num(r.max_ms, ',.0f')}")
    rows = [[_named(labels[cell_id], names.get(cell_id))]
            + [mine.get(t, "–") for t in types] for cell_id, mine in figures.items()]
    exact = bool(lat.types["exact"].all())
    how = ("p99 of the row's runs' windows merged (exact within 1/128)" if exact else
           "the median of the driver's per-interval p99 over the row's windows (– where it"
           " prints none per type)")
    return ("<h3>Per transaction type</h3><p class='sub'>p99 / max in ms: " + _e(how)
            + "; max: the largest the driver printed (exact).</p>"
            + _table(["configuration", *[_TYPE_NAMES[t] for t in types]], rows))


def _efficiency_section(eff: efficiency.Efficiency, cells: pd.DataFrame, metric: MetricView,
                        names: dict[int, str]) -> str:
    """The cost per transaction of each row (median of its counted runs) and, per row, one
    sentence on what bound it (analysis/cost.py, analysis/bound.py)."""
    if eff.cost_cells.empty and eff.bound_cells.empty:
        return ""
    unit = "New-Order" if metric.per_minute else "transaction"
    labels = cells.set_index("cell_id")["cell_label"]
    rows = []
    for cell_id in [c for c in cells["cell_id"] if c in eff.cost_cells.index
                    or c in eff.bound_cells.index]:
        row_cost = (eff.cost_cells.loc[cell_id] if cell_id in eff.cost_cells.index
                    else pd.Series(dtype=float))
        what = (bound.short(eff.bound_cells.loc[cell_id, "bound"]) + " "
                + eff.bound_cells.loc[cell_id, "bound_runs"].replace(" of ", "/")
                if cell_id in eff.bound_cells.index else "–")
        rows.append([_named(labels[cell_id], names.get(int(cell_id))), _e(what),
                     *[_num(row_cost.get(c), cost.FORMATS[c]) for c in cost.COLUMNS]])
    sentences = "".join(
        f"<li>{_named(labels[c], names.get(int(c)))}: {_e(r['bound_text'])}"
        f" <span class='muted'>({_e(r['bound_runs'])} runs)</span></li>"
        for c, r in eff.bound_cells.iterrows() if c in labels.index)
    return (f"<h2>Cost per {unit} and what bound each row</h2><p class='sub'>Per {unit} over"
            " the measurement window, the median of each row's counted runs: mysqld's and the"
            " client's CPU (µs), reads and writes completed on the datadir's device and the KiB"
            " they moved, and row-lock waits (<code>Innodb_row_lock_waits</code>); context"
            " switches are not sampled. <i>bound</i>: what bound most of the row's runs — the"
            " storage limit, the CPU, redo pressure, free-page waits or row-lock waits, each by"
            " its threshold (docs/statistics.md, \"What bound a run\").</p>"
            + _table(["configuration", "bound", *[cost.LABELS[c] for c in cost.COLUMNS]], rows)
            + f"<ul class='summary'>{sentences}</ul>")


def _memory_section(cmp: Comparison, figs: _FigureList, cell_mem: pd.DataFrame,
                    reps: dict[int, int], smp: pd.DataFrame, names: dict[int, str]) -> str:
    """RSS per configuration over time (median repetitions; the legend names a row by its own
    name where it has one) and the memory table; the figure only when memory differs between
    cells by more than the noise or a memory knob varies."""
    if cell_mem.empty or not cell_mem["rss_peak_mb"].notna().any():
        return ""
    draw, why = memory_matters(cell_mem, varying_knobs(cmp.frames.run_summary))
    win = cmp.experiment["window"]
    cells = cmp.cells.set_index("cell_id")
    knobs = varying_knobs(cmp.frames.run_summary)
    colour_knob = "allocator" if "allocator" in knobs else (knobs[0] if knobs else None)
    dash_knob = next((k for k in knobs if k != colour_knob), None)

    def levels(knob: str | None) -> list[Any]:
        return [] if knob is None else sorted({cells.loc[c, knob] for c in cells.index},
                                              key=lambda v: (str(type(v)), v))

    colours, dashes = levels(colour_knob), levels(dash_knob)
    labels, colour_of, dash_of = {}, {}, {}
    # Legend in the experiment's row order.
    for cell_id in cells.sort_values("position").index:
        if cell_id not in reps:
            continue
        run_id = reps[cell_id]
        cell = cells.loc[cell_id]
        labels[run_id] = names.get(int(cell_id), str(cell["cell_label"]))
        if colour_knob is not None:
            colour_of[run_id] = plots.PALETTE[colours.index(cell[colour_knob])
                                              % len(plots.PALETTE)]
        if dash_knob is not None:
            dash_of[run_id] = _DASHES[dashes.index(cell[dash_knob]) % len(_DASHES)]
    out = ["<h2 id='memory'>Memory</h2><p class='sub'>mysqld's resident memory (RSS, from "
           "<code>/proc/PID/status</code>) sampled during each run. VSZ — address space "
           "reserved, mostly never touched — is a column of the table, never an RSS axis.</p>"]
    if not draw:
        out.append(f"<p class='muted'>No memory figures: {_e(why)} — every line would be the "
                   "same.</p>")
    if draw and labels and len(smp):
        sub = "median repetition of each configuration"
        if colour_knob:
            sub += f" · colour: {colour_knob}" + (f" · dash: {dash_knob}" if dash_knob else "")
        out.append(figs.add("rss-over-time", plots.rss_over_time(
            smp, labels=labels, colors=colour_of, dashes=dash_of, subtitle=sub,
            window=(win.start, win.end))))
    rows = []
    for _, r in cell_mem.iterrows():
        rows.append([
            _e(r["cell_label"]), str(int(r["n_runs"])), _num(r["rss_peak_mb"], ",.1f"),
            _ci(r["rss_peak_ci_low"], r["rss_peak_ci_high"], ",.1f"),
            _num(r["rss_end_mb"], ",.1f"), _ci(r["rss_end_ci_low"], r["rss_end_ci_high"], ",.1f"),
            _num(r["rss_growth_mb_per_min"], "+,.2f"), _num(r["anon_huge_peak_mb"], ",.1f"),
            _num(r["hugetlb_peak_mb"], ",.0f"), _num(r["vsz_peak_mb"] / 1024, ",.1f"),
            f"<span class='warn'>{_e(r['memory_warnings'])}</span>",
        ])
    out.append(_table(["configuration", "runs", "peak RSS MiB", "95% CI",
                       "end-of-window RSS MiB", "95% CI", "RSS growth MiB/min",
                       "THP (AnonHugePages) peak MiB", "hugetlb MiB", "peak VSZ GiB",
                       "warnings"], rows))
    extra = cmp.frames.run_summary.get("extra")
    modes = sorted({str(x.get("thp_enabled")) for x in extra if isinstance(x, dict)
                    and x.get("thp_enabled")}) if extra is not None else []
    out.append("<p class='muted'>Peak: highest RSS sampled (warmup included); end of window: "
               "the last sample inside the window; growth: Theil–Sen slope over the window "
               "samples (median over repetitions), flagged when steady (trend p ≤ 0.05 and ≥ "
               "1% of RSS over the window). CIs: Cox's lognormal interval of the mean over "
               "repetitions." + (f" Transparent huge pages during the runs: "
                                 f"{_e(', '.join(modes))}." if modes else "") + "</p>")
    return "".join(out)


def _claims(db: Any, rs: pd.DataFrame, cells: pd.DataFrame, peaks: pd.Series) -> list[str]:
    """What the runs did, as sentences computed from the data with their exceptions named.

    Nothing here is written by hand: a sentence such as "every run reached the limit" is
    made only when it holds for every run, otherwise the runs it is false for are listed
    (issue 22: the first study's README said five things its own data contradicted).
    """
    items = [claims.noisy_runs(rs).sentence()]
    if "extra" in rs and any(isinstance(e, dict) and e.get("storage_write_iops")
                             for e in rs["extra"]):
        limit = claims.reached_write_limit(db, rs)
        if limit.total:
            items.append(limit.sentence())
    if peaks.notna().any():
        items += _checkpoint_age_claims(rs, cells, peaks)
    not_steady = claims.not_steady_runs(rs)  # a level still trending (analysis/transients.py)
    if not_steady.total:
        items.append(not_steady.sentence())
    return items


def _checkpoint_age_claims(rs: pd.DataFrame, cells: pd.DataFrame, peaks: pd.Series
                           ) -> list[str]:
    """Which runs reached the maximum checkpoint age: one sentence when every run or none
    did; else a sentence per row where some run did, and one for the rows where none did."""
    done = rs[rs["status"] == RunStatus.DONE]
    overall = claims.reached_max_checkpoint_age(peaks, [int(r) for r in done["run_id"]])
    if overall.holds in (0, overall.total):
        return [overall.sentence()]
    out, quiet_rows, quiet_runs = [], 0, 0
    for _, cell in cells.iterrows():
        runs = [int(r) for r in done.loc[done["cell_id"] == cell["cell_id"], "run_id"]]
        age = claims.reached_max_checkpoint_age(peaks, runs)
        if age.holds:
            out.append(f"{cell['cell_label']}: {age.sentence()}")
        elif age.total:
            quiet_rows, quiet_runs = quiet_rows + 1, quiet_runs + age.total
    if quiet_rows:
        out.append(f"in the other {f'{quiet_rows} rows' if quiet_rows > 1 else 'row'}: "
                   f"no run {overall.statement} (0 of {quiet_runs})")
    return out


def _text(value: Any) -> str:
    """A text cell's value, or "" where there is none (a queued run's warnings are NaN)."""
    return value if isinstance(value, str) else ""


def _claims_html(items: list[str]) -> str:
    rows = "".join(f"<li>{_e(text)}</li>" for text in items)
    return ("<h2>What the runs did</h2><p class='sub'>Computed from the recorded runs; a"
            " statement about every run is made only when no run contradicts it.</p>"
            f"<ul class='claims'>{rows}</ul>")


@dataclass
class _ReportData:
    """Everything the report reads from the store, in one session."""

    cmp: Comparison
    reps: dict[int, int]
    smp: pd.DataFrame
    variables: pd.DataFrame
    metric: MetricView
    qps: dict[int, float]
    cell_mem: pd.DataFrame
    io_table: pd.DataFrame
    claims: list[str]
    #: Cost per transaction and what bound each run and row (analysis/efficiency.py).
    efficiency: efficiency.Efficiency
    #: Response time per run, cell and type, and its verdicts (analysis/latency.py).
    latency: latency.Latency


def _read(db: DB, experiment: ExperimentRef, force: bool) -> _ReportData:
    """Load the comparison and every series the figures draw (bulk reads, one session)."""
    with one_blas_thread(), session_scope(db) as s:
        cmp = compare(s, experiment, force=force)
        rs = cmp.frames.run_summary
        reps = representative_runs(rs)
        metric = metric_view(cmp.experiment)
        # Each done run's memory row, checkpoint-age peak and window edges: from the analysis
        # cache, reading the samples only of runs not digested yet (analysis/run_digest.py).
        done_ids = [int(r) for r in rs.loc[rs["status"] == RunStatus.DONE, "run_id"]]
        digest = run_digests(s, done_ids)
        return _ReportData(
            cmp=cmp, reps=reps,
            smp=samples(s, run_ids=list(reps.values())) if reps else pd.DataFrame(),
            variables=run_variables(s, list(reps.values())) if reps else pd.DataFrame(),
            metric=metric, qps={} if metric.per_minute else _cell_qps(s, rs),
            cell_mem=cell_memory(digest.memory, rs),
            io_table=io_breakdown.per_cell(s, cmp.frames, window=digest.window),
            claims=_claims(s, rs, cmp.cells, digest.checkpoint_age_peaks),
            efficiency=efficiency.load(s, cmp.frames, digest),
            latency=latency.load(s, cmp.frames),
        )


def _overview(d: _ReportData, figs: _FigureList, names: dict[int, str]) -> list[str]:
    """The experiment-wide figures: throughput bars and distributions, stability, small
    multiples (panels titled with the rows' own ``names`` where the experiment gives them),
    heatmaps (factorial designs only), the thread sweep."""
    cmp, metric = d.cmp, d.metric
    cells = _display_cells(cmp.cells, names)  # the rows' own names on the category axes
    rs = cmp.frames.run_summary
    # Figure names (files, ids) follow the metric: a sysbench report has no "notpm" in it.
    slug = metric.name.lower()
    out = [figs.add(slug, plots.notpm_bars(
        cells, unit=metric.name, scale=metric.scale,
        title=f"Throughput per configuration ({metric.name}, window average)"))]
    cell_ivl = cmp.frames.intervals.merge(rs[["run_id", "cell_id"]], on="run_id")
    out.append(figs.add(f"{slug}-distribution", distributions.interval_boxes(
        cell_ivl, cells, column=metric.column, unit=metric.name)))
    out.append(figs.add("stability", distributions.stability_runs(rs, cells)))
    out += _small_multiples(cmp, figs, d.reps, d.smp, metric, names)
    knobs = varying_knobs(rs)
    # Heatmaps only where every tile is a measured cell: a two-knob factorial design.
    if plots.is_factorial(cells, knobs):
        out.append(figs.add("stability-heatmap",
                            plots.stability_heatmap(cells, knobs[0], knobs[1])))
        out.append(figs.add(f"{slug}-heatmap", plots.stability_heatmap(
            metric.scaled(cells), knobs[0], knobs[1], value="notpm_mean", label=metric.name,
            title=f"{metric.name} by {knobs[0]} and {knobs[1]}")))
    if "connections" in knobs and "allocator" in knobs:
        out.append(figs.add("threads", plots.threads_sweep(
            cells, unit=metric.name, scale=metric.scale,
            title=f"{metric.name} vs client threads per allocator")))
    return out


def build_report_model(
    db: DB,
    experiment: ExperimentRef,
    *,
    force: bool = False,
    reference: dict[str, Any] | None = None,
    on_figure: Callable[[ReportFigure], None] | None = None,
) -> ReportModel:
    """Everything one experiment's report says: data, sentences and figures, not yet drawn.

    Parameters are those of :func:`write_report`; ``on_figure`` is called with each figure as
    soon as it is final (the PNG export starts drawing while the rest is built).
    """
    d = _read(db, experiment, force)
    cmp, metric = d.cmp, d.metric
    exp, cells, rs = cmp.experiment, cmp.cells, cmp.frames.run_summary
    figs = _FigureList(on_figure)
    # The rows' own short names (the reference's `dw-on-50`), where the experiment has them.
    names = scorecard.row_names(reference or exp["spec"], cells)
    overview = _overview(d, figs, names)
    io_html = _io_section(figs, d.io_table, metric,
                          {str(c["cell_label"]): names[int(c["cell_id"])]
                           for _, c in cells.iterrows() if int(c["cell_id"]) in names})
    # The reproduction scorecard, when the experiment (or --reference) has references.
    claims_spec = reference or exp["spec"]
    score_html = scorecard.section(claims_spec, rs, cells, figs.add,
                                   stability=stability_claims.stability_scorecard(
                                       claims_spec, rs, cells))
    memory_html = _memory_section(cmp, figs, d.cell_mem, d.reps, d.smp, names)
    efficiency_html = _efficiency_section(d.efficiency, cells, metric, names)
    latency_html = _latency_section(d, figs, names)
    draw_memory = memory_matters(d.cell_mem, varying_knobs(rs))[0] if len(d.cell_mem) else False
    cell_sections = [
        _cell_section(cmp, figs, cell, d.reps.get(int(cell["cell_id"])), d.smp,
                      cmp.frames.intervals, memory_figures=draw_memory,
                      name=names.get(int(cell["cell_id"])), lat=d.latency)
        for _, cell in cells.iterrows()
    ]
    # The methodology names a cell by its row's own name where it has one.
    labels = {int(d.reps[c]): names.get(int(c), lbl) for c, lbl
              in zip(cells["cell_id"], cells["cell_label"], strict=True) if c in d.reps}
    toc = "".join(f"<li><a href='#cell-{int(c['cell_id'])}'>"
                  f"{_named(c['cell_label'], names.get(int(c['cell_id'])))}</a></li>"
                  for _, c in cells.iterrows())
    sections = [
        f"<h2>Summary</h2>{_summary(cmp, names)}{_PNG_SUMMARY}",
        f"<h2>Ranking</h2><p class='sub'>By window-average {metric.name}; the stability rank "
        f"orders by median stability score (100 = flat line).</p>{_aa_line(cmp)}"
        f"{_host_lines(cmp, names)}"
        f"{_ranked_table(cmp, d.qps, names)}",
        score_html, _CLAIMS, *overview, latency_html, io_html, efficiency_html, memory_html,
        _effects_tables(cmp),
        f"<h2>Configurations</h2><ul>{toc}</ul>", *cell_sections,
        _methodology(cmp, d.variables, labels),
    ]
    return ReportModel(
        experiment=exp, comparison=cmp, claims=d.claims, figures=figs.items,
        sections=sections,
        notes=[w for w in cmp.warnings if w.startswith("forced comparison")],
    )


def _figure_div(item: ReportFigure) -> str:
    """The figure as an interactive div sized by the page (the PNG keeps its fixed size)."""
    layout = {k: v for k, v in item.spec.get("layout", {}).items() if k != "width"}
    spec = {**item.spec, "layout": {**layout, "autosize": True}}  # the shared dict untouched
    div = pio.to_html(
        spec, validate=False, full_html=False, include_plotlyjs=False,
        div_id=f"fig-{item.slug}",
        config={"displaylogo": False, "responsive": True, "displayModeBar": False},
    )
    return f"<div class='figure'>{div}<!--png:{item.slug}--></div>"


def _png_summary(model: ReportModel, png: bool, error: str | None) -> str:
    if not png:
        return ""
    if error:
        return (f"<div class='note'>PNG export failed, the interactive figures below are "
                f"complete: {_e(error)}</div>")
    return (f"<p class='muted'>{len(model.figures)} figures also saved as PNG in "
            "<code>figures/</code>.</p>")


def _page(model: ReportModel, divs: dict[str, str]) -> str:
    """The HTML page of a model, figures as ``divs`` (slug → HTML), PNG links still markers."""
    from plotly.offline import get_plotlyjs

    exp = model.experiment
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = (
        f"<h1>{_e(model.title)}</h1>"
        f"<p class='sub'>{_e(exp['description'] or '')} · experiment #{exp['id']} · "
        f"generated {generated}</p>"
        + "".join(f"<div class='note'>{_e(w)}</div>" for w in model.notes)
        + "".join(model.sections).replace(_CLAIMS, _claims_html(model.claims), 1)
    )
    body = _FIGURE_MARKER.sub(lambda m: divs[m.group(1)], body)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(model.title)} — flushbench report</title><style>{_CSS}</style>"
        f"<script>{_ERROR_HOOK}</script>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head>"
        f"<body><main>{body}</main></body></html>"
    )


def _png_path(out: Path, slug: str) -> Path:
    return out / "figures" / f"{slug}.png"


def _submit_png(exporter: PngExporter, out: Path, item: ReportFigure) -> None:
    exporter.submit(item.spec, _png_path(out, item.slug), width=plots.WIDTH,
                    height=item.height)


def render(
    model: ReportModel,
    out_dir: str | os.PathLike[str],
    *,
    png: bool = True,
    exporter: PngExporter | None = None,
) -> Path:
    """Write ``report.html`` (self-contained) and, with ``png``, ``figures/NN-kind.png``.

    ``exporter``: a PNG exporter the figures were already submitted to (by
    :func:`write_report` while the model was built); without one, every figure is submitted
    here. It is closed before returning. A PNG failure is said in the page, not raised.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    own = png and exporter is None
    if own:
        exporter = PngExporter()
        for item in model.figures:
            _submit_png(exporter, out, item)
    try:
        # Drawn while the renderers work on the PNGs.
        page = _page(model, {item.slug: _figure_div(item) for item in model.figures})
    finally:
        error = exporter.close() if exporter is not None else None
    written = {p.name for p in exporter.written} if exporter is not None else set()

    def link(match: re.Match[str]) -> str:
        name = f"{match.group(1)}.png"
        return (f"<div class='png'>PNG: <a href='figures/{name}'>{name}</a></div>"
                if name in written else "")

    page = _PNG_LINK.sub(link, page).replace(_PNG_SUMMARY, _png_summary(model, png, error), 1)
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


_PNG_LINK = re.compile(r"<!--png:([\w.-]+)-->")


def write_report(
    db: DB,
    experiment: ExperimentRef,
    out_dir: str | os.PathLike[str],
    *,
    png: bool = True,
    force: bool = False,
    reference: dict[str, Any] | None = None,
) -> Path:
    """Write ``report.html`` (self-contained) and ``figures/*.png`` for one experiment.

    :func:`build_report_model` then :func:`render`; the PNGs are drawn in background renderers
    from the moment each figure is built.

    Parameters
    ----------
    db:
        Results database (ResultsDB, Session, path or URL).
    experiment:
        Name, id, or None for the latest experiment.
    out_dir:
        Folder to write into (created).
    png:
        Also export every figure as PNG through kaleido; a failure is reported in the page
        instead of failing the report.
    force:
        Compare runs whose checked metadata differ (the page says so).
    reference:
        An experiment file's spec whose reference results the scorecard uses instead of the
        stored experiment's (:mod:`analysis.scorecard`).

    Returns
    -------
    Path
        The HTML file.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise AnalysisError("the report folder is a file", where=str(out),
                            fix="name a folder (it is created when missing)")
    exporter = PngExporter() if png else None
    try:
        model = build_report_model(
            db, experiment, force=force, reference=reference,
            on_figure=(lambda item: _submit_png(exporter, out, item)) if exporter else None)
    except BaseException:
        if exporter is not None:
            exporter.close()
        raise
    return render(model, out, png=png, exporter=exporter)
