"""Expanding an experiment's matrix into cells, naming them, and ordering their runs.

A pure function of the validated experiment (:class:`core.experiment.spec.ExperimentSpec`):
the product of the matrix axes minus ``exclude``, plus ``include`` rows, each merged over
``fixed``; the baseline(s) marked; the (cell, repetition) pairs in the declared order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from typing import Any

from pydantic import ValidationError

from core.errors import ConfigError
from core.experiment.knob_table import SIZE_KNOBS
from core.experiment.knobs import Knobs
from core.experiment.references import row_name
from core.experiment.spec import CellSpec, ExperimentSpec
from core.units import format_size


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def cell_key(knobs: dict[str, Any]) -> str:
    """Stable id of a cell: hash of its knob values (order of keys does not matter)."""
    payload = json.dumps({k: _canonical(v) for k, v in knobs.items()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _format_value(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if name in SIZE_KNOBS:
        return format_size(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):  # e.g. a hand-written storage profile
        return "{" + ",".join(f"{k}={_format_value(k, v)}" for k, v in sorted(value.items())) + "}"
    return str(value)


def cell_label(knobs: dict[str, Any], varying: set[str] | None = None) -> str:
    """``doublewrite=off max_dirty_pages_pct=60`` — only the varying knobs when given."""
    parts = [
        f"{name}={_format_value(name, value)}"
        for name, value in knobs.items()
        if varying is None or name in varying
    ]
    return " ".join(parts) or "default"


def differing_label(knobs: dict[str, Any], baseline: dict[str, Any]) -> str:
    """``max_dirty_pages_pct=50 io_capacity=20000`` — only the knobs whose value differs from
    ``baseline``'s (in ``knobs``' order; one the cell leaves to the server but the baseline
    sets reads ``io_capacity unset``): what tells a row from the baseline it is compared
    with. ``same as the baseline`` when none differs."""
    parts = [f"{name}={_format_value(name, value)}" for name, value in knobs.items()
             if name not in baseline or _canonical(baseline[name]) != _canonical(value)]
    parts += [f"{name} unset" for name in baseline if name not in knobs]
    return " ".join(parts) or "same as the baseline"


def _matches(knobs: dict[str, Any], partial: dict[str, Any]) -> bool:
    return all(knobs.get(k) == v for k, v in partial.items())


def _with_server(exp: ExperimentSpec, fixed: dict[str, Any], knobs: dict[str, Any]
                 ) -> dict[str, Any]:
    """``knobs`` with the server filled in (``fixed.server``, else the top-level ``server``)
    when the experiment names servers per cell (:meth:`ExperimentSpec.names_servers`)."""
    if not exp.names_servers() or "server" in knobs:
        return knobs
    return {"server": fixed.get("server", exp.server), **knobs}


def _server_first(knobs: dict[str, Any]) -> dict[str, Any]:
    """The server leads the label (``server=mysql-5.5 doublewrite=off``)."""
    if "server" not in knobs:
        return knobs
    return {"server": knobs["server"], **{k: v for k, v in knobs.items() if k != "server"}}


def cell_server(exp: ExperimentSpec, cell: CellSpec) -> str:
    """The server profile (name or path, as written) that runs ``cell``."""
    return str(cell.knobs.get("server", exp.server))


def expand(exp: ExperimentSpec, source: str = "<experiment>") -> list[CellSpec]:
    """Expand the matrix into cells — a pure function of the experiment.

    Cartesian product of the matrix axes, minus ``exclude`` matches, plus ``include`` cells,
    each merged over ``fixed``. Raises :class:`ConfigError` for an empty result, duplicate
    cells, or a baseline that does not name exactly one cell.
    """
    fixed = exp.fixed.values()
    axes = exp.matrix.axes()
    names = list(axes)
    product = [_with_server(exp, fixed, dict(zip(names, combo, strict=True)))
               for combo in itertools.product(*axes.values())]
    if not axes and exp.include:
        product = []  # a pure list of cells (the 2011 walk): no implicit empty cell
    excludes = [e.values() for e in exp.exclude]
    for i, partial in enumerate(excludes):
        if not any(_matches(p, partial) for p in product):
            raise ConfigError(
                f"exclude[{i}] ({cell_label(partial)}) matches no cell",
                where=f"{source}: exclude[{i}]",
                fix="check the knob names and levels against the matrix",
            )
    cells_knobs = [p for p in product if not any(_matches(p, e) for e in excludes)]
    # Cells from the matrix come first, then the include cells (their positions follow).
    n_matrix = len(cells_knobs)
    cells_knobs += [_with_server(exp, fixed, inc.values()) for inc in exp.include]
    if not cells_knobs:
        raise ConfigError(
            "the matrix is empty after `exclude`",
            where=f"{source}: exclude",
            fix="remove an exclude rule or add levels to the matrix",
        )

    merged = [_server_first({**fixed, **k}) for k in cells_knobs]
    # Re-validate every merged cell: cross-knob rules (io_capacity <= io_capacity_max) must
    # hold for each combination, not only for each axis.
    for i, knobs in enumerate(merged):
        where = f"{source}: include[{i - n_matrix}]" if i >= n_matrix else f"{source}: matrix"
        try:
            CellSpec(key="x", position=0, knobs=knobs, label="x").knob_model()
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(
                f"cell {cell_label(knobs)}: {problem}", where=where, fix=None
            ) from None

    names_seen = {n for m in merged for n in m}
    varying = {k for k in names_seen if len({repr(m.get(k)) for m in merged}) > 1}
    seen: dict[str, int] = {}
    cells = []
    for position, knobs in enumerate(merged):
        key = cell_key(knobs)
        if key in seen:
            raise ConfigError(
                f"duplicate cell {cell_label(knobs)} (also cell #{seen[key] + 1})",
                where=(
                    f"{source}: include[{position - n_matrix}]"
                    if position >= n_matrix
                    else f"{source}: matrix"
                ),
                fix="remove the repeated cell; use `repetitions` to run a cell more than once",
            )
        seen[key] = position
        cells.append(
            CellSpec(key=key, position=position, knobs=knobs,
                     label=cell_label(knobs, varying or None),
                     repetitions=(exp.include[position - n_matrix].repetitions
                                  if position >= n_matrix else None),
                     name=(row_name(exp.include[position - n_matrix])
                           if position >= n_matrix else None))
        )
    return _mark_baseline(exp, cells, source)


def include_row_cells(exp: ExperimentSpec, knobs: dict[int, dict[str, Any]]) -> list[list[int]]:
    """For each include row, in order, the ids of the cells (``knobs``: id → a cell's knob
    values) it ran as: the one whose knobs are the row's whole cell — the row over ``fixed``,
    the server filled in, as :func:`expand` makes it. A row's own values alone can match
    several cells (``{doublewrite: on}`` beside ``{doublewrite: on, io_capacity: 200}``).
    Where the whole cell names none (the experiment no longer expands, or a cell stored by an
    older expansion), every cell the row's own values match."""
    try:
        expanded = expand(exp)
        whole: list[str | None] = [c.key for c in expanded[len(expanded) - len(exp.include):]]
    except ConfigError:
        whole = [None] * len(exp.include)
    keys = {cell_id: cell_key(k) for cell_id, k in knobs.items()}
    out = []
    for inc, key in zip(exp.include, whole, strict=True):
        exact = [cell_id for cell_id, k in keys.items() if k == key]
        out.append(exact or [cell_id for cell_id, k in knobs.items()
                             if _matches(k, inc.values())])
    return out


