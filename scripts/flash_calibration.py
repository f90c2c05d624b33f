"""Is the baseline flushing-bound — or does it have headroom? A storage calibration's
criterion, per run.

    .venv/bin/python scripts/flash_calibration.py [--headroom] [--markdown] DB [EXPERIMENT]

``DB`` is a results database (path or URL), ``EXPERIMENT`` defaults to
``flash-2011-calibration`` (experiments/flash-2011-calibration.yaml; any experiment run under
a storage limit works, e.g. ``stability-2011-flash``). For each done run (the latest attempt
of each repetition) over its measurement window, from the throttle group's own counters read
by the sampler every 10 s (``samples.group_*``) and the CPU counters of mysqld and the driver:

- per storage limit set: the share of the window's sampler intervals in which the group was
  at the limit (within 10 %, ``runner.run.disturbance.AT_LIMIT``) and its mean rate as a share
  of the limit;
- the CPU cores mysqld and the driver used (CPU-seconds per second of the window).

The criterion (issue 24, docs/storage.md "flash-2011"): write bandwidth at its limit in
>= 90 % of the intervals, mysqld + driver < 1.8 cores, and every other limit (operations,
reads) at its limit in < 90 % of them — bytes, not CPU or operations, bind.

``--headroom`` judges the opposite (issue 36: do the 2011 post's effect sizes come back when
the card is not always at its limit?): the write bandwidth's mean at most 60 % of its limit
and at the limit in at most 10 % of the intervals, no other limit at its limit in more than
10 % of them, and mysqld + driver < 1.8 cores — neither the card nor the CPU binds
(``experiments/headroom-2011-calibration.yaml``).

``--markdown`` prints the runs as one markdown table instead (the write-ups quote it).

Exit status 0 when every run meets the criterion, 1 otherwise.

A ballpark measured under load (not publishable) is in docs/storage.md ("flash-2011").
"""

from __future__ import annotations

import math
import sys
from typing import Any

from analysis.reading.query import run_samples, session_scope
from analysis.tables import frames
from runner.run.disturbance import limit_figures

#: Run metadata key → the limit name runner.run.disturbance judges.
LIMITS = {"storage_write_bandwidth": "write_bandwidth", "storage_write_iops": "write_iops",
          "storage_read_bandwidth": "read_bandwidth", "storage_read_iops": "read_iops"}
AT_LIMIT_SHARE = 0.90  # of the window's intervals, for the limit that must bind
MAX_CORES = 1.8  # mysqld + driver, of the machine's 2
HEADROOM_MEAN_SHARE = 0.60  # --headroom: the write bandwidth's mean, of its limit, at most
HEADROOM_AT_LIMIT_SHARE = 0.10  # --headroom: intervals at any limit, of the window's, at most


def _cores(samples: list[Any], prefix: str) -> float | None:
    """CPU-seconds per second of ``prefix`` (mysqld, driver) between first and last sample."""
    known = [s for s in samples if getattr(s, f"{prefix}_cpu_user_s") is not None]
    if len(known) < 2:
        return None
    first, last = known[0], known[-1]
    seconds = (last.ts - first.ts).total_seconds()
    used = sum(getattr(last, f"{prefix}_cpu_{k}_s") - getattr(first, f"{prefix}_cpu_{k}_s")
               for k in ("user", "sys"))
    return used / seconds if seconds > 0 else None


def judge_runs(db: str, experiment: str, *, headroom: bool = False) -> list[dict[str, Any]]:
    """One row per done run: its limits' figures, CPU cores and the criterion's verdict
    (``headroom``: the headroom criterion instead of the flushing-bound one)."""
    fr = frames.load(db, experiment)
    rs = fr.run_summary
    rs = rs[(rs["status"] == "done") & ~rs["superseded"].astype(bool)].sort_values("run_id")
    window = frames.samples(db, experiment)
    window = window[window["in_window"]]
    rows = []
    with session_scope(db) as s:
        for run in rs.itertuples():
            seqs = set(window.loc[window["run_id"] == run.run_id, "seq"])
            taken = [x for x in run_samples(s, int(run.run_id)) if x.seq in seqs]
            extra = run.extra if isinstance(run.extra, dict) else {}
            limits = {name: extra.get(key) for key, name in LIMITS.items()}
            figures = limit_figures(taken, limits)
            mysqld, driver = _cores(taken, "mysqld"), _cores(taken, "driver")
            bw = figures.get("write_bandwidth")
            at = bw["intervals_at_limit"] / bw["intervals"] if bw else None
            others = [f["intervals_at_limit"] / f["intervals"]
                      for n, f in figures.items() if n != "write_bandwidth"]
            cores = (mysqld or 0.0) + (driver or 0.0)
            cpu_free = mysqld is not None and cores < MAX_CORES
            if headroom:
                ok = (bw is not None and bw["share"] <= HEADROOM_MEAN_SHARE and cpu_free
                      and at <= HEADROOM_AT_LIMIT_SHARE
                      and all(o <= HEADROOM_AT_LIMIT_SHARE for o in others))
            else:
                ok = (at is not None and at >= AT_LIMIT_SHARE and cpu_free
                      and all(o < AT_LIMIT_SHARE for o in others))
            rows.append({"run": int(run.run_id), "cell": run.cell_label, "notpm": run.notpm,
                         "connections": getattr(run, "connections", None),
                         "figures": figures, "mysqld": mysqld, "driver": driver,
                         "at_limit": at, "ok": ok})
    return rows


