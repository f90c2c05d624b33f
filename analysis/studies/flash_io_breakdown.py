"""What the emulated disk's write operations went to, per cell of the 2011 study.

Medians over each cell's runs of the per-run means over the measurement window, from the
sampler's SHOW GLOBAL STATUS counters and the throttle group's own counters (run events).

    uv run python -m analysis.studies.flash_io_breakdown docs/study-2011/stability-2011.sqlite
    uv run python -m analysis.studies.flash_io_breakdown docs/study-2011/stability-2011.sqlite 10

The optional second argument keeps only the runs from that position in the run order on (the
study's first 9 runs overlapped with development work on the same machine:
docs/study-2011/README.md).
"""

from __future__ import annotations

import json
import sys

import pandas as pd

from analysis.reading.query import session_scope, storage_evidence
from analysis.reading.series import RATE_COUNTERS, samples
from analysis.tables import frames
from core.errors import FlushbenchError

#: Counters whose per-second rate the sampler frame does not derive itself.
EXTRA = ("Innodb_log_writes", "Innodb_dblwr_writes", "Innodb_data_writes")

#: Column headings of the printed table.
HEADINGS = {
    "pages_flushed_per_s": "pages flushed/s", "dblwr_writes_per_s": "dblwr writes/s",
    "dblwr_pages_per_s": "dblwr pages/s", "log_writes_per_s": "redo writes/s",
    "data_writes_per_s": "data writes/s", "fsyncs_per_s": "fsyncs/s",
    "log_mb_per_s": "redo MiB/s", "checkpoint_age_pct": "ckpt age % of max",
    "dirty_pct": "dirty %", "mysqld_cpu_pct": "mysqld CPU %",
}


def throttle_proof(db: str, run_ids: list[int]) -> pd.DataFrame:
    """Write/read IOPS the throttle group measured over each run (the storage proof event)."""
    rows = []
    with session_scope(db) as s:
        for run_id, evidence in storage_evidence(s, run_ids):
            ev = json.loads(evidence) if isinstance(evidence, str) else (evidence or {})
            rows.append({"run_id": run_id, "group write IOPS": ev.get("io_write_iops"),
                         "group KiB/write": (ev.get("io_write_bytes") or 0)
                         / max(1, ev.get("io_write_ios") or 0) / 1024})
    return pd.DataFrame(rows).set_index("run_id")


def main(db: str, from_position: int = 1) -> None:
    fr = frames.load(db, "stability-2011")
    s = samples(db, "stability-2011", counters=[*RATE_COUNTERS, *EXTRA])
    s = s.sort_values(["run_id", "seq"])
    for name in EXTRA:
        rate = s.groupby("run_id")[name].diff() / s["dt_s"]
        s[f"{name.removeprefix('Innodb_')}_per_s"] = rate
    w = s[s["in_window"]]
    cols = ["pages_flushed_per_s", "dblwr_writes_per_s", "dblwr_pages_per_s", "log_writes_per_s",
            "data_writes_per_s", "fsyncs_per_s", "log_mb_per_s",
            "checkpoint_age_pct", "dirty_pct", "mysqld_cpu_pct"]
    per_run = w.groupby("run_id")[cols].mean()
    per_run = per_run.join(throttle_proof(db, list(per_run.index)))
    rs = fr.run_summary.set_index("run_id")
    # order_index counts from 0 in the queue's run order.
    per_run = per_run[rs.loc[per_run.index, "order_index"] + 1 >= from_position]
    per_run["runs"] = 1
    per_run["cell"] = rs.loc[per_run.index, "cell_label"]
    per_run["NOTPM"] = rs.loc[per_run.index, "notpm"]
    per_run["stability"] = rs.loc[per_run.index, "score"]
    table = per_run.drop(columns="runs").groupby("cell", sort=False).median(numeric_only=True)
    table["runs"] = per_run.groupby("cell", sort=False)["runs"].sum()
    order = list(dict.fromkeys(fr.cell_summary["cell_label"]))
    table = table.reindex([c for c in order if c in table.index]).rename(columns=HEADINGS)
    table.index = [short_label(c) for c in table.index]
    print(markdown(table))


def short_label(label: str) -> str:
    """``doublewrite=on max_dirty_pages_pct=75 io_capacity=200`` → ``on / 75 / 200``."""
    values = dict(part.split("=", 1) for part in label.split())
    return " / ".join(values.get(k, "?") for k in ("doublewrite", "max_dirty_pages_pct",
                                                   "io_capacity"))


def markdown(table: pd.DataFrame) -> str:
    """A GitHub table, one row per cell, numbers rounded for reading."""
    head = ["doublewrite / max_dirty / io_capacity", *table.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, row in table.iterrows():
        values = [f"{v:,.0f}" if abs(v) >= 100 or name == "runs" else f"{v:.1f}"
                  for name, v in row.items()]
        lines.append("| " + " | ".join([str(label), *values]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    if not 1 <= len(args) <= 2 or (len(args) == 2 and not args[1].isdigit()):
        sys.exit("usage: io_breakdown.py RESULTS_DB [FROM_POSITION]")
    try:
        main(args[0], int(args[1]) if len(args) == 2 else 1)
    except FlushbenchError as exc:
        sys.exit(f"error: {exc}")
