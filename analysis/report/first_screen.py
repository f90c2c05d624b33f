"""The first screen of an experiment's report: the verdict, the caveats that change it, what
to do next, and the page's contents.

Every count here is computed from the same frames as the rest of the page: the caveats'
window-dependent rows are the summary's (the cells' verdicts), their noisy and not-steady runs
are the Warnings section's (the done runs' warnings, one kind each, as
:func:`analysis.steadiness.claims.run_warnings_by_kind` counts them), the CPU-bound rows are
the cost table's (:mod:`analysis.writes.bound`). Nothing is drawn here: the blocks are
:mod:`analysis.report.model`'s.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from analysis.comparisons.compare import NOT_ENOUGH
from analysis.reading.window_cycles import WINDOW_DEPENDENT
from analysis.report.model import (
    Bullets,
    Claims,
    Contents,
    Heading,
    Paragraph,
    Rich,
    Section,
    Value,
    code,
    rich,
    warn,
)
from analysis.steadiness.claims import split_warnings
from analysis.steadiness.transients import KIND as NOT_STEADY
from store.models import RunStatus

if TYPE_CHECKING:
    from analysis.report.model import ReportData

#: The run warnings' kinds the caveats count, as the Warnings section names them.
NOISY = "noisy"
OSCILLATES = "oscillates"


def _who(cell_ids: list[int], labels: dict[int, str], names: dict[int, str]) -> str:
    """The rows by their own names (their knobs where they have none)."""
    return ", ".join(names.get(c, labels[c]) for c in cell_ids)


def warning_kinds(rs: pd.DataFrame) -> dict[str, list[int]]:
    """Per kind of run warning (``noisy``, ``not-steady``…), the done runs that carry it —
    what the Warnings section counts."""
    done = rs[rs["status"] == RunStatus.DONE]
    kinds: dict[str, list[int]] = {}
    for run_id, text in zip(done["run_id"], done["warnings"].fillna(""), strict=True):
        for warning in split_warnings(str(text)):
            kinds.setdefault(warning.partition(": ")[0], []).append(int(run_id))
    return kinds


def caveats(d: ReportData, names: dict[int, str], *, search: bool = False) -> list[Rich]:
    """What changes how far the verdict can be trusted, each with its count: rows whose
    verdict depends on the window, disturbed runs, CPU-bound rows, runs not at steady state,
    noisy or oscillating runs. Empty when there is none.

    With ``search`` (a rate search: each row's runs are steps at different rates) only the
    runs' own caveats are counted: a row's window-dependent verdict or what bound most of its
    runs pools steps that carried different loads."""
    cells, rs = d.cmp.cells, d.cmp.frames.run_summary
    labels = {int(c): str(lbl) for c, lbl in zip(cells["cell_id"], cells["cell_label"],
                                                  strict=True)}
    n_rows = len(cells)
    done = rs[rs["status"] == RunStatus.DONE]
    out: list[Rich] = []
    moving = [] if search else [
        int(c) for c in cells.loc[cells["verdict"] == WINDOW_DEPENDENT, "cell_id"]]
    if moving:
        out.append(rich(warn(f"{len(moving)} of {n_rows} rows window-dependent"),
                        ": their verdict changes with where the window starts (",
                        Value(_who(moving, labels, names)), ")"))
    disturbed = (rs["disturbances"].fillna("").astype(str) != "") if "disturbances" in rs \
        else pd.Series(False, index=rs.index)
    if disturbed.any():
        left_out = int(rs.loc[disturbed, "excluded"].fillna(False).astype(bool).sum()) \
            if "excluded" in rs else 0
        out.append(rich(warn(f"{int(disturbed.sum())} of {len(rs)} runs disturbed"),
                        " by the rest of the machine",
                        f" ({left_out} left out of the verdicts by the experiment's policy)"
                        if left_out else " (counted: the experiment's policy keeps them)"))
    bound_cells = d.efficiency.bound_cells
    cpu = [int(c) for c in bound_cells.index[bound_cells["bound"] == "cpu"]] \
        if "bound" in bound_cells and not search else []
    if cpu:
        out.append(rich(warn(f"{len(cpu)} of {n_rows} rows CPU-bound"),
                        ": the CPU, not the storage or the flushing, bound most of their runs (",
                        Value(_who(cpu, labels, names)), ")"))
    kinds = warning_kinds(rs)
    if kinds.get(NOT_STEADY):
        out.append(rich(warn(f"{len(kinds[NOT_STEADY])} of {len(done)} runs not at steady"
                             " state"), ": checkpoint age or dirty pages still trending"
                        " through the window"))
    shaky = sorted(set(kinds.get(NOISY, [])) | set(kinds.get(OSCILLATES, [])))
    if shaky:
        parts = [f"{len(kinds[NOISY])} noisy: CV ≥ 10 %" if kinds.get(NOISY) else "",
                 f"{len(kinds[OSCILLATES])} oscillating" if kinds.get(OSCILLATES) else ""]
        out.append(rich(warn(f"{len(shaky)} of {len(done)} runs noisy or oscillating"),
                        f" ({'; '.join(p for p in parts if p)}) — each run's warnings are in"
                        " its row's table"))
    return out


def next_steps(d: ReportData, *, search: bool = False) -> list[Rich]:
    """The commands that answer what the caveats leave open, most telling first; without
    a caveat, where to look at one run in full. With ``search`` (a rate search) the rows'
    pooled verdicts are no caveat (see :func:`caveats`): ``compare`` prints the answers."""
    cells, rs = d.cmp.cells, d.cmp.frames.run_summary
    name = str(d.cmp.experiment["name"])
    out: list[Rich] = []
    if search:
        out.append(rich(code("flushbench compare ", Value(name)),
                        ": each row's answer and its steps in the terminal."))
    elif (cells["verdict"] == NOT_ENOUGH).any():
        out.append(rich(f"{int((cells['verdict'] == NOT_ENOUGH).sum())} rows have too few"
                        " repetitions for a verdict: ", code("flushbench plan EXPERIMENT.yaml"
                                                             " --detect 10%"),
                        " says how many runs each comparison needs; set ",
                        code("repetitions:"), " to it and run the experiment again."))
    if not search and (cells["verdict"] == WINDOW_DEPENDENT).any():
        out.append(rich(code("flushbench compare ", Value(name), " --cycles whole"),
                        ": the verdicts with each periodic run's window cut to whole flush"
                        " cycles."))
    if "disturbances" in rs and (rs["disturbances"].fillna("").astype(str) != "").any():
        out.append(rich(code("flushbench disturbed ", Value(name)),
                        ": what disturbed each run, and whether it counts."))
    run = int(rs.loc[rs["status"] == RunStatus.DONE, "run_id"].iloc[0]) \
        if (rs["status"] == RunStatus.DONE).any() else None
    if run is not None:
        out.append(rich(code(f"flushbench show {run}"),
                        ": one run in full — its metadata, variables and warnings."))
    return out


def slug(text: str) -> str:
    """A heading's words as an anchor (``Cost per New-Order`` → ``cost-per-new-order``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "part"


def heading_text(heading: Heading) -> str:
    """A heading's plain words (what the contents list shows)."""
    def plain(parts: Rich) -> str:
        out = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Value):
                out.append(str(part.value))
            elif hasattr(part, "parts"):
                out.append(plain(part.parts))
        return "".join(out)
    return plain(heading.text)


