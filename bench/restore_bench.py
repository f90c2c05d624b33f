"""How much does a verified restore cost over a plain ``cp -a``?

Builds (or reuses) a snapshot of a sizable datadir filled by a simple loader (one InnoDB table
of ~1 KiB rows, doubled with INSERT ... SELECT until the requested size), then alternates
``runner.datasets.restore`` (``cp -a --reflink=auto`` + size check against the manifest) with a
plain ``cp -a`` of the same datadir, and prints both medians and their ratio (target <= 1.1x).

Each copy is followed, outside the timed section, by ``sync`` and removal of the copy, so the
write-back of one copy does not land in the next one's time. Both copies read the snapshot from
the same page cache state.

Usage: ``.venv/bin/python bench/restore_bench.py [--size-gb 1.5] [--repeats 3] [--work DIR]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.paths import work_dir as default_work_dir  # noqa: E402
from runner.connection import ConnectionInfo  # noqa: E402
from runner.datasets import DatasetKey, ensure_dataset, restore, verify_snapshot  # noqa: E402
from runner.server import resolve_binary  # noqa: E402

LOAD_CNF = """\
[mysqld]
innodb_buffer_pool_size=1G
innodb_log_file_size=256M
innodb_flush_log_at_trx_commit=2
performance_schema=OFF
"""


def fill_loader(target_bytes: int):
    """A loader that grows bench.fill to about ``target_bytes`` of ~1 KiB rows."""

    def load(info: ConnectionInfo) -> None:
        conn = pymysql.connect(**info.pymysql_kwargs(), autocommit=True, read_timeout=3600)
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE DATABASE bench")
                cur.execute(
                    "CREATE TABLE bench.fill (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                    "pad VARCHAR(1000) NOT NULL) ENGINE=InnoDB"
                )
                cur.execute(
                    "INSERT INTO bench.fill (pad) SELECT REPEAT(MD5(RAND()), 30) "
                    "FROM bench.seq_1_to_4096"
                )
                rows = 4096
                while rows * 1100 < target_bytes:
                    # Random content per row, so the files are not trivially compressible.
                    cur.execute(
                        "INSERT INTO bench.fill (pad) SELECT REPEAT(MD5(RAND()), 30) "
                        f"FROM bench.fill LIMIT {min(rows, max(1, target_bytes // 1100 - rows))}"
                    )
                    rows += cur.rowcount
                    print(f"  loaded {rows} rows", file=sys.stderr, flush=True)
        finally:
            conn.close()

    return load


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-gb", type=float, default=1.5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--mysqld", type=Path, default=Path("/usr/sbin/mariadbd"))
    ap.add_argument("--install-db", type=Path, default=Path("/usr/bin/mariadb-install-db"))
    args = ap.parse_args()

    work = (args.work or default_work_dir()).resolve()
    server = resolve_binary(args.mysqld, args.install_db)
    key = DatasetKey("bench-fill", f"{args.size_gb:g}G", server.flavor, server.version_string)
    started = time.perf_counter()
    snap = ensure_dataset(key, server, LOAD_CNF, fill_loader(int(args.size_gb * 2**30)), work)
    built = time.perf_counter() - started
    m = snap.manifest
    print(f"snapshot: {snap.path}")
    print(
        f"  {len(snap.files)} files, {snap.total_bytes / 2**30:.2f} GiB; "
        f"ensure took {built:.1f} s (build {m['build_seconds']:.1f} s, "
        f"load {m['load_seconds']:.1f} s, sha256 of all files {m['hash_seconds']:.1f} s "
        f"= {snap.total_bytes / 2**20 / max(m['hash_seconds'], 1e-9):.0f} MiB/s)"
    )

    scratch = work / "restore-bench"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    # Read the snapshot once so both methods start from a warm page cache.
    subprocess.run(
        ["cat", *[str(snap.datadir / f.path) for f in snap.files]],
        stdout=subprocess.DEVNULL,
        check=True,
    )

    def settle(target: Path) -> None:
        os.sync()
        shutil.rmtree(target)
        os.sync()

    t_restore: list[float] = []
    t_cp: list[float] = []
    checks: list[float] = []  # the size check's own share of each restore
    for i in range(args.repeats):

        def run_restore(i: int = i) -> None:
            target = scratch / f"restore-{i}"
            t_restore.append(
                timed(lambda: checks.append(restore(snap, target, verify="sizes").verify_seconds))
            )
            settle(target)

        def run_cp(i: int = i) -> None:
            target = scratch / f"cp-{i}"
            t_cp.append(
                timed(
                    lambda: subprocess.run(["cp", "-a", str(snap.datadir), str(target)], check=True)
                )
            )
            settle(target)

        # Alternate which goes first, so neither always follows the other's write-back.
        for step in (run_restore, run_cp) if i % 2 == 0 else (run_cp, run_restore):
            step()
        print(f"  round {i + 1}: restore {t_restore[-1]:.2f} s, cp -a {t_cp[-1]:.2f} s")

    full = timed(lambda: verify_snapshot(snap, full=True))
    shutil.rmtree(scratch, ignore_errors=True)
    med_r, med_c = statistics.median(t_restore), statistics.median(t_cp)
    ratio = med_r / med_c
    fs = subprocess.run(
        ["findmnt", "-no", "FSTYPE", "--target", str(work)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(f"filesystem: {fs or '?'} ({work})")
    print(f"restore (cp -a --reflink=auto + size check): median {med_r:.2f} s over {args.repeats}")
    print(f"plain cp -a:                                 median {med_c:.2f} s over {args.repeats}")
    print(
        f"ratio restore / cp -a: {ratio:.3f}x (target <= 1.1x) "
        f"{'OK' if ratio <= 1.1 else 'ABOVE TARGET'}"
    )
    print(f"size check inside restore: median {statistics.median(checks) * 1000:.1f} ms")
    print(f"full sha256 verification of the snapshot: {full:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
