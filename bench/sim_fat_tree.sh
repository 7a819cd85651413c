#!/usr/bin/env bash
# Simulator speed on the issue's reference scenario: a 3-tier fat-tree, 100G
# links, 1 us per hop, MTU 4096, a permutation of 2 MiB flows, PFC on (no
# DCQCN), for k = 8 (128 hosts) and k = 16 (1024 hosts), and k = 32 (8192
# hosts) with --large. Prints data packets/s, events/s, wall time and peak
# memory per size. --threads N runs uroce sim run on N threads (the same
# results). Usage: bench/sim_fat_tree.sh [--large] [--threads N] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/fat_tree_scenario.sh

build=build/release
threads=1
sizes=(8 16)
while [ $# -gt 0 ]; do
  case "$1" in
    --large) sizes+=(32); shift ;;
    --threads) threads="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "usage: $0 [--large] [--threads N] [--build DIR]" >&2; exit 2 ;;
  esac
done
uroce="$build/tools/uroce"
[ -x "$uroce" ] || ./scripts/build.sh release >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '| k | hosts | data packets | events | wall s | data packets/s | M events/s | peak RSS MiB |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for k in "${sizes[@]}"; do
  write_fat_tree_scenario "$k" "$work/fat_tree_$k.toml"
  /usr/bin/time -f '%M' -o "$work/rss_$k" "$uroce" sim run "$work/fat_tree_$k.toml" --out "$work/out_$k" --threads "$threads" --quiet >/dev/null
  python3 - "$work/out_$k/summary.json" "$work/rss_$k" "$k" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
rss_kib = int(open(sys.argv[2]).read().split()[-1])
packets = summary["totals"]["data_packets"]
wall = summary["wall_s"]
print(f"| {sys.argv[3]} | {summary['hosts']} | {packets} | {summary['events']} | {wall:.2f} | "
      f"{packets / wall:,.0f} | {summary['events'] / wall / 1e6:.2f} | {rss_kib / 1024:.0f} |")
PY
done
