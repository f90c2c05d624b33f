"""Every table the command prints, in one place, with one number formatter.

``plan`` (cells, run order, power), ``status`` (queue, workers), ``show`` (one run),
``compare`` (against the baseline, knob effects, interactions, stability, response time,
cost, the scorecard; across databases: sources, per source, pooled, source against source),
the per-cell summary ``run`` ends with, ``disturbed``, ``doctor`` and ``mext``'s blocks.
Each function builds a :class:`rich.table.Table` from what a library function returned; the
verbs decide what to print around them. Every figure goes through :func:`number`
(:func:`core.units.format_number`): "–" where a run has none, whatever the reason. User text
goes through :func:`~flushbench.cli.console.shown` or :func:`~flushbench.cli.console.literal`.
Heavy modules (pandas, analysis) are imported inside the functions that need them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from core.experiment.cells import cell_names
from core.units import MISSING, format_duration
from core.units import format_number as number
from flushbench.cli.console import hanging, literal, para, shown

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.console import Console, ConsoleOptions, RenderResult

    from runner.admission.planning import Plan

__all__ = ["number"]


#: The longest word a fitted table keeps whole (a knob setting, a server variable); a longer
#: one — a path — folds.
LONG_WORD = 48


class FitTable(Table):
    """A table that fits the width it is printed in, never cutting a value short.

    Cells wrap at spaces and fold a word longer than their column (never "…"). When even that
    cannot fit — the table's narrowest form, each column as wide as its longest word, is wider
    than the terminal — it prints as a list instead: per row, ``heading: value`` lines under
    the row's first value, every value in full (an 80-column terminal and ``plan``'s server
    variables, ``doctor``'s paths).
    """

    def __init__(self, *args: Any, fold_words: bool = False, **kwargs: Any) -> None:
        """``fold_words``: too wide even at its narrowest, stay a table and fold the longest
        words (a two-column key/value table whose one long value would not fit)."""
        super().__init__(*args, **kwargs)
        self.fold_words = fold_words

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        ranges = self._ranges(console, options)
        fits = sum(low for low, _ in ranges) + self._extra_width <= options.max_width
        if fits or self.fold_words:
            widths = self._fitted_widths(ranges, options) if fits else [None] * len(ranges)
            saved = [column.width for column in self.columns]
            try:
                for column, width in zip(self.columns, widths, strict=True):
                    column.width = width
                yield from super().__rich_console__(console, options)
            finally:
                for column, width in zip(self.columns, saved, strict=True):
                    column.width = width
            return
        yield from self._as_list(console, options.max_width)

    def _ranges(self, console: Console, options: ConsoleOptions) -> list[tuple[int, int]]:
        """Each column's (narrowest, natural) width with padding: the narrowest is its
        longest word, or its natural width for a ``no_wrap`` column."""
        ranges = []
        for column in self.columns:
            m = self._measure_column(console, options, column)
            # A word longer than LONG_WORD (a path) folds rather than turning a wide
            # terminal's table into a list; names and settings stay whole.
            low = m.maximum if column.no_wrap else min(m.minimum, LONG_WORD)
            ranges.append((low, m.maximum))
        return ranges

    def _fitted_widths(self, ranges: list[tuple[int, int]],
                       options: ConsoleOptions) -> list[int | None]:
        """Column content widths that fit ``options.max_width`` without breaking a word: the
        widest columns shrink first, to one cap, none below its longest word (rich shrinks
        them too, but folds ``innodb_max_dirty_pages_pct=75`` to do it). The columns' own
        widths when the table fits as it is."""
        room = options.max_width - self._extra_width
        if sum(high for _, high in ranges) <= room:
            return [c.width for c in self.columns]

        def at(cap: int) -> list[int]:
            return [min(high, max(low, cap)) for low, high in ranges]

        low_cap, high_cap = 0, max(high for _, high in ranges)
        while low_cap < high_cap:  # the widest cap that fits
            mid = (low_cap + high_cap + 1) // 2
            low_cap, high_cap = (mid, high_cap) if sum(at(mid)) <= room else (low_cap, mid - 1)
        widths = at(low_cap)
        return [w - self._get_padding_width(c._index)
                for w, c in zip(widths, self.columns, strict=True)]

    def _as_list(self, console: Console, width: int) -> Iterator[Text]:
        """The table as ``heading: value`` lines, one block per row."""
        def text(cell: Any) -> Text:
            if isinstance(cell, Text):
                return cell.copy()
            return console.render_str(str(cell)) if isinstance(cell, str) else Text(str(cell))

        if self.title:
            yield text(self.title)
        columns = [(text(c.header).plain.replace("\n", " "), list(c.cells))
                   for c in self.columns]
        for row in range(self.row_count):
            for i, (heading, cells) in enumerate(columns):
                value = text(cells[row]) if row < len(cells) else Text("")
                if not value.plain.strip():
                    continue
                # The first column names the row; the others hang under it.
                label = Text(f"{heading}: ", style="bold") if heading else Text("")
                line = Text("  " if i else "- ") + label + value
                yield from hanging(console, line, width, hang=2 if i else 4)
        if self.caption:
            yield text(self.caption)


def _table(title: str, columns: list[tuple[str, str]], **options: Any) -> Table:
    """A table with these (heading, justify) columns that fits the terminal
    (:class:`FitTable`): cells wrap or fold, never end in "…"."""
    table = FitTable(title=title, **options)
    for heading, justify in columns:
        table.add_column(heading, justify=justify, overflow="fold")  # type: ignore[arg-type]
    return table


def _ratio(ratio: Any, low: Any, high: Any) -> str:
    """``1.17× (1.04–1.31)``: a ratio and its 95 % interval."""
    return f"{number(ratio, '.2f')}× ({number(low, '.2f')}–{number(high, '.2f')})"


def _known(value: Any) -> str:
    """A value as text, or "–" when the run has none yet (None, NaN, NaT)."""
    import pandas as pd

    return MISSING if value is None or pd.isna(value) else str(value)


def _moment(value: Any) -> str:
    """A timestamp to the second with its zone (``2026-12-07 19:23:13 UTC``), or "–"."""
    import pandas as pd

    if value is None or pd.isna(value):
        return MISSING
    when = pd.Timestamp(value)
    return when.strftime("%Y-%m-%d %H:%M:%S") + (f" {when.tzname()}" if when.tzinfo else "")


def _level(value: Any) -> str:
    """A knob level as experiment files write it: on/off, 60 rather than 60.0."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return shown(str(value))


