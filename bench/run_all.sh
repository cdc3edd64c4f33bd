#!/usr/bin/env bash
# `make bench`: run every bench/bench_*.py (each writes bench/results/<name>.json and prints a
# summary), then rebuild the summary table in docs/benchmarks.md from the results.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for script in bench/bench_*.py; do
  echo "== $script"
  .venv/bin/python "$script" || { echo "!! $script failed"; status=1; }
done
.venv/bin/python bench/summarize.py || status=1
exit $status
