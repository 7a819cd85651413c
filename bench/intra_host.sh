#!/usr/bin/env bash
# The intra-host path against the wire, all in one run: unmodified perftest
# on uroce's libibverbs between two local devices (shared memory by default,
# UROCE_WIRE=1 for loopback UDP), `uroce perf` with and without --local,
# and for bandwidth also both with shared regions (UROCE_SHARED_MR=1,
# --shared-mr: the peer copies long messages itself), and the floors under
# them: a cache line bounced between two processes, the
# engines' own share of a write_lat round trip (no I/O), 4 KiB datagrams
# through a bare shared ring, and memcpy. Every uroce cell is the median of
# REPEAT runs (default 3), the runs of one row interleaved. Prints markdown.
#
#   bench/intra_host.sh             # about three minutes on two cores
#   REPEAT=5 bench/intra_host.sh
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
FLOOR=build/release/bench/shm_floor
ENGINE_BENCH=build/release/bench/engine_bench
REPEAT=${REPEAT:-3}
[[ -x $UROCE && -e build/release/lib/libibverbs.so.1 && -x $FLOOR && -x $ENGINE_BENCH ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
command -v ib_write_lat >/dev/null || { echo "perftest is not installed (scripts/install-deps.sh)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
port=19800

source bench/perftest_run.sh

library() {  # WIRE(0|1) TEST OPTIONS FILE [SHARED(0|1)]
  local wire=$1 test=$2 options=$3 file=$4 shared=${5:-0}
  pair "$file" "UROCE_WIRE=$wire UROCE_SHARED_MR=$shared $UROCE run --address 127.0.3.22 -- ib_$test -p \$port $options" \
    "UROCE_WIRE=$wire UROCE_SHARED_MR=$shared $UROCE run --address 127.0.3.23 -- ib_$test -p \$port $options 127.0.0.1"
}
native() {  # FLAGS TEST OPTIONS FILE
  local flags=$1 test=$2 options=$3 file=$4
  pair "$file" "$UROCE perf $test --bind 127.0.3.22 -p \$port $flags $options" \
    "$UROCE perf $test --bind 127.0.3.23 -p \$port $flags $options 127.0.3.22"
}

# row TEST OPTIONS EXTRACT SHOW: one table row, the four paths, each the
# median of REPEAT interleaved runs (EXTRACT reads a run, SHOW the column).
row() {
  local test=$1 options=$2 extract=$3 show=$4
  : >"$OUT/l" && : >"$OUT/nl" && : >"$OUT/w" && : >"$OUT/nw"
  for _ in $(seq "$REPEAT"); do
    library 0 "$test" "$options" "$OUT/run" && "$extract" "$OUT/run" >>"$OUT/l"
    native --local "$test" "$options" "$OUT/run" && "$extract" "$OUT/run" >>"$OUT/nl"
    library 1 "$test" "$options" "$OUT/run" && "$extract" "$OUT/run" >>"$OUT/w"
    native "" "$test" "$options" "$OUT/run" && "$extract" "$OUT/run" >>"$OUT/nw"
  done
  echo "| $test | $("$show" "$OUT/l") | $("$show" "$OUT/nl") | $("$show" "$OUT/w") | $("$show" "$OUT/nw") |"
}

# bandwidth_row TEST OPTIONS: row's four paths, then the two with shared regions.
bandwidth_row() {
  local test=$1 options=$2
  : >"$OUT/l" && : >"$OUT/nl" && : >"$OUT/w" && : >"$OUT/nw" && : >"$OUT/ls" && : >"$OUT/nls"
  for _ in $(seq "$REPEAT"); do
    library 0 "$test" "$options" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/l"
    native --local "$test" "$options" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/nl"
    library 1 "$test" "$options" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/w"
    native "" "$test" "$options" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/nw"
    library 0 "$test" "$options" "$OUT/run" 1 && bw_of "$OUT/run" >>"$OUT/ls"
    native "--local --shared-mr" "$test" "$options" "$OUT/run" && bw_of "$OUT/run" >>"$OUT/nls"
  done
  local cells=""
  for column in l nl w nw ls nls; do cells+=" $(median "$OUT/$column" 1) |"; done
  echo "| $test |$cells"
}

echo "Latency, 2 B, 5000 iterations: typical / 99% / 99.9% percentile, us (write_lat and send_lat: half the round trip; read_lat: all of it); median of $REPEAT runs"
echo
echo "| test | library, intra-host | uroce perf --local | library, wire | uroce perf, wire |"
echo "|---|---:|---:|---:|---:|"
for test in write_lat send_lat read_lat; do row "$test" "-s 2 -n 5000" lat_of cell; done

echo
echo "The floors under a 2-byte WRITE's half round trip:"
echo
if command -v sockperf >/dev/null; then
  sockperf_pingpong 127.0.3.22 "$OUT/run"
  sockperf_lat_of "$OUT/run" >"$OUT/s"
  echo "- a UDP ping-pong through the kernel (sockperf pp --nonblocked, 16 B, 1 s): median / 99% / 99.9% $(cell "$OUT/s") us"
fi
echo "- $("$FLOOR" pingpong -n 200000)"
engine=$("$ENGINE_BENCH" --benchmark_filter=PingPong 2>/dev/null | awk '/BM_EngineWrite2BytePingPong/ { for (i = 1; i <= NF; ++i) if ($i ~ /^half_trip_ns=/) { sub("half_trip_ns=", "", $i); print $i } }')
echo "- the two engines' work per half round trip, no I/O (engine_bench BM_EngineWrite2BytePingPong: WRITE built and taken, ACK built and taken): $engine"

echo
echo "Bandwidth, 64 KiB WRITEs, 30000 iterations: average MB/s (MiB/s as perftest prints it); median of $REPEAT runs"
echo
echo "| test | library, intra-host | uroce perf --local | library, wire | uroce perf, wire | library, intra-host, UROCE_SHARED_MR=1 | uroce perf --local --shared-mr |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for test in write_bw read_bw send_bw; do bandwidth_row "$test" "-s 65536 -n 30000"; done

echo
echo "The floors under it:"
echo
for _ in $(seq "$REPEAT"); do "$FLOOR" memcpy -s 65536 | awk '{ print $(NF - 1) }'; done >"$OUT/memcpy"
echo "- memcpy of 65536 bytes: $(median "$OUT/memcpy" 1) GB/s (one page-aligned buffer pair, in cache; median of $REPEAT runs, $(sort -g "$OUT/memcpy" | head -1) to $(sort -g "$OUT/memcpy" | tail -1))"
echo "- $("$FLOOR" memcpy -s 67108864) (beyond the caches)"
echo "- $("$FLOOR" ring -n 2000000)"
