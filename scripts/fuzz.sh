#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan and runs each for a
# bounded time (seconds per target, default 60), starting from the seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
./scripts/install-deps.sh
./scripts/build.sh fuzz >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/* "$work/"
echo "fuzz: frame_fuzzer for ${seconds}s"
status=0
build/fuzz/tests/fuzz/frame_fuzzer -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix=build/fuzz/ "$work" >"$work.log" 2>&1 || status=$?
grep -E "stat::number_of_executed_units|SUMMARY|ERROR" "$work.log" || true
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work.log" >&2
  echo "fuzz: frame_fuzzer failed (exit $status); the input is in build/fuzz/" >&2
  exit 1
fi
rm -f "$work.log"
echo "fuzz: frame_fuzzer ran ${seconds}s without a failure"
