"""The parts of an experiment's report page, each as HTML: heading, words, tables, figures.

The ranking, the knobs' effects, response time, what each transaction wrote, cost and what
bound each row, memory, one part per configuration and the methodology. Each is composed of
:mod:`analysis.report_sentences`' words, :mod:`analysis.report_figures`' figure markers and
:mod:`analysis.report_html`'s tables; :func:`analysis.report_model.build_report_model`
puts them in page order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysis.comparisons.compare import Comparison
from analysis.figures import plots
from analysis.reading.memory import memory_matters
from analysis.reading.metric import MetricView, metric_view
from analysis.report_figures import FigureList, cell_figures, io_figure, latency_figures, rss_figure
from analysis.report_html import (
    ci,
    esc,
    latency_verdict_html,
    named,
    table,
    text_of,
    verdict_html,
)
from analysis.report_sentences import (
    aa_line,
    code_versions_text,
    dataset_text,
    driver_fidelity_note,
    host_lines,
    methods,
    repetitions_text,
    varies_text,
)
from analysis.response import latency
from analysis.statistics.design import NO_MAIN_EFFECT
from analysis.tables import efficiency
from analysis.tables.frames import KEY_VARIABLES, varying_knobs
from analysis.writes import bound, cost
from core.units import format_number as number

if TYPE_CHECKING:
    from analysis.report_model import ReportData

#: The transaction types as the per-type latency table heads them.
_TYPE_NAMES = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status",
               "delivery": "Delivery", "stock_level": "Stock-Level"}


def ranking(cmp: Comparison, qps: dict[int, float], names: dict[int, str]) -> str:
    """The ranking: how it orders, the A/A floor, the by-host lines and the ranked table."""
    return (f"<h2>Ranking</h2><p class='sub'>By window-average {metric_view(cmp.experiment).name}"
            "; the stability rank orders by median stability score (100 = flat line).</p>"
            f"{aa_line(cmp)}{host_lines(cmp, names)}{_ranked_table(cmp, qps, names)}")


def _own_baseline(cmp: Comparison, row: pd.Series) -> str:
    """`` vs base`` when the experiment has several baselines (each row has its own)."""
    if not cmp.cells.attrs.get("baselines_note"):
        return ""
    cells = cmp.cells.set_index("cell_id")
    label = cells.loc[int(row["cell_id"]), "baseline_label"]
    return f"<br><span class='muted'>vs {esc(label)}</span>"


def _ranked_table(cmp: Comparison, qps: dict[int, float] | None = None,
                  names: dict[int, str] | None = None) -> str:
    m = metric_view(cmp.experiment)
    rows, classes = [], []
    for _, r in cmp.ranking.iterrows():
        rows.append([
            named(r["cell_label"], (names or {}).get(int(r["cell_id"])))
            + (" <span class='muted'>(baseline)</span>"
                                   if r["is_baseline"] else ""),
            str(int(r["rank_notpm"])), number(m.of(r["notpm_mean"])),
            ci(m.of(r["notpm_ci_low"]), m.of(r["notpm_ci_high"])),
            *([number((qps or {}).get(int(r["cell_id"])))] if qps else []),
            "–" if r["is_baseline"] else f"{number(r['ratio'], '.2f')}×" + _own_baseline(cmp, r),
            verdict_html(r["verdict"]), str(int(r["rank_stability"])),
            number(r["score_median"], ".0f"), number(r["cv_pct_median"], ".1f"),
            str(int(r["n_done"])), f"<span class='warn'>{esc(r['warnings'])}</span>",
        ])
        classes.append("base" if r["is_baseline"] else "")
    cells = cmp.cells.set_index("cell_id")
    for i, (_, r) in enumerate(cmp.ranking.iterrows()):
        c = cells.loc[r["cell_id"]]
        if not r["is_baseline"] and math.isfinite(c["ratio_ci_low"]):
            col = 5 if qps else 4
            rows[i][col] += (f"<br><span class='muted'>{number(c['ratio_ci_low'], '.2f')}–"
                             f"{number(c['ratio_ci_high'], '.2f')}, "
                             f"p={number(c['p_value'], '.3f')}</span>")
        if not r["is_baseline"]:
            # Every verdict says why, and how large a change could hide (minimum detectable).
            rows[i][5] += (f"<br><span class='muted'>{esc(c['verdict_reason'])}"
                           + (f" (MDE ±{number(c['mde_pct'], '.1f')}%)"
                              if math.isfinite(c["mde_pct"]) else "") + "</span>")
    return table(
        ["configuration", "rank", m.name, "95% CI", *(["QPS"] if qps else []), "vs baseline",
         "verdict", "stability rank", "score", "CV %", "runs", "warnings"],
        rows, row_classes=classes,
    )


def level_names(cells: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(knob, value as ``plots.knob_text`` prints it) → the value as the cell labels print it.

    The store keeps sizes in bytes (``log_file_size`` 335544320); the labels, made by the
    runner at enqueue, say ``320M``. Tables that name knob levels use the labels' words.
    """
    out: dict[tuple[str, str], str] = {}
    for _, cell in cells.iterrows():
        knobs = cell["knobs"] if isinstance(cell.get("knobs"), dict) else {}
        for token in str(cell["cell_label"]).split(" "):
            name, eq, text = token.partition("=")
            if eq and name in knobs:
                out[(name, plots.knob_text(knobs[name]))] = text
    return out


