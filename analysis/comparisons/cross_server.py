"""Each server against a reference row: the headline of an experiment with a server axis.

An experiment that runs several servers (a ``server`` knob with two levels or more) compares
each row with its *own* server's baseline (:mod:`analysis.reading.baselines`); what a
reader asks first is the other question — how do the servers compare with each other? Here
each server's baseline row is compared with one reference row (by default the experiment's
first baseline: the generations study's ``mysql-5.5-defaults``), by the one verdict rule
(:func:`analysis.statistics.verdicts.design_verdict`, blocked by round or host as ``compare``
blocks), beside its stability score, response time and KiB written per transaction, and over
every plausible window start as ``compare`` judges its own rows (a verdict that changes with
the window's start is window-dependent). A server with no baseline of its own is represented
by its first row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.comparisons.compare import BASELINE, Comparison, counted_runs, design_blocks
from analysis.reading import window_cycles
from analysis.statistics.verdicts import design_verdict


@dataclass(frozen=True)
class CrossServer:
    """The servers' rows against the reference row.

    ``reference_id`` is the reference cell; ``rows`` has one line per server in the
    experiment's row order: ``server``, ``cell_id``, ``notpm`` (mean), ``ratio``, ``ci_low``,
    ``ci_high``, ``verdict`` (``reference`` for the reference row; ``window-dependent`` when
    it changes with where the windows start), ``verdict_reason``, ``stability`` (median
    score), ``latency_ms`` and ``write_kib`` (per transaction; NaN where unknown) and, where
    the runs' flush cycles are known, ``window_ratio_low``/``window_ratio_high`` (the ratio
    over every plausible window start) and ``window_dependent``.
    """

    reference_id: int
    rows: pd.DataFrame


def servers(cells: pd.DataFrame) -> list[str]:
    """The experiment's servers in row order (empty without a ``server`` knob)."""
    out: dict[str, None] = {}
    for knobs in cells.sort_values("position")["knobs"]:
        server = (knobs or {}).get("server")
        if server is not None:
            out[str(server)] = None
    return list(out)


def server_rows(cells: pd.DataFrame) -> dict[str, int]:
    """Server → the cell that stands for it: its baseline, else its first row."""
    out: dict[str, int] = {}
    ordered = cells.sort_values("position")
    for prefer_baseline in (True, False):
        for _, c in ordered.iterrows():
            server = (c["knobs"] or {}).get("server")
            if server is None or str(server) in out:
                continue
            if bool(c["is_baseline"]) or not prefer_baseline:
                out[str(server)] = int(c["cell_id"])
    return {s: out[s] for s in servers(cells) if s in out}


def cross_server(cmp: Comparison, latency_cells: pd.DataFrame, ledger_cells: pd.DataFrame,
                 *, reference: int | None = None) -> CrossServer | None:
    """Each server's row against ``reference`` (a cell id; default: the first baseline in row
    order; a chosen row stands for its server in place of that server's baseline); None when
    the experiment has fewer than two servers.

    ``latency_cells``: :attr:`analysis.response.latency.Latency.cells`; ``ledger_cells``:
    :func:`analysis.writes.ledger.per_cell` (both indexed by cell id).
    """
    rows_of = server_rows(cmp.cells)
    if len(rows_of) < 2:
        return None
    if reference is not None:
        # A chosen reference stands for its own server (in place of that server's baseline).
        knobs = cmp.cells.set_index("cell_id").at[reference, "knobs"] or {}
        if str(knobs.get("server")) in rows_of:
            rows_of[str(knobs.get("server"))] = int(reference)
    ref = reference if reference is not None else next(iter(rows_of.values()))
    rs = counted_runs(cmp.frames.run_summary)
    blocks, unit = design_blocks(rs, cmp.experiment["stored"].spec)

    def verdicts(runs: pd.DataFrame) -> pd.DataFrame:
        """Each server's row against the reference from these runs' ``notpm``."""
        block_list = None if blocks is None else blocks.reindex(runs.index).to_list()
        values = runs["notpm"].to_numpy(float)
        cell_list = runs["cell_id"].astype(int).to_list()
        out = []
        for cell_id in rows_of.values():
            if cell_id == ref:
                out.append(dict(cell_id=cell_id, ratio=1.0, ci_low=math.nan, ci_high=math.nan,
                                verdict=BASELINE, verdict_reason="the reference row"))
                continue
            v = design_verdict(values, cell_list, block_list, ref, cell_id, block_unit=unit)
            out.append(dict(cell_id=cell_id, ratio=v.ratio, ci_low=v.ci_low, ci_high=v.ci_high,
                            verdict=v.verdict, verdict_reason=v.reason))
        return pd.DataFrame(out)

    cells = cmp.cells.set_index("cell_id")
    judged = verdicts(rs)
    judged.insert(0, "server", list(rows_of))
    judged["notpm"] = [float(cells.at[c, "notpm_mean"]) for c in judged["cell_id"]]
    judged["stability"] = [float(cells.at[c, "score_median"]) for c in judged["cell_id"]]
    judged["latency_ms"] = [_at(latency_cells, c, "value_ms") for c in judged["cell_id"]]
    judged["write_kib"] = [_at(ledger_cells, c, "device_kib") for c in judged["cell_id"]]
    # The same verdicts with every run's window moved over its plausible starts (flush
    # cycles: analysis/reading/window_cycles.py), as compare's own rows are judged: a
    # server's verdict that changes with the window's start is window-dependent.
    cycles = cmp.cycles
    if cycles:
        judged = window_cycles.window_sensitivity(judged, rs, cmp.frames.intervals, cycles,
                                                  verdicts)
    judged["verdict"] = judged["verdict"].replace({BASELINE: "reference"})
    return CrossServer(ref, judged)


def starts_range(row: pd.Series) -> str:
    """`` · starts 0.86–0.94``: a server's ratio over every plausible window start (empty
    when unknown, or when it does not move at two decimals)."""
    low, high = row.get("window_ratio_low"), row.get("window_ratio_high")
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return "" if f"{low:.2f}" == f"{high:.2f}" else f" · starts {low:.2f}–{high:.2f}"


def _at(frame: pd.DataFrame, cell_id: int, column: str) -> float:
    if column not in frame.columns or cell_id not in frame.index:
        return math.nan
    value = frame.at[cell_id, column]
    return float(value) if pd.notna(value) else math.nan
