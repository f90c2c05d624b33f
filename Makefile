# Thin entry points; the real work is in scripts/ and the flushbench CLI.
.PHONY: setup quickstart test bench lint

setup:
	bash scripts/setup.sh

# Runs experiments/quickstart.yaml end to end and writes reports/quickstart/report.html.
quickstart: setup
	.venv/bin/flushbench run experiments/quickstart.yaml
	.venv/bin/flushbench report quickstart -o reports/quickstart

test: setup
	bash scripts/test.sh

bench: setup
	bash bench/run_all.sh

lint:
	.venv/bin/ruff check flushbench runner analysis store tests bench