def effects(cmp: Comparison) -> str:
    """The main effect of each knob and the two-way interactions (where the design
    identifies them; otherwise what each is confounded with)."""
    out = []
    me = cmp.main_effects
    names = level_names(cmp.cells)

    def level(knob: str, value: Any) -> str:
        text = plots.knob_text(value)
        return esc(names.get((knob, text), text))

    if len(me):
        rows = [[
            esc(r["knob"]), f"{level(r['knob'], r['level'])} vs {level(r['knob'], r['reference'])}",
            f"{number(r['ratio'], '.3f')}×" if r["estimable"] else "–",
            ci(r["ci_low"], r["ci_high"], ".3f"), number(r["p_value"], ".4f"),
            esc(r["reason"]),
        ] for _, r in me.iterrows()]
        out.append("<h3>Main effect of each knob</h3><p class='sub'>Least squares on log "
                   "throughput over every run (all main effects together), as a ratio to the "
                   "knob's reference level, with a t interval and p-value — only where the "
                   "design identifies the effect; otherwise the table says what it is "
                   "confounded with.</p>")
        out.append(table(["knob", "level vs reference", "ratio", "95% CI", "p", "estimable?"],
                         rows, left=2))
    it = cmp.interactions
    if len(it):
        # An interaction of a knob whose main effect is not estimable cannot be either; the
        # main-effects table says why, so such pairs are counted, not listed (the 2011 flash
        # study's twelve rows gave 36 of them).
        implied = it["reason"].astype(str).str.startswith(NO_MAIN_EFFECT)
        rows = [[
            esc(r["knob_a"]), esc(r["knob_b"]),
            number(r["rms_pct"], ".2f") if r["estimable"] else "–",
            number(r["p_value"], ".4f"), esc(r["reason"]),
        ] for _, r in it[~implied].iterrows()]
        out.append("<h3>Two-way interactions</h3><p class='sub'>How far the cells are from "
                   "\"effect of A times effect of B\" (RMS change of the fitted cells, %), with "
                   "an F test against the main-effects model — only where every combination of "
                   "the two knobs was run and is not aliased.</p>")
        if rows:
            out.append(table(["knob A", "knob B", "interaction %", "p", "estimable?"], rows,
                             left=2))
        if implied.any():
            out.append(f"<p>{int(implied.sum())} {'more ' if rows else ''}pair(s) of knobs not "
                       "estimable: each involves a knob whose main effect is not estimable "
                       "(above).</p>")
    return "".join(out)


