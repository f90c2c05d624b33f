"""Which of mysqld's writes the I/O throttle sees, by ``innodb_flush_method``.

A MariaDB sandbox is started inside a throttle group (:mod:`runner.host.cgroups`) on the work
directory's disk, sysbench ``oltp_write_only`` runs against it, and over the run window the
group's own counters (bytes and write operations charged to the group) are compared with the
bytes mysqld itself sent to storage (``/proc/PID/io`` ``write_bytes``, which counts buffered
writes when pages are dirtied, whoever writes them back). The share charged to the group is the
share a storage profile can limit. Each flush method runs once without a limit and once at
``--limit`` write IOPS, so the effect on throughput shows whether the limit binds.

Usage: ``.venv/bin/python bench/throttle_mysqld.py [--seconds 20] [--limit 500]``
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymysql  # noqa: E402

from core.experiment.storage import StorageSpec  # noqa: E402
from core.paths import work_dir  # noqa: E402
from runner import proc  # noqa: E402
from runner.host.cgroups import ThrottleGroup, find_hierarchy  # noqa: E402
from runner.host.devices import resolve_device  # noqa: E402
from runner.host.proof import judge, read_proc_io  # noqa: E402

MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "/usr/bin/mariadb-install-db"
#: Limit used for the "unlimited" rows: the v1 counters only run on a throttled queue.
NO_LIMIT = 10_000_000


def _wait_ready(sock: Path, p: subprocess.Popen) -> None:
    for _ in range(600):
        if p.poll() is not None:
            sys.exit(f"mariadbd exited with {p.returncode}")
        if sock.exists():
            try:
                pymysql.connect(unix_socket=str(sock), user="root").close()
                return
            except pymysql.MySQLError:
                pass
        time.sleep(0.1)
    sys.exit("mariadbd did not become ready")


def one(root: Path, flush_method: str, limit: int | None, seconds: int) -> dict[str, object]:
    """Start a sandbox in a throttle group, run sysbench, return what was charged."""
    sysbench = shutil.which("sysbench")
    assert sysbench is not None
    hierarchy = find_hierarchy("io")
    device = resolve_device(root).device
    assert hierarchy is not None and device is not None
    spec = StorageSpec(write_iops=limit or NO_LIMIT)
    with tempfile.TemporaryDirectory(prefix="fb-throttle-mysqld-", dir=root) as tmp:
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
            f"--innodb-flush-method={flush_method}", "--innodb-io-capacity=200",
            "--innodb-flush-log-at-trx-commit=1",
        ]  # fmt: skip
        with ThrottleGroup(hierarchy, device, spec) as group, proc.child(
            group.wrap(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ) as p:
            _wait_ready(sock, p)
            link = pymysql.connect(unix_socket=str(sock), user="root", autocommit=True)
            with link.cursor() as cur:
                cur.execute("CREATE DATABASE sb")
            link.close()
            common = [sysbench, "oltp_write_only", f"--mysql-socket={sock}",
                      "--mysql-user=root", "--mysql-db=sb", "--tables=2",
                      "--table-size=20000"]  # fmt: skip
            proc.run_checked([*common, "prepare"], timeout=300)
            before, io_before = group.counters(), read_proc_io(p.pid)
            start = time.monotonic()
            out = proc.run_checked([*common, "--threads=4", f"--time={seconds}", "run"],
                                   timeout=seconds + 120)
            elapsed = time.monotonic() - start
            after, io_after = group.counters(), read_proc_io(p.pid)
        m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out.stdout)
        delta = after - before
        written = io_after["write_bytes"] - io_before["write_bytes"]
        verdict = judge(spec, before, after, elapsed)
        return {
            "flush_method": flush_method,
            "limit": limit,
            "tps": float(m.group(1)) if m else float("nan"),
            "write_iops": delta.write_ios / elapsed,
            "charged_mib": delta.write_bytes / 2**20,
            "proc_mib": written / 2**20,
            "share": delta.write_bytes / written if written else float("nan"),
            "verdict": verdict.status,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--limit", type=int, default=500)
    args = parser.parse_args()
    root = work_dir()
    root.mkdir(parents=True, exist_ok=True)
    print(resolve_device(root).describe())
    rows = []
    for method in ("O_DIRECT", "fsync"):
        for limit in (None, args.limit):
            row = one(root, method, limit, args.seconds)
            print(f"  {row}", flush=True)
            rows.append(row)
    print()
    print("| innodb_flush_method | write IOPS limit | TPS | write IOPS charged | MiB charged "
          "to group | MiB mysqld wrote (/proc) | share charged | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['flush_method']} | {r['limit'] or 'none'} | {r['tps']:,.0f} | "
              f"{r['write_iops']:,.0f} | {r['charged_mib']:,.1f} | {r['proc_mib']:,.1f} | "
              f"{r['share']:.0%} | {r['verdict']} |")


if __name__ == "__main__":
    main()
