"""Disturbed runs: which runs the rest of the machine disturbed, with what, and whether they
count.

The runner judges every run after it measured (``runner/run/disturbance.py``) and stores each
disturbance as a named warning with its figures as JSON evidence (kinds:
:data:`store.models.DISTURBANCE_KINDS`). The experiment's ``disturbed:`` policy says what the
analysis does with such a run: ``keep`` counts it (the warning travels with it), ``exclude``
and ``rerun`` keep it stored and shown but out of every verdict, mean and interval, with the
reason printed (``rerun`` also queued a replacement attempt, which supersedes it).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from analysis.reading.query import DB, ExperimentRef, disturbance_events, runs, session_scope
from store.models import RunStatus

#: Policies that leave a disturbed run out of verdicts.
EXCLUDING_ACTIONS = ("exclude", "rerun")


def excluded(runs_df: pd.DataFrame) -> pd.Series:
    """Per run: True when it is disturbed and its experiment's policy excludes such runs."""
    if "disturbances" not in runs_df or "disturbed_action" not in runs_df:
        return pd.Series(False, index=runs_df.index)
    return (runs_df["disturbances"].fillna("") != "") & runs_df["disturbed_action"].isin(
        EXCLUDING_ACTIONS)


def exclusion_reason(row: pd.Series) -> str:
    """``excluded: disturbed (disturbed-cpu) — policy exclude``, for a run that is; else ""."""
    if not row.get("excluded"):
        return ""
    return f"excluded: disturbed ({row['disturbances']}) — policy {row['disturbed_action']}"


def counted(run_summary_df: pd.DataFrame) -> pd.Series:
    """The runs that count in verdicts: done, with a window value, not excluded."""
    ok = (run_summary_df["status"] == RunStatus.DONE) & run_summary_df["notpm"].notna()
    if "excluded" in run_summary_df:
        ok &= ~run_summary_df["excluded"].fillna(False).astype(bool)
    return ok


def disturbed_runs(db: DB, experiment: ExperimentRef = None) -> pd.DataFrame:
    """Every disturbed run of an experiment (every attempt), with its warnings and figures.

    Returns
    -------
    DataFrame
        One row per disturbance warning: ``run_id, cell_id, cell_label, knobs, repetition,
        attempt, status, superseded, excluded, action, kind, message, figures`` (``figures``:
        the stored evidence as a dict; empty for host pauses and missed ticks, whose figure is
        in the message).
    """
    rdf = runs(db, experiment, all_attempts=True)
    rdf = rdf[rdf["disturbances"] != ""]
    columns = ["run_id", "cell_id", "cell_label", "knobs", "repetition", "attempt", "status",
               "superseded",
               "excluded", "action", "kind", "message", "figures"]
    if rdf.empty:
        return pd.DataFrame(columns=columns)
    with session_scope(db) as s:
        events = disturbance_events(s, [int(r) for r in rdf["run_id"]])
    info = rdf.assign(excluded=excluded(rdf)).set_index("run_id")
    rows: list[dict[str, Any]] = []
    for run_id, kind, message, evidence in events:
        r = info.loc[int(run_id)]
        rows.append({"run_id": int(run_id), "cell_id": int(r["cell_id"]),
                     "cell_label": r["cell_label"], "knobs": r["knobs"],
                     "repetition": int(r["repetition"]), "attempt": int(r["attempt"]),
                     "status": str(r["status"]), "superseded": bool(r["superseded"]),
                     "excluded": bool(r["excluded"]), "action": r["disturbed_action"],
                     "kind": str(kind), "message": str(message),
                     "figures": _figures(evidence)})
    return pd.DataFrame(rows, columns=columns).sort_values(["run_id", "kind"],
                                                           kind="stable").reset_index(drop=True)


def _figures(evidence: str | None) -> dict[str, Any]:
    if not evidence:
        return {}
    try:
        value = json.loads(evidence)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
