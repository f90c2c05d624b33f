"""The parts of an experiment's report page, each as typed blocks: heading, words, tables,
figures.

The ranking, the reproduction scorecard, the knobs' effects, response time, what each
transaction wrote, cost and what bound each row, memory, one part per configuration and the
methodology. Each is a list of :mod:`analysis.report.model` blocks composed of
:mod:`analysis.report.sentences`' words and :mod:`analysis.report.figures`' figures (no
HTML: :mod:`analysis.report.render` draws them);
:func:`analysis.report.build.build_report_model` puts them in page order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysis.comparisons import scorecard
from analysis.comparisons.compare import Comparison
from analysis.figures import plots
from analysis.reading.memory import memory_matters
from analysis.reading.metric import MetricView, metric_view
from analysis.report.figures import FigureList, cell_figures, io_figure, latency_figures, rss_figure
from analysis.report.model import (
    BREAK,
    Block,
    Bullets,
    Cell,
    Figure,
    Fold,
    Heading,
    Link,
    Paragraph,
    Rich,
    Section,
    Span,
    Table,
    Value,
    bold,
    code,
    italic,
    muted,
    named,
    rich,
    row_name,
    warn,
)
from analysis.report.sentences import (
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
from core.redaction import redact, redact_url
from core.units import format_number as number

if TYPE_CHECKING:

    from analysis.report.model import ReportData
    from core.experiment.spec import ExperimentSpec

#: The transaction types as the per-type latency table heads them.
_TYPE_NAMES = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status",
               "delivery": "Delivery", "stock_level": "Stock-Level"}


def ci(low: Any, high: Any, fmt: str = ",.0f") -> str:
    """An interval as ``3,100 – 3,400``, or "–" when either end is missing."""
    lo, hi = number(low, fmt, ""), number(high, fmt, "")
    return f"{lo} – {hi}" if lo and hi else "–"


def text_of(value: Any) -> str:
    """A text cell's value, or "" where there is none (a queued run's warnings are NaN)."""
    return value if isinstance(value, str) else ""


def verdict_span(verdict: str) -> Span:
    """A throughput verdict, green when faster, red when slower."""
    return Span({"faster": "faster", "slower": "slower"}.get(verdict, "muted"),
                (Value(verdict),))


def latency_verdict_span(verdict: str) -> Span:
    """A response-time verdict, green when lower, red when higher."""
    return Span({latency.LOWER: "faster", latency.HIGHER: "slower"}.get(verdict, "muted"),
                (Value(verdict),))


def table(headers: list[str], rows: list[list[Rich]], left: int = 1,
          row_classes: list[str] | None = None) -> Table:
    """A :class:`~analysis.report.model.Table` from lists (the first ``left`` columns are
    words, left-aligned)."""
    return Table(tuple(headers), tuple(tuple(r) for r in rows), left=left,
                 row_classes=tuple(row_classes) if row_classes is not None else None)


def ranking(cmp: Comparison, qps: dict[int, float], names: dict[int, str]) -> Section:
    """The ranking: how it orders, the A/A floor, the by-host lines, the ranked table (one
    line per row) and, folded under it, each row's definition and why its verdict is what it
    is (the table's ``[n]``)."""
    return [Heading(2, ("Ranking",)),
            Paragraph((f"By window-average {metric_view(cmp.experiment).name}; the stability"
                       " rank orders by median stability score (100 = flat line). [n]: the"
                       " row's knobs, the reason for its verdict and its runs' warnings, in the"
                       " notes under the table.",), "sub"),
            aa_line(cmp), *host_lines(cmp, names), _ranked_table(cmp, qps, names),
            Fold(("Notes: each row's knobs, why its verdict, its warnings",),
                 (ranking_notes(cmp, names),))]


def ranking_notes(cmp: Comparison, names: dict[int, str]) -> Bullets:
    """One note per row of the ranked table, in its order: ``[n]`` the row's name and knobs,
    its baseline when the experiment has several, why its verdict (the interval, p and how
    large a change could hide: the minimum detectable effect) and its runs' warnings."""
    cells = cmp.cells.set_index("cell_id")
    several = bool(cmp.cells.attrs.get("baselines_note"))
    notes = []
    for n, (_, r) in enumerate(cmp.ranking.iterrows(), start=1):
        c = cells.loc[r["cell_id"]]
        why: Rich = ()
        if not r["is_baseline"]:
            interval = (f"ratio {number(c['ratio_ci_low'], '.2f')}–"
                        f"{number(c['ratio_ci_high'], '.2f')}, p={number(c['p_value'], '.3f')}"
                        "; " if math.isfinite(c["ratio_ci_low"]) else "")
            mde = (f" (MDE ±{number(c['mde_pct'], '.1f')}%)"
                   if math.isfinite(c["mde_pct"]) else "")
            why = rich(" — ", ("vs ", Value(c["baseline_label"]), ": ") if several else (),
                       interval, Value(c["verdict_reason"]), mde)
        warnings = text_of(r["warnings"])
        notes.append(rich(f"[{n}] ", named(r["cell_label"], names.get(int(r["cell_id"]))),
                          (" ", muted("(baseline)")) if r["is_baseline"] else (), why,
                          (" — ", warn(Value(warnings))) if warnings else ()))
    return Bullets(tuple(notes), "footnotes")


def _ranked_table(cmp: Comparison, qps: dict[int, float] | None = None,
                  names: dict[int, str] | None = None) -> Table:
    """The ranked rows, one line each: the row's name (its knobs when it has none), rank,
    throughput and interval, ratio to its baseline and the ratio's interval, verdict,
    stability, runs and ``[n]``, its note under the table."""
    m = metric_view(cmp.experiment)
    cells = cmp.cells.set_index("cell_id")
    rows: list[list[Rich]] = []
    classes = []
    for n, (_, r) in enumerate(cmp.ranking.iterrows(), start=1):
        c = cells.loc[r["cell_id"]]
        interval = (f"{number(c['ratio_ci_low'], '.2f')}–{number(c['ratio_ci_high'], '.2f')}"
                    if not r["is_baseline"] and math.isfinite(c["ratio_ci_low"]) else "–")
        # A baseline is its shaded row and its verdict; no "(baseline)" to wrap the name.
        rows.append([
            row_name(r["cell_label"], (names or {}).get(int(r["cell_id"]))),
            (str(int(r["rank_notpm"])),), (number(m.of(r["notpm_mean"])),),
            (ci(m.of(r["notpm_ci_low"]), m.of(r["notpm_ci_high"])),),
            *([(number((qps or {}).get(int(r["cell_id"]))),)] if qps else []),
            ("–",) if r["is_baseline"] else (f"{number(r['ratio'], '.2f')}×",), (interval,),
            (verdict_span(r["verdict"]),), (str(int(r["rank_stability"])),),
            (number(r["score_median"], ".0f"),), (number(r["cv_pct_median"], ".1f"),),
            (str(int(r["n_done"])),),
            (muted(f"[{n}]"), " ", warn("⚠") if text_of(r["warnings"]) else ""),
        ])
        classes.append("base" if r["is_baseline"] else "")
    return table(
        ["configuration", "rank", m.name, "95% CI", *(["QPS"] if qps else []), "vs baseline",
         "ratio 95% CI", "verdict", "stability rank", "score", "CV %", "runs", "note"],
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


def effects(cmp: Comparison) -> Section:
    """The main effect of each knob and the two-way interactions (where the design
    identifies them; otherwise what each is confounded with)."""
    out: Section = []
    me = cmp.main_effects
    names = level_names(cmp.cells)

    def level(knob: str, value: Any) -> Value:
        text = plots.knob_text(value)
        return Value(names.get((knob, text), text))

    if len(me):
        rows = [[
            (Value(r["knob"]),),
            (level(r["knob"], r["level"]), " vs ", level(r["knob"], r["reference"])),
            (f"{number(r['ratio'], '.3f')}×" if r["estimable"] else "–",),
            (ci(r["ci_low"], r["ci_high"], ".3f"),), (number(r["p_value"], ".4f"),),
            (Value(r["reason"]),),
        ] for _, r in me.iterrows()]
        out.append(Heading(3, ("Main effect of each knob",)))
        out.append(Paragraph(("Least squares on log throughput over every run (all main"
                              " effects together), as a ratio to the knob's reference level,"
                              " with a t interval and p-value — only where the design"
                              " identifies the effect; otherwise the table says what it is"
                              " confounded with.",), "sub"))
        out.append(table(["knob", "level vs reference", "ratio", "95% CI", "p", "estimable?"],
                         rows, left=2))
    it = cmp.interactions
    if len(it):
        # An interaction of a knob whose main effect is not estimable cannot be either; the
        # main-effects table says why, so such pairs are counted, not listed (the 2011 flash
        # study's twelve rows gave 36 of them).
        implied = it["reason"].astype(str).str.startswith(NO_MAIN_EFFECT)
        rows = [[
            (Value(r["knob_a"]),), (Value(r["knob_b"]),),
            (number(r["rms_pct"], ".2f") if r["estimable"] else "–",),
            (number(r["p_value"], ".4f"),), (Value(r["reason"]),),
        ] for _, r in it[~implied].iterrows()]
        out.append(Heading(3, ("Two-way interactions",)))
        out.append(Paragraph(("How far the cells are from \"effect of A times effect of B\" (RMS"
                              " change of the fitted cells, %), with an F test against the"
                              " main-effects model — only where every combination of the two"
                              " knobs was run and is not aliased.",), "sub"))
        if rows:
            out.append(table(["knob A", "knob B", "interaction %", "p", "estimable?"], rows,
                             left=2))
        if implied.any():
            out.append(Paragraph((f"{int(implied.sum())} {'more ' if rows else ''}pair(s) of"
                                  " knobs not estimable: each involves a knob whose main effect"
                                  " is not estimable (above).",)))
    return out


def methodology(cmp: Comparison, variables: pd.DataFrame, labels: dict[int, str]
                ) -> Section:
    """How the figures were made, then the server, workload, hardware, key variables and
    the comparison's warnings; ``labels`` names a representative run's configuration."""
    exp = cmp.experiment
    spec = exp["stored"].spec
    win = exp["window"]
    md = cmp.metadata
    wl = spec.workload
    ds = spec.dataset

    def one(key: str) -> Value:
        return Value(", ".join(md.get(key, [])) or "–")

    mem = md.get("mem_total_bytes", [])
    mem_txt = ", ".join(f"{float(m) / 1024**3:.1f} GiB" for m in mem) if mem else "–"
    hw = table(["", ""], [
        [("host",), (one("hostname"),)], [("kernel",), (one("kernel"),)],
        [("CPU",), (one("cpu_model"),)], [("CPU count",), (one("cpu_count"),)],
        [("memory",), (Value(mem_txt),)],
        [("datadir device / fs",), (one("datadir_device"), " / ", one("datadir_fstype"))],
    ])
    srv = table(["", ""], [
        [("server",), (one("server_flavor"), " ", one("server_version"))],
        [("dataset",), (one("dataset_key"), " (", Value(dataset_text(ds)), ")")],
        [("driver",), (one("driver"), f" — {wl.connections} connections")],
        [("warmup (excluded)",), (f"{win.warmup:g} s",)],
        [("run length after warmup",), (f"{win.duration:g} s",)],
        [("measurement window",), (f"{win.start:g} s – {win.end:g} s after warmup "
                                   f"({win.length / 60:g} min)",)],
        [("report interval",), (f"{win.report_interval:g} s",)],
        [("repetitions",), (Value(repetitions_text(spec)), "; run order ",
                            Value(spec.order.mode))],
        [("sampling",), (f"every {spec.sampling.interval} s",)],
        [("recorded by",), (Value(code_versions_text(_run_extras(cmp))),)],
    ])
    note = driver_fidelity_note(wl)
    return [
        Heading(2, ("Methodology",), "methodology"),
        *([note] if note is not None else []), methods(cmp),
        Heading(3, ("Server and workload",)), srv, Heading(3, ("Hardware",)), hw,
        Heading(3, ("Key server variables",)), _variables_table(variables, labels),
        Heading(3, ("Warnings",)),
        Bullets(tuple((Value(w),) for w in cmp.warnings) or (("none",),)),
    ]


def _run_extras(cmp: Comparison) -> list[Any]:
    """Each compared run's ``run_metadata.extra`` (None where the run has no metadata)."""
    extra = cmp.frames.run_summary.get("extra")
    return [] if extra is None else list(extra)


def _variables_table(variables: pd.DataFrame, labels: dict[int, str]) -> Table:
    """The key server variables of the representative runs: one value, or how it varies."""
    var_rows = []
    for name in KEY_VARIABLES:
        if name not in variables.columns or variables[name].isna().all():
            continue
        values = variables[name].dropna()
        distinct = sorted(set(values))
        if len(distinct) == 1:
            var_rows.append([(code(Value(name)),), (Value(distinct[0]),)])
        else:
            var_rows.append([(code(Value(name)),), (Value(varies_text(values, labels)),)])
    return table(["variable", "value (SHOW GLOBAL VARIABLES)"], var_rows)


def cell_section(
    cmp: Comparison, figs: FigureList, cell: pd.Series, rep_run: int | None,
    smp: pd.DataFrame, ivl: pd.DataFrame, memory_figures: bool = True,
    name: str | None = None, lat: latency.Latency | None = None, search: bool = False,
) -> Section:
    """One configuration: its figure and verdict, each run's row, its figures. With
    ``search`` (a rate search) its runs are steps at different rates: no pooled figure or
    verdict heads them, and the table numbers them as steps."""
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
    out: Section = [Heading(3, rich(named(cell["cell_label"], name),
                                    (" ", muted("(baseline)")) if cell["is_baseline"] else ()),
                            f"cell-{int(cell['cell_id'])}")]
    verdict: Rich = () if cell["is_baseline"] else (
        f" · {number(cell['ratio'], '.2f')}× the baseline (", verdict_span(cell["verdict"]), ")")
    if search:
        out.append(Paragraph((f"{len(runs)} runs, each one step of the search at its own rate"
                              f" ({m.name} below is the rate it achieved); the steps are"
                              " judged under the highest rate under the target.",), "sub"))
    else:
        out.append(Paragraph(rich(
            f"{number(m.of(cell['notpm_mean']))} {m.name} (95% CI "
            f"{ci(m.of(cell['notpm_ci_low']), m.of(cell['notpm_ci_high']))})", verdict,
            f" · stability score {number(cell['score_median'], '.0f')}"), "sub"))
    out.append(_runs_table(runs, m, lat, first="step" if search else "repetition"))
    run_smp = smp[smp["run_id"] == rep_run] if rep_run is not None else smp.iloc[0:0]
    folded: list[Block] = [*cell_figures(
        cmp, figs, cell, runs, rep_run, run_smp, ivl[ivl["run_id"].isin(runs["run_id"])],
        metric=m, window=window, name=name, memory_figures=memory_figures)]
    if not (len(run_smp) and run_smp["checkpoint_age_mb"].notna().any()) and rep_run is not None:
        folded.append(Paragraph(("No sampler data for this run.",), "muted"))
    # The row's own figures fold away: the grids above show every row at once.
    n_figures = sum(isinstance(b, Figure) for b in folded)
    if folded:
        out.append(Fold((f"This row's {n_figures} figures",) if n_figures else
                        ("This row's figures",), tuple(folded)))
    return out


def _runs_table(runs: pd.DataFrame, m: MetricView, lat: latency.Latency | None,
                first: str = "repetition") -> Table:
    """One row per run of a configuration: figures, response time, stability, warnings
    (``first``: what the first column numbers, repetitions or a search's steps)."""
    rows = []
    # Each run's response time beside its stability score (analysis/response/latency.py).
    lat_rows = lat.by_run if lat is not None and lat.view.percentile else {}
    lat_name = lat.view.name if lat is not None and lat.view.percentile else "p99"
    for _, r in runs.iterrows():
        mine = lat_rows.get(int(r["run_id"]), {})
        rows.append([(text,) for text in (
            f"#{int(r['repetition'])}" + (f" (attempt {int(r['attempt'])})"
                                          if r["attempt"] > 1 else ""),
            str(int(r["run_id"])))] + [(Value(r["status"]),)] + [(text,) for text in (
            number(m.of(r.get("notpm"))),
            number(r.get("score"), ".0f"), number(mine.get("value_ms"), ",.1f"),
            number(mine.get("stall_s")), number(r.get("cv_pct"), ".1f"),
            number(r.get("holes_share", math.nan) * 100, ".0f"),
            number(r.get("period_s"), ".0f"), number(r.get("trend_pct_per_min"), "+.2f"))] + [
            (warn(Value(text_of(r.get("warnings")) or text_of(r.get("error")))),),
        ])
    return table([first, "run", "status", m.name, "score", f"{lat_name} ms",
                  "stall s", "CV %", "holes %", "period s", "trend %/min", "warnings"], rows)


def io_section(figs: FigureList, io_table: pd.DataFrame, metric: MetricView,
               shown: dict[str, str]) -> Section:
    """What each transaction wrote, by data pages, doublewrite and redo (when counted);
    ``shown`` renames a configuration label on the axis (the row's own name)."""
    if io_table.empty or not io_table.filter(like=" KiB").notna().any().any():
        return []
    unit = "New-Order" if metric.per_minute else "transaction"
    fig = io_figure(figs, io_table, unit, shown)
    return [Heading(2, ("What each transaction wrote",)),
            Paragraph((f"Write operations and KiB per {unit} over the measurement window, split"
                       " into data pages (", code("Innodb_pages_written"), "), the doublewrite"
                       " copy (", code("Innodb_dblwr_writes"), ", ",
                       code("Innodb_dblwr_pages_written"), ") and redo (",
                       code("Innodb_log_writes"), ", ", code("Innodb_os_log_written"),
                       "); the median of each cell's runs."), "sub"),
            fig]


def latency_section(d: ReportData, figs: FigureList, names: dict[int, str]) -> Section:
    """Response time beside throughput stability: per row the window percentile, its verdict
    against the baseline (lower is better), stall seconds and jitter; the percentile over time
    per cell and its spread; each transaction type's figures (analysis/response/latency.py)."""
    lat, cmp, metric = d.latency, d.cmp, d.metric
    v = lat.view
    if v.percentile is None or lat.cells.empty:
        return [Heading(2, ("Response time",)),
                Paragraph(("The driver printed no latency figure.",), "muted")]
    who = "New-Order " if metric.per_minute else ""
    unit = "New-Order" if metric.per_minute else "transaction"
    labels = cmp.cells.set_index("cell_id")["cell_label"]
    rows = []
    # The median needs the histograms (the driver prints no per-interval p50).
    median = ["p50 ms"] if v.exact else []
    for cell_id, c in lat.cells.iterrows():
        rows.append([row_name(labels[cell_id], names.get(int(cell_id))),
                     *([(number(c["p50_ms"], ",.1f"),)] if median else []),
                     (number(c["value_ms"], ",.1f"),), (number(c["p999_ms"], ",.0f"),),
                     (number(c["max_ms"], ",.0f"),),
                     ("–" if c["verdict"] == "baseline" else
                      f"{number(c['ratio'], '.2f')}× "
                      f"({ci(c['ratio_ci_low'], c['ratio_ci_high'], '.2f')})",),
                     (latency_verdict_span(str(c["verdict"])),), (number(c["stall_s_median"]),),
                     (number(c["stall_s_max"]),), (number(c["jitter_pct_median"]),)])
    missing = ([Paragraph((f"No latency histograms (their {v.name} is the driver's per-interval"
                           " figure): ", Value(latency.missing_text(lat.missing)), "."), "warn")]
               if lat.missing else [])
    out: Section = [
        Heading(2, ("Response time",)),
        Paragraph((f"{who}{v.name} in ms, lower is better. A run's: the ", Value(v.how),
                   "; a row's: the ", Value(v.cell_how), ". ", italic("stall s"),
                   f": seconds of the window's intervals with no {unit} or a {v.name} above"
                   f" {latency.STALL_MULTIPLE:g} × the run's median (median and largest of the"
                   " row's runs); ", *((italic("p50"), ": the median of the row's runs'"
                                        " windows merged, waits included; ") if median else ()),
                   italic("p99.9"), " and ", italic("max"), ": the window's,"
                   " with the waits no completion measured (a stall is a wait of at least its"
                   " length; without histograms p99.9 is what the stalls prove, – when they"
                   " prove nothing); ", italic("jitter"), ": CV of the per-interval"
                   f" {v.name} (median of the runs). The verdict is the throughput verdicts'"
                   f" rule on the runs' window {v.name}: a ratio above 1 is slower responses"
                   " than the baseline's."), "sub"),
        *missing,
        table(["configuration", *median, f"{v.name} ms", "p99.9 ms", "max ms",
               "ratio (95% CI)", "verdict", "stall s", "stall s max", "jitter %"], rows)]
    out += latency_figures(d, figs, names)
    out += _latency_types(lat, labels, names)
    return out


def _latency_types(lat: latency.Latency, labels: pd.Series, names: dict[int, str]
                   ) -> Section:
    """Each type's p99 and maximum per row (where the driver gives them per type)."""
    if lat.types.empty:
        return []
    types = [t for t in _TYPE_NAMES if t in set(lat.types["type"])]
    figures: dict[int, dict[str, str]] = {}
    for r in lat.types.itertuples(index=False):
        figures.setdefault(int(r.cell_id), {})[r.type] = (
            f"{number(r.p99_ms, ',.1f')} / {number(r.max_ms, ',.0f')}")
    rows = [[row_name(labels[cell_id], names.get(cell_id))]
            + [(mine.get(t, "–"),) for t in types] for cell_id, mine in figures.items()]
    exact = bool(lat.types["exact"].all())
    how = ("p99 of the row's runs' windows merged, with the transactions in flight at each"
           " window's end (exact within 1/128)" if exact else
           "the median of the driver's per-interval p99 over the row's windows (– where it"
           " prints none per type)")
    return [Heading(3, ("Per transaction type",)),
            Paragraph(("p99 / max in ms: ", Value(how), "; max: the largest the driver printed"
                       " (exact), with the histograms also the oldest transaction in flight at"
                       " a window interval's end."), "sub"),
            table(["configuration", *[_TYPE_NAMES[t] for t in types]], rows)]


def efficiency_section(eff: efficiency.Efficiency, cells: pd.DataFrame, metric: MetricView,
                       names: dict[int, str]) -> Section:
    """The cost per transaction of each row (median of its counted runs) and, per row, one
    sentence on what bound it (analysis/writes/cost.py, analysis/writes/bound.py)."""
    if eff.cost_cells.empty and eff.bound_cells.empty:
        return []
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
        rows.append([row_name(labels[cell_id], names.get(int(cell_id))), (Value(what),),
                     *[(number(row_cost.get(c), cost.FORMATS[c]),) for c in cost.COLUMNS]])
    sentences = tuple(
        rich(row_name(labels[c], names.get(int(c))), ": ", Value(r["bound_text"]), " ",
             muted("(", Value(r["bound_runs"]), " runs)"))
        for c, r in eff.bound_cells.iterrows() if c in labels.index)
    return [Heading(2, (f"Cost per {unit} and what bound each row",)),
            Paragraph((f"Per {unit} over the measurement window, the median of each row's"
                       " counted runs: mysqld's and the client's CPU (µs) and context switches"
                       " (voluntary + involuntary, every thread's; – for runs recorded before"
                       " they were sampled), reads and writes completed on the datadir's device"
                       " and the KiB they moved, and row-lock waits (",
                       code("Innodb_row_lock_waits"), "). ", italic("bound"), ": what bound most"
                       " of the row's runs — the storage limit, the CPU, redo pressure,"
                       " free-page waits or row-lock waits, each by its threshold"
                       " (docs/statistics.md, \"What bound a run\")."), "sub"),
            table(["configuration", "bound", *[cost.LABELS[c] for c in cost.COLUMNS]], rows),
            Bullets(sentences, "summary")]


def memory_section(cmp: Comparison, figs: FigureList, cell_mem: pd.DataFrame,
                   reps: dict[int, int], smp: pd.DataFrame, names: dict[int, str]
                   ) -> Section:
    """RSS per configuration over time and the memory table; the figure only when memory
    differs between cells by more than the noise or a memory knob varies."""
    if cell_mem.empty or not cell_mem["rss_peak_mb"].notna().any():
        return []
    draw, why = memory_matters(cell_mem, varying_knobs(cmp.frames.run_summary))
    out: Section = [
        Heading(2, ("Memory",), "memory"),
        Paragraph(("mysqld's resident memory (RSS, from ", code("/proc/PID/status"), ") sampled"
                   " during each run. VSZ — address space reserved, mostly never touched — is a"
                   " column of the table, never an RSS axis."), "sub")]
    if not draw:
        out.append(Paragraph(("No memory figures: ", Value(why), " — every line would be the"
                              " same."), "muted"))
    figure = rss_figure(cmp, figs, reps, smp, names) if draw else None
    if figure is not None:
        out.append(figure)
    out.append(_memory_table(cell_mem, names))
    extra = cmp.frames.run_summary.get("extra")
    modes = sorted({str(x.get("thp_enabled")) for x in extra if isinstance(x, dict)
                    and x.get("thp_enabled")}) if extra is not None else []
    out.append(Paragraph(rich(
        "Peak: highest RSS sampled (warmup included); end of window: the last sample inside the"
        " window; growth: Theil–Sen slope over the window samples (median over repetitions),"
        " flagged when steady (trend p ≤ 0.05 and ≥ 1% of RSS over the window). CIs: Cox's"
        " lognormal interval of the mean over repetitions.",
        (" Transparent huge pages during the runs: ", Value(", ".join(modes)), ".")
        if modes else ()), "muted"))
    return out


def _memory_table(cell_mem: pd.DataFrame, names: dict[int, str]) -> Table:
    rows = []
    for _, r in cell_mem.iterrows():
        row = names.get(int(r["cell_id"]), r["cell_label"])
        rows.append([(Value(row),)] + [(text,) for text in (
            str(int(r["n_runs"])), number(r["rss_peak_mb"], ",.1f"),
            ci(r["rss_peak_ci_low"], r["rss_peak_ci_high"], ",.1f"),
            number(r["rss_end_mb"], ",.1f"), ci(r["rss_end_ci_low"], r["rss_end_ci_high"], ",.1f"),
            number(r["rss_growth_mb_per_min"], "+,.2f"), number(r["anon_huge_peak_mb"], ",.1f"),
            number(r["hugetlb_peak_mb"], ",.0f"), number(r["vsz_peak_mb"] / 1024, ",.1f"))] + [
            (warn(Value(r["memory_warnings"])),),
        ])
    return table(["configuration", "runs", "peak RSS MiB", "95% CI",
                  "end-of-window RSS MiB", "95% CI", "RSS growth MiB/min",
                  "THP (AnonHugePages) peak MiB", "hugetlb MiB", "peak VSZ GiB",
                  "warnings"], rows)


def scorecard_section(spec: ExperimentSpec, run_summary: pd.DataFrame, cells: pd.DataFrame,
                      figs: FigureList, stability: pd.DataFrame | None = None,
                      graded: pd.DataFrame | None = None) -> Section:
    """The reproduction scorecard (table and figure, :mod:`analysis.comparisons.scorecard`), or
    nothing without a reference; ``stability``: the reference's stability claims graded
    (:func:`analysis.comparisons.stability_claims.stability_scorecard`), a panel and a table of
    their own; ``graded``: the scorecard already made with its window starts and the runs'
    variables (:func:`analysis.comparisons.scorecard.for_comparison`), else it is made here
    from the run summary alone.
    """
    if not scorecard.has_reference(spec):
        return []
    if graded is None:
        graded = scorecard.scorecard(spec, run_summary, cells)
    ref = spec.reference
    source = redact(str((ref.source if ref else None) or "the reference"))
    heading = Heading(2, ("Reproduction scorecard",), "scorecard")
    if graded.empty:
        return [heading, Paragraph((
            "The experiment carries reference results (", Value(source), ") but no comparison"
            " can be made: give the baseline row a reference value, or list ",
            code("reference.comparisons"), "."), "sub")]

    def num(value: float, fmt: str = ".2f") -> str:
        return format(value, fmt) if math.isfinite(value) else "–"

    rows = []
    for _, r in graded.iterrows():
        share = (f" ({100 * r['share']:.0f}% of its effect)"
                 if r["verdict"] in (scorecard.SMALLER, scorecard.LARGER)
                 and math.isfinite(r["share"]) else "")
        rows.append((
            rich(Value(r["comparison"]),
                 (BREAK, muted("note: ", Value(r["note"]))) if r["note"] else ()),
            (Value(r["a"]), " / ", Value(r["b"])),
            (f"{r['n_a']} / {r['n_b']}",),
            (f"{num(r['reference_ratio'])}×{'' if r['stated'] else ' *'}",),
            (f"{num(r['ratio'])}×",), (f"{num(r['ci_low'])} – {num(r['ci_high'])}",),
            (f"{num(r['window_low'])} – {num(r['window_high'])}",),
            (Value(r["our_verdict"]),),
            Cell(rich(f"{r['verdict']}{share}",
                      (BREAK, warn(Value(r["not_steady"]), " not at steady state"))
                      if r["not_steady"] else ()),
                 scorecard.VERDICT_COLOURS[r["verdict"]]),
            (Value(r["reason"]),)))
    # Masked: a stored experiment may predate the refusal of URLs with credentials.
    url = (ref.url if ref else None) or ""
    link: Rich = ((" (", Link(redact_url(str(url)), ("source",)), ")")
                  if str(url).lower().startswith(("https://", "http://")) else ())
    band = f"±{100 * (scorecard.MARGIN - 1):g}%"
    tol = f"{100 * (scorecard.TOLERANCE - 1):g}%"
    return [
        heading,
        Paragraph(rich(
            "Each comparison the reference makes — ", Value(source), link, " — as its ratio a"
            " / b beside ours, with the interval and verdict of the report's own verdict rule. ",
            bold("Reproduced"), ": our verdict has the reference's direction and our interval"
            f" holds its ratio, or ours is within {tol} of it (a reference within {band} of 1:"
            " our interval inside that margin); ", bold("same direction, smaller/larger"),
            ": the direction holds, the size does not (the share of the reference's effect on"
            " the log scale); ", bold("no effect"), f": our interval inside {band} of 1; ",
            bold("contradicts"), ": the opposite direction, or an interval that excludes the"
            " reference's ratio while covering 1; ", bold("inconclusive"), ": the interval"
            " covers both 1 and the reference's ratio, or the grade moves between showing the"
            " reference's effect and not over the window starts; ", bold("not gradeable"),
            ": a compared row cannot test the claim — the flushing method it names never acted"
            " in its runs, or none of its runs reached steady state (its ratio is shown, not"
            " counted). ", bold(Value(scorecard.headline(graded))),
            ". * the quotient of the two rows' reference values (the reference states no"
            " ratio). ", Value(str(graded.attrs.get("window_note")
                                   or "starts: the stored window only.")),
            " Rule: docs/statistics.md."), "sub"),
        figs.add("scorecard", scorecard.figure(graded, source=source)),
        Table(("comparison", "a / b", "runs", "reference", "ours", "95% CI", "starts",
               "our verdict", "reproduction", "why"), tuple(rows),
              align_left=(True, True, False, False, False, False, False, True, True, True),
              compact=True),
        *_stability_claims(stability, figs),
    ]


def _stability_claims(stability: pd.DataFrame | None, figs: FigureList) -> Section:
    """The stability claims' panel and table (nothing without any)."""
    if stability is None or stability.empty:
        return []
    rows = tuple((
        (Value(r["claim"]),), (Value(r["stated"]),), (str(r["runs"]),), (Value(r["measured"]),),
        Cell((str(r["verdict"]),), scorecard.VERDICT_COLOURS[r["verdict"]]),
        (Value(r["reason"]),)) for _, r in stability.iterrows())
    return [
        Heading(3, ("Stability claims",)),
        Paragraph(("What the reference says of each line, against each row's runs: the"
                   " stability score (100 × p5 / median), the oscillation test and intervals"
                   " without a transaction. ", bold(Value(scorecard.headline(stability))),
                   ". Rule: docs/statistics.md, \"Stability claims\"."), "sub"),
        figs.add("scorecard-stability", scorecard.stability_figure(stability)),
        Table(("claim", "the reference says", "runs", "ours", "reproduction", "why"), rows,
              align_left=(True, True, False, True, True, True), header_left=(True,) * 6,
              compact=True),
    ]
