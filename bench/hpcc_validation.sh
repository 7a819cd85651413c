#!/usr/bin/env bash
# DCQCN against HPCC's ns-3 (alibaba-edu/High-Precision-Congestion-Control,
# CC_MODE 1) on its parking lot, in the three configurations of
# tests/sim/validation/hpcc_dcqcn/ (read its README). Prints uroce's
# slowdowns by finishing rank (the mean of 10 seeds) beside the peer's stored
# results, as tests/sim/hpcc_validation_test.cc asserts them.
# With HPCC_DIR pointing at a built copy of the peer's simulation/ directory
# (build/scratch/third must exist; this script never builds it), it also
# reruns the peer on the same inputs with ns-3 RNG runs 1..PEER_RUNS
# (default 5) and prints its completion times, so both sides come from one
# run on one machine. --save stores each rerun's FCT file in the data
# directory as fct_<config>_run<N>.txt, the files the test compares with.
# Usage: bench/hpcc_validation.sh [--build DIR] [--save]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/release
save=false
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --save) save=true; shift ;;
    *) echo "usage: $0 [--build DIR] [--save]  (HPCC_DIR=... to rerun the peer)" >&2; exit 2 ;;
  esac
done
tests="$build/tests/uroce_sim_tests"
[ -x "$tests" ] || ./scripts/build.sh release >/dev/null
data=tests/sim/validation/hpcc_dcqcn

echo "== uroce (tests/sim/hpcc_validation_test.cc)"
"$tests" --gtest_filter='HpccDcqcnValidation.*' | grep -v '^\[\|^Running main\|^Note:'  || true

[ -n "${HPCC_DIR:-}" ] || { echo "(HPCC_DIR unset: the peer's stored results only)"; exit 0; }
third="$HPCC_DIR/build/scratch/third"
[ -x "$third" ] || { echo "HPCC_DIR=$HPCC_DIR has no build/scratch/third: build the peer first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$data"/topo_pl.txt "$data"/flow_pl.txt "$work"/
printf '1\n0\n' > "$work/trace.txt"
echo "== the peer rerun: $third, ns-3 RngRun 1..${PEER_RUNS:-5}"
for config in mlx paper paper_k5; do
  for run in $(seq 1 "${PEER_RUNS:-5}"); do
    cp "$data/config_$config.txt" "$work/config.txt"
    (cd "$work" && NS_GLOBAL_VALUE="RngRun=$run" LD_LIBRARY_PATH="$HPCC_DIR/build" \
       "$third" config.txt >/dev/null 2>&1)
    if $save; then cp "$work/fct_$config.txt" "$data/fct_${config}_run$run.txt"; fi
    # Host n is 11.0.n.1; print each sender's FCT in us.
    awk -v c="$config" -v r="$run" -f <(cat <<'AWK'
{ hex = "0123456789abcdef"
  host = 16 * (index(hex, substr($1, 5, 1)) - 1) + index(hex, substr($1, 6, 1)) - 1
  fct[host] = $7 / 1000 }
END { printf "%s run %s:", c, r; for (h = 0; h < 4; h++) printf " h%d=%.0f", h, fct[h]; printf "\n" }
AWK
) "$work/fct_$config.txt"
  done
done