# --- plan ------------------------------------------------------------------------------------

def print_plan(p: Plan, console: Console) -> None:
    """``plan``: the experiment on its server(s), the cells with their translated server
    variables, the run order with estimated starts, the totals, then the plan's notes."""
    console.print(_plan_heading(p))
    console.print(plan_cells_table(p))
    console.print(plan_runs_table(p))
    for line in _plan_totals(p):
        console.print(line)
    controls = p.report.host_controls_summary()
    if controls is not None:
        para(console, shown(controls))
    for note in p.notes:
        para(console, f"note: {shown(note)}")


def _plan_heading(p: Plan) -> str:
    exp, rep = p.experiment, p.report
    if len(rep.servers) > 1:
        where = "; ".join(f"{shown(name)} = {srv.label}"
                          f" ({srv.version_string.split(' for ')[0]})"
                          for name, srv in rep.servers.items())
        return (f"[bold]{exp.name}[/] ({shown(p.source)}) on {len(rep.servers)} servers:"
                f" {where}; base config {shown(rep.base_config)}")
    return (f"[bold]{exp.name}[/] ({shown(p.source)}) on [bold]{rep.server.label}[/]"
            f" ({rep.server.version_string.split(' for ')[0]}), base config"
            f" {shown(rep.base_config)}")


def plan_cells_table(p: Plan) -> Table:
    """Each cell: label, key, the server variables it sets, client and storage."""
    exp, rep = p.experiment, p.report
    names = cell_names(p.cells)
    cells = _table("Cells", [("#", "right"), ("cell", "left"), ("key", "left"),
                             ("server variables", "left"), ("client", "left"),
                             ("storage", "left")], show_lines=True)
    for n, cell in enumerate(p.cells, 1):
        tr = rep.translations[cell.key]
        client = []
        if tr.allocator:
            client.append(f"LD_PRELOAD={tr.allocator}")
        client.append(f"connections={tr.connections or exp.workload.connections}")
        if (search := exp.workload.rate_search) is not None:  # one run per rate tried
            client.append(f"rate: highest under {search.max_under.target_text()}"
                          f" ({exp.workload.arrivals or 'uniform'})")
        elif (rate := tr.rate or exp.workload.rate) is not None:  # not flat out (docs/tpcc.md)
            client.append(f"rate={rate:g} NOTPM ({exp.workload.arrivals or 'uniform'})")
        # User values are text, not markup ("[/b]" in a file name must not reach rich).
        # A row the experiment names is called by its name, its knobs in the variables column.
        label = (shown(names.get(cell.key) or cell.label)
                 + (" [bold](baseline)[/]" if cell.is_baseline else ""))
        variables = "\n".join(f"{k}={v}" for k, v in tr.server_options.items()) or "-"
        cells.add_row(str(n), label, cell.key, shown(variables), "\n".join(client),
                      shown(rep.storage_label(cell)))
    return cells


def plan_runs_table(p: Plan) -> Table:
    """The runs in order: cell number, repetition, estimated length and start."""
    index = {c.key: n for n, c in enumerate(p.cells, 1)}
    names = cell_names(p.cells)
    runs = _table(f"Run order ({p.experiment.order.mode})", [
        ("run", "right"), ("cell", "right"), ("rep", "right"), ("label", "left"),
        ("est.", "right"), ("starts at", "right")])
    for r in p.runs:
        runs.add_row(str(r.index), str(index[r.cell.key]), str(r.repetition),
                     shown(names.get(r.cell.key) or r.cell.label),
                     format_duration(r.seconds), "+" + format_duration(r.starts_at))
    return runs


def _plan_totals(p: Plan) -> list[str]:
    """Runs and dataset load; total time and disk."""
    from runner.host.facts import human_size

    exp, rep = p.experiment, p.report
    free = human_size(rep.disk_free) if rep.disk_free is not None else "unknown"
    return [
        f"{len(p.cells)} cells × {exp.repetitions_label()} = {len(p.runs)} runs;"
        f" dataset {exp.dataset.scale_label()} (~{human_size(rep.dataset_bytes)}) loaded once"
        + (f" per server ({len(rep.servers)})" if len(rep.servers) > 1 else "") + " in"
        f" ~{format_duration(p.load_seconds)}",
        f"estimated total: [bold]{format_duration(p.total_seconds)}[/];"
        f" disk needed ~{human_size(rep.disk_needed)}"
        + (f" ({rep.disk.describe()})" if rep.disk is not None else "")
        + f" (free {free}); datadirs are removed after each run (failed ones kept, at most 3)",
        *_search_total(p),
    ]


