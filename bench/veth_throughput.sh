#!/usr/bin/env bash
# uroce between two hosts, as far as one machine can show it: two network
# namespaces joined by a veth pair (made here, removed on exit; needs root
# and iproute2), against the kernel's own UDP over the same pair. For each
# link MTU (1500, where RoCE's MTU is 1024, and 9000, where it is 4096), in
# turn ROUNDS times:
#   - sockperf throughput, UDP messages of the RoCE MTU (the kernel's floor:
#     every datagram crosses the whole stack on both sides);
#   - ib_write_bw -s 65536 (RC) and ib_send_bw -c UC -s 65536, unmodified
#     perftest on uroce, 3 s each.
# Prints a markdown table of the medians over the rounds: MB/s and thousands
# of datagrams per second (uroce's from its packet counters).
#
#   bench/veth_throughput.sh [ROUNDS]     # default 3, about 2 minutes
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-3}
UROCE=$PWD/build/release/tools/uroce
[[ -x $UROCE ]] && command -v sockperf >/dev/null && command -v ib_write_bw >/dev/null ||
  { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
[[ $(id -u) == 0 ]] || { echo "veth_throughput: needs root (network namespaces)" >&2; exit 2; }
A=uroce-bench-a-$$
B=uroce-bench-b-$$
SERVER=10.93.0.1
CLIENT=10.93.0.2
OUT=$(mktemp -d)
cleanup() {
  ip netns pids "$A" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns pids "$B" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$OUT"
}
trap cleanup EXIT
ip netns add "$A"
ip netns add "$B"
ip link add va-$$ type veth peer name vb-$$
ip link set va-$$ netns "$A"
ip link set vb-$$ netns "$B"
ip -n "$A" addr add $SERVER/24 dev va-$$
ip -n "$B" addr add $CLIENT/24 dev vb-$$
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set va-$$ up
ip -n "$B" link set vb-$$ up

# median FILE COLUMN, from the perftest helpers; values() lists its arguments as a file's lines.
source bench/perftest_run.sh
values() { printf '%s\n' "$@"; }

# sockperf_udp SIZE: "MB/s kpps" of sockperf's UDP throughput test.
sockperf_udp() {
  ip netns exec "$A" sockperf server -i $SERVER -p 6100 >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  ip netns exec "$B" sockperf throughput -i $SERVER -p 6100 -m "$1" -t 3 >"$OUT/sockperf" 2>&1 || true
  kill $server 2>/dev/null || true
  wait $server 2>/dev/null || true
  local rate bandwidth
  rate=$(grep -o 'Message Rate is [0-9]*' "$OUT/sockperf" | awk '{ print $4 }')
  bandwidth=$(grep -o 'BandWidth is [0-9.]*' "$OUT/sockperf" | awk '{ print $3 }')
  echo "${bandwidth:-0} $(awk -v r="${rate:-0}" 'BEGIN { printf "%.0f", r / 1000 }')"
}

# perftest PROGRAM ARGS...: "MB/s kpps" (perftest's average; uroce's packets sent per second).
perftest() {
  ip netns exec "$A" env UROCE_STATS=1 "$UROCE" run --address $SERVER -- "$@" >"$OUT/server" 2>&1 &
  local server=$!
  sleep 1
  ip netns exec "$B" env UROCE_STATS=1 timeout 60 "$UROCE" run --address $CLIENT -- "$@" $SERVER >"$OUT/client" 2>&1 || true
  wait $server 2>/dev/null || true
  local bandwidth packets
  bandwidth=$(grep -A1 '#bytes' "$OUT/client" | tail -1 | awk '{ print $4 }')
  packets=$(grep -o 'packets sent [0-9]*' "$OUT/client" | awk '{ print $3 }')
  echo "${bandwidth:-0} $(awk -v p="${packets:-0}" 'BEGIN { printf "%.0f", p / 3 / 1000 }')"
}

echo "| link MTU | RoCE MTU | kernel UDP (sockperf) MB/s, kpps | uroce RC ib_write_bw MB/s, kpps | uroce UC ib_send_bw MB/s, kpps |"
echo "|---:|---:|---|---|---|"
for mtu in 1500 9000; do
  ip -n "$A" link set va-$$ mtu $mtu
  ip -n "$B" link set vb-$$ mtu $mtu
  roce_mtu=$([[ $mtu == 9000 ]] && echo 4096 || echo 1024)
  declare -a udp_bw=() udp_pps=() rc_bw=() rc_pps=() uc_bw=() uc_pps=()
  for _ in $(seq "$ROUNDS"); do
    read -r bw pps < <(sockperf_udp $roce_mtu)
    udp_bw+=("$bw") udp_pps+=("$pps")
    read -r bw pps < <(perftest ib_write_bw -s 65536 -D 3)
    rc_bw+=("$bw") rc_pps+=("$pps")
    read -r bw pps < <(perftest ib_send_bw -c UC -s 65536 -D 3)
    uc_bw+=("$bw") uc_pps+=("$pps")
  done
  echo "| $mtu | $roce_mtu | $(median <(values "${udp_bw[@]}") 1), $(median <(values "${udp_pps[@]}") 1) |" \
    "$(median <(values "${rc_bw[@]}") 1), $(median <(values "${rc_pps[@]}") 1) | $(median <(values "${uc_bw[@]}") 1), $(median <(values "${uc_pps[@]}") 1) |"
done
