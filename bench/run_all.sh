#!/usr/bin/env bash
# Every performance script, one after the other; each prints its figures (none asserts).
# Takes about 25 minutes on 2 cores. Record what they print in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== tpcc driver";            bash bench/tpcc_bench.sh
echo "== snapshot restore";       .venv/bin/python bench/restore_bench.py
echo "== sampler cost";           .venv/bin/python bench/sampler_cost.py
echo "== observer effect";        .venv/bin/python bench/observer_effect.py
echo "== analysis";               .venv/bin/python bench/analysis_bench.py