def _search_total(p: Plan) -> list[str]:
    """A rate search's line: the runs above are each cell's first step; it measures one run
    per rate tried, up to ``max_steps`` a cell (docs/tpcc.md)."""
    search = p.experiment.workload.rate_search
    if search is None:
        return []
    most = search.max_under.max_steps
    return [f"a rate search: the runs above are each cell's first step, at"
            f" {search.max_under.first_rate:,.0f} NOTPM; each cell runs one run per rate tried,"
            f" at most {most} — up to {len(p.cells) * most} runs,"
            f" ~{format_duration(p.load_seconds + (p.total_seconds - p.load_seconds) * most)}"]


def power_table(effect: float, rows: list[tuple[str, Any]]) -> Table:
    """``plan --detect``: per comparison (label, :class:`analysis.comparisons.power_plan` row), the
    runs now, the MDE now, the runs needed per cell and their machine hours."""
    table = _table(f"Power: finding {effect:g} %", [
        ("comparison", "left"), ("runs now", "right"), ("MDE now", "right"),
        ("runs needed per cell", "right"), ("machine hours", "right")])
    for label, row in rows:
        mde = "∞" if math.isinf(row.mde_pct) else f"±{number(row.mde_pct, '.1f')} %"
        table.add_row(literal(label), f"{row.n_baseline} vs {row.n_other}", mde,
                      str(row.runs_needed) if row.runs_needed else "> 50",
                      number(row.hours_needed, ".1f", missing="-"))
    return table


# --- status ----------------------------------------------------------------------------------

#: The queue table's run states, in column order.
QUEUE_STATES = ("queued", "running", "done", "failed", "interrupted", "cancelled")


def queue_table(rows: list[dict], seconds_per_run: dict[int, float], *,
                width: int | None = None) -> Table:
    """``status``: per experiment, its runs by state and the time left. A column per state;
    narrower than that table (``width``, the terminal's), one "runs" column naming the states
    that have runs (``3 queued, 1 running, 10 done``) — a state left out has none."""
    table = _queue_table(rows, seconds_per_run, compact=False)
    if width is not None and _natural_width(table) > width:
        return _queue_table(rows, seconds_per_run, compact=True)
    return table


def _queue_table(rows: list[dict], seconds_per_run: dict[int, float], *,
                 compact: bool) -> Table:
    states = [("runs", "left")] if compact else [(s, "right") for s in QUEUE_STATES]
    table = _table("flushbench queue", [("id", "right"), ("experiment", "left"), *states,
                                        ("left (est.)", "right")])
    for row in rows:
        counts = [str(row.get(c, 0)) for c in QUEUE_STATES]
        if compact:
            counts = [", ".join(f"{n} {c}" for n, c in zip(counts, QUEUE_STATES, strict=True)
                                if n != "0") or "none"]
        table.add_row(str(row["experiment_id"]), literal(row["name"]), *counts,
                      _time_left(row, seconds_per_run.get(int(row["experiment_id"]))))
    return table


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing in it wraps."""
    from rich.console import Console

    probe = Console(width=10_000)
    return table.__rich_measure__(probe, probe.options).maximum


def _time_left(row: dict, seconds_per_run: float | None) -> str:
    """``≈ 10h12m`` for what is left of an experiment (queued + running runs), ``?`` before
    its first finished run, empty when nothing is left."""
    left = int(row.get("queued", 0)) + int(row.get("running", 0))
    if not left:
        return ""
    if seconds_per_run is None:
        return "?"
    return f"≈ {format_duration(left * seconds_per_run)}"


def workers_table(workers: list[Any]) -> Table:
    """``status``: each worker heard from lately, live or stale, and what it is doing."""
    table = _table("workers", [(c, "left") for c in (
        "host", "class", "pid", "state", "experiment", "run", "phase", "lease age",
        "heartbeat")])
    for w in workers:
        table.add_row(literal(w.host_id), literal(w.host_class), str(w.pid), w.state,
                      literal(w.experiment or ""), str(w.run_id or ""), literal(w.phase),
                      f"{w.lease_age_s:.0f} s" if w.lease_age_s is not None else "",
                      ("live" if w.live else "STALE") + f" ({w.heartbeat_age_s:.0f} s ago)")
    return table


# --- run, disturbed, doctor, mext ------------------------------------------------------------

def cell_summary_table(cells: Any, summary: Any, min_by_run: Any, m: Any,
                       names: dict[int, str] | None = None) -> Table:
    """The end of ``run``: per cell, runs done and failed, the window mean and the lowest
    interval in the experiment's metric ``m``, the stability score and warnings. A cell is
    called by its row's name in ``names`` (cell id → ``dw-on-50``), else by its label."""
    names = names or {}
    table = _table("Per-cell summary (measurement window)", [
        ("row", "left"), ("done", "right"), ("failed", "right"), (m.name, "right"),
        (f"min interval {m.name}", "right"), ("stability", "right"), ("warnings", "left")])
    for _, cell in cells.iterrows():
        run_ids = summary.loc[
            (summary["cell_id"] == cell["cell_id"]) & (summary["status"] == "done"), "run_id"
        ]
        mins = [float(min_by_run[r]) for r in run_ids if r in min_by_run]
        label = (names.get(int(cell["cell_id"])) or cell["cell_label"]) + (
            " (baseline)" if cell["is_baseline"] else "")
        table.add_row(
            literal(label), str(cell["n_done"]), str(cell["n_failed"]),
            number(m.of(cell["notpm_mean"])), number(m.of(min(mins))) if mins else MISSING,
            number(cell["score_median"], ".0f"), literal(cell["warnings"] or ""),
        )
    return table


