"""Claims under contention, and what a run writes to PostgreSQL.

1. **Claims**: ``--workers`` processes (default 4) drain one queue of ``--runs`` runs (default
   400) with the real claim (:func:`store.ledger.claim_next`: the atomic UPDATE … SKIP LOCKED)
   followed by the real owner-conditional :func:`store.ledger.finish` — each claim a run
   start, each finish a run end, nothing in between. Per backend (a throwaway PostgreSQL
   cluster, a SQLite file on the local disk): claims per second over the whole drain (first
   claim to last finish, all workers) and the latency of one ``claim_next`` call (p50, p95,
   max, over every claim of every worker).
2. **Bytes per run** (``--run``): a real short tpcc run (1 warehouse, MariaDB sandbox, the Go
   driver, 2 s intervals and samples for ``--seconds``) into the throwaway PostgreSQL; per
   table, the rows it wrote and ``pg_total_relation_size`` (heap + TOAST + indexes) after
   minus before. Bytes per row × the rows of a 30-minute run at the default 10 s intervals
   and samples (181 + 181 rows after a 10 s warmup) + the once-per-run rows (variables,
   metadata, events) = the bytes a 30-minute run writes. Page fill makes per-row figures of
   tiny tables coarse (one 8 KiB page holds many intervals), so each table's
   ``sum(pg_column_size(row))`` is printed too; ``projected_30min_bytes_filled`` copies the
   run's interval and sample rows until each table holds a 30-minute run's 181 and takes
   relation growth per row then (pages as full as a long run leaves them); and the stored
   latency histograms per interval (``intervals.latency_z``: mean and largest
   ``pg_column_size``, and New-Orders per interval beside them). ``--interval 10`` reports
   and samples every 10 s, as a 30-minute run does: an interval's histograms grow with the
   transactions in it.

Usage: ``.venv/bin/python bench/claims_bench.py [--workers 4] [--runs 400] [--run]
[--seconds 60] [--interval 2] [--no-claims] [--work DIR]``. Needs Debian's postgresql (``make
setup``); ``--run`` also the MariaDB server and ``tpcc/bin/tpcc``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa  # noqa: E402

from runner.host.identity import local_identity  # noqa: E402
from store import ledger  # noqa: E402
from store.db import ResultsDB  # noqa: E402
from tests.support.pgcluster import PgCluster  # noqa: E402
from tests.support.queueing import enqueue_plain  # noqa: E402

#: A 30-minute run at the defaults: 10 s warmup + 1800 s, one interval and one sample per 10 s.
ROWS_30_MIN = 181


def _drain(url: str, index: int, start: mp.Event, out: mp.Queue) -> None:
    """One worker: claim and finish until the queue is empty; report latencies."""
    db = ResultsDB(url, create=False)
    me = local_identity(f"bench-{index}", "farm")
    latencies, first, last = [], None, None
    start.wait()
    while True:
        t0 = time.perf_counter()
        run_id = ledger.claim_next(db, identity=me)
        latencies.append(time.perf_counter() - t0)
        if run_id is None:
            latencies.pop()  # the empty-queue call is not a claim
            break
        first = first if first is not None else t0
        ledger.finish(db, run_id, "done", owner=me.owner)
        last = time.perf_counter()
    db.dispose()
    out.put({"latencies": latencies, "first": first, "last": last})


def bench_claims(url: str, workers: int, runs: int) -> dict[str, float]:
    """Drain ``runs`` runs with ``workers`` processes; return claims/s and latency figures."""
    db = ResultsDB(url)
    enqueue_plain(db, "claims-bench", runs, placement="spread", cells=4)
    db.dispose()
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_drain, args=(url, i, start, out)) for i in range(workers)]
    for p in procs:
        p.start()
    time.sleep(3.0)  # every process imported and connected before the gun
    start.set()
    results = [out.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join()
    lat = sorted(x for r in results for x in r["latencies"])
    firsts = [r["first"] for r in results if r["first"] is not None]
    lasts = [r["last"] for r in results if r["last"] is not None]
    wall = max(lasts) - min(firsts)
    db = ResultsDB(url)
    with db.session() as s:
        done = s.scalar(sa.select(sa.func.count()).select_from(sa.text("runs"))
                        .where(sa.text("status = 'done'")))
    db.dispose()
    return {
        "claims": len(lat), "done_rows": done, "wall_s": wall, "claims_per_s": len(lat) / wall,
        "p50_ms": 1000 * statistics.median(lat),
        "p95_ms": 1000 * lat[int(0.95 * (len(lat) - 1))], "max_ms": 1000 * lat[-1],
        "per_worker": [len(r["latencies"]) for r in results],
    }


def _sizes(engine: sa.Engine) -> dict[str, tuple[int, int, int]]:
    """Per table: rows, pg_total_relation_size, sum(pg_column_size(row))."""
    out = {}
    with engine.connect() as conn:
        for table in ("runs", "run_metadata", "run_variables", "run_events", "intervals",
                      "samples", "workers"):
            rows, total, cols = conn.execute(sa.text(
                f"SELECT count(*), pg_total_relation_size('{table}'),"
                f" coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t")).one()
            out[table] = (int(rows), int(total), int(cols))
    return out


def _filled(engine: sa.Engine, before: dict[str, tuple[int, int, int]]) -> dict[str, float]:
    """Bytes per row of ``intervals`` and ``samples`` once each holds a 30-minute run's rows:
    the real run's rows copied (new ``seq``) until there are at least :data:`ROWS_30_MIN`,
    then relation growth since ``before`` over the rows — pages as full as a long run's."""
    out = {}
    with engine.begin() as conn:
        for table in ("intervals", "samples"):
            columns = [c for (c,) in conn.execute(sa.text(
                "SELECT column_name FROM information_schema.columns WHERE table_name = :t"
                " ORDER BY ordinal_position"), {"t": table})]
            names = ", ".join(columns)
            picked = ", ".join("seq + {k}" if c == "seq" else c for c in columns)
            k = 0
            while conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one() \
                    < ROWS_30_MIN:
                k += 100_000
                conn.execute(sa.text(f"INSERT INTO {table} ({names}) SELECT"
                                     f" {picked.format(k=k)} FROM {table} WHERE seq < 100000"))
    after = _sizes(engine)
    for table in ("intervals", "samples"):
        out[table] = (after[table][1] - before[table][1]) / (after[table][0] - before[table][0])
    return out


