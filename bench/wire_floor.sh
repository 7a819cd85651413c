#!/usr/bin/env bash
# uroce's wire latency against the socket floors beneath it, over loopback,
# the four in turn, ROUNDS times (the VM's speed drifts from minute to
# minute: only figures of the same round compare):
#   - sockperf pp --nonblocked, 16 B (the issue's yardstick);
#   - udp_pingpong, one 36 B datagram each way (sockperf's test, our client);
#   - port_pingpong: a 36 B and a 20 B datagram each way (what a 2-byte
#     WRITE and the ACK behind it need) through uroce's own UDP port, with
#     no engine behind it;
#   - uroce perf write_lat -s 2, 20000 iterations.
# Prints each round's half round trips (medians; uroce perf: typical) and,
# per path, the median over the rounds and its ratio to sockperf's.
#
#   bench/wire_floor.sh [ROUNDS]      # default 7 rounds, about 30 s
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-7}
UROCE=build/release/tools/uroce
PINGPONG=build/release/bench/udp_pingpong
PORT_PINGPONG=build/release/bench/port_pingpong
[[ -x $UROCE && -x $PINGPONG && -x $PORT_PINGPONG ]] && command -v sockperf >/dev/null || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"; pkill -f "sockperf sr .*127.0.3.12" 2>/dev/null || true' EXIT
port=24100

source bench/perftest_run.sh

pingpong() {  # PROGRAM OPTIONS...: the client's median half round trip
  local program=$1
  shift
  port=$((port + 1))
  "$program" --serve 127.0.3.12 --port "$port" "$@" &
  local server=$!
  sleep 0.2
  "$program" --to 127.0.3.12 --from 127.0.3.13 --port "$port" -n 20000 "$@" | awk '{ print $(NF - 7) }'
  wait "$server"
}

echo "| round | sockperf | UDP, 1 datagram | uroce's UDP port, no engine (2 datagrams) | uroce perf write_lat |"
echo "|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  sockperf_pingpong 127.0.3.12 "$OUT/sockperf"
  sockperf=$(sockperf_lat_of "$OUT/sockperf" | awk '{ print $1 }')
  one=$(pingpong "$PINGPONG" --size 36)
  through_port=$(pingpong "$PORT_PINGPONG")
  pair "$OUT/uroce" "$UROCE perf write_lat --bind 127.0.3.12 -p \$port -s 2 -n 20000" \
    "$UROCE perf write_lat --bind 127.0.3.13 -p \$port -s 2 -n 20000 127.0.3.12"
  uroce=$(lat_of "$OUT/uroce" | awk '{ print $1 }')
  echo "$sockperf $one $through_port $uroce" >>"$OUT/rounds"
  echo "| $round | $sockperf | $one | $through_port | $uroce |"
done

echo
echo "Median of $ROUNDS rounds, us, and its ratio to sockperf's median:"
echo
echo "| path | half round trip | / sockperf |"
echo "|---|---:|---:|"
base=$(median "$OUT/rounds" 1)
column=1
for path in "sockperf pp --nonblocked" "UDP, 1 datagram" "uroce's UDP port, no engine" "uroce perf write_lat"; do
  value=$(median "$OUT/rounds" "$column")
  echo "| $path | $value | $(awk -v v="$value" -v b="$base" 'BEGIN { printf "%.2f", v / b }') |"
  column=$((column + 1))
done
