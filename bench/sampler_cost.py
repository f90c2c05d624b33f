"""What the sampler costs per sample, and what it stores.

Against a MariaDB sandbox (a throwaway one started here unless ``--socket`` names a running
server):

1. idle, direct: ``N`` samples taken back to back in this thread — client CPU (thread time)
   and wall time per sample, and mysqld CPU per sample (its /proc CPU delta over the loop);
2. under load (sysbench oltp_read_write, 2 threads, when sysbench is installed): the
   ``Sampler`` thread on 0.1 s ticks for ``N`` ticks — ``collect_s`` percentiles, missed ticks;
3. stored bytes per sample (compressed status + engine LOG section) and per 30-minute run at
   the default 10 s interval.

Usage: ``.venv/bin/python bench/sampler_cost.py [--samples 200] [--socket S --pid P --datadir D]``
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymysql  # noqa: E402

from runner import proc  # noqa: E402
from runner.run.sampler import (  # noqa: E402
    Sampler,
    SampleRecord,
    block_device_of,
    describe_device,
    proc_cpu,
)

MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "/usr/bin/mariadb-install-db"


@contextlib.contextmanager
def throwaway_server() -> Iterator[tuple[Path, int, Path]]:
    """A MariaDB on a unix socket in a temp dir: yields (socket, pid, datadir)."""
    with tempfile.TemporaryDirectory(prefix="fb-sampler-") as tmp:
        base = Path(tmp)
        datadir, sock = base / "data", base / "s.sock"
        done = proc.run_checked(
            [INSTALL_DB, "--no-defaults", f"--datadir={datadir}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            sys.exit(f"mariadb-install-db failed: {done.stderr[-1000:]}")
        argv = [
            MARIADBD, "--no-defaults", "--user=root", f"--datadir={datadir}",
            f"--socket={sock}", "--skip-networking", f"--log-error={base / 'err.log'}",
            "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=64M",
        ]  # fmt: skip
        with proc.child(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as p:
            for _ in range(600):
                if sock.exists():
                    try:
                        pymysql.connect(unix_socket=str(sock), user="root").close()
                        break
                    except pymysql.MySQLError:
                        pass
                time.sleep(0.1)
            else:
                sys.exit("mariadbd did not become ready")
            yield sock, p.pid, datadir


@contextlib.contextmanager
def sysbench_load(sock: Path, seconds: int) -> Iterator[bool]:
    """oltp_read_write with 2 threads in the background (False when sysbench is missing)."""
    sysbench = shutil.which("sysbench")
    if sysbench is None:
        yield False
        return
    link = pymysql.connect(unix_socket=str(sock), user="root", autocommit=True)
    with link.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS fb_sampler_cost")
        cur.execute("CREATE DATABASE fb_sampler_cost")
    link.close()
    common = [sysbench, "oltp_read_write", f"--mysql-socket={sock}", "--mysql-user=root",
              "--mysql-db=fb_sampler_cost", "--tables=2", "--table-size=20000"]  # fmt: skip
    proc.run_checked([*common, "prepare"], timeout=300)
    argv = [*common, "--threads=2", f"--time={seconds}", "run"]
    with proc.child(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        time.sleep(2)  # let it get going
        yield True


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def direct(sock: Path, pid: int, datadir: Path, n: int) -> list[SampleRecord]:
    sampler = Sampler(
        connect=lambda: pymysql.connect(unix_socket=str(sock), user="root", autocommit=True),
        mysqld_pid=pid,
        datadir=datadir,
        interval=1.0,
        on_sample=lambda r: None,
    )
    sampler.t0 = dt.datetime.now(dt.UTC)
    sampler.collect(0)  # connect and warm up outside the measurement
    cpu0, wall0, server0 = time.thread_time(), time.perf_counter(), sum(proc_cpu(pid))
    records = [sampler.collect(k) for k in range(1, n + 1)]
    cpu, wall, server = (
        time.thread_time() - cpu0,
        time.perf_counter() - wall0,
        sum(proc_cpu(pid)) - server0,
    )
    sampler._close()
    print(f"idle, {n} samples back to back in one thread:")
    print(f"  client CPU per sample   {1000 * cpu / n:7.2f} ms")
    print(f"  wall time per sample    {1000 * wall / n:7.2f} ms")
    print(f"  mysqld CPU per sample   {1000 * server / n:7.2f} ms (whole server, idle otherwise)")
    return records


def ticking(sock: Path, pid: int, datadir: Path, n: int, interval: float) -> list[SampleRecord]:
    records: list[SampleRecord] = []
    sampler = Sampler(
        connect=lambda: pymysql.connect(unix_socket=str(sock), user="root", autocommit=True),
        mysqld_pid=pid,
        datadir=datadir,
        interval=interval,
        on_sample=records.append,
    )
    with sysbench_load(sock, seconds=int(n * interval) + 30) as loaded:
        cpu0 = time.process_time()
        sampler.start()
        while len(records) < n:
            time.sleep(interval)
        sampler.stop()
        cpu = time.process_time() - cpu0
    taken = [r for r in records if not r.missed]
    collect = [r.collect_s for r in taken if r.collect_s is not None]
    lateness = [(r.ts - r.scheduled_ts).total_seconds() for r in taken if r.ts is not None]
    where = "under sysbench oltp_read_write (2 threads)" if loaded else "idle (no sysbench)"
    print(f"\nSampler thread, {len(records)} ticks every {interval:g} s, {where}:")
    print(
        f"  collect_s  median {1000 * statistics.median(collect):6.2f} ms   p95"
        f" {1000 * pct(collect, 0.95):6.2f} ms   max {1000 * max(collect):6.2f} ms"
    )
    print(
        f"  start lateness vs schedule  median {1000 * statistics.median(lateness):5.2f} ms"
        f"   p95 {1000 * pct(lateness, 0.95):5.2f} ms"
    )
    print(f"  missed ticks {len(records) - len(taken)}")
    print(f"  process CPU per tick (sampler thread + idle main) {1000 * cpu / len(records):.2f} ms")
    return taken


def storage(records: list[SampleRecord]) -> None:
    status = [len(r.status_z or b"") for r in records]
    engine = [len(r.engine_log_z or b"") for r in records]
    per_sample = statistics.mean(status) + statistics.mean(engine)
    fixed = 23 * 8  # the scalar columns, roughly, before the database's own overhead
    per_run = (per_sample + fixed) * (30 * 60 / 10)
    print(f"\nStored bytes per sample ({len(records)} samples):")
    print(f"  status_z      mean {statistics.mean(status):7.0f} B (max {max(status)})")
    print(f"  engine_log_z  mean {statistics.mean(engine):7.0f} B (max {max(engine)})")
    print(f"  + ~{fixed} B of scalar columns")
    print(f"  => per 30-minute run at 10 s (180 samples): {per_run / 1024:.0f} KiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--socket", type=Path)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--datadir", type=Path)
    args = ap.parse_args()
    if args.socket:
        if not (args.pid and args.datadir):
            sys.exit("--socket needs --pid and --datadir too")
        server = contextlib.nullcontext((args.socket, args.pid, args.datadir))
    else:
        server = throwaway_server()
    with server as (sock, pid, datadir):
        print(f"mysqld pid {pid}, datadir device {describe_device(block_device_of(datadir))}\n")
        direct(sock, pid, datadir, args.samples)
        loaded = ticking(sock, pid, datadir, args.samples, args.interval)
        storage(loaded)


if __name__ == "__main__":
    main()
