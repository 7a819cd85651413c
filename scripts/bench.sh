#!/usr/bin/env bash
# Builds the release flavour and runs the wire and engine benchmarks (memcpy
# and memcpy + ICRC are the peers measured in the same run). Extra arguments go to Google Benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
./scripts/build.sh release --quiet
for bench in wire_bench engine_bench; do
  build/release/bench/$bench --benchmark_min_time=0.2 --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true "$@"
done