#: ``disturbed``'s figures per kind: (evidence key, label, format).
_DISTURBED_FIGURES = {
    "disturbed-cpu": (("others_share", "others' CPU", ".1%"),
                      ("others_peak_share", "peak interval", ".1%")),
    "disturbed-steal": (("steal_share", "steal", ".1%"),),
    "disturbed-io": (("others_bps", "others' B/s", ",.0f"),
                     ("others_share", "of the device's bytes", ".1%")),
    "below-limit": (("share", "of the limit", ".1%"),
                    ("intervals_at_limit", "intervals at it", ".0f")),
}


def _disturbed_figures(kind: str, figures: dict) -> str:
    return ", ".join(f"{label} {number(figures[key], spec)}"
                     for key, label, spec in _DISTURBED_FIGURES.get(kind, ())
                     if isinstance(figures.get(key), int | float))


def disturbed_table(experiment: str, runs: Any) -> Table:
    """``disturbed``: each disturbed run (every attempt), what disturbed it, its figures and
    whether the experiment's policy keeps it in the verdicts."""
    table = _table(f"disturbed runs of {experiment}", [(c, "left") for c in (
        "run", "row #rep/attempt", "status", "warning", "figures", "counts?")])
    for _, r in runs.iterrows():
        status = str(r["status"]) + (" (superseded)" if r["superseded"] else "")
        counts = f"no ({r['action']})" if r["excluded"] else f"yes ({r['action']})"
        table.add_row(str(r["run_id"]), literal(f"{r.get('row', r['cell_label'])}"
                                                f" #{r['repetition']}/{r['attempt']}"),
                      literal(status), literal(r["kind"]),
                      literal(_disturbed_figures(r["kind"], r["figures"])), literal(counts))
    return table


def search_steps_table(rows: list[tuple[str, ...]]) -> Table:
    """A rate search's steps by rate (analysis/response/rate_search.py ``step_table``): rate,
    run, window p99 with waits, achieved NOTPM, stall seconds, and held or why it failed."""
    table = _table("", [("rate", "right"), ("run", "right"), ("p99 ms", "right"),
                        ("achieved", "right"), ("stall s", "right"), ("", "left")])
    for row in rows:
        table.add_row(*row)
    return table


def doctor_table(checks: list[Any]) -> Table:
    """``doctor``: each check, its status (coloured), what it found and the fix."""
    table = _table("flushbench doctor", [(c, "left") for c in ("check", "status", "detail",
                                                                 "fix")])
    colors = {"ok": "green", "FAIL": "bold red", "warn": "yellow"}
    for c in checks:
        table.add_row(c.name, f"[{colors[c.status]}]{c.status}[/]", literal(c.detail),
                      literal(c.fix or ""))
    return table


#: Width of ``mext``'s counter-name column and of one value column (delta or level).
MEXT_NAME_WIDTH = 44
MEXT_VALUE_WIDTH = 12


def mext_block_table(values: Any, block: list[str], first: str, restarts: list[str],
                     rate: bool) -> Table:
    """One block of ``mext``'s columns in pt-mext's layout: counters as rows, the samples of
    ``block`` as columns (``first``, the absolute values, is never a rate); a column where the
    server restarted is marked. Values as pt-mext prints them
    (:func:`analysis.reading.mext.format_value`: blank where there is none)."""
    from analysis.reading.mext import format_value

    out = Table(show_edge=False, box=None, pad_edge=False)
    out.add_column("counter", min_width=min(MEXT_NAME_WIDTH, 20), max_width=MEXT_NAME_WIDTH,
                   no_wrap=True, overflow="ellipsis")
    for label in block:
        mark = " restart" if label in restarts else ""
        out.add_column(label + mark, justify="right", min_width=MEXT_VALUE_WIDTH, no_wrap=True)
    for name, row in values[block].iterrows():
        derived = str(name).startswith("[derived]")
        out.add_row(literal(name), *(
            format_value(v, rate=rate and not derived and label != first)
            for label, v in row.items()))
    return out


# --- show ------------------------------------------------------------------------------------

