#!/usr/bin/env bash
# tpcc driver benchmark: load 10 warehouses and run -c16 -r10 -l60 -i10 against
# a private MariaDB sandbox configured like
# /work/shared/fixtures/tpcc-mysql/server-my.cnf (the tpcc-mysql reference runs).
#
# Prints: load wall time, TpmC, client CPU-ms per New-Order (user+sys of the
# driver process / all New-Orders it completed, ramp-up included, as the
# tpcc-mysql reference figure was computed), driver peak RSS.
#
# Env: W (10), C (16), R (10), L (60), I (10), KEEP=1 keeps the work dir,
#      MARIADBD, INSTALL_DB override the server binaries.
set -euo pipefail

W=${W:-10} C=${C:-16} R=${R:-10} L=${L:-60} I=${I:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
MARIADBD=${MARIADBD:-$(command -v mariadbd || echo /usr/sbin/mariadbd)}
INSTALL_DB=${INSTALL_DB:-$(command -v mariadb-install-db || echo /usr/bin/mariadb-install-db)}

work=$(mktemp -d /tmp/tpcc-bench.XXXXXX)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ "${KEEP:-0}" = 1 ]; then echo "work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT INT TERM

echo "== build"
(cd "$here/tpcc" && go build -o bin/tpcc ./cmd/tpcc)
TPCC=$here/tpcc/bin/tpcc

echo "== sandbox server in $work"
"$INSTALL_DB" --no-defaults --datadir="$work/data" --auth-root-authentication-method=normal \
	--user=root --skip-test-db >"$work/install.log" 2>&1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$MARIADBD" --no-defaults --datadir="$work/data" --socket="$work/mysql.sock" \
	--bind-address=127.0.0.1 --port="$port" --user=root \
	--innodb-buffer-pool-size=256M --innodb-log-file-size=128M \
	--innodb-flush-log-at-trx-commit=2 --innodb-flush-method=O_DIRECT \
	--skip-name-resolve --max-connections=500 \
	--log-error="$work/err.log" &
pid=$!
for _ in $(seq 1 600); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	if ! kill -0 "$pid" 2>/dev/null; then cat "$work/err.log"; echo "mariadbd died"; exit 1; fi
	sleep 0.1
done
conn=(-h 127.0.0.1 -P "$port" -u root -d tpcc$W)
export MYSQL_PWD=

echo "== load $W warehouses"
t0=$(date +%s.%N)
/usr/bin/time -v -o "$work/load.time" "$TPCC" load "${conn[@]}" -w "$W" | tee "$work/load.log"
t1=$(date +%s.%N)

echo "== run -w$W -c$C -r$R -l$L -i$I"
/usr/bin/time -v -o "$work/run.time" "$TPCC" run "${conn[@]}" -w "$W" -c "$C" -r "$R" -l "$L" -i "$I" --json | tee "$work/run.jsonl"

echo "== check"
"$TPCC" check "${conn[@]}" -w "$W" | tee "$work/check.log" || true

python3 - "$work" "$t0" "$t1" <<'PY'
import json, re, sys
work, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def timev(path):
    d = {}
    for line in open(path):
        k, _, v = line.strip().rpartition(": ")
        d[k] = v
    return d
rt = timev(f"{work}/run.time")
lt = timev(f"{work}/load.time")
lines = [json.loads(l) for l in open(f"{work}/run.jsonl") if l.strip()]
summ = [l for l in lines if l["type"] == "summary"][0]
no_all = sum(l["new_order"]["count"] for l in lines if l["type"] == "interval")
cpu = float(rt["User time (seconds)"]) + float(rt["System time (seconds)"])
no = summ["totals"]["new_order"]
print()
print("== results")
print(f"load time:            {t1 - t0:.1f} s  (driver CPU {float(lt['User time (seconds)']) + float(lt['System time (seconds)']):.1f} s)")
print(f"TpmC:                 {summ['tpmc']:.1f}  (New-Order sc+lt {no['sc'] + no['lt']} in {summ['measure_s']:.0f} s; retries {summ['retries']}, errors {summ['errors']})")
print(f"driver CPU:           user {rt['User time (seconds)']} s + sys {rt['System time (seconds)']} s over {rt['Elapsed (wall clock) time (h:mm:ss or m:ss)']} wall")
print(f"CPU-ms per New-Order: {cpu * 1000 / no_all:.3f}  ({no_all} New-Orders incl. ramp-up; {cpu * 1000 / (no['sc'] + no['lt']):.3f} per measured New-Order)")
print(f"driver peak RSS:      {int(rt['Maximum resident set size (kbytes)']) / 1024:.1f} MB")
PY
