# Thin entry points; the real work is in scripts/ and the flushbench CLI.
.PHONY: setup quickstart test test-fast costly-list bench lint study-bundles

setup:
	bash scripts/setup.sh

# Runs experiments/quickstart.yaml end to end and writes reports/quickstart/report.html.
quickstart: setup
	.venv/bin/flushbench run experiments/quickstart.yaml
	.venv/bin/flushbench report quickstart -o reports/quickstart

test: setup
	bash scripts/setup.sh --test-servers
	bash scripts/test.sh

# The inner loop: lint, Go tests and every Python test that starts no server and changes
# nothing on the host (no mysqld, no PostgreSQL, no cgroups/THP), and none marked `slow`
# (notebooks, headless Chromium, many processes), `study_db` (the readers of a committed
# study's whole database) or `costly` (0.7 CPU-s or more each, tests/costly.txt): those
# were most of the lane's CPU. Target: under 90 s.
FAST_LANE = not mysql and not postgres and not host_control and not slow and not study_db
test-fast: setup
	FLUSHBENCH_FAST_LANE=1 bash scripts/test.sh -m "$(FAST_LANE) and not costly"

# Measure the lane with its costly tests and list them again (tests/support/costly.py); the
# profile stays in /tmp for scripts/test_cpu_summary.py.
COSTLY_PROFILE = /tmp/flushbench-fast-lane-cpu.jsonl
costly-list: setup
	rm -f $(COSTLY_PROFILE)
	-FLUSHBENCH_TEST_CPU=$(COSTLY_PROFILE) FLUSHBENCH_FAST_LANE=1 bash scripts/test.sh -m "$(FAST_LANE)"
	.venv/bin/python scripts/test_cpu_summary.py $(COSTLY_PROFILE) --top 10 \
	  --write-costly tests/costly.txt

bench: setup
	bash bench/run_all.sh

# The committed studies (docs/study-2011, docs/allocators) as bundles in reports/bundles/.
study-bundles: setup
	.venv/bin/python scripts/study_bundles.py pack

lint:
	.venv/bin/ruff check core flushbench runner analysis store tests bench
