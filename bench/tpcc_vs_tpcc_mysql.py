"""Side by side: Percona-Lab's ``tpcc_start`` vs ``tpcc run`` (tpcc-mysql mode) on the same data.

Starts a private MariaDB sandbox (settings of the tpcc-mysql reference runs: buffer pool 256M,
redo 128M, ``innodb_flush_log_at_trx_commit=2``, ``O_DIRECT``), loads W warehouses once per W
with ``tpcc load`` (database ``tpccW``), then per grid point (W warehouses, C connections)
alternates A = tpcc_start and B = tpcc run (and any ``--variant``), A B A B, for ``--pairs``
rounds with the same ``-w -c -r -l -i``. Both clients connect the same way: TCP to 127.0.0.1
(``--unix-socket``: both over the sandbox's unix socket). Per run, over the whole client process
(ramp-up included):

- TpmC as the tool prints it (both print tpcc_start's ``<TpmC>`` block);
- New-Orders: the growth of ``SUM(d_next_o_id)`` (committed New-Orders);
- statements per New-Order: ``Questions`` delta / New-Orders;
- row lock waits and lock wait time per New-Order (``Innodb_row_lock_waits``, ``_time``);
- New-Order latency: the mean of the ``-f`` report file's response times (both clients write
  the same file; ramp-up included);
- server CPU per New-Order: mariadbd's utime+stime delta (``/proc``) / New-Orders;
- client CPU per New-Order: the client's user+sys (``wait4`` rusage) / New-Orders;
- turnaround per round trip: the time between the server finishing one statement (its reply
  written to the socket) and the next statement of the same connection arriving, from
  performance_schema's statement history in a ``--sample-s`` window in the middle of the
  measurement. It is the same server-side clock for both clients and nothing is attached to the
  client (strace would slow the traced client by far more than the difference measured); it
  includes the loopback delivery and the server thread's wake-up, which are the same for both.

Usage::

    .venv/bin/python bench/tpcc_vs_tpcc_mysql.py [--tpcc-start PATH] [--pairs 4]
        [-w 10 -c 16 -r 10 -l 60 -i 10] [--workdir DIR]
    .venv/bin/python bench/tpcc_vs_tpcc_mysql.py --grid [--points 4x16,4x32,...] --pairs 3
        -r 5 -l 20 -i 10 --workdir DIR --markdown FILE

``--grid`` runs warehouses {1, 4, 10} x connections {4, 16, 32, 64} (``--points`` chooses a
subset, ``WxC`` comma-separated) and prints one markdown table row per point. Keep ``-l`` a
multiple of ``-i`` (tpcc_start measures whole intervals only). A run takes ``-r + -l`` plus
about 4 s, so a point costs ``2 x pairs`` runs per client pair: with ``--pairs 3 -r5 -l20``
the six points ``1x4,1x64,4x16,4x32,10x16,10x64`` take about 18 min plus the loads (1 and 4
warehouses about 20 s each, 10 warehouses 1-2.5 min); the whole grid about 38 min. ``tpcc_start``
is found on PATH, in ``$TPCC_MYSQL_BIN`` (a directory or the binary) or given with
``--tpcc-start``; build it with ``scripts/build-tpcc-mysql.sh SRC_DIR``. ``--workdir`` keeps
the sandbox and its data between invocations (loads are skipped when the database is there).
``--variant 'LABEL=ARGS'`` adds a ``tpcc run`` variant with extra arguments (``ENV=VALUE``
words first set its environment; ``TPCC_BIN=PATH`` runs another build of tpcc), e.g.
``--variant 'gogc=GOGC=400'``. ``--client libmariadb|go`` chooses B's client (default: tpcc run's
default); ``--client go --variant 'libmariadb=--client libmariadb'`` runs tpcc_start and both
clients in each round.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.run.metadata import code_version  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SERVER_OPTIONS = [
    "--innodb-buffer-pool-size=256M",
    "--innodb-log-file-size=128M",
    "--innodb-flush-log-at-trx-commit=2",
    "--innodb-flush-method=O_DIRECT",
    "--skip-name-resolve",
    "--max-connections=500",
    # performance_schema for the turnaround sample: every instrument and consumer is switched
    # off after start and on only during the sample window; SQL and digest texts are not kept.
    "--performance-schema=ON",
    "--performance-schema-events-statements-history-long-size=200000",
    "--performance-schema-max-sql-text-length=0",
    "--performance-schema-max-digest-length=0",
]
STATUS = ("Questions", "Com_stmt_execute", "Com_commit", "Com_rollback",
          "Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_deadlocks", "Bytes_sent",
          "Bytes_received")
TARGETS = {"tpmc": (0.95, 1.05), "rt": (0.98, 1.02), "server": (0.95, 1.05), "client": (0, 0.8)}
GRID_W = (1, 4, 10)
GRID_C = (4, 16, 32, 64)


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
    no_latency_ms: float
    turnaround_us: dict[str, float] = field(default_factory=dict)

    @property
    def rt_per_no(self) -> float:
        return self.status["Questions"] / self.new_orders

    @property
    def server_ms_per_no(self) -> float:
        return 1000 * self.server_cpu_s / self.new_orders

    @property
    def client_ms_per_no(self) -> float:
        return 1000 * self.client_cpu_s / self.new_orders

    @property
    def lock_waits_per_no(self) -> float:
        return self.status["Innodb_row_lock_waits"] / self.new_orders

    @property
    def lock_ms_per_no(self) -> float:
        return self.status["Innodb_row_lock_time"] / self.new_orders

    @property
    def kb_per_no(self) -> float:
        """The server's bytes sent and received per New-Order, in kB."""
        return (self.status["Bytes_sent"] + self.status["Bytes_received"]) / 1000 / self.new_orders