def run_table(run_id: int, r: Any, m: Any, latency_rows: list[tuple[str, str]],
              efficiency_rows: list[tuple[str, str]], name: str | None = None,
              cycle_rows: list[tuple[str, str]] | None = None) -> Table:
    """``show``: one run's configuration (``name``: its row's name in the experiment file),
    status, metadata, figures in the experiment's metric ``m``, stability figures and levels;
    ``latency_rows`` and ``efficiency_rows`` (:func:`latency_rows`, :func:`efficiency_rows`)
    go beside the stability score and last; ``cycle_rows`` (:func:`cycle_rows`) after the
    period inside the window."""
    from analysis.report.sentences import code_text

    rows = [
        ("configuration", (f"{name} · " if name else "") + r["cell_label"]
         + (" (baseline)" if r["is_baseline"] else "")),
        ("repetition / attempt", f"{r['repetition']} / {r['attempt']}"
         + (" (superseded)" if r["superseded"] else "")),
        ("status", str(r["status"]) + (f" — {r['error']}" if r["error"] else "")),
        ("started", _moment(r["started_at"])), ("finished", _moment(r["finished_at"])),
        # A run not started yet has no metadata: one "–", not "None (None × None)".
        ("server", f"{r['server_flavor']} {r['server_version']}"
         if _known(r["server_flavor"]) != MISSING else MISSING),
        ("host", f"{r['hostname']} ({r['cpu_count']} × {r['cpu_model']})"
         if _known(r["hostname"]) != MISSING else MISSING),
        ("dataset", _known(r["dataset_key"])),
        # Runs not started yet have no metadata, so nothing recorded them yet.
        ("recorded by", code_text(r.get("extra")) if _known(r["hostname"]) != MISSING
         else MISSING),
        (f"{m.name} (window average)", number(m.of(r.get("notpm")))),
        *([("driver TpmC (whole run)", number(r.get("tpmc_driver")))] if m.per_minute else []),
        ("stability score", number(r.get("score"), ".1f")),
        *latency_rows,
        ("CV %", number(r.get("cv_pct"), ".1f")),
        ("holes (< 0.5× median)", f"{number(r.get('holes_share', math.nan) * 100, '.0f')} %"),
        ("longest low stretch", f"{number(r.get('longest_low_s'))} s"),
        # The window's own periodogram peak (two cycles inside it at least); the run's flush
        # cycle over its whole series is the next row.
        ("period inside the window", f"{number(r.get('period_s'))} s"
         f" ({number(r.get('period_share', 0) * 100)}% of variance"
         + ("" if bool(r.get("oscillates")) else ", not above the noise") + ")"),
        *(cycle_rows or []),
        ("trend", f"{number(r.get('trend_pct_per_min'), '+.2f')} % of median per minute"),
        # Checkpoint age and dirty pages across the window: a trend is `not-steady` (below).
        ("levels across the window",
         f"checkpoint age {number(r.get('checkpoint_age_trend_mib_per_min'), '+.1f')} MiB/min"
         f" ({number(r.get('checkpoint_age_change_pct'), '+.0f')} % of the maximum), dirty"
         f" pages {number(r.get('dirty_trend_points_per_min'), '+.1f')} points/min"
         f" ({number(r.get('dirty_change_points'), '+.1f')} points)"),
        ("p95 latency (median)", f"{number(r.get('p95_ms_median'), '.1f')} ms (median of the"
         " driver's own per-interval p95)"),
        ("warnings", str(r.get("warnings") or "none")),
        # A steady window's start, chosen for this run; a disturbed run the policy excludes.
        ("window start", f"{number(r.get('window_start_s'), '.0f')} s after warmup (steady"
         " state)" if number(r.get("window_start_s")) != MISSING else "the experiment's"),
        ("start offset", start_offset_text(r.get("extra"))),
        ("in verdicts", str(r.get("excluded_reason") or "yes")),
        *efficiency_rows,
    ]
    table = FitTable(title=f"run {run_id}", show_header=False, fold_words=True)
    table.add_column("", style="bold", no_wrap=True)  # the keys are short: whole, one line
    table.add_column("", overflow="fold")
    for k, v in rows:
        table.add_row(literal(k), literal(v))
    return table


def start_offset_text(extra: Any) -> str:
    """``show``'s start offset (``pre_run.start_jitter``) as the run recorded it."""
    if not isinstance(extra, dict) or "start_offset_s" not in extra:
        return "none recorded (a run from before start offsets, or not started)"
    bound = float(extra.get("start_jitter_s") or 0)
    if bound <= 0:
        return "none (pre_run.start_jitter 0)"
    return (f"{number(extra['start_offset_s'], '.0f')} s of extra warm-up (drawn from 0–"
            f"{number(bound, '.0f')} s: pre_run.start_jitter)")


def cycle_rows(rc: Any, m: Any) -> list[tuple[str, str]]:
    """``show``'s rows on flush cycles (:class:`analysis.reading.window_cycles.RunCycles`): the
    periods of throughput and checkpoint age over the whole run, and what the window holds."""
    if rc is None:
        return [("flush cycle", "– (no measured interval in the window)")]
    return [("flush cycle (whole run)", rc.cycle_text()),
            ("window and cycles", rc.window_text(m.name, m.scale))]


def latency_rows(view: Any, fig: Any, m: Any, unread: str | None = None
                 ) -> list[tuple[str, str]]:
    """``show``'s response-time rows (:func:`analysis.response.latency.one_run`): which stored
    histogram could not be read (``unread``, as ``compare`` says it), the window's percentile
    and how it was had, its median (from histograms only), p99.9 and maximum, stall seconds,
    jitter."""
    from analysis.response.latency import STALL_MULTIPLE

    first = [("latency histograms", f"not merged — {unread}")] if unread else []
    if view.percentile is None:
        return [*first, ("response time", "– (the driver printed no latency figure)")]
    unit = "New-Order" if m.per_minute else "transaction"
    who = "New-Order " if m.per_minute else ""
    p999 = "exact" if view.exact else "what the stalls prove; the driver prints no p99.9"
    median = [(f"{who}p50 (window)", f"{number(fig['window_p50_ms'], ',.1f')} ms — the merged"
               " histograms' median, waits included")] if view.exact else []
    return [
        *first,
        *median,
        (f"{who}{view.name} (window)", f"{number(fig['value_ms'], ',.1f')} ms — {view.how}"),
        (f"{who}p99.9, max (window)", f"{number(fig['window_p999_ms'], ',.1f')} ms ({p999}),"
         f" {number(fig['window_max_ms'], ',.1f')} ms — waits in stalls and in flight"
         " included"),
        ("stall seconds", f"{number(fig['stall_s'])} s ({number(fig['stall_intervals'])}"
         f" intervals with no {unit} or {view.name} above {STALL_MULTIPLE:g} × the run's"
         f" median {number(fig['median_ms'], ',.1f')} ms)"),
        (f"{view.name} jitter", f"{number(fig['jitter_pct'], '.0f')} % (CV of the per-interval"
         f" {view.name})"),
    ]


