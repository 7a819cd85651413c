#!/usr/bin/env bash
# What loss probes buy and cost, in one run:
# - the longest stall of a 32 MiB stream of 64 KiB RDMA WRITEs (one at a
#   time, Local ACK Timeout 1 s as UCX sets it) under 1% forced drops
#   (nftables, in a network namespace; needs root), with probes at 1 ms, at
#   the library's 5 ms and off;
# - ib_write_bw 64 KiB on the wire (no drops) with probes off, at 1 ms and
#   at 5 ms, alternating, RUNS times each: a probe that fires while ACKs lag
#   behind a deep receive queue is spurious.
#
#   bench/loss_probes.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
UROCE=build/release/tools/uroce
[[ -x $UROCE && -x build/release/tests/uroce_forced_drop_stall ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }

echo "== the longest stall under 1% forced drops"
for probe in 1000 5000 0; do
  UROCE_LOSS_PROBE_US=$probe tests/soak/in_lossy_netns.sh build/release/tests/uroce_forced_drop_stall 2>&1 |
    grep -E "^forced drops|rule dropped"
done

echo "== ib_write_bw -s 65536 -n 3000 on the wire (MB/s, loss probes sent), $runs runs each"
port=18710
for ((run = 1; run <= runs; run++)); do
  for probe in 0 1000 5000; do
    port=$((port + 1))
    UROCE_STATS=1 UROCE_WIRE=1 UROCE_LOSS_PROBE_US=$probe $UROCE run --address 127.0.3.30 -- \
      ib_write_bw -n 3000 -s 65536 -p $port > /dev/null 2>&1 &
    sleep 0.3
    out=$(UROCE_STATS=1 UROCE_WIRE=1 UROCE_LOSS_PROBE_US=$probe $UROCE run --address 127.0.3.31 -- \
      ib_write_bw -n 3000 -s 65536 -p $port 127.0.3.30 2>&1)
    wait
    echo "probes ${probe} us: $(echo "$out" | awk '/^ 65536/ { print $4 }') MB/s, $(echo "$out" | grep -o 'loss probes [0-9]*')"
  done
done
