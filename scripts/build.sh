#!/usr/bin/env bash
# Configures and builds one flavour of uroce into build/<flavour>.
#   release (default): optimised, with tests and benchmarks
#   asan:              AddressSanitizer + UndefinedBehaviorSanitizer at -O1 with asserts, tests only
#   fuzz:              clang with libFuzzer targets (+ ASan/UBSan)
# With --quiet as second argument the build's output is shown only if it fails.
# Any further arguments name the targets to build (all of them by default).
set -euo pipefail
cd "$(dirname "$0")/.."

flavour=${1:-release}
shift || true
quiet=
if [ "${1:-}" = "--quiet" ]; then quiet=--quiet; shift; fi
targets=("$@")
jobs=$(nproc)
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  # Debug keeps every assert; -O1 is what the sanitizers' authors advise, and
  # runs the simulator's tests several times faster than -O0. GCC 12 warns of
  # uninitialised std::function members inside std::regex at -O1 with ASan, falsely.
  asan)    args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1 -Wno-maybe-uninitialized" "-DCMAKE_C_FLAGS_DEBUG=-g -O1"
                 -DUROCE_SANITIZE=ON -DUROCE_BENCH=OFF) ;;
  fuzz)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DUROCE_SANITIZE=ON
                 -DUROCE_FUZZ=ON -DUROCE_BENCH=OFF) ;;
  *) echo "usage: $0 [release|asan|fuzz] [--quiet] [TARGET...]" >&2; exit 2 ;;
esac

build() {
  cmake -S . -B "build/$flavour" -G Ninja "${args[@]}" >/dev/null
  if [ ${#targets[@]} -gt 0 ]; then
    cmake --build "build/$flavour" -j "$jobs" --target "${targets[@]}"
  else
    cmake --build "build/$flavour" -j "$jobs"
  fi
}

if [ "$quiet" = "--quiet" ]; then
  log=$(mktemp)
  if ! build >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
else
  build
fi
