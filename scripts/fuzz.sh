#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan and runs each for a
# bounded time (seconds per target, default 60), starting from the seed corpora.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
./scripts/install-deps.sh
# Only the fuzzers: the rest of the tree under clang would add minutes to CI
# and is built and tested under the sanitizers already.
fuzzers=(frame_fuzzer engine_fuzzer oob_line_fuzzer cdf_fuzzer pcap_fuzzer scenario_fuzzer
         chakra_trace_fuzzer local_ring_fuzzer cm_mad_fuzzer)
./scripts/build.sh fuzz --quiet "${fuzzers[@]}"

# run_fuzzer NAME SEED_DIR...: fuzzes from a copy of the seed directories' files.
run_fuzzer() {
  local name=$1 work status=0
  shift
  work=$(mktemp -d)
  for corpus in "$@"; do find "$corpus" -maxdepth 1 -type f -exec cp {} "$work/" \;; done  # files only: examples/ has folders
  echo "fuzz: $name for ${seconds}s"
  build/fuzz/tests/fuzz/"$name" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix=build/fuzz/"$name"- "$work" >"$work.log" 2>&1 || status=$?
  grep -E "stat::number_of_executed_units|SUMMARY|ERROR" "$work.log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work.log" >&2
    echo "fuzz: $name failed (exit $status); the input is in build/fuzz/" >&2
    exit 1
  fi
  rm -rf "$work" "$work.log"
  echo "fuzz: $name ran ${seconds}s without a failure"
}

run_fuzzer frame_fuzzer tests/fuzz/corpus
run_fuzzer engine_fuzzer tests/fuzz/engine_corpus
run_fuzzer oob_line_fuzzer tests/fuzz/oob_corpus
run_fuzzer cdf_fuzzer tests/fuzz/cdf_corpus
run_fuzzer pcap_fuzzer tests/fuzz/pcap_corpus
run_fuzzer scenario_fuzzer examples
run_fuzzer chakra_trace_fuzzer tests/fuzz/chakra_corpus
run_fuzzer local_ring_fuzzer tests/fuzz/local_ring_corpus
run_fuzzer cm_mad_fuzzer tests/fuzz/cm_corpus