def efficiency_rows(bound_text: str | None, costs: Any, m: Any) -> list[tuple[str, str]]:
    """``show``'s rows on what bound the run (None: no samples in the window) and what each
    transaction cost (:func:`analysis.writes.cost.per_run`)."""
    from analysis.writes import cost

    unit = "New-Order" if m.per_minute else "transaction"
    fmt = {c: f"{number(costs[c], cost.FORMATS[c])} {cost.LABELS[c]}" for c in cost.COLUMNS}
    return [
        ("what bound it", bound_text if bound_text is not None
         else "– (no samples in the window)"),
        (f"cost per {unit} (window)",
         f"{fmt['mysqld_cpu_us']}, {fmt['client_cpu_us']}; {fmt['mysqld_ctxsw']},"
         f" {fmt['client_ctxsw']}; {fmt['read_ops']} ("
         f"{fmt['read_kib']}), {fmt['write_ops']} ({fmt['write_kib']}) on the datadir's"
         f" device; {fmt['row_lock_waits']}"),
    ]


def ledger_rows(written: Any, m: Any) -> list[tuple[str, str]]:
    """``show``'s rows on a run's write path (:func:`analysis.writes.ledger.per_run`): its largest
    write source, and the parts against the device's bytes."""
    from analysis.writes import ledger

    unit = "New-Order" if m.per_minute else "transaction"
    if not math.isfinite(float(written["redo_kib"])):
        return [("largest write source", "– (no counters in the window)")]
    parts = ", ".join(f"{ledger.NAMES[p]} {number(written[p], ',.1f')}"
                      for p in ("redo_kib", "doublewrite_kib", "pages_kib", "binlog_kib",
                                "residual_kib") if math.isfinite(float(written[p])))
    source = written["device_source"] or "no device counter"
    check = ("the parts add up within 5 %" if ledger.accounted(written) else
             f"residual {number(written['residual_pct'], '+.1f')} % of the device's")
    return [
        ("largest write source", ledger.largest_text(written, unit)),
        (f"write path per {unit} (KiB)",
         f"device {number(written['device_kib'], ',.1f')} ({source}): {parts}; {check};"
         f" floor {number(written['floor_kib'], ',.1f')},"
         f" {number(written['amplification'], '.2f')}× above it"),
    ]


# --- compare ---------------------------------------------------------------------------------

def comparison_table(cmp: Any, ids: dict[Any, str], m: Any, bound_cells: Any) -> Table:
    """``compare``: each row against its baseline — runs, the metric's mean and interval, the
    ratio and its interval, the verdict (coloured) and what bound most of its runs."""
    cells = cmp.cells.set_index("cell_id")
    several = "baseline_id" in cells and cells["baseline_id"].nunique() > 1
    t = _table("Against the baseline (mean of repetitions, 95% CI)"
               if not several else "Against each row's own baseline (mean of repetitions,"
               " 95% CI)",
               [("id", "left"), ("runs", "right"), (f"{m.name} (95% CI)", "right"),
                ("ratio (95% CI)", "right"), ("verdict", "left"), ("bound", "left")])
    for _, r in cmp.ranking.iterrows():
        c = cells.loc[r["cell_id"]]
        style = {"faster": "green", "slower": "red"}.get(c["verdict"], "")
        t.add_row(
            ids[r["cell_id"]],
            str(c["n_done"]) + (f"+{c['n_failed']}✗" if c["n_failed"] else "")
            # Disturbed runs the experiment's `disturbed:` policy leaves out (reasons below).
            + (f" (+{c['n_excluded']} excl.)" if c.get("n_excluded") else ""),
            f"{number(m.of(c['notpm_mean']))} ({number(m.of(c['notpm_ci_low']))}–"
            f"{number(m.of(c['notpm_ci_high']))})",
            MISSING if c["is_baseline"] else
            _ratio(c["ratio"], c["ratio_ci_low"], c["ratio_ci_high"])
            + (f" vs {ids[int(c['baseline_id'])]}" if several else "")
            + _window_range(c),
            f"[{style}]{c['verdict']}[/]" if style else c["verdict"],
            _bound_cell(bound_cells, r["cell_id"]),
        )
    return t


def _window_range(c: Any) -> str:
    """``; starts 0.80–1.21``: the ratio wherever the window could start (see the note the
    comparison prints under the table)."""
    low, high = c.get("window_ratio_low"), c.get("window_ratio_high")
    if low is None or not (math.isfinite(float(low)) and math.isfinite(float(high))):
        return ""
    if f"{low:.2f}" == f"{high:.2f}":
        return ""
    return f"; starts {low:.2f}–{high:.2f}"


def _bound_cell(cells: Any, cell_id: Any) -> str:
    """A cell's attribution in the comparison table: ``byte limit 6/6``."""
    from analysis.writes.bound import short

    if cell_id not in cells.index:
        return MISSING
    row = cells.loc[cell_id]
    agreeing, _, total = str(row["bound_runs"]).partition(" of ")
    return f"{short(row['bound'])} {agreeing}/{total}"


def main_effects_table(me: Any) -> Table:
    """The estimable main effects: each knob's level against its reference, as a ratio."""
    t = _table("Main effect of each knob (ratio to its reference level)", [
        ("knob", "left"), ("level", "left"), ("ratio", "right"), ("95% CI", "right"),
        ("p", "right")])
    for _, r in me[me["estimable"]].iterrows():
        t.add_row(shown(r["knob"]), f"{_level(r['level'])} vs {_level(r['reference'])}",
                  f"{number(r['ratio'], '.3f')}×",
                  f"{number(r['ci_low'], '.3f')}–{number(r['ci_high'], '.3f')}",
                  number(r["p_value"], ".4f"))
    return t


def interactions_table(it: Any) -> Table:
    """The estimable two-way interactions: RMS change of the fitted cells and the F test."""
    t = _table("Two-way interactions (F test on log throughput)", [
        ("knob A", "left"), ("knob B", "left"), ("interaction %", "right"), ("p", "right")])
    for _, r in it[it["estimable"]].iterrows():
        t.add_row(shown(r["knob_a"]), shown(r["knob_b"]), number(r["rms_pct"], ".2f"),
                  number(r["p_value"], ".4f"))
    return t


