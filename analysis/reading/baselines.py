"""Which baseline each cell is compared with: its own server's (or group's), never another's.

An experiment names one baseline cell, or several (``baseline:`` as a list: one per server,
or per group of rows). With one, every cell is compared with it. With several, the knobs on
which the baselines differ (typically ``server``, with the settings that go with it) say which
group a cell belongs to: a cell is compared with the baseline that shares the most of them —
always one of its own server when the baselines differ by server, the earlier on a tie —
XtraDB's rows with XtraDB's baseline, MySQL's with MySQL's. A cell on a server with no baseline
of its own is compared with the first baseline, and the tables say which baseline each row
has.
"""

from __future__ import annotations

import json

import pandas as pd


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def grouping_knobs(cells_df: pd.DataFrame) -> list[str]:
    """The knobs on which the baseline cells differ (empty with one baseline)."""
    bases = cells_df[cells_df["is_baseline"].astype(bool)]
    if len(bases) < 2:
        return []
    knobs: dict[str, None] = {}
    for k in bases["knobs"]:
        knobs.update(dict.fromkeys((k or {}).keys()))
    return [k for k in knobs
            if len({_key((row or {}).get(k)) for row in bases["knobs"]}) > 1]


def baseline_of(cells_df: pd.DataFrame) -> dict[int, int]:
    """Cell id → the id of the baseline cell it is compared with (a baseline → itself).

    Parameters
    ----------
    cells_df:
        The cell summary (``cell_id``, ``is_baseline``, ``knobs``, in the experiment's order).
    """
    if cells_df.empty:
        return {}
    bases = cells_df[cells_df["is_baseline"].astype(bool)]
    if bases.empty:  # an experiment without a marked baseline: its first cell
        bases = cells_df.iloc[:1]
    keys = grouping_knobs(cells_df)
    first = int(bases["cell_id"].iloc[0])
    out: dict[int, int] = {}
    for _, cell in cells_df.iterrows():
        cell_id = int(cell["cell_id"])
        if bool(cell["is_baseline"]):
            out[cell_id] = cell_id
            continue
        out[cell_id] = _closest(cell["knobs"] or {}, bases, keys) or first
    return out


def _closest(knobs: dict, bases: pd.DataFrame, keys: list[str]) -> int | None:
    """The baseline sharing the most of ``keys`` with ``knobs`` (the earlier on a tie); one of
    another server never counts when the baselines differ by server."""
    best, best_score = None, 0
    for _, base in bases.iterrows():
        theirs = base["knobs"] or {}
        if "server" in keys and _key(theirs.get("server")) != _key(knobs.get("server")):
            continue
        score = sum(_key(theirs.get(k)) == _key(knobs.get(k)) for k in keys)
        if best is None or score > best_score:
            best, best_score = int(base["cell_id"]), score
    return best


def baseline_note(cells_df: pd.DataFrame) -> str | None:
    """One sentence naming each baseline and whose it is, when there are several (None with
    one): ``Each row is compared with its own server's baseline (mysql-5.5: …; xtradb-5.5:
    …).``"""
    keys = grouping_knobs(cells_df)
    if not keys:
        return None
    bases = cells_df[cells_df["is_baseline"].astype(bool)]
    if "server" in keys:
        parts = [f"{(b['knobs'] or {}).get('server')}: {b['cell_label']}"
                 for _, b in bases.iterrows()]
        return ("Each row is compared with its own server's baseline (" + "; ".join(parts)
                + ").")
    parts = [str(b["cell_label"]) for _, b in bases.iterrows()]
    return (f"Each row is compared with the baseline that shares most of its {', '.join(keys)}"
            " (" + "; ".join(parts) + ").")