@dataclass
class Client:
    """How to start one client: a label, the argv before the common options, extra env."""

    label: str
    argv: list[str]
    after: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


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
        self.socket = work / "mysql.sock"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if not self.datadir.is_dir():
            subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}",
                            "--auth-root-authentication-method=normal", "--user=root",
                            "--skip-test-db"], check=True, capture_output=True)
        self.proc = subprocess.Popen(
            ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={self.datadir}",
             f"--socket={self.socket}", "--bind-address=127.0.0.1",
             f"--port={self.port}", "--user=root", f"--log-error={self.work / 'err.log'}",
             *SERVER_OPTIONS], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                self.connect().close()
                break
            except pymysql.MySQLError:
                if self.proc.poll() is not None:
                    sys.exit(f"mariadbd exited: {(self.work / 'err.log').read_text()[-2000:]}")
                time.sleep(0.1)
        else:
            sys.exit("mariadbd did not start within 60 s")
        instrument_statements(self, False)

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


def instrument_statements(server: Server, on: bool) -> None:
    """Switch performance_schema's statement timing and history on or off (all else stays off)."""
    flag = "YES" if on else "NO"
    with server.connect() as link, link.cursor() as cur:
        if not on:
            cur.execute("UPDATE performance_schema.setup_instruments SET ENABLED='NO', TIMED='NO'")
        cur.execute("UPDATE performance_schema.setup_instruments SET ENABLED=%s, TIMED=%s"
                    " WHERE NAME LIKE 'statement/%%'", (flag, flag))
        cur.execute("UPDATE performance_schema.setup_consumers SET ENABLED=%s WHERE NAME IN"
                    " ('global_instrumentation', 'thread_instrumentation',"
                    " 'events_statements_current', 'events_statements_history_long')", (flag,))
        if not on:
            cur.execute("UPDATE performance_schema.setup_consumers SET ENABLED='NO'")
        else:
            cur.execute("TRUNCATE TABLE performance_schema.events_statements_history_long")