def methodology(cmp: Comparison, variables: pd.DataFrame, labels: dict[int, str]) -> str:
    """How the figures were made, then the server, workload, hardware, key variables and
    the comparison's warnings; ``labels`` names a representative run's configuration."""
    exp = cmp.experiment
    spec = exp["spec"]
    win = exp["window"]
    md = cmp.metadata
    wl = spec.get("workload", {})
    ds = spec.get("dataset", {})

    def one(key: str) -> str:
        return esc(", ".join(md.get(key, [])) or "–")

    mem = md.get("mem_total_bytes", [])
    mem_txt = ", ".join(f"{float(m) / 1024**3:.1f} GiB" for m in mem) if mem else "–"
    hw = table(["", ""], [
        ["host", one("hostname")], ["kernel", one("kernel")], ["CPU", one("cpu_model")],
        ["CPU count", one("cpu_count")], ["memory", esc(mem_txt)],
        ["datadir device / fs", f"{one('datadir_device')} / {one('datadir_fstype')}"],
    ])
    srv = table(["", ""], [
        ["server", f"{one('server_flavor')} {one('server_version')}"],
        ["dataset", f"{one('dataset_key')} ({esc(dataset_text(ds))})"],
        ["driver", f"{one('driver')} — {wl.get('connections', '?')} connections"],
        ["warmup (excluded)", f"{win.warmup:g} s"],
        ["run length after warmup", f"{win.duration:g} s"],
        ["measurement window", f"{win.start:g} s – {win.end:g} s after warmup "
                               f"({win.length / 60:g} min)"],
        ["report interval", f"{win.report_interval:g} s"],
        ["repetitions", f"{repetitions_text(spec)}; run order "
                        f"{esc((spec.get('order') or {}).get('mode', '?'))}"],
        ["sampling", f"every {(spec.get('sampling') or {}).get('interval', '?')} s"],
        ["recorded by", esc(code_versions_text(_run_extras(cmp)))],
    ])
    warnings = "".join(f"<li>{esc(w)}</li>" for w in cmp.warnings) or "<li>none</li>"
    return (
        "<h2 id='methodology'>Methodology</h2>"
        f"{driver_fidelity_note(wl)}{methods(cmp)}"
        f"<h3>Server and workload</h3>{srv}<h3>Hardware</h3>{hw}"
        f"<h3>Key server variables</h3>{_variables_table(variables, labels)}"
        f"<h3>Warnings</h3><ul>{warnings}</ul>"
    )


def _run_extras(cmp: Comparison) -> list[Any]:
    """Each compared run's ``run_metadata.extra`` (None where the run has no metadata)."""
    extra = cmp.frames.run_summary.get("extra")
    return [] if extra is None else list(extra)


def _variables_table(variables: pd.DataFrame, labels: dict[int, str]) -> str:
    """The key server variables of the representative runs: one value, or how it varies."""
    var_rows = []
    for name in KEY_VARIABLES:
        if name not in variables.columns or variables[name].isna().all():
            continue
        values = variables[name].dropna()
        distinct = sorted(set(values))
        if len(distinct) == 1:
            var_rows.append([f"<code>{esc(name)}</code>", esc(distinct[0])])
        else:
            var_rows.append([f"<code>{esc(name)}</code>", varies_text(values, labels)])
    return table(["variable", "value (SHOW GLOBAL VARIABLES)"], var_rows)