def stability_table(ranking: Any, ids: dict[Any, str], m: Any) -> Table:
    """The rows in order of median stability score, with CV, the rank by throughput and —
    the only ranking word — each row's steadiness against its baseline by the verdict rule
    on the runs' CV (analysis/steadiness/stability_verdicts.py)."""
    steady = "steadiness" in ranking
    t = _table("Stability (100 × p5 / median; 100 = flat), in order of median score — an"
               " order, not a verdict", [
        (c, "right") for c in ("order", "id", "score", "CV %", f"{m.name} rank")]
        + ([("vs baseline (test on CV)", "left")] if steady else []))
    for _, r in ranking.sort_values("rank_stability").iterrows():
        t.add_row(str(r["rank_stability"]), ids[r["cell_id"]], number(r["score_median"], ".0f"),
                  number(r["cv_pct_median"], ".1f"), str(r["rank_notpm"]),
                  *([str(r["steadiness"])] if steady else []))
    return t


def latency_table(lat: Any, ids: dict[Any, str], m: Any) -> Table:
    """Response time per row: the window's median (from histograms), its percentile, p99.9
    and maximum (stalls and waits in flight included), its ratio and verdict against the
    baseline (lower is better, coloured), stall seconds and jitter."""
    from analysis.response.latency import HIGHER, LOWER

    v = lat.view
    who = "New-Order " if m.per_minute else ""
    # The median needs the histograms (the driver prints no per-interval p50).
    median = ["p50"] if v.exact else []
    t = _table(f"Response time: {who}{v.name}, ms (lower is better)", [
        (col, "left" if col in ("id", "verdict") else "right")
        for col in ("id", *median, v.name, "p99.9 / max", "ratio (95% CI)", "verdict",
                    "stall s", "jitter %")])
    t.columns[3 + len(median)].min_width = len("(0.03–0.07)")  # wraps, never truncates
    styles = {LOWER: "green", HIGHER: "red"}
    for cell_id, c in lat.cells.iterrows():
        t.add_row(ids.get(cell_id, str(cell_id)),
                  *([number(c["p50_ms"], ",.0f")] if median else []),
                  number(c["value_ms"], ",.0f"),
                  f"{number(c['p999_ms'], ',.0f')} / {number(c['max_ms'], ',.0f')}",
                  MISSING if c["verdict"] == "baseline" else
                  _ratio(c["ratio"], c["ratio_ci_low"], c["ratio_ci_high"]),
                  f"[{styles[c['verdict']]}]{c['verdict']}[/]" if c["verdict"] in styles
                  else c["verdict"],
                  number(c["stall_s_median"], ",.0f"), number(c["jitter_pct_median"], ".0f"))
    return t


def cost_table(cost_cells: Any, ids: dict[Any, str], unit: str) -> Table:
    """Cost per transaction of each row (median of its counted runs)."""
    from analysis.writes.cost import COLUMNS, FORMATS, LABELS

    t = _table(f"Cost per {unit} (median of each row's runs, measurement window)",
               [("id", "left"), *((LABELS[c], "right") for c in COLUMNS)])
    for cell_id, row in cost_cells.iterrows():
        t.add_row(ids.get(cell_id, str(cell_id)), *[number(row[c], FORMATS[c]) for c in COLUMNS])
    return t


def ledger_table(ledger_cells: Any, ids: dict[Any, str], unit: str) -> Table:
    """The write-path ledger of each row: KiB per transaction the device received, split by
    part, the residual and its share (analysis/writes/ledger.py)."""
    t = _table(f"Write path: KiB per {unit} (median of each row's runs, measurement window)",
               [(h, "left" if h == "id" else "right") for h in
                ("id", "device", "redo", "dblwr", "pages", "LRU", "binlog", "residual",
                 "largest")])
    short = {"doublewrite": "dblwr", "data pages": "pages"}
    for cell_id, r in ledger_cells.iterrows():
        t.add_row(ids.get(cell_id, str(cell_id)), number(r["device_kib"], ",.1f"),
                  number(r["redo_kib"], ",.1f"), number(r["doublewrite_kib"], ",.1f"),
                  number(r["pages_kib"], ",.1f"), number(r["pages_lru_kib"], ",.1f"),
                  number(r["binlog_kib"], ",.1f"),
                  f"{number(r['residual_kib'], ',.1f')} {number(r['residual_pct'], '+.0f')}%",
                  shown(short.get(r["largest"], r["largest"] or MISSING)))
    return t


def floor_table(ledger_cells: Any, ids: dict[Any, str], unit: str) -> Table:
    """Each row's floor (the fewest KiB per transaction its redo and dirty pages allow), its
    write amplification above it and the KiB above it by cause (analysis/writes/ledger.py)."""
    t = _table(f"Above the floor: KiB per {unit} (floor and causes add up to the device's)",
               [(h, "left" if h == "id" else "right") for h in
                ("id", "pages", "floor pages", "floor", "×floor", "redo rewrite", "dblwr",
                 "pages early", "binlog", "residual")])
    for cell_id, r in ledger_cells.iterrows():
        t.add_row(ids.get(cell_id, str(cell_id)), number(r["pages_written"], ".2f"),
                  number(r["floor_pages"], ".2f"), number(r["floor_kib"], ",.1f"),
                  f"{number(r['amplification'], '.2f')}×",
                  *[number(r[c], ",.1f") for c in ("above_redo_kib", "above_doublewrite_kib",
                                                  "above_pages_kib", "above_binlog_kib",
                                                  "above_residual_kib")])
    return t