def sample_turnaround(server: Server, delay_s: float, window_s: float, out: dict) -> None:
    """After delay_s, record statements for window_s and put the per-connection gaps between
    one statement's end and the next one's start (µs) into ``out``."""
    time.sleep(delay_s)
    instrument_statements(server, True)
    time.sleep(window_s)
    with server.connect() as link, link.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        own = cur.fetchone()[0]
        instrument_statements(server, False)
        cur.execute("SELECT h.THREAD_ID, h.TIMER_START, h.TIMER_END"
                    " FROM performance_schema.events_statements_history_long h"
                    " JOIN performance_schema.threads t ON t.THREAD_ID = h.THREAD_ID"
                    " WHERE t.PROCESSLIST_ID <> %s AND h.TIMER_END IS NOT NULL"
                    " ORDER BY h.THREAD_ID, h.EVENT_ID", (own,))
        rows = cur.fetchall()
    gaps, execs = [], []
    prev_thread, prev_end = None, None
    for thread, start, end in rows:
        execs.append((end - start) / 1e6)  # picoseconds -> µs
        if thread == prev_thread and start >= prev_end:
            gaps.append((start - prev_end) / 1e6)
        prev_thread, prev_end = thread, end
    if gaps:
        gaps.sort()
        out.update(mean=statistics.fmean(gaps), median=gaps[len(gaps) // 2],
                   p90=gaps[int(len(gaps) * 0.9)], n=len(gaps), exec_mean=statistics.fmean(execs))


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


def mean_latency(report_file: Path) -> float:
    """Mean New-Order response time (ms) over every line of the -f file, ramp-up included:
    the first column (seconds reported so far) is not comparable between the tools, as
    tpcc_start's alarm thread counts it differently, so no line is told apart by it."""
    values = []
    for line in report_file.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            values.append(float(parts[1]))
    return statistics.fmean(values) if values else float("nan")


def run_client(client: Client, common: list[str], server: Server, db: str, log: Path,
               sample: tuple[float, float] | None) -> Measure:
    """Run one client to completion and measure it; sample = (delay, window) for turnaround."""
    report_file = log.with_suffix(".rt")
    s0, n0, c0 = snapshot(server, db)
    turnaround: dict[str, float] = {}
    sampler = None
    with open(log, "w") as out:
        proc = subprocess.Popen([*client.argv, *common, "-f", str(report_file), *client.after],
                                stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "MYSQL_PWD": "", **client.env})
        if sample:
            sampler = threading.Thread(target=sample_turnaround,
                                       args=(server, *sample, turnaround), daemon=True)
            sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
    if sampler:
        sampler.join()
    s1, n1, c1 = snapshot(server, db)
    text = log.read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{client.label} failed, see {log}:\n{text[-2000:]}")
    m = re.search(r"<TpmC>\s+([\d.]+) TpmC", text)
    if not m:
        sys.exit(f"no TpmC in {log}")
    errors = sum(int(x) for x in re.findall(r"^\s+\[\d\] sc:\d+\s+lt:\d+\s+rt:\d+\s+fl:(\d+)",
                                            text, re.M)[:5])
    return Measure(client.label, float(m.group(1)), n1 - n0, {k: s1[k] - s0[k] for k in STATUS},
                   c1 - c0, usage.ru_utime + usage.ru_stime, errors, mean_latency(report_file),
                   turnaround)


def fmt_ratio(name: str, b: float, a: float) -> str:
    lo, hi = TARGETS[name]
    r = b / a
    return f"{r:5.2f}{'' if lo <= r <= hi else ' MISS'}"


