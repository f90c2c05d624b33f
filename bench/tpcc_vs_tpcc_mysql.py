"""Side by side: Percona-Lab's ``tpcc_start`` vs ``tpcc run`` (tpcc-mysql mode) on the same data.

Starts a private MariaDB sandbox (settings of the tpcc-mysql reference runs: buffer pool 256M,
redo 128M, ``innodb_flush_log_at_trx_commit=2``, ``O_DIRECT``, TCP on 127.0.0.1), loads W
warehouses once with ``tpcc load``, then alternates A = tpcc_start and B = tpcc run, A B A B,
for ``--pairs`` pairs with the same ``-w -c -r -l -i``. Per run it measures over the whole client
process (ramp-up included):

- TpmC as the tool prints it (both print tpcc_start's ``<TpmC>`` block);
- New-Orders: the growth of ``SUM(d_next_o_id)`` (committed New-Orders);
- round trips per New-Order: ``Questions`` delta / New-Orders (``Com_stmt_execute``,
  ``Com_commit``, ``Com_rollback`` are shown too);
- server CPU per New-Order: mariadbd's utime+stime delta (``/proc``) / New-Orders;
- client CPU per New-Order: the client's user+sys (``wait4`` rusage) / New-Orders.

Prints every pair (values and B/A ratios) and the medians, against the targets: TpmC within
±5 %, round trips within ±2 %, server CPU within ±5 %, client CPU ≤ 0.8×.

Usage: ``.venv/bin/python bench/tpcc_vs_tpcc_mysql.py [--tpcc-start PATH] [--pairs 4]
[-w 10 -c 16 -r 10 -l 60 -i 10] [--workdir DIR]``. ``tpcc_start`` is found on PATH, in
``$TPCC_MYSQL_BIN`` (a directory or the binary) or given with ``--tpcc-start``; build it with
``scripts/build-tpcc-mysql.sh SRC_DIR``. ``--workdir`` keeps the sandbox and its data between
invocations (the load is skipped when the database is there).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pymysql

REPO = Path(__file__).resolve().parents[1]
SERVER_OPTIONS = [
    "--innodb-buffer-pool-size=256M",
    "--innodb-log-file-size=128M",
    "--innodb-flush-log-at-trx-commit=2",
    "--innodb-flush-method=O_DIRECT",
    "--skip-name-resolve",
    "--max-connections=500",
]
STATUS = ("Questions", "Com_stmt_execute", "Com_commit", "Com_rollback")
TARGETS = {"tpmc": (0.95, 1.05), "rt": (0.98, 1.02), "server": (0.95, 1.05), "client": (0, 0.8)}


@dataclass
class Measure:
    """One client run's figures."""

    tool: str
    tpmc: float
    new_orders: int
    status: dict[str, int]
    server_cpu_s: float
    client_cpu_s: float
    errors: int

    @property
    def rt_per_no(self) -> float:
        return self.status["Questions"] / self.new_orders

    @property
    def server_ms_per_no(self) -> float:
        return 1000 * self.server_cpu_s / self.new_orders

    @property
    def client_ms_per_no(self) -> float:
        return 1000 * self.client_cpu_s / self.new_orders