def cell_section(
    cmp: Comparison, figs: FigureList, cell: pd.Series, rep_run: int | None,
    smp: pd.DataFrame, ivl: pd.DataFrame, memory_figures: bool = True,
    name: str | None = None, lat: latency.Latency | None = None,
) -> str:
    """One configuration: its figure and verdict, each run's row, its figures."""
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
    out = [f"<h3 id='cell-{int(cell['cell_id'])}'>{named(cell['cell_label'], name)}"
           + (" <span class='muted'>(baseline)</span>" if cell["is_baseline"] else "") + "</h3>"]
    verdict = "" if cell["is_baseline"] else (
        f" · {number(cell['ratio'], '.2f')}× the baseline ({verdict_html(cell['verdict'])})"
    )
    out.append(f"<p class='sub'>{number(m.of(cell['notpm_mean']))} {m.name} (95% CI "
               f"{ci(m.of(cell['notpm_ci_low']), m.of(cell['notpm_ci_high']))}){verdict} · "
               "stability "
               f"score {number(cell['score_median'], '.0f')}</p>")
    out.append(_runs_table(runs, m, lat))
    run_smp = smp[smp["run_id"] == rep_run] if rep_run is not None else smp.iloc[0:0]
    out += cell_figures(cmp, figs, cell, runs, rep_run, run_smp,
                        ivl[ivl["run_id"].isin(runs["run_id"])], metric=m, window=window,
                        name=name, memory_figures=memory_figures)
    if not (len(run_smp) and run_smp["checkpoint_age_mb"].notna().any()) and rep_run is not None:
        out.append("<p class='muted'>No sampler data for this run.</p>")
    return "".join(out)


def _runs_table(runs: pd.DataFrame, m: MetricView, lat: latency.Latency | None) -> str:
    """One row per run of a configuration: figures, response time, stability, warnings."""
    rows = []
    # Each run's response time beside its stability score (analysis/response/latency.py).
    lat_rows = lat.by_run if lat is not None and lat.view.percentile else {}
    lat_name = lat.view.name if lat is not None and lat.view.percentile else "p99"
    for _, r in runs.iterrows():
        mine = lat_rows.get(int(r["run_id"]), {})
        rows.append([
            f"#{int(r['repetition'])}" + (f" (attempt {int(r['attempt'])})"
                                          if r["attempt"] > 1 else ""),
            str(int(r["run_id"])), esc(r["status"]), number(m.of(r.get("notpm"))),
            number(r.get("score"), ".0f"), number(mine.get("value_ms"), ",.1f"),
            number(mine.get("stall_s")), number(r.get("cv_pct"), ".1f"),
            number(r.get("holes_share", math.nan) * 100, ".0f"),
            number(r.get("period_s"), ".0f"), number(r.get("trend_pct_per_min"), "+.2f"),
            f"<span class='warn'>{esc(text_of(r.get('warnings')) or text_of(r.get('error')))}"
            "</span>",
        ])
    return table(["repetition", "run", "status", m.name, "score", f"{lat_name} ms",
                  "stall s", "CV %", "holes %", "period s", "trend %/min", "warnings"], rows)


def io_section(figs: FigureList, io_table: pd.DataFrame, metric: MetricView,
               shown: dict[str, str]) -> str:
    """What each transaction wrote, by data pages, doublewrite and redo (when counted);
    ``shown`` renames a configuration label on the axis (the row's own name)."""
    if io_table.empty or not io_table.filter(like=" KiB").notna().any().any():
        return ""
    unit = "New-Order" if metric.per_minute else "transaction"
    fig = io_figure(figs, io_table, unit, shown)
    return ("<h2>What each transaction wrote</h2><p class='sub'>Write operations and KiB per "
            f"{unit} over the measurement window, split into data pages "
            "(<code>Innodb_pages_written</code>), the doublewrite copy "
            "(<code>Innodb_dblwr_writes</code>, <code>Innodb_dblwr_pages_written</code>) and redo "
            "(<code>Innodb_log_writes</code>, <code>Innodb_os_log_written</code>); the median of "
            "each cell's runs.</p>" + fig)