def anchored(sections: list[Section]) -> list[Section]:
    """The sections with every part heading (level 2) given an anchor where it has none
    (the contents list links to each)."""
    taken: set[str] = {b.anchor for s in sections for b in s
                       if isinstance(b, Heading) and b.anchor}
    out = []
    for section in sections:
        blocks = []
        for block in section:
            if isinstance(block, Heading) and block.level == 2 and not block.anchor:
                anchor = base = slug(heading_text(block))
                n = 2
                while anchor in taken:
                    anchor, n = f"{base}-{n}", n + 1
                taken.add(anchor)
                block = replace(block, anchor=anchor)
            blocks.append(block)
        out.append(blocks)
    return out


#: The claims' part: its anchor and heading (drawn by :func:`analysis.report.render.claims_html`).
CLAIMS_PART = ("what-the-runs-did", "What the runs did")


def contents(sections: list[Section]) -> Contents:
    """The page's contents: one link per part heading (level 2) and the claims' part, in page
    order, their words exactly the headings' own."""
    entries = []
    for section in sections:
        for block in section:
            if isinstance(block, Heading) and block.level == 2:
                entries.append((block.anchor or "", heading_text(block)))
            elif isinstance(block, Claims):
                entries.append(CLAIMS_PART)
    return Contents(tuple(entries))


def first_screen(d: ReportData, names: dict[int, str], verdict: Bullets, *,
                 search: bool = False) -> Section:
    """The verdict (``verdict``: the summary's lines, or a rate search's answers), then the
    caveats that change it with their counts, then what to do next (``search``: see
    :func:`caveats`)."""
    found = caveats(d, names, search=search)
    return [
        Heading(2, ("Verdict",), "verdict"), verdict,
        Heading(3, ("Caveats",), "caveats"),
        Bullets(tuple(found), "summary") if found else
        Paragraph(("None: no row window-dependent, no run disturbed, none CPU-bound, every run"
                   " at steady state, none noisy or oscillating.",), "muted"),
        Heading(3, ("Next",), "next"),
        Bullets(tuple(next_steps(d, search=search)), "summary"),
    ]

