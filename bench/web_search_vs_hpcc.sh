#!/usr/bin/env bash
# The web-search workload against HPCC's ns-3 (issue 35, part 4): DCTCP's
# web-search flow sizes (the peer's traffic_gen/WebSearch_distribution.txt)
# at 30% and 50% load for 10 ms on a k = 4 fat-tree of 100 Gb/s, 1 us links
# (16 hosts, the peer's node n is uroce's host n, its node 16 + s uroce's
# switch s), DCQCN with the peer's Mellanox settings (config_mlx.txt of
# tests/sim/validation/hpcc_dcqcn) in both.
#
# With HPCC_DIR pointing at a built copy of the peer's simulation/
# directory (build/scratch/third must exist; this script never builds it)
# and --make, it writes the inputs into tests/sim/validation/hpcc_websearch:
# the topology, one flow file per load and traffic seed (the peer's own
# traffic_gen.py under Python 2 with random.seed(seed); PYTHON2 names the
# interpreter, default python2), and runs the unmodified peer on each,
# keeping its FCT files. Without --make it prints the comparison that
# tests/sim/web_search_validation_test.cc asserts (uroce's runs against the
# stored peer results).
# Usage: bench/web_search_vs_hpcc.sh [--build DIR] [--make]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/release
make=false
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --make) make=true; shift ;;
    *) echo "usage: $0 [--build DIR] [--make]  (HPCC_DIR=... with --make)" >&2; exit 2 ;;
  esac
done
data=tests/sim/validation/hpcc_websearch
seeds="1 2 3 4 5"
loads="30 50"

if $make; then
  [ -n "${HPCC_DIR:-}" ] || { echo "--make needs HPCC_DIR (the peer's simulation/ directory, built)" >&2; exit 1; }
  third="$HPCC_DIR/build/scratch/third"
  [ -x "$third" ] || { echo "HPCC_DIR=$HPCC_DIR has no build/scratch/third: build the peer first" >&2; exit 1; }
  gen="$HPCC_DIR/../traffic_gen"
  python2="${PYTHON2:-python2}"
  mkdir -p "$data"
  # The k = 4 fat-tree as uroce's fat_tree() numbers it: edge switches 0-7
  # (edge e holds hosts 2e, 2e + 1), aggregation 8-15, cores 16-19.
  python3 - "$data/topo_fat4.txt" <<'PY'
import sys
k, half = 4, 2
links = []
for pod in range(k):
    for e in range(half):
        edge = pod * half + e
        for i in range(half):
            links.append((edge * half + i, 16 + edge))
        for a in range(half):
            links.append((16 + edge, 16 + 8 + pod * half + a))
    for a in range(half):
        for c in range(half):
            links.append((16 + 8 + pod * half + a, 16 + 16 + a * half + c))
with open(sys.argv[1], "w") as out:
    out.write(f"36 20 {len(links)}\n")
    out.write(" ".join(str(16 + s) for s in range(20)) + "\n")
    for a, b in links:
        out.write(f"{a} {b} 100Gbps 0.001ms 0\n")
PY
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  printf '1\n0\n' > "$work/trace.txt"
  cp "$data/topo_fat4.txt" "$work/"
  for load in $loads; do
    for seed in $seeds; do
      name="l${load}_s${seed}"
      (cd "$gen" && "$python2" -c "
import random, sys
random.seed($seed)
sys.argv = ['traffic_gen.py', '-c', 'WebSearch_distribution.txt', '-n', '16', '-l', '0.$load', '-b', '100G',
            '-t', '0.01', '-o', '$work/flows_$name.txt']
execfile('traffic_gen.py')")
      cp "$work/flows_$name.txt" "$data/"
      sed -e "s|^TOPOLOGY_FILE .*|TOPOLOGY_FILE ./topo_fat4.txt|" -e "s|^FLOW_FILE .*|FLOW_FILE ./flows_$name.txt|" \
          -e "s|^FCT_OUTPUT_FILE .*|FCT_OUTPUT_FILE ./fct_$name.txt|" -e "s|^SIMULATOR_STOP_TIME .*|SIMULATOR_STOP_TIME 3|" \
          -e "s|_mlx|_$name|" tests/sim/validation/hpcc_dcqcn/config_mlx.txt > "$work/config_$name.txt"
      start=$(date +%s.%N)
      (cd "$work" && LD_LIBRARY_PATH="$HPCC_DIR/build" "$third" "config_$name.txt" >/dev/null 2>&1)
      echo "peer $name: $(head -1 "$work/flows_$name.txt") flows, $(wc -l < "$work/fct_$name.txt") finished," \
           "$(echo "$(date +%s.%N) - $start" | bc) s"
      cp "$work/fct_$name.txt" "$data/"
    done
  done
fi

tests="$build/tests/uroce_sim_tests"
[ -x "$tests" ] || ./scripts/build.sh release >/dev/null
"$tests" --gtest_filter='WebSearchValidation.*' | grep -v '^\[\|^Running main\|^Note:' || true