def _latency_bytes(engine: sa.Engine) -> dict[str, float]:
    """The stored histograms per interval: mean and largest size, and the New-Orders beside."""
    with engine.connect() as conn:
        n, mean, top, per = conn.execute(sa.text(
            "SELECT count(latency_z), avg(pg_column_size(latency_z)),"
            " max(pg_column_size(latency_z)), avg(primary_count) FROM intervals"
            " WHERE latency_z IS NOT NULL")).one()
    return {"intervals_with_histograms": int(n), "mean_bytes": float(mean or 0),
            "max_bytes": float(top or 0), "new_orders_per_interval": float(per or 0)}


def bench_run_bytes(cluster: PgCluster, seconds: int, work: Path,
                    interval: int = 2) -> dict[str, object]:
    """A real short run into PostgreSQL; bytes per table and the 30-minute extrapolation."""
    from runner.fleet.worker import run_experiment

    url = cluster.create_database("bytes")
    db = ResultsDB(url)
    engine = sa.create_engine(url)
    before = _sizes(engine)
    spec = Path(tempfile.mkdtemp()) / "bytes.yaml"
    spec.write_text(textwrap.dedent(f"""\
        version: 1
        name: bytes
        server: mariadb-debian
        base_config: small
        dataset: {{workload: tpcc, warehouses: 1}}
        workload: {{driver: tpcc, connections: 2, warmup: 2s, duration: {seconds}s,
                   report_interval: {interval}s}}
        sampling: {{interval: {interval}s}}
        pre_run: {{drain_dirty_pages: false}}
        matrix: {{doublewrite: [on]}}
        """))
    outcome = run_experiment(spec, db, work=work)
    after = _sizes(engine)
    histograms = _latency_bytes(engine)
    filled = _filled(engine, before)
    engine.dispose()
    db.dispose()
    tables = {t: {"rows": after[t][0] - before[t][0],
                  "total_bytes": after[t][1] - before[t][1],
                  "column_bytes": after[t][2] - before[t][2]} for t in after}
    per_row = {t: tables[t]["total_bytes"] / tables[t]["rows"] for t in ("intervals", "samples")
               if tables[t]["rows"]}
    once = sum(tables[t]["total_bytes"] for t in ("runs", "run_metadata", "run_variables",
                                                  "run_events"))
    projected = once + ROWS_30_MIN * sum(per_row.values())
    return {"done": outcome.done, "tables": tables, "bytes_per_row": per_row,
            "latency_histograms": histograms, "once_per_run_bytes": once,
            "projected_30min_bytes": projected, "bytes_per_row_filled": filled,
            "projected_30min_bytes_filled": once + ROWS_30_MIN * sum(filled.values())}


def main() -> None:
    """Run the benchmarks and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--run", action="store_true", help="also measure a real run's bytes")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--interval", type=int, default=2,
                        help="report and sample interval of the real run (s)")
    parser.add_argument("--no-claims", action="store_true",
                        help="skip the claims under contention (measure only --run)")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    cluster = PgCluster().init().start()
    try:
        results: dict[str, object] = {}
        if not args.no_claims:
            results["postgresql"] = bench_claims(cluster.create_database("claims"),
                                                 args.workers, args.runs)
            print(json.dumps({"postgresql": results["postgresql"]}), flush=True)
            sqlite_path = Path(tempfile.mkdtemp()) / "claims.sqlite"
            results["sqlite"] = bench_claims(f"sqlite:///{sqlite_path}", args.workers,
                                             args.runs)
            print(json.dumps({"sqlite": results["sqlite"]}), flush=True)
        if args.run:
            work = args.work or Path(tempfile.mkdtemp()) / "work"
            results["run_bytes"] = bench_run_bytes(cluster, args.seconds, work, args.interval)
            print(json.dumps({"run_bytes": results["run_bytes"]}, indent=1), flush=True)
    finally:
        cluster.destroy()


if __name__ == "__main__":
    main()
