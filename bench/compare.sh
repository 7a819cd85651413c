#!/usr/bin/env bash
# uroce over loopback UDP against the socket and software-RDMA peers, all in
# one run on this machine: TCP (iperf3), UDP ping-pong (sockperf, blocking and
# busy-polling), UCX over TCP (ucx_perftest) and libfabric's tcp provider
# (fi_pingpong). Prints markdown tables: 64 KiB bandwidth with the CPU time
# both processes spent per GiB moved, small-message half round trips, and
# uroce's size sweeps. Installs the peers it lacks (Debian packages).
#
#   bench/compare.sh            # about four minutes on two cores
#   SECONDS_PER_RUN=2 bench/compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUN_SECONDS=${SECONDS_PER_RUN:-4}
UROCE=build/release/tools/uroce
SERVER=127.0.3.2
CLIENT=127.0.3.3
OUT=$(mktemp -d)
trap 'pkill -f "uroce perf .* --bind $SERVER" 2>/dev/null || true; pkill -x sockperf 2>/dev/null || true; rm -rf "$OUT"' EXIT

install_peers() {
  local missing=()
  command -v iperf3 >/dev/null || missing+=(iperf3)
  command -v sockperf >/dev/null || missing+=(sockperf)
  command -v ucx_perftest >/dev/null || missing+=(ucx-utils)
  command -v fi_pingpong >/dev/null || missing+=(libfabric-bin)
  if ((${#missing[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  [[ -x $UROCE ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
}

# cpu_of FILE COMMAND...: runs COMMAND, output to FILE, its user+system CPU seconds to FILE.cpu.
cpu_of() {
  local file=$1
  shift
  { TIMEFORMAT='%U %S'; time "$@" >"$file" 2>&1; } 2>"$file.cpu" || true
}
cpu_seconds() { awk '{ print $1 + $2 }' "$1.cpu"; }
cpu_per_gib() { awk -v a="$1" -v b="$2" -v mib="$3" 'BEGIN { if (mib > 0) printf "%.2f", (a + b) / (mib / 1024); else print "-" }'; }

# uroce perf: server in the background, client in the foreground.
uroce_pair() {
  local port=$1
  shift
  cpu_of "$OUT/server" "$UROCE" perf "$@" --bind $SERVER -p "$port" --timeout 60 &
  local server=$!
  sleep 0.3
  cpu_of "$OUT/client" "$UROCE" perf "$@" --bind $CLIENT -p "$port" --timeout 60 $SERVER
  wait $server
}
uroce_row() { grep -E "^ $1 " "$OUT/client" | head -1; }

bandwidth_table() {
  echo "### 64 KiB messages, one stream / one QP, ${RUN_SECONDS} s each"
  echo
  echo "| peer | MiB/s | CPU s per GiB (both processes) |"
  echo "|---|---:|---:|"

  cpu_of "$OUT/iperf_server" iperf3 -s -B 127.0.0.1 -p 15201 -1 &
  local server=$!
  sleep 0.5
  cpu_of "$OUT/iperf" iperf3 -c 127.0.0.1 -p 15201 -t "$RUN_SECONDS" -l 64K -f M
  wait $server || true
  local mib moved
  mib=$(awk '/receiver/ { print $7 }' "$OUT/iperf")
  moved=$(awk -v m="$mib" -v s="$RUN_SECONDS" 'BEGIN { print m * s }')
  echo "| TCP over loopback (iperf3 -l 64K) | $mib | $(cpu_per_gib "$(cpu_seconds "$OUT/iperf")" "$(cpu_seconds "$OUT/iperf_server")" "$moved") |"

  cpu_of "$OUT/ucx_server" env UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest -p 13337 &
  server=$!
  sleep 1
  cpu_of "$OUT/ucx" env UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest 127.0.0.1 -p 13337 -t ucp_put_bw -s 65536 -n 40000
  wait $server || true
  mib=$(awk '/^Final:/ { print $6 }' "$OUT/ucx")
  moved=$(awk '/^Final:/ { print $2 * 65536 / 1048576 }' "$OUT/ucx")
  echo "| UCX over TCP (ucx_perftest ucp_put_bw) | $mib | $(cpu_per_gib "$(cpu_seconds "$OUT/ucx")" "$(cpu_seconds "$OUT/ucx_server")" "$moved") |"

  fi_pingpong -p tcp -e msg -I 10000 -S 65536 -B 47593 >/dev/null 2>&1 &
  server=$!
  sleep 1
  fi_pingpong -p tcp -e msg -I 10000 -S 65536 -P 47593 127.0.0.1 >"$OUT/fi" 2>&1 || true
  wait $server || true
  echo "| libfabric tcp (fi_pingpong, one message at a time, MB/s) | $(awk 'END { print $6 }' "$OUT/fi") | - |"

  local port=19300
  for test in write_bw read_bw send_bw; do
    uroce_pair $((port++)) $test -s 65536 -D "$RUN_SECONDS"
    local row
    row=$(uroce_row 65536)
    mib=$(echo "$row" | awk '{ print $4 }')
    local moved
    moved=$(echo "$row" | awk -v s="$RUN_SECONDS" '{ print $4 * s }')
    echo "| uroce $test (RC, MTU 4096) | $mib | $(cpu_per_gib "$(cpu_seconds "$OUT/client")" "$(cpu_seconds "$OUT/server")" "$moved") |"
  done
  echo
}

latency_table() {
  echo "### Half round trip, small messages (READ and atomics: whole round trip), microseconds"
  echo
  echo "| peer | median | average | 99% |"
  echo "|---|---:|---:|---:|"
  local mode port=11111
  for mode in "" --nonblocked; do
    sockperf sr -i 127.0.0.1 -p $port $mode >/dev/null 2>&1 &
    local server=$!
    sleep 0.5
    sockperf pp -i 127.0.0.1 -p $port -m 16 -t "$RUN_SECONDS" $mode >"$OUT/sockperf" 2>&1 || true
    kill $server 2>/dev/null || true
    wait $server 2>/dev/null || true
    echo "| UDP ping-pong, 16 B (sockperf ${mode:-blocking}) | $(awk '/percentile 50.000/ { print $NF }' "$OUT/sockperf") | $(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$OUT/sockperf") | $(awk '/percentile 99.000/ { print $NF }' "$OUT/sockperf") |"
    port=$((port + 1))
  done

  UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest -p 13338 >/dev/null 2>&1 &
  server=$!
  sleep 1
  UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest 127.0.0.1 -p 13338 -t ucp_put_lat -s 8 -n 100000 >"$OUT/ucx" 2>&1 || true
  wait $server || true
  echo "| UCX over TCP, 8 B put (ucx_perftest ucp_put_lat) | $(awk '/^Final:/ { print $3 }' "$OUT/ucx") | $(awk '/^Final:/ { print $4 }' "$OUT/ucx") | - |"

  fi_pingpong -p tcp -e msg -I 100000 -S 8 -B 47594 >/dev/null 2>&1 &
  server=$!
  sleep 1
  fi_pingpong -p tcp -e msg -I 100000 -S 8 -P 47594 127.0.0.1 >"$OUT/fi" 2>&1 || true
  wait $server || true
  echo "| libfabric tcp, 8 B (fi_pingpong) | - | $(awk 'END { print $7 }' "$OUT/fi") | - |"

  local test port=19310
  for test in write_lat send_lat read_lat atomic_lat; do
    local size=2
    [[ $test == atomic_lat ]] && size=8
    uroce_pair $((port++)) $test -D "$RUN_SECONDS"
    local row
    row=$(uroce_row $size)
    # Columns: bytes, iterations, min, max, typical (median), average, stdev, 99%, 99.9%.
    echo "| uroce $test, $size B | $(echo "$row" | awk '{ print $5 }') | $(echo "$row" | awk '{ print $6 }') | $(echo "$row" | awk '{ print $8 }') |"
  done
  echo
}

sweep_table() {
  echo "### uroce size sweeps (-a), MTU 4096: write_bw (-n 1000) and write_lat (-n 300)"
  echo
  uroce_pair 19320 write_bw -a -n 1000
  cp "$OUT/client" "$OUT/sweep_bw"
  uroce_pair 19321 write_lat -a -n 300
  echo "| bytes | write_bw MiB/s | Mpps | write_lat median us |"
  echo "|---:|---:|---:|---:|"
  local size
  for ((size = 2; size <= 8388608; size *= 2)); do
    local bw lat
    bw=$(grep -E "^ $size " "$OUT/sweep_bw" | head -1)
    lat=$(uroce_row $size)
    echo "| $size | $(echo "$bw" | awk '{ print $4 }') | $(echo "$bw" | awk '{ print $5 }') | $(echo "$lat" | awk '{ print $5 }') |"
  done
  echo
}

install_peers
echo "## Loopback comparison ($(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d))"
echo
bandwidth_table
latency_table
sweep_table
