#!/usr/bin/env bash
# Build Percona-Lab's tpcc-mysql (tpcc_load, tpcc_start) from a source checkout the user
# brings, against Debian's libmariadb. tpcc-mysql is in no package registry, so flushbench
# cannot install it; this script only compiles what is in SRC_DIR.
#
#   scripts/build-tpcc-mysql.sh SRC_DIR
#
# Installs the build dependencies with apt when missing (idempotent), runs `make` in
# SRC_DIR/src (its own Makefile; binaries land in SRC_DIR next to create_table.sql and
# add_fkey_idx.sql, where flushbench's tpcc-mysql adapter looks for them) and prints the
# paths to put on PATH or in workload.binaries (tpcc_start, tpcc_load).
set -euo pipefail

usage() { echo "usage: $0 SRC_DIR   (a checkout of https://github.com/Percona-Lab/tpcc-mysql)" >&2; exit 2; }
[ $# -eq 1 ] || usage
src=$(cd "$1" 2>/dev/null && pwd) || { echo "build-tpcc-mysql: no such directory: $1" >&2; exit 2; }
if [ ! -f "$src/src/Makefile" ] || [ ! -f "$src/src/main.c" ]; then
  echo "build-tpcc-mysql: $src does not look like a tpcc-mysql checkout (no src/Makefile, src/main.c)" >&2
  exit 2
fi

log() { printf '\033[1m[build-tpcc-mysql]\033[0m %s\n' "$*"; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@";
  elif command -v sudo >/dev/null 2>&1; then sudo "$@";
  else echo "build-tpcc-mysql: need root (or sudo) to run: $*" >&2; exit 1; fi
}

# gcc and make to compile; libmariadb-dev for the headers and library, -compat for the
# mysql_config name tpcc-mysql's Makefile calls.
packages=(gcc make libc6-dev libmariadb-dev libmariadb-dev-compat)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v mysql_config >/dev/null || { echo "build-tpcc-mysql: mysql_config not found after installing libmariadb-dev-compat" >&2; exit 1; }

log "building in $src/src against $(mysql_config --version 2>/dev/null || echo libmariadb)"
# The sources are old C (implicit declarations, void main): keep GCC >= 14 from treating
# those as errors; tpcc-mysql's own CFLAGS already silence warnings (-w). Debian's
# `mysql_config --libs_r` does not bring libm, which sb_percentile.c needs.
make -C "$src/src" all CFLAGS="-w -O3 -g -std=gnu89 -fcommon" \
  LIBS="$(mysql_config --libs_r) -lrt -lm" >/dev/null

for bin in tpcc_load tpcc_start; do
  [ -x "$src/$bin" ] || { echo "build-tpcc-mysql: $src/$bin was not built" >&2; exit 1; }
done
log "built $src/tpcc_start and $src/tpcc_load"
echo "export PATH=\"$src:\$PATH\"   # or workload.binaries: {tpcc_start: $src/tpcc_start, tpcc_load: $src/tpcc_load}"
