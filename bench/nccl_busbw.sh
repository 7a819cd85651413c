#!/usr/bin/env bash
# nccl-tests' all_reduce_perf, simulated: uroce's all-reduce on H100-class
# GPU servers (8 GPUs, NVLink 450 GB/s each way, a 400 Gb/s NIC per GPU,
# rail-optimized; examples/nccl_gpu_servers.toml), one server and two, at
# sizes from 1 MiB to 1 GiB, by ring, by double binary tree and by uroce's
# choice (algorithm = "auto"); prints each size's algbw and busbw (GB/s,
# nccl-tests' definitions) as nccl-tests prints them. docs/benchmarks-log.md sets
# these beside published nccl-tests figures for such servers.
# Usage: bench/nccl_busbw.sh [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build/release
if [ "${1:-}" = "--build" ]; then build="$2"; fi
uroce="$build/tools/uroce"
[ -x "$uroce" ] || ./scripts/build.sh release >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# scenario SERVERS BYTES ALGORITHM: the example on SERVERS servers (a rail
# is a leaf of SERVERS NICs), all-reducing BYTES.
scenario() {
  sed -e "s/^hosts_per_leaf = 4/hosts_per_leaf = $1/" -e "s/^bytes = 1048576/bytes = $2/" \
      -e "s/^algorithm = \"auto\"/algorithm = \"$3\"/" -e "s/^time_limit_us = 100000/time_limit_us = 1000000/" \
      examples/nccl_gpu_servers.toml > "$out/s.toml"
}

for servers in 1 2; do
  echo "== $servers server(s) of 8 GPUs: all-reduce, GB/s"
  printf '%12s' size
  for algorithm in ring double_binary_tree auto; do printf ' | %-26s' "$algorithm algbw busbw"; done
  echo
  for bytes in 1048576 16777216 134217728 1073741824; do
    printf '%12s' "$bytes"
    for algorithm in ring double_binary_tree auto; do
      scenario "$servers" "$bytes" "$algorithm"
      "$uroce" sim run "$out/s.toml" --out "$out/run" --quiet >/dev/null
      python3 - "$out/run/summary.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["collective"]
name = c["algorithm"].replace("double_binary_tree", "tree")
print(f" | {name:>5} {c['algbw_gb_per_s'][0]:8.1f} {c['busbw_gb_per_s'][0]:8.1f}    ", end="")
PY
    done
    echo
  done
done