def report_pairs(pairs: list[tuple[Measure, Measure]]) -> None:
    """Per pair and median figures and ratios (B = tpcc, A = tpcc_start)."""
    head = (f"{'pair':>4}  {'TpmC A':>9} {'TpmC B':>9} {'B/A':>9}  {'rt/NO A':>7} {'rt/NO B':>7}"
            f" {'B/A':>9}  {'srv ms A':>8} {'srv ms B':>8} {'B/A':>9}  {'cli ms A':>8}"
            f" {'cli ms B':>8} {'B/A':>9}  {'lkw A':>5} {'lkw B':>5}  {'ta A':>5} {'ta B':>5}")
    print(head)
    for i, (a, b) in enumerate(pairs, 1):
        print(f"{i:>4}  {a.tpmc:9.0f} {b.tpmc:9.0f} {fmt_ratio('tpmc', b.tpmc, a.tpmc):>9}"
              f"  {a.rt_per_no:7.1f} {b.rt_per_no:7.1f}"
              f" {fmt_ratio('rt', b.rt_per_no, a.rt_per_no):>9}"
              f"  {a.server_ms_per_no:8.2f} {b.server_ms_per_no:8.2f}"
              f" {fmt_ratio('server', b.server_ms_per_no, a.server_ms_per_no):>9}"
              f"  {a.client_ms_per_no:8.2f} {b.client_ms_per_no:8.2f}"
              f" {fmt_ratio('client', b.client_ms_per_no, a.client_ms_per_no):>9}"
              f"  {a.lock_waits_per_no:5.2f} {b.lock_waits_per_no:5.2f}"
              f"  {a.turnaround_us.get('mean', float('nan')):5.0f}"
              f" {b.turnaround_us.get('mean', float('nan')):5.0f}")
    print("(lkw: row lock waits per New-Order; ta: mean turnaround per round trip, µs)")
    print("per run (Com_* deltas per New-Order):")
    for i, pair in enumerate(pairs, 1):
        for m in pair:
            per = ", ".join(f"{k} {v / m.new_orders:.2f}" for k, v in m.status.items())
            print(f"  pair {i} {m.tool:<10} NO {m.new_orders:6d}  {per}  errors {m.errors}")


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def point_row(w: int, c: int, pairs: list[tuple[Measure, Measure]]) -> str:
    """One markdown row: medians over the pairs of one point and one B variant."""
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    ratios = sorted(y.tpmc / x.tpmc for x, y in pairs)
    in_band = TARGETS["tpmc"][0] <= med(ratios) <= TARGETS["tpmc"][1]

    def both(fn, fmt: str) -> str:
        return f"{format(med([fn(m) for m in a]), fmt)} / {format(med([fn(m) for m in b]), fmt)}"

    ta = [(x.turnaround_us.get("mean"), y.turnaround_us.get("mean")) for x, y in pairs]
    ta = [t for t in ta if t[0] and t[1]]
    ta_text = (f"{med([t[0] for t in ta]):.0f} / {med([t[1] for t in ta]):.0f}"
               if ta else "–")
    lat = med([y.no_latency_ms / x.no_latency_ms for x, y in pairs])
    return (f"| {w} | {c} | {len(pairs)} | {med([m.tpmc for m in a]):,.0f} / "
            f"{med([m.tpmc for m in b]):,.0f} | **{med(ratios):.3f}**"
            f"{'' if in_band else ' ✗'} ({ratios[0]:.2f}–{ratios[-1]:.2f}) "
            f"| {both(lambda m: m.rt_per_no, '.1f')} | {lat:.2f} "
            f"| {both(lambda m: m.client_ms_per_no, '.2f')} "
            f"| {both(lambda m: m.server_ms_per_no, '.2f')} "
            f"| {both(lambda m: m.lock_waits_per_no, '.2f')} "
            f"| {both(lambda m: m.kb_per_no, '.1f')} | {ta_text} |")


TABLE_HEAD = (
    "| W | conns | pairs | TpmC A / B (median) | TpmC B/A median (min–max) | statements/NO A / B "
    "| NO latency B/A | client CPU ms/NO A / B | server CPU ms/NO A / B | row lock waits/NO A / B "
    "| server kB/NO (sent + received) A / B | turnaround µs A / B |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|")


