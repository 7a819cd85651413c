#!/usr/bin/env bash
# Simulator speed against htsim (Broadcom/csg-htsim's htsim_roce) in the
# same run: the fat-tree permutation of bench/sim_fat_tree.sh (100G links,
# 1 us per hop, MTU 4096, 2 MiB flows, PFC, ECMP), k = 8 and 16 (and 32
# with --large). htsim is not part of uroce: build it yourself and point
# HTSIM_DIR at its sim/datacenter directory (htsim_roce and
# connection_matrices/gen_permutation.py); without it, only uroce runs.
# Both sides send 512 data packets per flow. Prints wall time, data
# packets per second and peak memory for each. Usage:
#   HTSIM_DIR=/path/to/csg-htsim/sim/datacenter bench/sim_vs_htsim.sh [--large] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/fat_tree_scenario.sh

build=build/release
sizes=(8 16)
while [ $# -gt 0 ]; do
  case "$1" in
    --large) sizes+=(32); shift ;;
    --build) build="$2"; shift 2 ;;
    *) echo "usage: $0 [--large] [--build DIR]" >&2; exit 2 ;;
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

printf '| simulator | k | hosts | data packets | wall s | data packets/s | peak RSS MiB |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for k in "${sizes[@]}"; do
  hosts=$((k * k * k / 4))
  packets=$((hosts * 512))
  write_fat_tree_scenario "$k" "$work/fat_tree_$k.toml"
  /usr/bin/time -f '%e %M' -o "$work/uroce_$k" "$uroce" sim run "$work/fat_tree_$k.toml" --out "$work/out_$k" --quiet >/dev/null
  read -r wall rss < "$work/uroce_$k"
  finished=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['flows_finished'])" "$work/out_$k/summary.json")
  [ "$finished" = "$hosts" ] || echo "sim_vs_htsim: uroce finished $finished of $hosts flows at k=$k" >&2
  python3 -c "import sys; w=float(sys.argv[3]); print(f'| uroce | {sys.argv[1]} | {sys.argv[2]} | {int(sys.argv[4]):,} | {w:.2f} | {int(sys.argv[4])/w:,.0f} | {int(sys.argv[5])/1024:.0f} |')" \
    "$k" "$hosts" "$wall" "$packets" "$rss"
  [ -n "$htsim" ] || continue
  python3 "$htsim/connection_matrices/gen_permutation.py" "$work/perm_$k.cm" "$hosts" "$hosts" 2097152 0 1 >/dev/null
  (cd "$work" && /usr/bin/time -f '%e %M' -o "$work/htsim_$k" "$htsim/htsim_roce" -nodes "$hosts" -tm "$work/perm_$k.cm" \
     -linkspeed 100000 -mtu 4096 -hop_latency 1 -end 1000000 -strat ecmp_host -paths 1 > "$work/htsim_$k.log" 2>&1)
  read -r wall rss < "$work/htsim_$k"
  finished=$(grep -c "^Flow .* finished" "$work/htsim_$k.log" || true)
  [ "$finished" = "$hosts" ] || echo "sim_vs_htsim: htsim finished $finished of $hosts flows at k=$k" >&2
  python3 -c "import sys; w=float(sys.argv[3]); print(f'| htsim_roce | {sys.argv[1]} | {sys.argv[2]} | {int(sys.argv[4]):,} | {w:.2f} | {int(sys.argv[4])/w:,.0f} | {int(sys.argv[5])/1024:.0f} |')" \
    "$k" "$hosts" "$wall" "$packets" "$rss"
done