def latency_section(d: ReportData, figs: FigureList, names: dict[int, str]) -> str:
    """Response time beside throughput stability: per row the window percentile, its verdict
    against the baseline (lower is better), stall seconds and jitter; the percentile over time
    per cell and its spread; each transaction type's figures (analysis/response/latency.py)."""
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
        rows.append([named(labels[cell_id], names.get(int(cell_id))),
                     number(c["value_ms"], ",.1f"), number(c["p999_ms"], ",.0f"),
                     number(c["max_ms"], ",.0f"),
                     "–" if c["verdict"] == "baseline" else
                     f"{number(c['ratio'], '.2f')}× "
                     f"({ci(c['ratio_ci_low'], c['ratio_ci_high'], '.2f')})",
                     latency_verdict_html(str(c["verdict"])), number(c["stall_s_median"]),
                     number(c["stall_s_max"]), number(c["jitter_pct_median"])])
    missing = (f"<p class='warn'>No latency histograms (their {v.name} is the driver's"
               f" per-interval figure): {esc(latency.missing_text(lat.missing))}.</p>"
               if lat.missing else "")
    out = [f"<h2>Response time</h2><p class='sub'>{who}{v.name} in ms, lower is better. A"
           f" run's: the {esc(v.how)}; a row's: the {esc(v.cell_how)}. <i>stall s</i>: seconds"
           f" of the window's intervals with no {unit} or a {v.name} above"
           f" {latency.STALL_MULTIPLE:g} × the run's median (median and largest of the row's"
           " runs); <i>p99.9</i> and <i>max</i>: the window's, with the waits no completion"
           " measured (a stall is a wait of at least its length; without histograms p99.9 is"
           " what the stalls prove, – when they prove nothing); <i>jitter</i>: CV of the"
           f" per-interval {v.name} (median of the runs). The"
           f" verdict is the throughput verdicts' rule on the runs' window {v.name}: a ratio"
           " above 1 is slower responses than the baseline's.</p>" + missing,
           table(["configuration", f"{v.name} ms", "p99.9 ms", "max ms", "ratio (95% CI)",
                  "verdict", "stall s", "stall s max", "jitter %"], rows)]
    out += latency_figures(d, figs, names)
    out.append(_latency_types(lat, labels, names))
    return "".join(out)


def _latency_types(lat: latency.Latency, labels: pd.Series, names: dict[int, str]) -> str:
    """Each type's p99 and maximum per row (where the driver gives them per type)."""
    if lat.types.empty:
        return ""
    types = [t for t in _TYPE_NAMES if t in set(lat.types["type"])]
    figures: dict[int, dict[str, str]] = {}
    for r in lat.types.itertuples(index=False):
        figures.setdefault(int(r.cell_id), {})[r.type] = (
            f"{number(r.p99_ms, ',.1f')} / {number(r.max_ms, ',.0f')}")
    rows = [[named(labels[cell_id], names.get(cell_id))]
            + [mine.get(t, "–") for t in types] for cell_id, mine in figures.items()]
    exact = bool(lat.types["exact"].all())
    how = ("p99 of the row's runs' windows merged, with the transactions in flight at each"
           " window's end (exact within 1/128)" if exact else
           "the median of the driver's per-interval p99 over the row's windows (– where it"
           " prints none per type)")
    return ("<h3>Per transaction type</h3><p class='sub'>p99 / max in ms: " + esc(how)
            + "; max: the largest the driver printed (exact), with the histograms also the"
            " oldest transaction in flight at a window interval's end.</p>"
            + table(["configuration", *[_TYPE_NAMES[t] for t in types]], rows))


