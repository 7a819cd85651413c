#!/usr/bin/env bash
# Unmodified perftest on uroce's libibverbs against uroce's own `uroce perf`
# (the same engine through its C++ API, polling inline) in one run over
# loopback: what the libibverbs layer (rdma-core's ABI, the progress thread,
# perftest's ibv_wr_* posting) costs or saves. Prints a markdown table.
#
#   bench/ibverbs_programs.sh    # about a minute on two cores
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
[[ -x $UROCE && -e build/release/lib/libibverbs.so.1 ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
port=19700

# pair FILE SERVER-COMMAND CLIENT-COMMAND: runs both, the client's output to FILE.
pair() {
  local file=$1 server=$2 client=$3
  port=$((port + 1))
  eval "$server" >"$file.server" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do ss -ltn | grep -q ":$port " && break; sleep 0.1; done
  eval "$client" >"$file" 2>&1 || true
  wait "$pid" || true
}

perftest() {  # test options
  local test=$1 options=$2
  pair "$OUT/ib_$test" "$UROCE run --address 127.0.3.12 -- ib_$test -p \$port $options" \
    "$UROCE run --address 127.0.3.13 -- ib_$test -p \$port $options 127.0.0.1"
}
native() {  # test options
  local test=$1 options=$2
  pair "$OUT/uroce_$test" "$UROCE perf $test --bind 127.0.3.12 -p \$port $options" \
    "$UROCE perf $test --bind 127.0.3.13 -p \$port $options 127.0.3.12"
}

# Bandwidth rows: the average MiB/s column; latency rows: typical and 99%.
bw_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { value = $4 } END { print value ? value : "-" }' "$1"; }
lat_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 8 { value = $5 " / " $8 } END { print value ? value : "-" }' "$1"; }

echo "| test | perftest on uroce's libibverbs | uroce perf |"
echo "|---|---:|---:|"
for test in write_bw read_bw send_bw; do
  perftest "$test" "-s 65536 -n 5000"
  native "$test" "-s 65536 -n 5000"
  echo "| $test 64 KiB (MB/s, average) | $(bw_of "$OUT/ib_$test") | $(bw_of "$OUT/uroce_$test") |"
done
for test in write_lat read_lat send_lat; do
  perftest "$test" "-s 2 -n 5000"
  native "$test" "-s 2 -n 5000"
  echo "| $test 2 B (us, typical / 99%) | $(lat_of "$OUT/ib_$test") | $(lat_of "$OUT/uroce_$test") |"
done
