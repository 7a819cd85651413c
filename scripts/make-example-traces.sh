#!/usr/bin/env bash
# Writes the Chakra traces that examples/chakra_*.toml replay: a
# data-parallel training step and a mixture-of-experts step on 8 ranks
# (src/chakra/example_traces.h says what is in them). The files in examples/
# were made by this script; SimCli.TheShippedExampleTracesAreWhatTheGeneratorWrites
# (tests/tools/sim_cli_test.cc) checks they
# still match what it makes.
# Usage: scripts/make-example-traces.sh [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
if [[ "${1:-}" == "--build" ]]; then build="$2"; fi
uroce="$build/tools/uroce"
[[ -x "$uroce" ]] || { echo "$uroce is missing: build first (scripts/build.sh)" >&2; exit 1; }
mkdir -p examples/chakra/data_parallel examples/chakra/mixture_of_experts
"$uroce" chakra example data_parallel --ranks 8 --out examples/chakra/data_parallel/step
"$uroce" chakra example mixture_of_experts --ranks 8 --out examples/chakra/mixture_of_experts/step
