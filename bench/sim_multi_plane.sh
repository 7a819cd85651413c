#!/usr/bin/env bash
# Simulator scale on two-tier 8-plane fabrics (issue 17): 800 Gb/s NICs as 8
# ports of 100 Gb/s, one per plane; each plane a leaf-spine of radix-256
# switches (128 hosts and 128 uplinks per leaf, 128 spines), no
# oversubscription. One collective step at its hardest: every NIC sends
# 256 KiB to a random other NIC (a permutation), with multipath QPs of 128
# EVs and PFC; or, with --allreduce, one whole all-reduce of 256 KiB by
# recursive halving-doubling (2 log2 n steps, a QP per partner). Prints
# NICs, switches, links, data packets, events, wall time and peak memory
# per size: 512 and 4,096 NICs, 32,768 with --large, and 131,072 with
# --huge (the all-reduce needs about 18 GiB there).
# --threads N runs either on N threads (partitions; the same results);
# --ranks N on N MPI processes (mpirun; N x threads partitions, the same
# results), whose peak RSS is then the largest rank's.
# Usage: bench/sim_multi_plane.sh [--large] [--huge] [--allreduce] [--threads N] [--ranks N] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/release
threads=1
ranks=1
leaves=(4 32)
allreduce=0
while [ $# -gt 0 ]; do
  case "$1" in
    --large) leaves+=(256); shift ;;
    --huge) leaves+=(1024); shift ;;
    --allreduce) allreduce=1; shift ;;
    --threads) threads="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "usage: $0 [--large] [--huge] [--allreduce] [--threads N] [--ranks N] [--build DIR]" >&2; exit 2 ;;
  esac
done
uroce="$build/tools/uroce"
[ -x "$uroce" ] || ./scripts/build.sh release >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
launch=()
if [ "$ranks" -gt 1 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  launch=(mpirun -np "$ranks")
fi

printf '| NICs | switches | links | data packets | events | simulated us | wall s | data packets/s | peak RSS MiB |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for l in "${leaves[@]}"; do
  if [ "$allreduce" = 1 ]; then
    workload="kind = \"collective\"
operation = \"all_reduce\"
algorithm = \"halving_doubling\"
count = $((l * 128))
bytes = 262144"
  else
    workload="kind = \"permutation\"
bytes = 262144"
  fi
  cat > "$work/planes_$l.toml" <<TOML
name = "8 planes, $l leaves each"
seed = 1
[topology]
kind = "multi_plane"
planes = 8
leaves = $l
spines = 128
hosts_per_leaf = 128
link_gbps = 100
delay_ns = 1000
[switch]
pfc = true
[transport]
recovery = "selective_repeat"
multipath_evs = 128
[[workloads]]
$workload
TOML
  /usr/bin/time -f '%M' -o "$work/rss_$l" "${launch[@]}" "$uroce" sim run "$work/planes_$l.toml" --out "$work/out_$l" --threads "$threads" --quiet >/dev/null
  python3 - "$work/out_$l/summary.json" "$work/rss_$l" "$l" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
rss_kib = int(open(sys.argv[2]).read().split()[-1])
leaves = int(sys.argv[3])
links = 8 * (leaves * 128 + leaves * 128)
packets = summary["totals"]["data_packets"]
wall = summary["wall_s"]
print(f"| {summary['hosts']:,} | {summary['switches']:,} | {links:,} | {packets:,} | {summary['events']:,} | "
      f"{summary['sim_time_us']:.1f} | {wall:.2f} | {packets / wall:,.0f} | {rss_kib / 1024:.0f} |")
PY
done
