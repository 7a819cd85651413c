#!/usr/bin/env bash
# Collective times from the same Chakra traces in uroce and in ASTRA-sim's
# own analytical backend (congestion-aware), in the same run: ASTRA-sim's
# example microbenchmarks (tests/sim/astra_sim_traces: all-reduce,
# all-gather, reduce-scatter and all-to-all of 1 MB on 4, 8 and 16 NPUs) on one
# switch with 100 Gb/s (12.5 GB/s) links of 1 us. uroce runs them on its
# star topology (RoCEv2 packets of 4096 bytes, PFC, DCQCN on); ASTRA-sim on
# its Switch topology (its "GB/s" are 2^30 bytes per second: 100 Gb/s is
# 11.6415 of them), ring collectives (direct all-to-all), 10 ns endpoint
# delay (it asserts with 0), each collective as one chunk and as 16 chunks
# all in flight (NCCL-like pipelining). ASTRA-sim is not
# part of uroce: build it yourself (its build/astra_analytical/build.sh)
# and point ASTRA_SIM at AstraSim_Analytical_Congestion_Aware; without it,
# only uroce runs. Prints one row per case: uroce's makespan with whole ring
# steps and with each step's transfers in 8 pipelined slices
# (`slices = 8`), ASTRA-sim's with 1 and with 16 chunks, and the bandwidth bound (nccl-tests' bus
# factor x the size / 12.5 GB/s; an all-gather's size, as ASTRA-sim reads
# it, is each rank's part: 1 MiB x NPUs gathered).
# Usage: ASTRA_SIM=/path/to/AstraSim_Analytical_Congestion_Aware bench/chakra_vs_astra_sim.sh [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/release
if [ "${1:-}" = "--build" ]; then build="$2"; fi
uroce="$build/tools/uroce"
[ -x "$uroce" ] || ./scripts/build.sh release >/dev/null
astra="${ASTRA_SIM:-}"
if [ -n "$astra" ] && [ ! -x "$astra" ]; then
  echo "chakra_vs_astra_sim: ASTRA_SIM=$astra is not an executable" >&2
  exit 2
fi
[ -n "$astra" ] || echo "chakra_vs_astra_sim: ASTRA_SIM is not set; uroce alone" >&2
traces=$(pwd)/tests/sim/astra_sim_traces

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# system CHUNKS: ASTRA-sim's system configuration
system() {
  cat <<JSON
{
  "scheduling-policy": "FIFO",
  "endpoint-delay": 10,
  "active-chunks-per-dimension": $1,
  "preferred-dataset-splits": $1,
  "all-reduce-implementation": ["ring"],
  "all-gather-implementation": ["ring"],
  "reduce-scatter-implementation": ["ring"],
  "all-to-all-implementation": ["direct"],
  "collective-optimization": "baseline",
  "local-mem-bw": 1600,
  "boost-mode": 0
}
JSON
}
system 1 > "$work/system1.json"
system 16 > "$work/system16.json"
echo '{"memory-type": "NO_MEMORY_EXPANSION"}' > "$work/memory.json"

printf "%-15s %5s %7s %16s %18s %20s %11s\n" collective npus uroce "uroce 8 slices" "ASTRA-sim 1 chunk" \
  "ASTRA-sim 16 chunks" bound
for op in all_reduce all_gather reduce_scatter all_to_all; do
  for npus in 4 8 16; do
    prefix="$traces/$op/${npus}npus_1MB/$op"
    cat > "$work/$op$npus.toml" <<TOML
name = "$op $npus"
[topology]
kind = "star"
hosts = $npus
link_gbps = 100
delay_ns = 1000
[switch]
pfc = true
[dcqcn]
enabled = true
[chakra]
traces = "$prefix"
TOML
    ours=()
    for slices in 1 8; do
      sed "s/^\[chakra\]/[chakra]\nslices = $slices/" "$work/$op$npus.toml" > "$work/sliced.toml"
      "$uroce" sim run "$work/sliced.toml" --out "$work/out" --quiet >/dev/null
      ours+=("$(python3 -c "import json; print(f\"{json.load(open('$work/out/summary.json'))['chakra']['makespan_us']:.1f}\")")")
    done
    theirs=("-" "-")
    if [ -n "$astra" ]; then
      printf 'topology: [ Switch ]\nnpus_count: [ %s ]\nbandwidth: [ 11.641532182693481 ]\nlatency: [ 1000.0 ]\n' \
        "$npus" > "$work/network.yml"
      for i in 0 1; do
        chunks=$([ "$i" = 0 ] && echo 1 || echo 16)
        cycles=$("$astra" --workload-configuration="$prefix" --system-configuration="$work/system$chunks.json" \
          --remote-memory-configuration="$work/memory.json" --network-configuration="$work/network.yml" 2>&1 |
          sed -n 's/.*sys\[0\] finished, \([0-9]*\) cycles.*/\1/p')
        theirs[$i]=$(python3 -c "print(f'{$cycles / 1000:.1f}')")  # cycles are nanoseconds
      done
    fi
    bound=$(python3 -c "
n = $npus
factor = {'all_reduce': 2 * (n - 1) / n}.get('$op', (n - 1) / n)
size = 2**20 * (n if '$op' == 'all_gather' else 1)
print(f'{factor * size / 12.5e9 * 1e6:.1f}')")
    printf "%-15s %5s %7s %16s %18s %20s %11s\n" "$op" "$npus" "${ours[0]}" "${ours[1]}" "${theirs[0]}" "${theirs[1]}" \
      "$bound"
  done
done