def parse_points(text: str | None) -> list[tuple[int, int]]:
    """``WxC,WxC`` -> [(W, C)]; None -> the whole grid."""
    if not text:
        return [(w, c) for w in GRID_W for c in GRID_C]
    points = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", item)
        if not m:
            sys.exit(f"--points: {item!r} is not WxC (e.g. 4x32)")
        points.append((int(m.group(1)), int(m.group(2))))
    return points


def parse_variant(text: str, tpcc: str) -> Client:
    """``LABEL=ENV=V ... --flag ...`` -> a tpcc run Client."""
    label, _, rest = text.partition("=")
    env, extra = {}, []
    for word in shlex.split(rest):
        if not extra and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", word):
            key, _, value = word.partition("=")
            env[key] = value
        else:
            extra.append(word)
    binary = env.pop("TPCC_BIN", tpcc)  # another build of tpcc, for experiments
    return Client(label or "variant", [binary, "run"], extra, env)


def ensure_loaded(server: Server, tpcc: str, w: int, conn: list[str]) -> None:
    """Load tpccW with tpcc load unless it is there."""
    db = f"tpcc{w}"
    with server.connect() as link, link.cursor() as cur:
        if cur.execute("SHOW DATABASES LIKE %s", (db,)) > 0:
            return
    print(f"== loading {w} warehouses with tpcc load", flush=True)
    t0 = time.monotonic()
    subprocess.run([tpcc, "load", *conn, f"-d{db}", "-uroot", "-p", "", f"-w{w}"], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"   loaded in {time.monotonic() - t0:.1f} s", flush=True)


