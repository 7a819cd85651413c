#!/usr/bin/env bash
# Unmodified perftest on uroce's libibverbs over loopback UDP, in each progress mode
# (UROCE_PROGRESS=adaptive, the default, and thread), against uroce's own
# `uroce perf` (the same engine through its C++ API, polling inline with no
# progress thread) and, for latency, a UDP ping-pong (sockperf) over the same
# loopback: what the libibverbs layer and its progress engine cost or save.
# Every cell is the median of REPEAT runs (default 3), the runs of one row
# interleaved, all in one invocation. Prints markdown tables.
#
#   bench/ibverbs_programs.sh             # about four minutes on two cores
#   REPEAT=5 bench/ibverbs_programs.sh
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
REPEAT=${REPEAT:-3}
[[ -x $UROCE && -e build/release/lib/libibverbs.so.1 && -x build/release/bench/udp_pingpong ]] && command -v sockperf >/dev/null || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"; pkill -f "sockperf sr .*127.0.3.12" 2>/dev/null || true' EXIT
port=19700

source bench/perftest_run.sh

# On the wire (UROCE_WIRE=1), as uroce perf: bench/intra_host.sh measures
# the shared-memory path the library takes between two local devices by default.
library() {  # MODE TEST OPTIONS FILE
  local mode=$1 test=$2 options=$3 file=$4
  pair "$file" "UROCE_WIRE=1 UROCE_PROGRESS=$mode $UROCE run --address 127.0.3.12 -- ib_$test -p \$port $options" \
    "UROCE_WIRE=1 UROCE_PROGRESS=$mode $UROCE run --address 127.0.3.13 -- ib_$test -p \$port $options 127.0.0.1"
}
native() {  # TEST OPTIONS FILE
  local test=$1 options=$2 file=$3
  pair "$file" "$UROCE perf $test --bind 127.0.3.12 -p \$port $options" \
    "$UROCE perf $test --bind 127.0.3.13 -p \$port $options 127.0.3.12"
}

echo "Latency, 2 B, 5000 iterations (sockperf: 16 B for 1 s): typical (sockperf: median) / 99% / 99.9% percentile, us; median of $REPEAT runs"
echo
echo "| test | library, adaptive | library, thread | uroce perf | sockperf pp --nonblocked |"
echo "|---|---:|---:|---:|---:|"
for test in write_lat send_lat read_lat; do
  : >"$OUT/a" && : >"$OUT/t" && : >"$OUT/n" && : >"$OUT/s"
  for _ in $(seq "$REPEAT"); do
    library adaptive "$test" "-s 2 -n 5000" "$OUT/run" && lat_of "$OUT/run" >>"$OUT/a"
    library thread "$test" "-s 2 -n 5000" "$OUT/run" && lat_of "$OUT/run" >>"$OUT/t"
    native "$test" "-s 2 -n 5000" "$OUT/run" && lat_of "$OUT/run" >>"$OUT/n"
    if [[ $test == write_lat ]] && command -v sockperf >/dev/null; then
      sockperf_pingpong 127.0.3.12 "$OUT/run"
      sockperf_lat_of "$OUT/run" >>"$OUT/s"
    fi
  done
  sock="-"
  [[ -s $OUT/s ]] && sock=$(cell "$OUT/s")
  echo "| $test | $(cell "$OUT/a") | $(cell "$OUT/t") | $(cell "$OUT/n") | $sock |"
done

# The socket floor under the wire path: bench/udp_pingpong with one datagram
# per ping (sockperf's test) and with two (a WRITE and the peer's ACK, what
# uroce perf write_lat moves each way), answered when both arrived or on the
# first (as uroce perf answers on the WRITE), against uroce perf write_lat.
# (bench/wire_floor.sh adds the same through uroce's own UDP port.)
PINGPONG=build/release/bench/udp_pingpong
if [[ -x $PINGPONG ]]; then
  echo
  echo "The socket floor: busy-polling UDP ping-pong, 20000 round trips: median / 99th percentile half round trip, us; median of $REPEAT runs"
  echo
  echo "| path | median / 99% |"
  echo "|---|---:|"
  for variant in "1" "2" "2 --answer-first"; do
    read -r datagrams answer <<<"$variant"
    : >"$OUT/u"
    for _ in $(seq "$REPEAT"); do
      port=$((port + 1))
      "$PINGPONG" --serve 127.0.3.12 --port "$port" --datagrams "$datagrams" --size 36 -n 20000 ${answer:-} &
      server=$!
      sleep 0.3
      "$PINGPONG" --to 127.0.3.12 --from 127.0.3.13 --port "$port" --datagrams "$datagrams" --size 36 -n 20000 ${answer:-} |
        awk '{ print $(NF - 7), $(NF - 1) }' >>"$OUT/u" || true
      wait "$server" || true
    done
    label="UDP, $datagrams datagram(s) of 36 B each way"
    [[ -n ${answer:-} ]] && label="$label, answered on the first"
    echo "| $label | $(median "$OUT/u" 1) / $(median "$OUT/u" 2) |"
  done
fi

echo
echo "Bandwidth, 64 KiB messages, 30000 iterations: average MB/s; median of $REPEAT runs"
echo
echo "| test | library, adaptive | library, thread | uroce perf | adaptive / uroce perf |"
echo "|---|---:|---:|---:|---:|"
for test in write_bw read_bw send_bw; do
  : >"$OUT/a" && : >"$OUT/t" && : >"$OUT/n"
  for _ in $(seq "$REPEAT"); do
    library adaptive "$test" "-s 65536 -n 30000" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/a"
    library thread "$test" "-s 65536 -n 30000" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/t"
    native "$test" "-s 65536 -n 30000" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/n"
  done
  a=$(median "$OUT/a" 1) n=$(median "$OUT/n" 1)
  ratio=$(awk -v a="$a" -v n="$n" 'BEGIN { if (a + 0 > 0 && n + 0 > 0) printf "%.2f", a / n; else print "-" }')
  echo "| $test | $a | $(median "$OUT/t" 1) | $n | $ratio |"
done
