#!/usr/bin/env bash
# The project's whole test suite: lint, Go driver tests, Python tests (real mysqld sandboxes).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.local/bin:$PATH"
# Let pytest cache its rewritten test modules (a caller's PYTHONDONTWRITEBYTECODE would make
# every run recompile them).
unset PYTHONDONTWRITEBYTECODE
# Tests that need a real server must fail, not skip, when the server is missing.
export FLUSHBENCH_REQUIRE_MYSQL=1
# ... and so must the PostgreSQL results-store tests (the suite starts its own cluster).
export FLUSHBENCH_REQUIRE_POSTGRES=1

echo "== ruff"
.venv/bin/ruff check core flushbench runner analysis store tests bench
echo "== go vet (tpcc driver)"
(cd tpcc && go vet ./...)
# The fast lane (FLUSHBENCH_FAST_LANE=1, `make test-fast`) skips the driver's tests against a
# real MariaDB (go test -short); `make test` runs them all. They take about a minute (their own
# MariaDB sandboxes), so they run beside pytest's parallel pass, never beside the `alone` pass;
# their output is printed when the parallel pass ends.
go_short=()
[ "${FLUSHBENCH_FAST_LANE:-}" = 1 ] && go_short=(-short)
go_log="$(mktemp "${TMPDIR:-/tmp}/flushbench-go-test.XXXXXX")"
# In a session of their own (setsid): one signal stops go and the test binaries it started.
(cd tpcc && exec setsid -w go test -count=1 "${go_short[@]}" ./...) >"$go_log" 2>&1 &
go_pid=$!
go_done=0
# Ctrl-C or a failing step: stop the Go tests too, never leave them behind.
trap '[ "$go_done" = 1 ] || kill -- "-$go_pid" 2>/dev/null || true; rm -f "$go_log"' EXIT
go_result() {
  local status=0
  wait "$go_pid" || status=$?
  go_done=1
  echo "== go test (tpcc driver, ran beside pytest)"
  cat "$go_log"
  return "$status"
}
echo "== pytest"
# Several pytest-xdist workers: the server tests' tiny runs go at a fixed rate
# (tests/support/tiny_experiment.py) and mostly wait on mysqld, the clock and the disk, so four
# share two cores well (a fresh clone's parallel pass 736 s on four against 977 s on three:
# docs/benchmarks.md). Each test's group (its file; every host_control test in one group, run
# one after another) goes whole to one worker, costliest first: tests/support/parallel.py.
# Tests marked `alone` judge how quiet the host is: they run afterwards, in one process.
# FLUSHBENCH_TEST_WORKERS=0 runs the whole suite in one process.
# The fast lane is CPU-bound (no servers to wait on): two workers for two cores.
default_workers=4
[ "${FLUSHBENCH_FAST_LANE:-}" = 1 ] && default_workers=2
workers="${FLUSHBENCH_TEST_WORKERS:-$default_workers}"
status=0
if [ "$workers" = 0 ]; then
  .venv/bin/pytest -q --durations=20 "$@" || status=$?
  go_result || status=$?
  exit "$status"
fi
# The slowest tests are listed every run (docs/benchmarks.md keeps the figures).
if [ "${FLUSHBENCH_FAST_LANE:-}" = 1 ]; then
  # The fast lane's own -m (in "$@") already leaves out every server test, `alone` ones too.
  .venv/bin/pytest -q --durations=20 -n "$workers" --dist loadgroup --no-loadscope-reorder \
    "$@" || status=$?
  go_result || status=$?
  exit "$status"
fi
.venv/bin/pytest -q --durations=20 -n "$workers" --dist loadgroup --no-loadscope-reorder \
  -m "not alone" "$@" || status=$?
go_result || status=$?
[ "$status" = 0 ] || exit "$status"
echo "== pytest (tests that need the machine to themselves)"
# Only the files that mark an `alone` test are collected (the whole suite's collection took 4 s
# here, nothing else running); every collection checks that no `alone` test lies elsewhere
# (tests/support/parallel.py). Arguments given to this script are used as they are.
alone=("$@")
if [ $# -eq 0 ]; then
  mapfile -t alone < <(.venv/bin/python -m tests.support.parallel)
fi
# Exit status 5: no test selected (a path or -k given to this script holds no `alone` test).
.venv/bin/pytest -q --durations=5 -m alone "${alone[@]}" || [ $? = 5 ]