def main() -> None:
    # `kill` (SIGTERM) unwinds like Ctrl-C, so the sandbox's mariadbd is stopped on the way
    # out (by default the interpreter would die at once and leave it running on its datadir).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpcc-start")
    ap.add_argument("--tpcc", default=str(REPO / "tpcc" / "bin" / "tpcc"))
    ap.add_argument("--pairs", type=int, default=None, help="rounds per point (4; grid: 3)")
    for flag, default in (("w", 10), ("c", 16), ("r", 10), ("l", 60), ("i", 10)):
        ap.add_argument(f"-{flag}", type=int, default=default)
    ap.add_argument("--grid", action="store_true", help="warehouses {1,4,10} x connections"
                    " {4,16,32,64}, or the --points given")
    ap.add_argument("--points", help="grid points WxC, comma-separated (implies --grid)")
    ap.add_argument("--workdir", help="keep the sandbox here and reuse its data")
    ap.add_argument("--transport", choices=["netpoll", "blocking"], default=None,
                    help="tpcc run's --transport for B (default: tpcc run's default)")
    ap.add_argument("--client", choices=["libmariadb", "go"], default=None,
                    help="tpcc run's --client for B (default: tpcc run's default)")
    ap.add_argument("--variant", action="append", default=[],
                    help="another tpcc run client, 'LABEL=[ENV=V ...] [args]'; repeatable")
    ap.add_argument("--unix-socket", action="store_true",
                    help="both clients connect over the sandbox's unix socket instead of TCP")
    ap.add_argument("--sample-s", type=float, default=2.0,
                    help="turnaround sample window in seconds (0: no sample)")
    ap.add_argument("--markdown", help="also write the grid table to this file")
    ap.add_argument("--json", help="write every run's figures to this file")
    ap.add_argument("--from-json", metavar="FILE",
                    help="run nothing: print the tables of a file written by --json")
    args = ap.parse_args()
    if args.from_json:
        print_tables(tables_from_record(json.loads(Path(args.from_json).read_text())), args)
        return
    grid = args.grid or bool(args.points)
    pairs_n = args.pairs or (3 if grid else 4)
    points = parse_points(args.points) if grid else [(args.w, args.c)]
    start_bin = find_tpcc_start(args.tpcc_start)
    subprocess.run(["go", "build", "-o", args.tpcc, "./cmd/tpcc"], cwd=REPO / "tpcc", check=True)

    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tpcc-vs-"))
    work.mkdir(parents=True, exist_ok=True)
    server = Server(work)
    b_after = ["--transport", args.transport] if args.transport else []
    b_after += ["--client", args.client] if args.client else []
    b_label = f"tpcc-{args.client}" if args.client else "tpcc"
    clients = [Client("tpcc_start", [str(start_bin)]), Client(b_label, [args.tpcc, "run"], b_after)]
    clients += [parse_variant(v, args.tpcc) for v in args.variant]
    rows: dict[str, list[str]] = {c.label: [] for c in clients[1:]}
    record = []
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        server.start()
        conn = (["-S", str(server.socket)] if args.unix_socket
                else ["-h127.0.0.1", f"-P{server.port}"])
        for w, c in points:
            ensure_loaded(server, args.tpcc, w, conn)
            db = f"tpcc{w}"
            common = [*conn, f"-d{db}", "-uroot", "-p", "", f"-w{w}", f"-c{c}", f"-r{args.r}",
                      f"-l{args.l}", f"-i{args.i}"]
            sample = ((args.r + args.l / 2 - args.sample_s / 2, args.sample_s)
                      if args.sample_s > 0 else None)
            runs: list[list[Measure]] = []
            for i in range(1, pairs_n + 1):
                print(f"== {w} W, {c} conns, round {i}/{pairs_n}:"
                      f" {', '.join(cl.label for cl in clients)}", flush=True)
                ms = [run_client(cl, common, server, db, work / f"w{w}c{c}-{i}-{cl.label}.log",
                                 sample) for cl in clients]
                runs.append(ms)
                print("   " + ", ".join(f"{m.tool} {m.tpmc:.0f}" for m in ms), flush=True)
                record.append({"w": w, "c": c, "round": i, "runs": [asdict(m) for m in ms]})
            for k, cl in enumerate(clients[1:], 1):
                pairs = [(r[0], r[k]) for r in runs]
                print(f"\n-- {w} W, {c} conns: A = tpcc_start, B = {cl.label}")
                report_pairs(pairs)
                rows[cl.label].append(point_row(w, c, pairs))
    finally:
        server.stop()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir kept: {work}")
    if args.json:
        # The code measured (the driver is built from this checkout) and how: a figure without
        # its commit cannot be told from one measured before or after a change.
        Path(args.json).write_text(json.dumps(
            {"flushbench": code_version(), "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
             "started": started, "rounds": record}, indent=1))
    print_tables(rows, args)


def tables_from_record(record: dict | list[dict]) -> dict[str, list[str]]:
    """The table rows of a --json record: per point, A (tpcc_start) against each B (a record
    written before the commit was stored is the bare list of rounds)."""
    points: dict[tuple[int, int], list[list[Measure]]] = {}
    rounds = record["rounds"] if isinstance(record, dict) else record
    for entry in rounds:
        points.setdefault((entry["w"], entry["c"]), []).append(
            [Measure(**run) for run in entry["runs"]])
    rows: dict[str, list[str]] = {}
    for (w, c), runs in points.items():
        for k in range(1, len(runs[0])):
            rows.setdefault(runs[0][k].tool, []).append(
                point_row(w, c, [(r[0], r[k]) for r in runs]))
    return rows


def print_tables(rows: dict[str, list[str]], args: argparse.Namespace) -> None:
    """Print (and with --markdown write) one table per B client."""
    out = []
    for label, lines in rows.items():
        pairs = lines[0].split("|")[3].strip() if lines else "?"
        out += [f"\nA = tpcc_start, B = {label} ({'unix socket' if args.unix_socket else 'TCP'},"
                f" -r{args.r} -l{args.l}, {pairs} alternating rounds):\n", TABLE_HEAD, *lines]
    text = "\n".join(out)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