def cell_names(cells: list[CellSpec]) -> dict[str, str]:
    """Cell key → the name of the include row it runs (its ``name``, else its reference's):
    what ``plan`` calls the row. Matrix cells and unnamed rows have none."""
    return {c.key: c.name for c in cells if c.name}


def baselines(exp: ExperimentSpec) -> list[Knobs | str]:
    """The experiment's baselines as a list (one, or one per server or group of rows): knob
    values, or an include row's name."""
    if exp.baseline is None:
        return []
    return list(exp.baseline) if isinstance(exp.baseline, list) else [exp.baseline]


def _mark_baseline(exp: ExperimentSpec, cells: list[CellSpec], source: str) -> list[CellSpec]:
    wanted_all = baselines(exp)
    if not wanted_all:
        chosen = {0}
    else:
        chosen = set()
        listed = isinstance(exp.baseline, list)
        # Include rows follow the matrix's cells, in order (expand refuses duplicates).
        n_matrix = len(cells) - len(exp.include)
        row_names = {row_name(inc): i for i, inc in enumerate(exp.include) if row_name(inc)}
        for i, partial in enumerate(wanted_all):
            where = f"{source}: baseline" + (f"[{i}]" if listed else "")
            if isinstance(partial, str):
                if partial not in row_names:
                    known = ", ".join(sorted(row_names)) or "none: give include rows `name: …`"
                    raise ConfigError(f"no include row is named {partial!r} (row names:"
                                      f" {known})", where=where,
                                      fix="name a row of `include`, or give knob values")
                hits, shown = [n_matrix + row_names[partial]], partial
            else:
                wanted = partial.values()
                shown = cell_label(wanted)
                hits = [j for j, c in enumerate(cells) if _matches(c.knobs, wanted)]
            if len(hits) != 1:
                raise ConfigError(
                    f"baseline ({shown}) matches {len(hits)} cells, it must match one",
                    where=where, fix="give enough knob values to name exactly one cell, or"
                    " name an include row (`name:` on the row, `baseline: NAME`)")
            if hits[0] in chosen:
                raise ConfigError(f"baseline ({shown}) names a cell an earlier"
                                  " baseline names too", where=where,
                                  fix="name each baseline cell once")
            chosen.add(hits[0])
    return [c.model_copy(update={"is_baseline": i in chosen}) for i, c in enumerate(cells)]


def run_order(exp: ExperimentSpec, cells: list[CellSpec]) -> list[tuple[CellSpec, int]]:
    """(cell, repetition) pairs in the declared order; repetitions count from 1.

    Interleaved: round r runs every cell that has an r-th repetition, so a baseline with more
    ``baseline_repetitions`` runs its extra rounds last (after every cell has its own runs).
    Blocks: the same rounds, each shuffled afresh (``random.Random(seed)``, one stream).
    """
    counts = {c.key: exp.repetitions_of(c) for c in cells}
    if exp.order.mode in ("interleaved", "blocks"):
        rounds = range(1, max(counts.values(), default=0) + 1)
        blocks = [[(c, r) for c in cells if r <= counts[c.key]] for r in rounds]
        if exp.order.mode == "blocks":
            rng = random.Random(exp.order.seed)
            for block in blocks:  # a fresh order per block, one seeded stream for all
                rng.shuffle(block)
        return [pair for block in blocks for pair in block]
    pairs = [(c, r) for c in cells for r in range(1, counts[c.key] + 1)]
    if exp.order.mode == "randomized":
        random.Random(exp.order.seed).shuffle(pairs)
    return pairs