def write_costs_table(costs: Any, ids: dict[Any, str], unit: str) -> Table:
    """The cost table (analysis/writes/write_costs.py): each figure per transaction with its ratio
    to the row's baseline in brackets."""
    from analysis.writes.write_costs import COLUMNS, FORMATS, HEADERS

    t = _table(f"Cost per {unit} (median of each row's runs; ×: over the row's baseline)",
               [("id", "left"), *((HEADERS[c], "right") for c in COLUMNS)])
    for cell_id, r in costs.iterrows():
        t.add_row(ids.get(cell_id, str(cell_id)),
                  *[f"{number(r[c], FORMATS[c])} ×{number(r[c + '_x'], '.2f')}"
                    for c in COLUMNS])
    return t


def scorecard_table(table: Any) -> Table:
    """The reproduction scorecard: the reference's ratios against ours (R1, R2, …), our
    verdict and the reproduction verdict (coloured)."""
    from analysis.comparisons import scorecard

    t = _table("The reference's ratios against ours (a / b)", [
        (col, "right" if col in ("reference", "ours (95% CI)") else "left")
        for col in ("id", "reference", "ours (95% CI)", "our verdict", "reproduction",
                    "reference vs our CI")])
    styles = {scorecard.REPRODUCED: "green", scorecard.SMALLER: "cyan",
              scorecard.LARGER: "blue", scorecard.NO_EFFECT: "yellow",
              scorecard.CONTRADICTS: "red", scorecard.NOT_GRADEABLE: "magenta"}
    for i, r in table.iterrows():
        style = styles.get(r["verdict"], "")
        # The ratio over window starts (as the cells' table: "starts 0.86–0.94"), on a line
        # of its own so the table keeps its width.
        starts = (f"\nstarts {number(r['window_low'], '.2f')}–{number(r['window_high'], '.2f')}"
                  if math.isfinite(float(r["window_low"])) else "")
        t.add_row(f"R{i + 1}",
                  f"{number(r['reference_ratio'], '.2f')}×" + ("" if r["stated"] else " *"),
                  _ratio(r["ratio"], r["ci_low"], r["ci_high"]) + starts,
                  r["our_verdict"], f"[{style}]{r['verdict']}[/]" if style else r["verdict"],
                  r["size"])
    return t


# --- compare across databases ----------------------------------------------------------------

def cross_sources_table(sources: Any, sid: dict[str, str], legend: str) -> Table:
    """The sources (:func:`analysis.comparisons.crossdb.sources_table`): server, hosts, cells, runs,
    window, each under its short id."""
    t = _table(f"Sources ({shown(legend)})", [
        (col, "right" if col in ("cells", "runs") else "left")
        for col in ("source", "server", "hosts", "cells", "runs", "window")])
    for _, r in sources.iterrows():
        t.add_row(sid[r["source"]], shown(r["server"]), shown(r["hosts"]), str(r["cells"]),
                  str(r["runs_done"]), r["window"])
    return t


def cross_cells_table(cross: Any, sid: dict[str, str], legend: str) -> Table:
    """Each matched cell in each source: runs, the metric and ratio to that source's own
    baseline (95 % CIs), the verdict."""
    m = cross.metric_name
    scale = 1.0 if m == "NOTPM" else 1 / 60
    t = _table(f"Per source: {m} and ratio to the source's own baseline (95% CI;"
               f" {shown(legend)})", [
                   (col, "right" if col in ("runs",) or m in col else "left")
                   for col in ("cell", "source", "runs", f"{m} (95% CI)", "ratio (95% CI)",
                               "verdict")])
    for _, r in cross.cells.iterrows():
        t.add_row(f"M{r['match']}", sid[r["source"]], str(r["n_done"]),
                  f"{number(r['mean'] * scale)} ({number(r['ci_low'] * scale)}–"
                  f"{number(r['ci_high'] * scale)})",
                  MISSING if r["is_baseline"] else
                  _ratio(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                  r["verdict"])
    return t


def pooled_table(pooled: Any, legend: str) -> Table:
    """The ratio to the baseline pooled over the sources as blocks, and whether the sources
    disagree (Cochran's Q)."""
    t = _table(f"Ratio to the baseline pooled over the sources as blocks ({shown(legend)})", [
        (col, "left" if col in ("cell", "verdict") else "right")
        for col in ("cell", "sources", "ratio (95% CI)", "p", "verdict", "sources disagree?")])
    for i, r in pooled.iterrows():
        het = r["heterogeneity_p"]
        t.add_row(f"M{i + 1}", str(r["n_sources"]),
                  MISSING if r["verdict"] == "baseline" else
                  _ratio(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                  number(r["p_value"], ".3f"), r["verdict"],
                  MISSING if not math.isfinite(het) else
                  (f"yes (Cochran's Q p = {het:.3g})" if het < 0.05 else f"no (p = {het:.2g})"))
    return t


def between_table(cross: Any, sid: dict[str, str], legend: str) -> Table:
    """The same cell in each source against the first source."""
    matches = dict(zip(cross.cells["key"], cross.cells["match"], strict=False))
    t = _table(f"The same cell in each source against S1 ({shown(legend)})", [
        (col, "left" if col in ("cell", "source", "verdict") else "right")
        for col in ("cell", "source", "runs", "ratio (95% CI)", "p", "verdict")])
    for _, r in cross.between.iterrows():
        t.add_row(f"M{matches[r['key']]}", f"{sid[r['source']]} / S1",
                  f"{r['n_other']} vs {r['n_first']}",
                  _ratio(r["ratio"], r["ci_low"], r["ci_high"]), number(r["p_value"], ".3f"),
                  r["verdict"])
    return t
