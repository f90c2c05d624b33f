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
.venv/bin/ruff check flushbench runner analysis store tests bench
echo "== go test (tpcc driver)"
# The fast lane (FLUSHBENCH_FAST_LANE=1, `make test-fast`) skips the driver's tests against a
# real MariaDB (go test -short); `make test` runs them all.
go_short=()
[ "${FLUSHBENCH_FAST_LANE:-}" = 1 ] && go_short=(-short)
(cd tpcc && go vet ./... && go test -count=1 "${go_short[@]}" ./...)
echo "== pytest"
# The slowest tests are listed every run (docs/benchmarks.md keeps the figures).
.venv/bin/pytest -q --durations=20 "$@"