def _print(rows: list[dict[str, Any]], *, headroom: bool = False) -> None:
    for r in rows:
        notpm = f"{r['notpm']:,.0f}" if r["notpm"] == r["notpm"] else "—"
        print(f"run {r['run']}: {r['cell']}  NOTPM {notpm}")
        for name, f in r["figures"].items():
            unit = f"{f['mean'] / 2**20:.2f} of {f['limit'] / 2**20:.1f} MiB/s" \
                if "bandwidth" in name else f"{f['mean']:,.0f} of {f['limit']:,.0f} IOPS"
            share = f["intervals_at_limit"] / f["intervals"]
            print(f"    {name:<16} at the limit in {f['intervals_at_limit']:.0f} of"
                  f" {f['intervals']:.0f} intervals ({share:.0%}); mean {unit} ({f['share']:.0%})")
        if not r["figures"]:
            print("    no throttle-group counters in its samples (no limit, or recorded before"
                  " the sampler read them)")
        cpu = " + ".join(f"{who} {c:.2f}" for who, c in (("mysqld", r["mysqld"]),
                                                         ("driver", r["driver"]))
                         if c is not None)
        print(f"    CPU cores: {cpu or 'not sampled'}  →  "
              + (("headroom" if headroom else "flushing-bound") + ": meets the criterion"
                 if r["ok"] else "does NOT meet it"))


def markdown(rows: list[dict[str, Any]], *, headroom: bool = False) -> str:
    """The runs as one markdown table (the write-ups quote it): write limit, connections,
    NOTPM, the write bandwidth's mean share and intervals at the limit, the cores used and
    the criterion's verdict, ordered by limit then connections."""
    def limit(r: dict[str, Any]) -> float:
        bw = r["figures"].get("write_bandwidth")
        return bw["limit"] if bw else math.inf

    out = ["| write limit | connections | NOTPM | write bandwidth: mean of the limit | "
           "intervals at the limit | mysqld + client cores | "
           + ("headroom" if headroom else "flushing-bound") + " |",
           "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (limit(r), r["connections"] or 0)):
        bw = r["figures"].get("write_bandwidth")
        cores = (r["mysqld"] or 0.0) + (r["driver"] or 0.0)
        notpm = f"{r['notpm']:,.0f}" if r["notpm"] == r["notpm"] else "–"
        out.append(
            f"| {bw['limit'] / 2**20:.0f} MiB/s | {r['connections'] or '–'} | {notpm} | "
            f"{bw['mean'] / 2**20:.1f} MiB/s ({bw['share']:.0%}) | "
            f"{bw['intervals_at_limit']:.0f} of {bw['intervals']:.0f} | "
            f"{r['mysqld']:.2f} + {r['driver']:.2f} = {cores:.2f} | "
            f"{'meets' if r['ok'] else 'no'} |"
            if bw and r["mysqld"] is not None and r["driver"] is not None else
            f"| – | {r['connections'] or '–'} | {notpm} | – | – | – | no |")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    """Print the criterion per run; 0 when every run meets it, 1 otherwise, 2 on usage."""
    headroom = "--headroom" in argv
    as_markdown = "--markdown" in argv
    argv = [a for a in argv if a not in ("--headroom", "--markdown")]
    if not 1 <= len(argv) <= 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    rows = judge_runs(argv[0], argv[1] if len(argv) == 2 else "flash-2011-calibration",
                      headroom=headroom)
    if not rows:
        print("no done run to judge", file=sys.stderr)
        return 1
    if as_markdown:
        print(markdown(rows, headroom=headroom))
    else:
        _print(rows, headroom=headroom)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
