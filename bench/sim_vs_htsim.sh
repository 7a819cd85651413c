#!/usr/bin/env bash
# Simulator speed against htsim (Broadcom/csg-htsim's htsim_roce) in the
# same run: the fat-tree permutation of bench/sim_fat_tree.sh (100G links,
# 1 us per hop, MTU 4096, 2 MiB flows, PFC, ECMP), k = 8 and 16 (and 32
# with --large). htsim is not part of uroce: build it yourself and point
# HTSIM_DIR at its sim/datacenter directory (htsim_roce and
# connection_matrices/gen_permutation.py); without it, only uroce runs.
# uroce runs on one thread and on --threads N (default: the machine's
# cores), and the script checks that both wrote the same summary. Both
# simulators send 512 data packets per flow. Each cell is the median wall
# time (whole process, from its start to its exit) of --repeat runs
# (default 3; k = 32 runs once). Prints wall time, data packets per second
# and peak memory. With --ranks N, uroce also runs on N MPI processes of
# one thread each (mpirun; each rank holds only its own partitions, and
# the summary must again be one thread's); its peak memory is the largest
# rank's. Usage:
#   HTSIM_DIR=/path/to/csg-htsim/sim/datacenter bench/sim_vs_htsim.sh [--large] [--threads N] [--ranks N] [--repeat R] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/fat_tree_scenario.sh

build=build/release
sizes=(8 16)
threads=$(nproc)
ranks=1
repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --large) sizes+=(32); shift ;;
    --threads) threads="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "usage: $0 [--large] [--threads N] [--ranks N] [--repeat R] [--build DIR]" >&2; exit 2 ;;
  esac
done
uroce="$build/tools/uroce"
[ -x "$uroce" ] || ./scripts/build.sh release >/dev/null
htsim="${HTSIM_DIR:-}"
if [ -n "$htsim" ] && [ ! -x "$htsim/htsim_roce" ]; then
  echo "sim_vs_htsim: no htsim_roce in HTSIM_DIR=$htsim" >&2
  exit 2
fi
[ -n "$htsim" ] || echo "sim_vs_htsim: HTSIM_DIR is not set; uroce alone" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# timed OUT COMMAND...: runs it, leaves "wall_s peak_rss_kib" in OUT. Timed
# from just before the fork to the exit (no timer process around it).
timed() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
out, command = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
subprocess.run(command, check=False)
wall = time.perf_counter() - start
with open(out, "w") as f:
    f.write(f"{wall} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\n")
PY
}
# median WALL_RSS_FILES...: "median_wall max_rss"
median() {
  cat "$@" | sort -n | python3 -c "import sys; rows=[l.split() for l in sys.stdin]; w=sorted(float(r[0]) for r in rows); print(w[len(w)//2], max(int(r[1]) for r in rows))"
}
row() {  # simulator k hosts packets wall rss
  python3 -c "import sys; w=float(sys.argv[5]); print(f'| {sys.argv[1]} | {sys.argv[2]} | {sys.argv[3]} | {int(sys.argv[4]):,} | {w:.3f} | {int(sys.argv[4])/w:,.0f} | {int(sys.argv[6])/1024:.0f} |')" "$@"
}

printf '| simulator | k | hosts | data packets | wall s | data packets/s | peak RSS MiB |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for k in "${sizes[@]}"; do
  hosts=$((k * k * k / 4))
  packets=$((hosts * 512))
  runs=$repeat
  [ "$k" -lt 32 ] || runs=1
  write_fat_tree_scenario "$k" "$work/fat_tree_$k.toml"
  thread_counts=(1)
  [ "$threads" = 1 ] || thread_counts+=("$threads")
  for t in "${thread_counts[@]}"; do
    for r in $(seq "$runs"); do
      timed "$work/uroce_${k}_${t}_$r" "$uroce" sim run "$work/fat_tree_$k.toml" --out "$work/out_${k}_$t" --threads "$t" --quiet >/dev/null
    done
    finished=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['flows_finished'])" "$work/out_${k}_$t/summary.json")
    [ "$finished" = "$hosts" ] || echo "sim_vs_htsim: uroce finished $finished of $hosts flows at k=$k" >&2
    read -r wall rss <<< "$(median "$work"/uroce_${k}_${t}_*[0-9])"
    label="uroce, 1 thread"
    [ "$t" = 1 ] || label="uroce, $t threads"
    row "$label" "$k" "$hosts" "$packets" "$wall" "$rss"
  done
  if [ "$threads" != 1 ]; then
    python3 - "$work/out_${k}_1/summary.json" "$work/out_${k}_$threads/summary.json" <<'PY' || echo "sim_vs_htsim: 1 and $threads threads disagree at k=$k" >&2
import json, sys
one, many = (json.load(open(p)) for p in sys.argv[1:3])
for s in (one, many):
    s.pop("wall_s", None)
sys.exit(0 if one == many else 1)
PY
  fi
  if [ "$ranks" -gt 1 ]; then
    for r in $(seq "$runs"); do
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
        OMPI_MCA_btl_vader_single_copy_mechanism=none \
        timed "$work/uroce_${k}_ranks_$r" mpirun -np "$ranks" "$uroce" sim run "$work/fat_tree_$k.toml" \
        --out "$work/out_${k}_ranks" --quiet >/dev/null
    done
    python3 - "$work/out_${k}_1/summary.json" "$work/out_${k}_ranks/summary.json" <<'PY' || echo "sim_vs_htsim: 1 thread and $ranks ranks disagree at k=$k" >&2
import json, sys
one, many = (json.load(open(p)) for p in sys.argv[1:3])
for s in (one, many):
    s.pop("wall_s", None)
    s.pop("ranks", None)
sys.exit(0 if one == many else 1)
PY
    read -r wall rss <<< "$(median "$work"/uroce_${k}_ranks_*[0-9])"
    row "uroce, $ranks ranks" "$k" "$hosts" "$packets" "$wall" "$rss"
  fi
  [ -n "$htsim" ] || continue
  python3 "$htsim/connection_matrices/gen_permutation.py" "$work/perm_$k.cm" "$hosts" "$hosts" 2097152 0 1 >/dev/null
  for r in $(seq "$runs"); do
    (cd "$work" && timed "$work/htsim_${k}_$r" "$htsim/htsim_roce" -nodes "$hosts" -tm "$work/perm_$k.cm" \
       -linkspeed 100000 -mtu 4096 -hop_latency 1 -end 1000000 -strat ecmp_host -paths 1 > "$work/htsim_$k.log" 2>&1)
  done
  finished=$(grep -c "^Flow .* finished" "$work/htsim_$k.log" || true)
  [ "$finished" = "$hosts" ] || echo "sim_vs_htsim: htsim finished $finished of $hosts flows at k=$k" >&2
  read -r wall rss <<< "$(median "$work"/htsim_${k}_*[0-9])"
  row htsim_roce "$k" "$hosts" "$packets" "$wall" "$rss"
done
