#!/usr/bin/env bash
# perftest with its own TCP exchange against perftest with -R (rdma_cm for
# the exchange and the QPs), and rdma_cm's connection set-up (cmtime), on
# uroce in one run: on the wire (UDP over loopback) and through the
# intra-host path. Prints markdown tables. Needs perftest and rdmacm-utils
# (scripts/install-deps.sh).
#
#   bench/rdmacm_compare.sh     # about a minute on two cores
set -euo pipefail
cd "$(dirname "$0")/.."

UROCE=build/release/tools/uroce
SERVER=127.0.3.60
CLIENT=127.0.3.61
OUT=$(mktemp -d)
trap 'pkill -x cmtime 2>/dev/null || true; rm -rf "$OUT"' EXIT
[[ -x $UROCE ]] || { ./scripts/install-deps.sh && ./scripts/build.sh release --quiet; }
port=18700

# side PATH ADDRESS: the command prefix that runs a program on uroce.
side() { echo "$UROCE run $([[ $1 == wire ]] && echo --wire) --address $2 --"; }

# perftest PATH PROGRAM ARGS...: the client's report (server started first).
perftest() {
  local path=$1 program=$2
  shift 2
  port=$((port + 1))
  $(side "$path" $SERVER) "$program" -d uroce0 -p $port "$@" >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  $(side "$path" $CLIENT) "$program" -d uroce0 -p $port "$@" $SERVER >"$OUT/perftest" 2>&1 || true
  wait $server || true
  cat "$OUT/perftest"
}
bw() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { value = $4 } END { print value ? value : "-" }'; }
lat() { awk '$1 ~ /^[0-9]+$/ && NF >= 8 { value = $5 " / " $8 } END { print value ? value : "-" }'; }

echo "### perftest: its TCP exchange against -R (rdma_cm)"
echo
echo "| test | path | TCP exchange | -R (rdma_cm) |"
echo "|---|---|---:|---:|"
for path in wire local; do
  for test in "ib_write_bw -s 65536 -n 5000|bw|MB/s" "ib_send_bw -s 65536 -n 5000|bw|MB/s" \
              "ib_read_lat -n 5000|lat|us typical / 99%" "ib_send_lat -n 5000|lat|us typical / 99%"; do
    IFS='|' read -r command kind unit <<<"$test"
    # shellcheck disable=SC2086
    plain=$(perftest $path $command | $kind)
    # shellcheck disable=SC2086
    over_cm=$(perftest $path $command -R | $kind)
    echo "| \`${command%% *}\` ($unit) | $path | $plain | $over_cm |"
  done
done
echo
echo "### rdma_cm connection set-up: cmtime -c 100 (ms for all 100, steps run in parallel)"
echo
echo "| path | resolve addr | resolve route | create qp | connect | disconnect |"
echo "|---|---:|---:|---:|---:|---:|"
for path in wire local; do
  port=$((port + 1))
  $(side $path $SERVER) cmtime -b $SERVER -p $port >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  $(side $path $CLIENT) cmtime -s $SERVER -p $port -c 100 >"$OUT/cmtime" 2>&1 || true
  kill $server 2>/dev/null || true
  wait $server 2>/dev/null || true
  step() { awk -v name="$1" -F: '$1 ~ "^"name" *$" { split($2, f, " "); print f[1] }' "$OUT/cmtime"; }
  echo "| $path | $(step "resolve addr") | $(step "resolve route") | $(step "create qp") | $(step connect) | $(step disconnect) |"
done