def efficiency_section(eff: efficiency.Efficiency, cells: pd.DataFrame, metric: MetricView,
                       names: dict[int, str]) -> str:
    """The cost per transaction of each row (median of its counted runs) and, per row, one
    sentence on what bound it (analysis/writes/cost.py, analysis/writes/bound.py)."""
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
        rows.append([named(labels[cell_id], names.get(int(cell_id))), esc(what),
                     *[number(row_cost.get(c), cost.FORMATS[c]) for c in cost.COLUMNS]])
    sentences = "".join(
        f"<li>{named(labels[c], names.get(int(c)))}: {esc(r['bound_text'])}"
        f" <span class='muted'>({esc(r['bound_runs'])} runs)</span></li>"
        for c, r in eff.bound_cells.iterrows() if c in labels.index)
    return (f"<h2>Cost per {unit} and what bound each row</h2><p class='sub'>Per {unit} over"
            " the measurement window, the median of each row's counted runs: mysqld's and the"
            " client's CPU (µs), reads and writes completed on the datadir's device and the KiB"
            " they moved, and row-lock waits (<code>Innodb_row_lock_waits</code>); context"
            " switches are not sampled. <i>bound</i>: what bound most of the row's runs — the"
            " storage limit, the CPU, redo pressure, free-page waits or row-lock waits, each by"
            " its threshold (docs/statistics.md, \"What bound a run\").</p>"
            + table(["configuration", "bound", *[cost.LABELS[c] for c in cost.COLUMNS]], rows)
            + f"<ul class='summary'>{sentences}</ul>")


def memory_section(cmp: Comparison, figs: FigureList, cell_mem: pd.DataFrame,
                   reps: dict[int, int], smp: pd.DataFrame, names: dict[int, str]) -> str:
    """RSS per configuration over time and the memory table; the figure only when memory
    differs between cells by more than the noise or a memory knob varies."""
    if cell_mem.empty or not cell_mem["rss_peak_mb"].notna().any():
        return ""
    draw, why = memory_matters(cell_mem, varying_knobs(cmp.frames.run_summary))
    out = ["<h2 id='memory'>Memory</h2><p class='sub'>mysqld's resident memory (RSS, from "
           "<code>/proc/PID/status</code>) sampled during each run. VSZ — address space "
           "reserved, mostly never touched — is a column of the table, never an RSS axis.</p>"]
    if not draw:
        out.append(f"<p class='muted'>No memory figures: {esc(why)} — every line would be the "
                   "same.</p>")
    figure = rss_figure(cmp, figs, reps, smp, names) if draw else None
    if figure is not None:
        out.append(figure)
    out.append(_memory_table(cell_mem))
    extra = cmp.frames.run_summary.get("extra")
    modes = sorted({str(x.get("thp_enabled")) for x in extra if isinstance(x, dict)
                    and x.get("thp_enabled")}) if extra is not None else []
    out.append("<p class='muted'>Peak: highest RSS sampled (warmup included); end of window: "
               "the last sample inside the window; growth: Theil–Sen slope over the window "
               "samples (median over repetitions), flagged when steady (trend p ≤ 0.05 and ≥ "
               "1% of RSS over the window). CIs: Cox's lognormal interval of the mean over "
               "repetitions." + (f" Transparent huge pages during the runs: "
                                 f"{esc(', '.join(modes))}." if modes else "") + "</p>")
    return "".join(out)


def _memory_table(cell_mem: pd.DataFrame) -> str:
    rows = []
    for _, r in cell_mem.iterrows():
        rows.append([
            esc(r["cell_label"]), str(int(r["n_runs"])), number(r["rss_peak_mb"], ",.1f"),
            ci(r["rss_peak_ci_low"], r["rss_peak_ci_high"], ",.1f"),
            number(r["rss_end_mb"], ",.1f"), ci(r["rss_end_ci_low"], r["rss_end_ci_high"], ",.1f"),
            number(r["rss_growth_mb_per_min"], "+,.2f"), number(r["anon_huge_peak_mb"], ",.1f"),
            number(r["hugetlb_peak_mb"], ",.0f"), number(r["vsz_peak_mb"] / 1024, ",.1f"),
            f"<span class='warn'>{esc(r['memory_warnings'])}</span>",
        ])
    return table(["configuration", "runs", "peak RSS MiB", "95% CI",
                  "end-of-window RSS MiB", "95% CI", "RSS growth MiB/min",
                  "THP (AnonHugePages) peak MiB", "hugetlb MiB", "peak VSZ GiB",
                  "warnings"], rows)
