#!/usr/bin/env bash
# uroce's raw Ethernet port against its UDP port and against TCP (iperf3),
# across a veth pair between two network namespaces that the script creates
# and removes: 64 KiB WRITE bandwidth at link MTU 1500 (path MTU 1024) and
# 9000 (path MTU 4096), and the 2-byte WRITE half round trip. Needs root.
#
#   bench/raw_vs_udp.sh          # about a minute
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
SERVER_NS=uroce_bench_s$$
CLIENT_NS=uroce_bench_c$$
OUT=$(mktemp -d)
cleanup() {
  ip netns pids "$SERVER_NS" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$SERVER_NS" 2>/dev/null || true
  ip netns del "$CLIENT_NS" 2>/dev/null || true
  rm -rf "$OUT"
}
trap cleanup EXIT

[[ $(id -u) == 0 ]] || { echo "raw_vs_udp.sh: needs root (network namespaces, AF_PACKET)" >&2; exit 2; }
command -v iperf3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null; }
[[ -x $UROCE ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }

ip netns add "$SERVER_NS"
ip netns add "$CLIENT_NS"
ip link add ub_s netns "$SERVER_NS" type veth peer name ub_c netns "$CLIENT_NS"
ip -n "$SERVER_NS" addr add 10.79.9.1/24 dev ub_s
ip -n "$CLIENT_NS" addr add 10.79.9.2/24 dev ub_c
for ns in "$SERVER_NS" "$CLIENT_NS"; do ip -n "$ns" link set lo up; done
ip -n "$SERVER_NS" link set ub_s up
ip -n "$CLIENT_NS" link set ub_c up

set_mtu() { ip -n "$SERVER_NS" link set ub_s mtu "$1"; ip -n "$CLIENT_NS" link set ub_c mtu "$1"; }

# uroce_pair PORT_FLAGS_SERVER PORT_FLAGS_CLIENT PERF_ARGS...: prints the client's first result row.
uroce_pair() {
  local server_flags=$1 client_flags=$2
  shift 2
  ip netns exec "$SERVER_NS" "$UROCE" perf "$@" --bind 10.79.9.1 $server_flags -p 19400 --timeout 60 >"$OUT/server" 2>&1 &
  local server=$!
  sleep 0.3
  ip netns exec "$CLIENT_NS" "$UROCE" perf "$@" --bind 10.79.9.2 $client_flags -p 19400 --timeout 60 10.79.9.1 >"$OUT/client" 2>&1
  wait $server
  grep -E "^ [0-9]+ " "$OUT/client" | head -1
}

iperf_mib() {
  ip netns exec "$SERVER_NS" iperf3 -s -B 10.79.9.1 -p 15301 -1 >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  ip netns exec "$CLIENT_NS" iperf3 -c 10.79.9.1 -p 15301 -t 4 -l 64K -J >"$OUT/iperf" 2>/dev/null
  wait $server || true
  python3 -c "import json,sys; print(f\"{json.load(open('$OUT/iperf'))['end']['sum_received']['bits_per_second'] / 8 / 1048576:.0f}\")"
}

echo "### 64 KiB WRITE bandwidth across a veth pair, one QP / one stream"
echo
echo "| link MTU | uroce raw port MiB/s | uroce UDP port MiB/s | TCP (iperf3) MiB/s |"
echo "|---:|---:|---:|---:|"
for mtu in 1500 9000; do
  set_mtu $mtu
  raw=$(uroce_pair "--interface ub_s" "--interface ub_c" write_bw -D 4 | awk '{ print $4 }')
  udp=$(uroce_pair "" "" write_bw -D 4 | awk '{ print $4 }')
  echo "| $mtu | $raw | $udp | $(iperf_mib) |"
done
set_mtu 1500

echo
echo "### 2-byte WRITE half round trip across the veth pair (us)"
echo
echo "| port | t_min | t_typical (median) | t_avg | 99% |"
echo "|---|---:|---:|---:|---:|"
for kind in raw udp; do
  if [[ $kind == raw ]]; then row=$(uroce_pair "--interface ub_s" "--interface ub_c" write_lat -n 10000)
  else row=$(uroce_pair "" "" write_lat -n 10000); fi
  echo "$row" | awk -v kind=$kind '{ printf "| %s | %s | %s | %s | %s |\n", kind, $3, $5, $6, $8 }'
done
