#!/usr/bin/env bash
# Builds the release flavour and runs the wire and engine benchmarks (memcpy
# and memcpy + ICRC are the peers measured in the same run). Extra arguments go to Google Benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
build_log=$(mktemp)
if ! ./scripts/build.sh release >"$build_log" 2>&1; then
  cat "$build_log" >&2
  exit 1
fi
rm -f "$build_log"
for bench in wire_bench engine_bench; do
  build/release/bench/$bench --benchmark_min_time=0.2 --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true "$@"
done
