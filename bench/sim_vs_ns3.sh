#!/usr/bin/env bash
# The simulator against ns-3 (Debian's libns3-dev) in the same run, on the
# fat-tree benchmark scenario: 100 Gb/s links, 1 us per hop, a permutation
# of 2 MiB transfers, k = 4 and 8 (16 and 128 hosts). uroce runs RoCE with
# PFC and its whole engine on every host; ns-3 has no RoCE, so
# bench/ns3_fat_tree.cc runs TCP bulk sends with 4000-byte segments over the
# same fabric with ECMP. Same bytes, about the same number of data packets,
# different transport: compare simulator throughput, not network behaviour.
# Installs libns3-dev and libgsl-dev if missing (needs root then).
# Usage: bench/sim_vs_ns3.sh [--build DIR] [--sizes "4 8"]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/fat_tree_scenario.sh

build=build/release
sizes="4 8"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--sizes \"4 8\"]" >&2; exit 2 ;;
  esac
done
uroce="$build/tools/uroce"
[ -x "$uroce" ] || ./scripts/build.sh release >/dev/null

if ! pkg-config --exists ns3-core || [ ! -e /usr/lib/x86_64-linux-gnu/libgsl.so ]; then
  [ "$(id -u)" = 0 ] || { echo "ns-3 is missing: apt-get install libns3-dev libgsl-dev (as root)" >&2; exit 1; }
  apt-get install -y -q libns3-dev libgsl-dev >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# ns-3 3.37's headers do not compile as C++20.
g++ -O2 -std=c++17 bench/ns3_fat_tree.cc -o "$work/ns3_fat_tree" \
  $(pkg-config --cflags --libs ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications) 2>/dev/null

printf '| simulator | k | hosts | data packets | events | wall s (run) | data packets/s | events/s |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|\n'
for k in $sizes; do
  write_fat_tree_scenario "$k" "$work/fat_tree_$k.toml"
  "$uroce" sim run "$work/fat_tree_$k.toml" --out "$work/out_$k" --quiet >/dev/null
  python3 - "$work/out_$k/summary.json" "$k" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p, e, w = s["totals"]["data_packets"], s["events"], s["wall_s"]
print(f"| uroce sim | {sys.argv[2]} | {s['hosts']} | {p} | {e} | {w:.2f} | {p / w:,.0f} | {e / w:,.0f} |")
PY
  "$work/ns3_fat_tree" "$k" > "$work/ns3_$k"
  python3 - "$work/ns3_$k" <<'PY'
import sys
f = dict(kv.split("=") for kv in open(sys.argv[1]).read().split())
p, e, w = int(f["data_packets"]), int(f["events"]), float(f["run_s"])
print(f"| ns-3 3.37 (TCP) | {f['k']} | {f['hosts']} | {p} | {e} | {w:.2f} | {p / w:,.0f} | {e / w:,.0f} |")
PY
done