def find_tpcc_start(explicit: str | None) -> Path:
    """``--tpcc-start``, else ``$TPCC_MYSQL_BIN`` (dir or binary), else PATH."""
    candidates = [explicit] if explicit else []
    env = os.environ.get("TPCC_MYSQL_BIN")
    if env:
        candidates += [env, os.path.join(env, "tpcc_start")]
    candidates.append(shutil.which("tpcc_start"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return Path(c)
    sys.exit("tpcc_start not found: build it with scripts/build-tpcc-mysql.sh SRC_DIR and put it"
             " on PATH, set TPCC_MYSQL_BIN or pass --tpcc-start")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime+stime of a process from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """A private mariadbd in ``work`` (datadir kept there)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.datadir = work / "data"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if not self.datadir.is_dir():
            subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}",
                            "--auth-root-authentication-method=normal", "--user=root",
                            "--skip-test-db"], check=True, capture_output=True)
        self.proc = subprocess.Popen(
            ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={self.datadir}",
             f"--socket={self.work / 'mysql.sock'}", "--bind-address=127.0.0.1",
             f"--port={self.port}", "--user=root", f"--log-error={self.work / 'err.log'}",
             *SERVER_OPTIONS], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                self.connect().close()
                return
            except pymysql.MySQLError:
                if self.proc.poll() is not None:
                    sys.exit(f"mariadbd exited: {(self.work / 'err.log').read_text()[-2000:]}")
                time.sleep(0.1)
        sys.exit("mariadbd did not start within 60 s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def connect(self, db: str | None = None) -> pymysql.Connection:
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="",
                               database=db, autocommit=True, connect_timeout=5)


def snapshot(server: Server, db: str) -> tuple[dict[str, int], int, float]:
    """Status counters, SUM(d_next_o_id) and mariadbd CPU seconds, right now."""
    with server.connect(db) as link, link.cursor() as cur:
        marks = ",".join(["%s"] * len(STATUS))
        cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})", STATUS)
        status = {k: int(v) for k, v in cur.fetchall()}
        cur.execute("SELECT SUM(d_next_o_id) FROM district")
        next_ids = int(cur.fetchone()[0])
    assert server.proc is not None
    return status, next_ids, cpu_seconds(server.proc.pid)


def run_client(tool: str, argv: list[str], server: Server, db: str, log: Path) -> Measure:
    """Run one client to completion and measure it."""
    s0, n0, c0 = snapshot(server, db)
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "MYSQL_PWD": ""})
        _, status, usage = os.wait4(proc.pid, 0)
    s1, n1, c1 = snapshot(server, db)
    text = log.read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{tool} failed, see {log}:\n{text[-2000:]}")
    m = re.search(r"<TpmC>\s+([\d.]+) TpmC", text)
    if not m:
        sys.exit(f"no TpmC in {log}")
    errors = sum(int(x) for x in re.findall(r"^\s+\[\d\] sc:\d+\s+lt:\d+\s+rt:\d+\s+fl:(\d+)",
                                            text, re.M)[:5])
    return Measure(tool, float(m.group(1)), n1 - n0, {k: s1[k] - s0[k] for k in STATUS},
                   c1 - c0, usage.ru_utime + usage.ru_stime, errors)


def fmt_ratio(name: str, b: float, a: float) -> str:
    lo, hi = TARGETS[name]
    r = b / a
    return f"{r:5.2f}{'' if lo <= r <= hi else ' MISS'}"


def report(pairs: list[tuple[Measure, Measure]]) -> None:
    """Per pair and median figures and ratios (B = tpcc, A = tpcc_start)."""
    head = (f"{'pair':>4}  {'TpmC A':>9} {'TpmC B':>9} {'B/A':>9}  {'rt/NO A':>7} {'rt/NO B':>7}"
            f" {'B/A':>9}  {'srv ms A':>8} {'srv ms B':>8} {'B/A':>9}  {'cli ms A':>8}"
            f" {'cli ms B':>8} {'B/A':>9}")
    print(head)
    rows = []
    for i, (a, b) in enumerate(pairs, 1):
        rows.append((a.tpmc, b.tpmc, a.rt_per_no, b.rt_per_no, a.server_ms_per_no,
                     b.server_ms_per_no, a.client_ms_per_no, b.client_ms_per_no))
        print(f"{i:>4}  {a.tpmc:9.0f} {b.tpmc:9.0f} {fmt_ratio('tpmc', b.tpmc, a.tpmc):>9}"
              f"  {a.rt_per_no:7.1f} {b.rt_per_no:7.1f}"
              f" {fmt_ratio('rt', b.rt_per_no, a.rt_per_no):>9}"
              f"  {a.server_ms_per_no:8.2f} {b.server_ms_per_no:8.2f}"
              f" {fmt_ratio('server', b.server_ms_per_no, a.server_ms_per_no):>9}"
              f"  {a.client_ms_per_no:8.2f} {b.client_ms_per_no:8.2f}"
              f" {fmt_ratio('client', b.client_ms_per_no, a.client_ms_per_no):>9}")
    med = [statistics.median(col) for col in zip(*rows, strict=True)]
    ratios = [statistics.median(r[k + 1] / r[k] for r in rows) for k in (0, 2, 4, 6)]
    print(f"{'med':>4}  {med[0]:9.0f} {med[1]:9.0f} {ratios[0]:9.2f}  {med[2]:7.1f} {med[3]:7.1f}"
          f" {ratios[1]:9.2f}  {med[4]:8.2f} {med[5]:8.2f} {ratios[2]:9.2f}  {med[6]:8.2f}"
          f" {med[7]:8.2f} {ratios[3]:9.2f}")
    print("\nmedian B/A ratio vs target:")
    for (name, (lo, hi)), r in zip(TARGETS.items(), ratios, strict=True):
        verdict = "met" if lo <= r <= hi else "MISSED"
        print(f"  {name:<7} {r:5.3f}  target [{lo}, {hi}]  {verdict}")
    print("\nper run (Com_* deltas per New-Order):")
    for i, pair in enumerate(pairs, 1):
        for m in pair:
            per = ", ".join(f"{k} {v / m.new_orders:.1f}" for k, v in m.status.items())
            print(f"  pair {i} {m.tool:<10} NO {m.new_orders:6d}  {per}  errors {m.errors}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpcc-start")
    ap.add_argument("--tpcc", default=str(REPO / "tpcc" / "bin" / "tpcc"))
    ap.add_argument("--pairs", type=int, default=4)
    for flag, default in (("w", 10), ("c", 16), ("r", 10), ("l", 60), ("i", 10)):
        ap.add_argument(f"-{flag}", type=int, default=default)
    ap.add_argument("--workdir", help="keep the sandbox here and reuse its data")
    ap.add_argument("--transport", choices=["netpoll", "blocking"], default="netpoll",
                    help="tpcc run's --transport for B (blocking: a blocking socket per"
                    " connection, as tpcc_start)")
    args = ap.parse_args()
    start_bin = find_tpcc_start(args.tpcc_start)
    subprocess.run(["go", "build", "-o", args.tpcc, "./cmd/tpcc"], cwd=REPO / "tpcc", check=True)

    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tpcc-vs-"))
    work.mkdir(parents=True, exist_ok=True)
    server = Server(work)
    db = f"tpcc{args.w}"
    try:
        server.start()
        with server.connect() as link, link.cursor() as cur:
            loaded = cur.execute("SHOW DATABASES LIKE %s", (db,)) > 0
        if not loaded:
            print(f"== loading {args.w} warehouses with tpcc load", flush=True)
            t0 = time.monotonic()
            subprocess.run([args.tpcc, "load", "-h127.0.0.1", f"-P{server.port}", f"-d{db}",
                            "-uroot", "-p", "", f"-w{args.w}"], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"   loaded in {time.monotonic() - t0:.1f} s", flush=True)
        common = ["-h127.0.0.1", f"-P{server.port}", f"-d{db}", "-uroot", "-p", "",
                  f"-w{args.w}", f"-c{args.c}", f"-r{args.r}", f"-l{args.l}", f"-i{args.i}"]
        pairs = []
        for i in range(1, args.pairs + 1):
            print(f"== pair {i}/{args.pairs}: tpcc_start, then tpcc run", flush=True)
            a = run_client("tpcc_start", [str(start_bin), *common], server, db,
                           work / f"pair{i}-tpcc_start.log")
            b = run_client("tpcc", [args.tpcc, "run", *common, "--transport", args.transport],
                           server, db,
                           work / f"pair{i}-tpcc.log")
            pairs.append((a, b))
            print(f"   A {a.tpmc:.0f} TpmC, B {b.tpmc:.0f} TpmC", flush=True)
        print()
        report(pairs)
    finally:
        server.stop()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir kept: {work}")


if __name__ == "__main__":
    main()
